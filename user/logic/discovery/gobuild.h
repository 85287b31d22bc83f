/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A Go binary's build info: the blob the Go linker writes after the 14-byte
 * magic "\xff Go buildinf:" (in .go.buildinfo, or found by its 16-byte
 * alignment when the section headers are gone). It gives the toolchain's
 * version ("go1.19.8") and the main package's and module's paths. Two layouts:
 * Go 1.18 and later inline the strings (flag 2, varint lengths); Go 1.13-1.17
 * point at Go string headers in the data segment. See Go's
 * src/debug/buildinfo/buildinfo.go for the reader this one follows. Pure, bounded.
 */
#ifndef DW_GOBUILD_H
#define DW_GOBUILD_H

#include <stddef.h>

#include "logic/discovery/goelf.h"

#define DW_GO_VERSION_LEN 48
#define DW_GO_PATH_LEN 256

struct dw_go_build {
	char version[DW_GO_VERSION_LEN];	/* as written: "go1.19.8"; "" if none */
	char path[DW_GO_PATH_LEN];		/* the main package ("command-line-arguments" for go build x.go) */
	char mod[DW_GO_PATH_LEN];		/* the main module, "" when built outside one */
	int major, minor, patch;		/* 1, 19, 8; -1 when the version is not a release's */
	int inline_strings;			/* 1: the Go 1.18+ layout */
};

/* 0 with *b filled; -1 when the file carries no (readable) Go build info, why[] says which. */
int dw_go_buildinfo(const struct dw_elf *e, struct dw_go_build *b, char *why, size_t whylen);

/*
 * "go1.19.8" -> 1, 19, 8; "go1.20" -> 1, 20, 0; "go1.21rc2" -> 1, 21, 0. 0, or -1 (all three -1)
 * for anything else, a "devel" toolchain among them: its layout is no release's.
 */
int dw_go_parse_version(const char *v, int *major, int *minor, int *patch);

#endif
