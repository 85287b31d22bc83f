// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>

#include "logic/depset/lateout.h"
#include "logic/judge/judge.h"

void dw_late_add(struct dw_late *l, const struct dw_hb_answer *a, const struct dw_status_set *fs,
		 uint32_t fg, uint64_t slow_call_ns)
{
	bool by_status, by_grpc;
	struct dw_late_slice *s;
	uint64_t slice;
	bool slow;

	if (a->desync) {
		l->desync++;
		return;
	}
	if (a->status >= 200 && a->status <= 599)
		l->answers[a->status / 100 - 2]++;
	if (a->grpc >= 0 && a->grpc <= DW_GRPC_N)
		l->grpc[a->grpc]++;
	by_status = a->status && dw_status_set_has(fs, a->status);
	by_grpc = a->grpc >= 0 && a->grpc < DW_GRPC_N && (fg >> a->grpc & 1);
	if (!by_status && !by_grpc)
		return;
	l->last_status = by_status ? a->status : 0;
	l->last_grpc = by_status ? 0 : a->grpc + 1;
	if (a->kfailed)
		return;	/* one the kernel counted failed already (a reset, a 5xx it could read) */
	if (!a->timed || !a->start_ns || a->end_ns < a->start_ns) {
		l->untimed++;
		return;
	}
	slow = slow_call_ns && a->end_ns - a->start_ns > slow_call_ns;
	if (by_status)
		l->moved_status++;
	else
		l->moved_grpc++;
	l->moved_slow += slow;
	slice = a->start_ns >> DW_SLICE_SHIFT;
	s = &l->sl[slice % DW_SLICES];
	if (s->slice != slice)
		*s = (struct dw_late_slice){ .slice = slice };
	if (slow)
		s->slow++;
	else
		s->fast++;
}

void dw_late_slice_apply(const struct dw_late *l, uint64_t slice, struct dw_slice_counts *acc)
{
	const struct dw_late_slice *s = &l->sl[slice % DW_SLICES];
	uint64_t fast, slow;

	if (s->slice != slice || (!s->fast && !s->slow))
		return;
	/* never below what the kernel counted: a slice read before its calls' ends were */
	fast = s->fast < acc->fast ? s->fast : acc->fast;
	slow = s->slow < acc->slow ? s->slow : acc->slow;
	acc->fast -= fast;
	acc->slow -= slow;
	acc->failed += fast + slow;
}

bool dw_late_outcome(const struct dw_late *l, char *buf, size_t len)
{
	if (l->last_status)
		snprintf(buf, len, "http_%d", l->last_status);
	else if (l->last_grpc > 0 && l->last_grpc <= DW_GRPC_N)
		snprintf(buf, len, "grpc_%s", dw_grpc_names[l->last_grpc - 1]);
	else
		return false;
	return true;
}

void dw_late_json(struct dw_buf *out, const uint64_t *grpc, uint64_t failed_grpc, uint64_t desync)
{
	bool any = false;

	dw_buf_printf(out, ",\"grpc\":{");
	for (int c = 0; c <= DW_GRPC_N; c++) {
		if (!grpc[c])
			continue;
		dw_buf_printf(out, "%s\"%s\":%llu", any ? "," : "", c < DW_GRPC_N ? dw_grpc_names[c] : "other",
			      (unsigned long long)grpc[c]);
		any = true;
	}
	dw_buf_printf(out, "},\"failed_grpc\":%llu,\"hpack_desync\":%llu", (unsigned long long)failed_grpc,
		      (unsigned long long)desync);
}
