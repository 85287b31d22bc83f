// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "logic/base/lowerbound.h"
#include "logic/base/window.h"

/* first allocation of a slot; a busy destination rarely spans more buckets */
#define DW_WINDOW_MIN_PAIRS 4

int dw_window_init(struct dw_window *w, unsigned nslots)
{
	memset(w, 0, sizeof(*w));
	if (nslots == 0)
		return -EINVAL;
	w->slots = calloc(nslots, sizeof(*w->slots));
	if (!w->slots)
		return -ENOMEM;
	w->nslots = nslots;
	w->used = 1;
	return 0;
}

static void slot_clear(struct dw_window_slot *s)
{
	free(s->pairs);
	s->pairs = NULL;
	s->npairs = 0;
	s->cap = 0;
}

void dw_window_free(struct dw_window *w)
{
	unsigned i;

	for (i = 0; w->slots && i < w->nslots; i++)
		slot_clear(&w->slots[i]);
	free(w->slots);
	memset(w, 0, sizeof(*w));
}

/*
 * The dropped slot's memory is released rather than kept for reuse, so
 * memory follows current activity instead of the busiest interval ever.
 */
void dw_window_advance(struct dw_window *w)
{
	if (!w->slots)
		return;
	w->cur = (w->cur + 1) % w->nslots;
	if (w->used < w->nslots)
		w->used++;
	slot_clear(&w->slots[w->cur]);
}

DW_LOWER_BOUND(pair_lower_bound, struct dw_window_pair, bucket, unsigned)

/* Index of the first pair whose bucket is >= bucket. */
static unsigned slot_find(const struct dw_window_slot *s, unsigned bucket)
{
	unsigned n = s->npairs;

	/* the daemon adds buckets in ascending order: try the end first */
	if (n == 0 || s->pairs[n - 1].bucket < bucket)
		return n;
	return pair_lower_bound(s->pairs, n, bucket);
}

static int slot_grow(struct dw_window_slot *s)
{
	unsigned cap = s->cap ? s->cap * 2 : DW_WINDOW_MIN_PAIRS;
	struct dw_window_pair *p;

	/* a slot never holds more than one pair per bucket */
	if (cap > DW_HIST_BUCKETS)
		cap = DW_HIST_BUCKETS;
	p = realloc(s->pairs, cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	s->pairs = p;
	s->cap = cap;
	return 0;
}

static int slot_insert(struct dw_window_slot *s, unsigned at, unsigned bucket, uint64_t count)
{
	int err;

	if (s->npairs == s->cap) {
		err = slot_grow(s);
		if (err)
			return err;
	}
	memmove(&s->pairs[at + 1], &s->pairs[at], (s->npairs - at) * sizeof(s->pairs[0]));
	s->pairs[at].bucket = bucket;
	s->pairs[at].count = count;
	s->npairs++;
	return 0;
}

int dw_window_add(struct dw_window *w, unsigned bucket, uint64_t count)
{
	struct dw_window_slot *s;
	unsigned at;

	if (bucket >= DW_HIST_BUCKETS || !w->slots)
		return -EINVAL;
	if (count == 0)
		return 0; /* quiet buckets take no room */
	s = &w->slots[w->cur];
	at = slot_find(s, bucket);
	if (at < s->npairs && s->pairs[at].bucket == bucket) {
		s->pairs[at].count += count;
		return 0;
	}
	return slot_insert(s, at, bucket, count);
}

uint64_t dw_window_merge(const struct dw_window *w, uint64_t *dense)
{
	const struct dw_window_slot *s;
	uint64_t total = 0;
	unsigned i, j;

	memset(dense, 0, DW_HIST_BUCKETS * sizeof(*dense));
	for (i = 0; w->slots && i < w->nslots; i++) {
		s = &w->slots[i];
		for (j = 0; j < s->npairs; j++) {
			dense[s->pairs[j].bucket] += s->pairs[j].count;
			total += s->pairs[j].count;
		}
	}
	return total;
}

size_t dw_window_bytes(const struct dw_window *w)
{
	size_t bytes = 0;
	unsigned i;

	for (i = 0; w->slots && i < w->nslots; i++)
		bytes += (size_t)w->slots[i].cap * sizeof(struct dw_window_pair);
	return bytes;
}
