// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * depset's inside, shared by its files: depset.c (the dependencies, their
 * judgement and breakers), depset_eject.c (outlier ejection's glue) and
 * depset_shared.c (what both use). Calls run one way: depset.c -> depset_eject.c,
 * both -> depset_shared.c. Not for anyone else: the interface is depset.h.
 */
#ifndef DW_DEPSET_INT_H
#define DW_DEPSET_INT_H
#include "logic/depset/depset.h"

/* Scratch space for one dependency's merged slices and outstanding calls. */
struct judge_scratch {
	struct dw_slice_counts slices[DW_SLICES];
	unsigned nslices;
	uint64_t *pending;
	unsigned npending, cap;
};

/* depset_shared.c */
void dw_ds_emit(struct dw_depset_out *out, const struct dw_deps *deps, const struct dw_dep *dep,
		struct dw_dep_event ev);
bool dw_ds_put_op(struct dw_depset_out *out, const struct dw_breaker_op *op);
struct dw_dep *dw_ds_configured_named(const struct dw_deps *deps, const char *name);
void dw_ds_merge_slices(struct judge_scratch *js, const struct dw_dest *d, uint64_t now_slice);
int dw_ds_merge_pending(struct judge_scratch *js, const struct dw_dest *d);
void dw_ds_scratch_input(const struct judge_scratch *js, struct dw_judge_input *in);
/* A step of the ejection of dep's destinations (depset_eject.c), after its breaker's. */
void dw_ds_eject_dep(struct dw_deps *deps, struct dw_dep *dep, struct judge_scratch *js,
		     uint64_t now, struct dw_depset_out *out);
#endif
