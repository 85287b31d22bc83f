/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Reading the BPF maps (maprows.c): the arrays mapped in place, the
 * destination slots, the pending table, the global counters.
 *
 * Apart from loader.h so that the two go one way: loader.c maps the first
 * rows at start and unmaps at stop (it includes this), while reading the
 * maps needs only struct dw_bpf (bpfstate.h), nothing of the loading and
 * attaching; maprows.c includes this and never loader.h.
 */
#ifndef DW_MAPROWS_H
#define DW_MAPROWS_H

#include "kernel/bpfstate.h"
#include "logic/base/dwtypes.h"

/*
 * Calls fn for every destination slot in use (not slot 0, the overflow),
 * with the destination the kernel keeps in it; stops at fn's first error.
 */
typedef int (*dw_slot_fn)(__u32 slot, const struct dw_dest_key *dest, void *arg);
int dw_bpf_for_each_slot(struct dw_bpf *b, dw_slot_fn fn, void *arg);

/* Calls fn for each connection with a call or a connect outstanding, with its destination. */
typedef void (*dw_pending_fn)(const struct dw_pending_entry *e, const struct dw_dest_key *dest, void *arg);
int dw_bpf_scan_pending(struct dw_bpf *b, dw_pending_fn fn, void *arg);

/* Makes b->details cover at least rows 0 .. rows-1 (the mapping may move). */
int dw_bpf_map_details(struct dw_bpf *b, unsigned rows);

/* Makes b->cpu_rows cover at least slots 0 .. slots-1 (the mapping may move). */
int dw_bpf_map_cpu_rows(struct dw_bpf *b, unsigned slots);
/* Rows of dest_stats and dest_details that may be in use: slots 0 .. n-1. */
unsigned dw_bpf_slots_used(const struct dw_bpf *b);

/*
 * The caller rows (issue 16) that may be in use, mapped: *rows set to how
 * many of b->callers to read (row 0 is none and stays zero).
 */
int dw_bpf_map_callers(struct dw_bpf *b, unsigned *rows);

/* Makes b->pending cover at least its rows 0 .. rows-1 (the mapping may move). */
int dw_bpf_map_pending(struct dw_bpf *b, unsigned rows);

/* Unmaps every array mapped so far (at stop). */
void dw_bpf_unmap_all(struct dw_bpf *b);

/*
 * The mapped rows, typed: the caller keeps to the rows mapped (slot <
 * b->details.rows and so on), and reads again after a dw_bpf_map_*() call.
 */
static inline const struct dw_dest_detail *dw_bpf_detail(const struct dw_bpf *b, unsigned slot)
{
	return (const struct dw_dest_detail *)b->details.ptr + slot;
}

/* Slot slot's per-CPU rows, ncpus of them. */
static inline const struct dw_cpu_row *dw_bpf_cpu_rows(const struct dw_bpf *b, unsigned slot)
{
	return (const struct dw_cpu_row *)b->cpu_rows.ptr + (size_t)slot * b->ncpus;
}

static inline const struct dw_caller_stats *dw_bpf_caller(const struct dw_bpf *b, unsigned r)
{
	return (const struct dw_caller_stats *)b->callers.ptr + r;
}

/* Caller row r's per-CPU rows, ncpus of them. */
static inline const struct dw_caller_cpu_row *dw_bpf_caller_cpu_rows(const struct dw_bpf *b,
								       unsigned r)
{
	return (const struct dw_caller_cpu_row *)b->caller_rows.ptr + (size_t)r * b->ncpus;
}

/* Sums the per-CPU global counters. */
int dw_bpf_globals(struct dw_bpf *b, struct dw_global_stats *out);

#endif /* DW_MAPROWS_H */
