/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A Go binary's function table, from .gopclntab: the runtime's own table of
 * every function's entry and name, which the linker keeps when `-ldflags=-s -w`
 * strips .symtab and DWARF (the runtime needs it for tracebacks). Read as Go's
 * src/debug/gosym/pclntab.go and src/runtime/symtab.go describe it:
 *   magic 0xfffffff0 (Go 1.18, 1.19) and 0xfffffff1 (Go 1.20 and later): a header of
 *     8-byte words (nfunc, nfiles, textStart, funcname, cu, filetab, pctab, pcln offsets),
 *     the function table as {entryoff, funcoff} uint32 pairs, entries relative to textStart;
 *   magic 0xfffffffa (Go 1.16, 1.17): the same without textStart, the table as {entry,
 *     funcoff} pointer-sized pairs holding absolute addresses.
 * Older tables (0xfffffffb, Go 1.2-1.15) and 32-bit or big-endian ones are refused by name.
 * A function's size is the distance to the next entry (the table ends with the end PC).
 * Pure and bounded: every offset is checked against the section's length.
 */
#ifndef DW_GOPCLN_H
#define DW_GOPCLN_H

#include <stddef.h>
#include <stdint.h>

#include "logic/discovery/goelf.h"

#define DW_PCLN_GO116 0xfffffffau
#define DW_PCLN_GO118 0xfffffff0u
#define DW_PCLN_GO120 0xfffffff1u

struct dw_go_pcln {
	const uint8_t *tab;
	uint64_t len;
	uint32_t magic;
	uint64_t nfunc;
	uint64_t text_start;	/* 0 for Go 1.16-1.17, whose entries are absolute */
	uint64_t funcname;	/* offsets in tab of the name table and the function table */
	uint64_t functab;
};

/*
 * 0 with *p ready; -1 when the file has no function table or one this reader does not know
 * (why[]). Found by its section (.gopclntab; .data.rel.ro.gopclntab in -buildmode=pie), else by
 * a scan for a header that parses and whose text start is .text's.
 */
int dw_go_pcln_open(const struct dw_elf *e, struct dw_go_pcln *p, char *why, size_t whylen);
/* The same over a table already in memory (the fuzzer's entry point). */
int dw_go_pcln_parse(struct dw_go_pcln *p, const uint8_t *tab, uint64_t len, char *why, size_t whylen);

/* The i-th function (i < nfunc): entry address, size, name (NUL-terminated inside tab). 0 or -1. */
int dw_go_pcln_func(const struct dw_go_pcln *p, uint64_t i, uint64_t *entry, uint64_t *size,
		    const char **name);
/* The function named exactly so: 0 with its entry and size, -1 when absent. A linear walk (one per
 * probed file, ~10^4 functions). */
int dw_go_pcln_find(const struct dw_go_pcln *p, const char *name, uint64_t *entry, uint64_t *size);

#endif
