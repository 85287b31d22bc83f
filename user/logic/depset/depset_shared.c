// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What depset.c (the dependencies, their judgement and breakers) and depset_eject.c
 * (outlier ejection's glue) both use: the output's events and breaker ops, a configured
 * dependency looked up by name, and the scratch space a judgement gathers its slices and
 * outstanding calls in. In a file of their own so that the calls run one way: depset.c calls
 * depset_eject.c for a dependency's ejection step, depset_eject.c never calls back into
 * depset.c, and both call this file, which calls neither.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "logic/depset/depset.h"
#include "logic/depset/depset_int.h"

/* Growing an output array; a full one drops the item and says so (out->oom). */
static void *grow(void *arr, unsigned n, unsigned *cap, size_t size)
{
	unsigned want = *cap ? *cap * 2 : 16;
	void *p;

	if (n < *cap)
		return arr;
	p = realloc(arr, (size_t)want * size);
	if (p)
		*cap = want;
	return p;
}

void dw_ds_emit(struct dw_depset_out *out, const struct dw_deps *deps, const struct dw_dep *dep,
		 struct dw_dep_event ev)
{
	struct dw_dep_event *p = grow(out->ev, out->nev, &out->capev, sizeof(*p));

	if (!p) {
		out->oom = true;
		return;
	}
	out->ev = p;
	ev.dep = dep - deps->deps;
	out->ev[out->nev++] = ev;
}

bool dw_ds_put_op(struct dw_depset_out *out, const struct dw_breaker_op *op)
{
	struct dw_breaker_op *p = grow(out->ops, out->nops, &out->capops, sizeof(*p));

	if (!p) {
		out->oom = true;
		return false;
	}
	out->ops = p;
	out->ops[out->nops++] = *op;
	return true;
}

void dw_depset_out_reset(struct dw_depset_out *out)
{
	out->nev = out->nops = 0;
	out->oom = false;
}

void dw_depset_out_free(struct dw_depset_out *out)
{
	free(out->ev);
	free(out->ops);
	memset(out, 0, sizeof(*out));
}

struct dw_dep *dw_ds_configured_named(const struct dw_deps *deps, const char *name)
{
	for (unsigned i = 0; i < deps->n; i++)
		if (deps->deps[i].used && deps->deps[i].id && !strcmp(deps->deps[i].name, name))
			return &deps->deps[i];
	return NULL;
}

void dw_ds_merge_slices(struct judge_scratch *js, const struct dw_dest *d, uint64_t now_slice)
{
	for (unsigned i = 0; i < d->nslices; i++) {
		const struct dw_slice_counts *sl = &d->slices[i];
		struct dw_slice_counts *acc = NULL;

		if (sl->slice + DW_SLICES <= now_slice)
			continue;	/* older than the kernel's ring reaches: a stale copy */
		for (unsigned k = 0; k < js->nslices && !acc; k++)
			if (js->slices[k].slice == sl->slice)
				acc = &js->slices[k];
		if (!acc) {
			if (js->nslices == DW_SLICES)
				continue;
			acc = &js->slices[js->nslices++];
			*acc = (struct dw_slice_counts){ .slice = sl->slice };
		}
		struct dw_slice_counts own = *sl;

		/* its HTTP/2 answers decoded since (lateout.h): failing ones move to failed */
		if (d->late)
			dw_late_slice_apply(d->late, sl->slice, &own);
		acc->started += own.started;
		acc->fast += own.fast;
		acc->slow += own.slow;
		acc->failed += own.failed;
	}
}

int dw_ds_merge_pending(struct judge_scratch *js, const struct dw_dest *d)
{
	/* pending_start is NULL until a call is outstanding */
	if (!d->pending_calls)
		return 0;
	if (js->npending + d->pending_calls > js->cap) {
		unsigned cap = (js->npending + d->pending_calls) * 2;
		uint64_t *p = realloc(js->pending, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		js->pending = p;
		js->cap = cap;
	}
	memcpy(js->pending + js->npending, d->pending_start, d->pending_calls * sizeof(uint64_t));
	js->npending += d->pending_calls;
	return 0;
}

/* What the scratch space gathered, as the judge's input. */
void dw_ds_scratch_input(const struct judge_scratch *js, struct dw_judge_input *in)
{
	in->slices = js->slices;
	in->nslices = js->nslices;
	in->pending_start_ns = js->pending;
	in->npending = js->npending;
}
