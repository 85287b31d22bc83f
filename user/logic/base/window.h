/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Sliding window of histogram deltas: one slot per poll interval, the
 * current slot plus up to nslots - 1 older ones. Slots are sparse, so a
 * destination that is quiet costs a slot struct per interval and no more.
 */
#ifndef DW_WINDOW_H
#define DW_WINDOW_H

#include <stdint.h>

#include "logic/base/dwtypes.h"

struct dw_window_pair {
	uint32_t bucket;
	uint64_t count;
};

struct dw_window_slot {
	struct dw_window_pair *pairs; /* sorted by bucket, no duplicates, no zero counts */
	unsigned npairs;
	unsigned cap;
};

struct dw_window {
	struct dw_window_slot *slots; /* ring of nslots */
	unsigned nslots;
	unsigned used; /* slots holding data of the window, 1..nslots */
	unsigned cur;  /* index of the current slot */
};

/* 0, -EINVAL for nslots == 0, -ENOMEM. On error w is safe to free. */
int dw_window_init(struct dw_window *w, unsigned nslots);

/* Frees everything; w may then be freed again or re-initialised. */
void dw_window_free(struct dw_window *w);

/* Starts a new, empty current slot, dropping the oldest when all nslots are used. */
void dw_window_advance(struct dw_window *w);

/*
 * Adds count to bucket in the current slot. 0, -EINVAL for a bucket out of
 * range, -ENOMEM (the slot is unchanged).
 */
int dw_window_add(struct dw_window *w, unsigned bucket, uint64_t count);

/* Zeroes dense[DW_HIST_BUCKETS], adds every slot into it, returns the total. */
uint64_t dw_window_merge(const struct dw_window *w, uint64_t *dense);

/* Bytes of pair storage currently allocated, for memory accounting. */
size_t dw_window_bytes(const struct dw_window *w);

#endif /* DW_WINDOW_H */
