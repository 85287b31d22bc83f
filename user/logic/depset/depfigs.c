// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stddef.h>
#include "logic/depset/depfigs.h"

static void older(uint64_t *oldest, uint64_t start_ns)
{
	if (start_ns && (!*oldest || start_ns < *oldest))
		*oldest = start_ns;
}

/* a - b, never below 0 */
static uint64_t minus(uint64_t a, uint64_t b)
{
	return a - (b < a ? b : a);
}

struct dw_dest_outcomes dw_dest_outcomes(const struct dw_dest *d)
{
	const struct dw_late *l = d->late;
	uint64_t moved = l ? l->moved_status + l->moved_grpc : 0;

	return (struct dw_dest_outcomes){
		.calls = minus(d->sum.calls_completed, moved),
		.failed = d->sum.calls_failed + moved,
		.slow = minus(d->sum.calls_slow, l ? l->moved_slow : 0),
	};
}

/* HTTP/2 answers decoded after their calls: their classes and codes (the moves: dw_dest_outcomes). */
static void add_late(struct dw_dep_figs *f, const struct dw_late *l)
{
	for (unsigned i = 0; i < 4; i++)
		f->answers[DW_ANS_2xx + i] += l->answers[i];
	f->failed_status += l->moved_status;
	for (unsigned i = 0; i <= DW_GRPC_N; i++)
		f->grpc[i] += l->grpc[i];
	f->failed_grpc += l->moved_grpc;
	f->hpack_desync += l->desync;
}

void dw_dep_figs_add_dest(struct dw_dep_figs *f, const struct dw_dest *d)
{
	struct dw_dest_outcomes o = dw_dest_outcomes(d);

	f->calls += o.calls;
	f->failed += o.failed;
	f->slow += o.slow;
	f->inflight += dw_dest_inflight(d);
	f->conns += dw_dest_conns_open(d);
	f->connects += d->sum.connect_attempts;
	f->connect_failures += dw_dest_connect_failures(d);
	f->aborted_breaker += d->sum.conns_aborted_breaker;
	f->aborted_eject += d->sum.conns_aborted_eject;
	f->aborted_timeout += d->sum.conns_aborted_timeout;
	f->calls_aborted += d->sum.calls_aborted;
	f->started += d->sum.calls_started;
	f->abandoned += d->sum.calls_abandoned;
	f->retried += d->sum.calls_retried;
#define ADD_FIG(field, stat, json, metric, when, help) f->field += d->sum.stat;
	DW_DEST_FIGS(ADD_FIG)
#undef ADD_FIG
	dw_answers_add(f->answers, &d->sum);
	f->failed_status += d->sum.calls_failed_status;
	if (d->late)
		add_late(f, d->late);
	f->call_ns_sum += d->sum.call_ns_sum;
	f->connect_ns_sum += d->sum.connect_ns_sum;
	for (unsigned i = 0; i < DW_HIST_COARSE; i++) {
		f->cum_call[i] += d->cum_call[i];
		f->cum_connect[i] += d->cum_connect[i];
	}
	older(&f->oldest_call_ns, d->oldest_call_ns);
}

/* The counts: every field of struct dw_dep_figs after oldest_call_ns. */
#define FIRST_COUNT offsetof(struct dw_dep_figs, calls)
#define NCOUNTS ((sizeof(struct dw_dep_figs) - FIRST_COUNT) / sizeof(uint64_t))

void dw_dep_figs_add(struct dw_dep_figs *a, const struct dw_dep_figs *b)
{
	uint64_t *sum = (uint64_t *)((char *)a + FIRST_COUNT);
	const uint64_t *add = (const uint64_t *)((const char *)b + FIRST_COUNT);

	for (size_t i = 0; i < NCOUNTS; i++)
		sum[i] += add[i];
	older(&a->oldest_call_ns, b->oldest_call_ns);
}

void dw_dep_figs_json(struct dw_buf *out, const struct dw_dep_figs *f)
{
#define JSON_FIG(field, stat, json, metric, when, help) \
	dw_buf_printf(out, ",\"" json "\":%llu", (unsigned long long)f->field);
	DW_DEST_FIGS(JSON_FIG)
#undef JSON_FIG
}
