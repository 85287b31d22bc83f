// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The pure half of the Go probe finder (goprobes.h): ELF, build info, function table, RETs. */
#include "logic/discovery/goprobes.h"

#include <stdio.h>
#include <string.h>

#include "logic/discovery/goelf.h"
#include "logic/discovery/gopcln.h"

/* A function's entry and RETs as file offsets; -1 with why[] when it cannot be probed. */
static int locate(const struct dw_elf *e, const struct dw_go_pcln *p, const char *sym,
		  struct dw_go_func *f, char *why, size_t whylen)
{
	uint32_t rets[DW_GO_MAX_RETS];
	char d[160];
	int64_t off;

	if (dw_go_pcln_find(p, sym, &f->vaddr, &f->size) < 0) {
		snprintf(why, whylen, "no %s in .gopclntab (the program does not use crypto/tls)", sym);
		return -1;
	}
	off = dw_elf_vaddr_to_off(e, f->vaddr);
	/* the whole function in one loaded segment's file bytes */
	if (off < 0 || dw_elf_vaddr_to_off(e, f->vaddr + f->size - 1) != off + (int64_t)f->size - 1) {
		snprintf(why, whylen, "%s at 0x%llx (%llu bytes) is not in the file's loaded bytes", sym,
			 (unsigned long long)f->vaddr, (unsigned long long)f->size);
		return -1;
	}
	f->off = (uint64_t)off;
	if (dw_go_find_rets(e->buf + off, f->size, f->vaddr, rets, &f->nret, d, sizeof(d)) < 0) {
		snprintf(why, whylen, "%s: %s", sym, d);
		return -1;
	}
	for (unsigned i = 0; i < f->nret; i++)
		f->ret_off[i] = f->off + rets[i];
	f->probe_off = f->off;
	{
		uint32_t jls;

		if (dw_go_find_entry_branch(e->buf + off, f->size, f->vaddr, &jls) == 0)
			f->probe_off = f->off + jls;
	}
	memcpy(f->keep_off, f->ret_off, sizeof(f->keep_off));
	f->nkeep = f->nret;
	return 0;
}

/*
 * F's exits past its defers: their return at the closure's stack check (godefer.h),
 * where the closure is a function of the table with that branch, and the cookie has room; else
 * nothing changes (every RET probed).
 */
static void locate_defer(const struct dw_elf *e, const struct dw_go_pcln *p, struct dw_go_func *f)
{
	struct dw_go_defer g;
	uint64_t entry = 0, size = 0;
	uint32_t jls;
	int64_t coff, lo;
	const char *name;

	if (dw_go_find_defer_exits(e->buf + f->off, f->size, f->vaddr, &g) < 0)
		return;
	for (uint64_t i = 0; i < p->nfunc; i++)
		if (dw_go_pcln_func(p, i, &entry, &size, &name) == 0 && entry == g.closure)
			break;
	if (entry != g.closure || !size)
		return;
	coff = dw_elf_vaddr_to_off(e, entry);
	if (coff < 0 || dw_elf_vaddr_to_off(e, entry + size - 1) != coff + (int64_t)size - 1 ||
	    dw_go_find_entry_branch(e->buf + coff, size, entry, &jls) < 0)
		return;
	lo = (int64_t)f->vaddr - (int64_t)(entry + jls);
	if (g.result > DW_GO_DEFER_RESULT_MAX || f->size > DW_GO_DEFER_SIZE_MAX || lo > DW_GO_DEFER_LO_MAX ||
	    lo < -DW_GO_DEFER_LO_MAX)
		return;
	f->defer_off = (uint64_t)coff + jls;
	f->defer_result = g.result;
	f->defer_lo = lo;
	f->defer_exits = g.nexits;
	f->nkeep = g.nkeep;
	for (unsigned i = 0; i < g.nkeep; i++)
		f->keep_off[i] = f->off + g.keep[i];
}

int dw_go_probes_image(const void *buf, size_t len, struct dw_go_probes *out, char *why, size_t whylen)
{
	struct dw_elf e;
	struct dw_elf_sect s;
	struct dw_go_pcln p;
	char d[200];

	memset(out, 0, sizeof(*out));
	if (dw_elf_open(&e, buf, len, why, whylen) < 0)
		return -1;
	if (dw_go_buildinfo(&e, &out->build, why, whylen) < 0)
		return -1;
	if (dw_go_abi_ok(out->build.major, out->build.minor, e.machine, d, sizeof(d)) < 0) {
		snprintf(why, whylen, "%s: %s", out->build.version, d);
		return -1;
	}
	if (dw_go_pcln_open(&e, &p, d, sizeof(d)) < 0) {
		snprintf(why, whylen, "%s: %s", out->build.version, d);
		return -1;
	}
	out->pcln_magic = p.magic;
	out->has_symtab = dw_elf_section(&e, ".symtab", &s) == 0;
	if (locate(&e, &p, DW_GO_WRITE_SYM, &out->write, why, whylen) < 0 ||
	    locate(&e, &p, DW_GO_READ_SYM, &out->read, why, whylen) < 0)
		return -1;
	locate_defer(&e, &p, &out->write);
	locate_defer(&e, &p, &out->read);
	/* Read's arguments in its frame: its return alone is probed then (goattach.c); Write keeps its entry */
	if (out->read.defer_off) {
		uint32_t spill;

		if (dw_go_find_arg_spill(e.buf + out->read.off, out->read.size, out->read.vaddr, &spill) == 0 && spill &&
		    spill <= DW_GO_DEFER_SPILL_MAX)
			out->read.defer_spill = spill;
	}
	{
		uint64_t va, size;
		int64_t off;

		if (dw_go_pcln_find(&p, DW_GO_SHAKE_SYM, &va, &size) == 0 && (off = dw_elf_vaddr_to_off(&e, va)) > 0) {
			/* every Read and Write calls it: probed where the handshake runs, else at its stack
			 * check's branch, else its entry (goret.h) */
			uint32_t at;

			out->shake_off = (uint64_t)off;
			if (size && dw_elf_vaddr_to_off(&e, va + size - 1) == off + (int64_t)size - 1) {
				if (dw_go_find_slow_path(e.buf + off, size, va, &at) == 0 ||
				    dw_go_find_entry_branch(e.buf + off, size, va, &at) == 0)
					out->shake_off += at;
			}
		}
	}
	if (dw_go_layout_table(out->build.major, out->build.minor, &out->fd) == 0)
		out->fd_source = DW_GO_FD_TABLE;
	return 0;
}
