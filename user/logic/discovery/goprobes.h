/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where to probe a Go program's TLS: crypto/tls.(*Conn).Write and .Read, their entries
 * and every RET as file offsets (what a uprobe is attached at, per ELF file), the
 * *tls.Conn -> fd offset chain, and the build info. This half is pure: it reads an
 * ELF image in memory (gobuild.h, gopcln.h, goret.h, golayout.h); the I/O half,
 * user/discovery/golang/goprobe.h, maps the file and adds the offsets from DWARF.
 * doc/go.md says what is supported.
 */
#ifndef DW_GOPROBES_H
#define DW_GOPROBES_H

#include <stddef.h>
#include <stdint.h>

#include "logic/discovery/gobuild.h"
#include "logic/discovery/golayout.h"
#include "logic/discovery/godefer.h"
#include "logic/discovery/goret.h"

struct dw_go_func {
	uint64_t vaddr, size;			/* from .gopclntab */
	uint64_t off;				/* the entry's file offset */
	uint64_t probe_off;			/* the entry's uprobe's: the stack check's branch, else off (goret.h) */
	uint64_t ret_off[DW_GO_MAX_RETS];	/* each RET's file offset */
	unsigned nret;
	/*
	 * Where the return of the exits after the function's one defer is taken instead of at their
	 * RETs (godefer.h): the deferred closure's stack-check branch's file offset, 0 if not; the
	 * function's first result's offset in its frame; its start less the probe's address. Then
	 * keep_off[] holds the RETs still probed (the others' paths), else all of ret_off[].
	 */
	uint64_t defer_off;
	uint32_t defer_result;
	uint32_t defer_spill;		/* Read: where it keeps RAX, RBX, RCX (dw_go_find_arg_spill), 0: not known */
	int64_t defer_lo;
	unsigned defer_exits;
	uint64_t keep_off[DW_GO_MAX_RETS];
	unsigned nkeep;
};

/* What a deferred-exit probe's attach cookie holds room for (bpf/tls/go/gotls.h's DW_GO_CK_*). */
#define DW_GO_DEFER_RESULT_MAX 0xfff
#define DW_GO_DEFER_SPILL_MAX 0xfff
#define DW_GO_DEFER_SIZE_MAX 0xffff
#define DW_GO_DEFER_LO_MAX ((1 << 19) - 1)	/* |start - probe| */

enum dw_go_fd_source {
	DW_GO_FD_NONE,		/* no offsets known: the program is not probed */
	DW_GO_FD_TABLE,		/* golayout.c's table for the version */
	DW_GO_FD_DWARF,		/* the binary's own DWARF */
};

struct dw_go_probes {
	struct dw_go_build build;
	int has_symtab;		/* 0 when stripped (-ldflags=-s): the names came from .gopclntab */
	uint32_t pcln_magic;
	struct dw_go_func write, read;
	/* crypto/tls.(*Conn).handshakeContext's probe (file offset: its stack check's branch, else its
	 * entry), 0 if absent: its thread is marked so that the handshake's first send ties the conn to
	 * its socket (bpf/tls/go/gotls.bpf.c). Every Read and Write calls it (5 hits a request). */
	uint64_t shake_off;
	struct dw_go_fdchain fd;
	enum dw_go_fd_source fd_source;
};

#define DW_GO_WRITE_SYM "crypto/tls.(*Conn).Write"
#define DW_GO_READ_SYM "crypto/tls.(*Conn).Read"
#define DW_GO_SHAKE_SYM "crypto/tls.(*Conn).handshakeContext"	/* Go 1.17+; entry only */

/*
 * 0: *out holds the functions and, if golayout.c's table has the version, the chain
 * (fd_source DW_GO_FD_TABLE, else DW_GO_FD_NONE: the caller may still find it in DWARF).
 * -1: not probed, why[] says why in one line (not ELF, not Go, Go before 1.17, not
 * x86-64, no crypto/tls in it, a table or function that does not read right).
 */
int dw_go_probes_image(const void *buf, size_t len, struct dw_go_probes *out, char *why, size_t whylen);

#endif
