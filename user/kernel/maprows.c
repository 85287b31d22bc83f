// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The BPF maps read in place (maprows.h): the arrays mapped read-only and
 * grown as rows come into use, walked without a system call per row; and
 * the few maps read by lookup. Loading and attaching stay in loader.c,
 * which calls this file and is never called back from it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "depwatch.skel.h"
#include "kernel/maprows.h"
#include "host/log.h"

static void unmap_rows(struct dw_mapped *m);

int dw_bpf_for_each_slot(struct dw_bpf *b, dw_slot_fn fn, void *arg)
{
	unsigned n = dw_bpf_slots_used(b);
	int err = dw_bpf_map_details(b, n);

	if (err)
		return err;
	/* slot 0 (overflow) keeps the defaults; a slot with no dest yet is filled by the kernel */
	for (__u32 slot = 1; slot < n && slot < b->details.rows; slot++) {
		const struct dw_dest_key *dest = &dw_bpf_detail(b, slot)->dest;

		if (!dw_dest_key_published(slot, dest))
			continue;
		err = fn(slot, dest, arg);
		if (err)
			return err;
	}
	return 0;
}

/*
 * An array map read in place, read-only: without a system call per row.
 * Only the rows in use so far (and a quarter more) are mapped: the kernel
 * maps every page of a mapping at once, and the whole array in the
 * daemon's RSS would be its full size from the start. Makes m cover at
 * least rows 0 .. want-1 of the map behind fd (rows of row_size bytes,
 * max_rows of them), mapping it again, larger, when it does not yet.
 */
static int map_rows(struct dw_mapped *m, const char *name, int fd, size_t row_size, size_t max_rows,
		    unsigned want)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len, max_len;
	void *p;

	if (want <= m->rows)
		return 0;
	want += want / 4 + 64;
	max_len = (max_rows * row_size + page - 1) / page * page;
	len = ((size_t)want * row_size + page - 1) / page * page;
	if (len > max_len)
		len = max_len;
	/* the old mapping goes first: both at once would count twice in the peak RSS */
	unmap_rows(m);
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		dw_err("cannot map %s: %s", name, strerror(errno));
		return -errno;
	}
	m->ptr = p;
	m->len = len;
	m->rows = len / row_size < max_rows ? len / row_size : max_rows;
	return 0;
}

static void unmap_rows(struct dw_mapped *m)
{
	if (m->ptr)
		munmap((void *)m->ptr, m->len);
	*m = (struct dw_mapped){ 0 };
}

int dw_bpf_map_details(struct dw_bpf *b, unsigned rows)
{
	return map_rows(&b->details, "dest_details", bpf_map__fd(b->skel->maps.dest_details),
			sizeof(struct dw_dest_detail), b->max_dests, rows);
}

int dw_bpf_map_cpu_rows(struct dw_bpf *b, unsigned slots)
{
	/* one row here is a slot's ncpus rows: they are read together */
	return map_rows(&b->cpu_rows, "cpu_rows", bpf_map__fd(b->skel->maps.cpu_rows),
			sizeof(struct dw_cpu_row) * b->ncpus, b->max_dests, slots);
}

/* The per-CPU rows of caller rows 0 .. rows-1 (struct dw_caller_cpu_row), ncpus per row. */
static int map_caller_rows(struct dw_bpf *b, unsigned rows)
{
	return map_rows(&b->caller_rows, "caller_cpu_rows",
			bpf_map__fd(b->skel->maps.caller_cpu_rows),
			sizeof(struct dw_caller_cpu_row) * b->ncpus, DW_CALLER_ROWS_DEFAULT, rows);
}

int dw_bpf_map_callers(struct dw_bpf *b, unsigned *rows)
{
	/* row 0 and those handed out; racing claims may push the counter past the end */
	unsigned n = *(volatile __u32 *)&b->skel->bss->dw_callers_taken + 1;
	int err;

	if (n > DW_CALLER_ROWS_DEFAULT)
		n = DW_CALLER_ROWS_DEFAULT;
	*rows = 0;
	if (n <= 1)
		return 0;
	err = map_rows(&b->callers, "caller_stats", bpf_map__fd(b->skel->maps.caller_stats),
		       sizeof(struct dw_caller_stats), DW_CALLER_ROWS_DEFAULT, n);
	if (!err)
		err = map_caller_rows(b, n);
	if (err)
		return err;
	*rows = n < b->callers.rows ? n : b->callers.rows;
	if (*rows > b->caller_rows.rows)
		*rows = b->caller_rows.rows;
	return 0;
}

/* The pending table, likewise: up to the entries handed out so far. */
int dw_bpf_map_pending(struct dw_bpf *b, unsigned rows)
{
	return map_rows(&b->pending, "the pending table", bpf_map__fd(b->skel->maps.pending),
			sizeof(struct dw_pending_entry), b->max_conns, rows);
}

unsigned dw_bpf_slots_used(const struct dw_bpf *b)
{
	/* slot 0 and those handed out; racing claims may push the counter past the end */
	unsigned n = *(volatile __u32 *)&b->skel->bss->dw_slots_taken + 1;

	return n < b->max_dests ? n : b->max_dests;
}

int dw_bpf_scan_pending(struct dw_bpf *b, dw_pending_fn fn, void *arg)
{
	unsigned n = *(volatile __u32 *)&b->skel->bss->dw_pend_taken;
	int err = dw_bpf_map_pending(b, n);
	volatile const struct dw_pending_entry *entries;

	if (err)
		return err;
	entries = b->pending.ptr;
	if (n > b->pending.rows)
		n = b->pending.rows;	/* racing takers push the counter past the end */
	for (unsigned i = 0; i < n; i++) {
		struct dw_pending_entry e = entries[i];

		if ((!e.call_start_ns && !e.connect_start_ns) || e.slot >= b->details.rows)
			continue;
		fn(&e, &dw_bpf_detail(b, e.slot)->dest, arg);
	}
	return 0;
}

int dw_bpf_globals(struct dw_bpf *b, struct dw_global_stats *out)
{
	struct dw_global_stats per_cpu[b->ncpus];
	__u32 zero = 0;

	memset(out, 0, sizeof(*out));
	memset(per_cpu, 0, sizeof(per_cpu));	/* valgrind cannot see the kernel write per-CPU values */
	if (bpf_map_lookup_elem(b->globals_fd, &zero, per_cpu))
		return -errno;
	for (int i = 0; i < b->ncpus; i++) {
#define SUM_GLOBAL(field, metric, help) out->field += per_cpu[i].field;
		DW_GLOBAL_COUNTERS(SUM_GLOBAL)
#undef SUM_GLOBAL
	}
	return 0;
}

void dw_bpf_unmap_all(struct dw_bpf *b)
{
	unmap_rows(&b->pending);
	unmap_rows(&b->details);
	unmap_rows(&b->cpu_rows);
	unmap_rows(&b->caller_rows);
	unmap_rows(&b->callers);
}
