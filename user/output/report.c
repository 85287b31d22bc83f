// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "collect/collect.h"
#include "control/control_figs.h"
#include "discovery/tls/tls.h"
#include "logic/depset/depset.h"
#include "logic/base/hist.h"
#include "logic/view/series.h"
#include "logic/view/topn.h"
#include "logic/view/topview.h"
#include "output/report.h"
#include "output/report_view.h"
#include "logic/services/services.h"

/* A destination seen for the first time in this very poll has no dependency yet. */
static const char v_unassigned[] = "";


double rv_age_ms(uint64_t now, uint64_t start)
{
	return start && now > start ? (now - start) / 1e6 : 0;
}

static double pct_ms(const uint64_t *dense, double q)
{
	double ns = dw_hist_percentile_ns(dense, q);

	return ns < 0 ? -1 : ns / 1e6;
}

static void view_of(const struct dw_collector *c, const struct dw_dest *d, struct dest_view *v,
		    uint64_t *dense)
{
	memset(v, 0, sizeof(*v));
	v->d = d;
	dw_dest_format(&d->key, v->dest, sizeof(v->dest));
	v->window_calls = dw_window_merge(&d->call_win, dense);
	v->p50 = pct_ms(dense, 0.50);
	v->p90 = pct_ms(dense, 0.90);
	v->p99 = pct_ms(dense, 0.99);
	dw_window_merge(&d->connect_win, dense);
	v->connect_p50 = pct_ms(dense, 0.50);
	v->connect_p99 = pct_ms(dense, 0.99);
	v->oldest_ms = rv_age_ms(c->now_ns, d->oldest_call_ns);
	v->oldest_connect_ms = rv_age_ms(c->now_ns, d->oldest_connect_ns);
	v->burst = dw_dest_burst_timed(c, d);
}

/* Over a dependency's destinations: multiplexed connections, and whether any is burst-timed. */
uint64_t rv_dep_mux(const struct dw_collector *c, const struct dw_dep *dep, bool *burst)
{
	uint64_t conns = 0;

	*burst = false;
	for (const struct dw_dest *d = dep->dests; d; d = d->next_in_dep) {
		/* lists are rebuilt every poll; one that was not is not followed into freed rows */
		if (d < c->dests || d >= c->dests + c->cap)
			break;
		conns += d->sum.conns_multiplexed;
		*burst |= dw_dest_burst_timed(c, d);
	}
	return conns;
}

static int by_dest(const void *a, const void *b)
{
	return strcmp(((const struct dest_view *)a)->dest, ((const struct dest_view *)b)->dest);
}

/* The rows, sorted by destination text; the caller frees. */
struct dest_view *rv_views_of(const struct dw_collector *c, size_t *n)
{
	struct dest_view *views = calloc(c->count ? c->count : 1, sizeof(*views));
	uint64_t *dense = malloc(DW_HIST_BUCKETS * sizeof(*dense));

	*n = 0;
	if (!views || !dense) {
		free(views);
		free(dense);
		return NULL;
	}
	for (size_t i = 0; i < c->cap; i++)
		if (dw_dest_shown(&c->dests[i]))
			view_of(c, &c->dests[i], &views[(*n)++], dense);
	free(dense);
	qsort(views, *n, sizeof(*views), by_dest);
	return views;
}


static const char *dep_name(const struct dw_deps *deps, const struct dw_dest *d)
{
	return d->dep >= 0 ? deps->deps[d->dep].name : v_unassigned;
}

/*
 * An inbound row's HTTP/2 stream figures: ,"streams":N,"h2_conns":N,"h2_desync":N,"streams_untracked":N.
 * Special: a listener row counts requests this host answers; the outbound rows and the
 * dependencies give these with the other uniform figures (dw_dep_figs_json).
 */
static void json_streams(struct dw_buf *out, const struct dw_dest_stats *st)
{
	dw_buf_printf(out, ",\"streams\":%llu,\"h2_conns\":%llu,\"h2_desync\":%llu,\"streams_untracked\":%llu",
		      (unsigned long long)st->calls_streams, (unsigned long long)st->conns_h2,
		      (unsigned long long)st->h2_desync, (unsigned long long)st->streams_untracked);
}

/*
 * A row's TLS plaintext figure (issue 32): ,"tls_conns":N,"tls_plaintext":B, its
 * connections tied to a TLS session and so timed from the plaintext (doc/tls.md).
 */
static void json_tls(struct dw_buf *out, const struct dw_dest_stats *st)
{
	dw_buf_printf(out, ",\"tls_conns\":%llu,\"tls_plaintext\":%s", (unsigned long long)st->conns_tls,
		      st->conns_tls ? "true" : "false");
}

/*
 * A row's answers by class (outcome.h), with its HTTP/2 answers decoded by
 * the daemon (lateout.h): ,"answers":{"2xx":N,...},"failed_status":N,
 * "grpc":{...},"failed_grpc":N,"hpack_desync":N
 */
static void json_answers(struct dw_buf *out, const struct dw_dep_figs *f)
{
	dw_answers_json(out, f->answers, f->failed_status);
	dw_late_json(out, f->grpc, f->failed_grpc, f->hpack_desync);
}

static const char *const eject_state_names[] = { "in", "out", "probing" };

/* Its ejection (eject = on): whether it is out, until when (Unix time), how often, and why. */
static void json_ejection(struct dw_buf *out, const struct dw_dest *d, const struct dw_dep *dep,
			  uint64_t now)
{
	const struct dw_eject *e = &d->ej.e;
	bool judged = dep && d->ej.dep_id == dep->id && dep->id;
	bool ejected = judged && dw_dest_ejected(d, dep->id);
	struct timespec ts;

	dw_buf_printf(out, ",\"ejected\":%s,\"ejected_state\":\"%s\",\"ejected_until\":",
		      ejected ? "true" : "false", eject_state_names[judged ? e->state : DW_EJECT_IN]);
	if (ejected && e->state == DW_EJECT_OUT && e->until_ns > now) {
		clock_gettime(CLOCK_REALTIME, &ts);
		dw_json_num(out, ts.tv_sec + ts.tv_nsec / 1e9 + (e->until_ns - now) / 1e9, 3);
	} else {
		dw_buf_printf(out, "null");
	}
	dw_buf_printf(out, ",\"ejections\":%u,\"ejected_reason\":", judged ? e->ejections : 0);
	if (ejected)
		dw_buf_printf(out, "\"%s\"", dw_dest_eject_reason(&d->ej));
	else
		dw_buf_printf(out, "null");
	dw_buf_printf(out, ",\"aborted_eject\":%llu,\"own_slow_rate\":",
		      (unsigned long long)d->sum.conns_aborted_eject);
	if (judged)
		dw_json_num(out, dw_rate_or_zero(d->ej.j.slow_rate), 4);
	else
		dw_buf_printf(out, "null");
}

static void json_dest(struct dw_buf *out, const struct dest_view *v, const struct dw_deps *deps,
		      uint64_t now)
{
	const struct dw_dest *d = v->d;
	struct dw_dest_outcomes o = dw_dest_outcomes(d);
	struct dw_dep_figs f = { 0 };

	dw_dep_figs_add_dest(&f, d);
	dw_buf_printf(out, "{\"dest\":");
	dw_json_str(out, v->dest);
	dw_buf_printf(out, ",\"dependency\":");
	dw_json_str(out, dep_name(deps, d));
	dw_buf_printf(out, ",\"netns\":%u,\"calls\":%llu,\"failed\":%llu,\"dropped\":%llu,\"inflight\":%llu",
		      d->key.netns, (unsigned long long)o.calls, (unsigned long long)o.failed,
		      (unsigned long long)d->sum.calls_dropped, (unsigned long long)dw_dest_inflight(d));
	dw_json_field_opt(out, "oldest_inflight_ms", v->oldest_ms, 3);
	dw_buf_printf(out, ",\"window_calls\":%llu", (unsigned long long)v->window_calls);
	dw_json_field_opt(out, "p50_ms", v->p50, 3);
	dw_json_field_opt(out, "p90_ms", v->p90, 3);
	dw_json_field_opt(out, "p99_ms", v->p99, 3);
	dw_buf_printf(out,
		      ",\"connects\":%llu,\"connect_failures\":%llu,\"connect_refused\":%llu,"
		      "\"connect_timedout\":%llu,\"connecting\":%llu",
		      (unsigned long long)d->sum.connect_attempts,
		      (unsigned long long)dw_dest_connect_failures(d),
		      (unsigned long long)d->sum.connect_refused,
		      (unsigned long long)d->sum.connect_timedout,
		      (unsigned long long)dw_dest_connecting(d));
	dw_json_field_opt(out, "oldest_connecting_ms", v->oldest_connect_ms, 3);
	dw_json_field_opt(out, "connect_p50_ms", v->connect_p50, 3);
	dw_json_field_opt(out, "connect_p99_ms", v->connect_p99, 3);
	dw_buf_printf(out, ",\"retransmits\":%llu,\"connections\":%llu,"
		      "\"multiplexed_conns\":%llu,\"burst_calls\":%llu,\"burst_timings\":%s",
		      (unsigned long long)d->sum.retransmits,
		      (unsigned long long)dw_dest_conns_open(d),
		      (unsigned long long)d->sum.conns_multiplexed,
		      (unsigned long long)d->sum.calls_burst, v->burst ? "true" : "false");
	json_tls(out, &d->sum);
	dw_dep_figs_json(out, &f);
	json_answers(out, &f);
	json_ejection(out, d, dw_depset_at(deps, d->dep), now);
	dw_buf_printf(out, ",\"last_caller\":");
	if (!d->sum.last_conn_ns) {
		dw_buf_printf(out, "null}");
		return;
	}
	dw_buf_printf(out, "{\"pid\":%u,\"comm\":", d->sum.last_pid);
	dw_json_strn(out, d->sum.last_comm, sizeof(d->sum.last_comm));
	dw_buf_printf(out, "}}");
}

static void json_kernel(struct dw_buf *out, const struct dw_collector *c, const struct dw_run_info *info)
{
	dw_buf_printf(out,
		      "\"kernel\":{\"backend\":\"%s\",\"programs\":", info->backend);
	dw_json_str(out, info->programs);
	dw_buf_printf(out, ",\"dests_used\":%zu,\"dests_max\":%u", c->count, info->max_dests);
#define JSON_GLOBAL(field, metric, help) \
	dw_buf_printf(out, ",\"" #field "\":%llu", (unsigned long long)c->globals.field);
	DW_GLOBAL_COUNTERS(JSON_GLOBAL)
#undef JSON_GLOBAL
	dw_buf_printf(out, ",\"conns_max\":%u,\"polls\":%llu,\"refreshes\":%llu,\"poll_ms\":", info->max_conns,
		      (unsigned long long)c->polls, (unsigned long long)c->refreshes);
	dw_json_num(out, c->last_poll_ns / 1e6, 3);
	dw_buf_printf(out, ",\"rows_unstable\":%llu}", (unsigned long long)c->rows_unstable);
}

/* The control socket: clients connected now (the one asking among them), and those closed unanswered. */
static void json_control(struct dw_buf *out, const struct dw_control_figs *f)
{
	dw_buf_printf(out, ",\"control\":{\"clients\":%u,\"refused\":%llu}",
		      f ? f->clients : 0, f ? (unsigned long long)f->refused : 0ULL);
}

struct dep_callers rv_callers_of(const struct dw_caller_fig *callers, size_t ncallers, size_t *k,
				 unsigned dep)
{
	struct dep_callers cl = { callers + *k, 0 };

	while (*k < ncallers && callers[*k].dep < (int)dep)
		cl.v = callers + ++*k;
	while (*k < ncallers && callers[*k].dep == (int)dep) {
		cl.n++;
		++*k;
	}
	return cl;
}

/* One caller of a dependency (issue 16): its cgroup's name and kind, its figures. */
static void json_caller(struct dw_buf *out, const struct dw_collector *c, const struct dw_caller_fig *f,
			const char *other, uint64_t now)
{
	struct dw_cgname name;

	if (other) {
		memset(&name, 0, sizeof(name));
		snprintf(name.name, sizeof(name.name), "%s", other);
		name.kind = DW_CG_PATH;
	} else {
		dw_collect_caller_name(c, f->cgroup_id, &name);
	}
	dw_buf_printf(out, "{\"caller\":");
	dw_json_str(out, name.name);
	dw_buf_printf(out, ",\"kind\":\"%s\"", dw_cg_kind_name(name.kind));
	if (name.pod[0]) {
		dw_buf_printf(out, ",\"pod\":");
		dw_json_str(out, name.pod);
	}
	if (!other)
		dw_buf_printf(out, ",\"cgroup_id\":%llu", (unsigned long long)f->cgroup_id);
	dw_buf_printf(out, ",\"calls\":%llu,\"failed\":%llu,\"slow\":%llu,\"inflight\":%llu",
		      (unsigned long long)f->calls, (unsigned long long)f->failed,
		      (unsigned long long)f->slow, (unsigned long long)f->inflight);
	dw_json_field_opt(out, "oldest_inflight_ms", f->oldest_ns ? rv_age_ms(now, f->oldest_ns) : -1, 3);
	/* the window's, as the dependency's own: the same null with no call completed in it */
	dw_buf_printf(out, ",\"window_calls\":%llu", (unsigned long long)f->window_calls);
	dw_json_field_opt(out, "p50_ms", dw_caller_percentile_ns(f->hist, 0.50) / 1e6, 3);
	dw_json_field_opt(out, "p99_ms", dw_caller_percentile_ns(f->hist, 0.99) / 1e6, 3);
	dw_buf_putc(out, '}');
}

/*
 * A dependency's callers, most in flight first: the first DW_STATUS_CALLERS
 * on their own, the rest summed into one "~other" (callers_folded says how many).
 */
static void json_callers(struct dw_buf *out, const struct dw_collector *c, const struct dep_callers *cl,
			 uint64_t now)
{
	struct dw_caller_fig *other = NULL;
	size_t folded = 0;

	dw_buf_printf(out, ",\"callers\":[");
	for (size_t i = 0; cl && i < cl->n; i++) {
		if (i >= DW_STATUS_CALLERS) {
			if (!other) {
				other = calloc(1, sizeof(*other));
				if (!other)
					break;
			}
			dw_caller_fig_add(other, &cl->v[i]);
			folded++;
			continue;
		}
		if (i)
			dw_buf_putc(out, ',');
		json_caller(out, c, &cl->v[i], NULL, now);
	}
	if (other) {
		dw_buf_putc(out, ',');
		json_caller(out, c, other, DW_TOPN_OTHER, now);
		free(other);
	}
	dw_buf_printf(out, "],\"callers_folded\":%zu", folded);
}

static void json_dep(struct dw_buf *out, const struct dw_collector *c, const struct dw_deps *deps,
		     const struct dw_dep *dep, const struct dep_callers *cl, uint64_t now)
{
	bool burst;
	uint64_t mux = rv_dep_mux(c, dep, &burst);

	dw_buf_printf(out, "{\"name\":");
	dw_json_str(out, dep->name);
	dw_buf_printf(out, ",\"configured\":%s,\"breaker\":\"%s\",\"reason\":\"%s\",\"since_s\":",
		      dep->id ? "true" : "false", dw_breaker_state_name(dep->br.state),
		      dw_breaker_reason_name(dep->br.reason));
	dw_json_num(out, (now - dep->br.since_ns) / 1e9, 3);
	dw_buf_printf(out, ",\"slow_rate\":");
	dw_json_num(out, dw_rate_or_zero(dep->j.slow_rate), 4);
	dw_buf_printf(out, ",\"failure_rate\":");
	dw_json_num(out, dw_rate_or_zero(dep->j.failure_rate), 4);
	dw_buf_printf(out, ",\"decided\":");
	dw_json_num(out, dep->j.decided, 1);
	dw_buf_printf(out, ",\"stalled\":%s,\"hanging\":%u", dep->j.stalled ? "true" : "false",
		      dep->j.hanging);
	dw_buf_printf(out, ",\"calls\":%llu,\"failed\":%llu,\"slow\":%llu,\"inflight\":%llu,"
		      "\"max_inflight\":%u,\"destinations\":%u,\"connections\":%llu,"
		      "\"enforce\":%s,\"forced\":%s",
		      (unsigned long long)dep->fig.calls, (unsigned long long)dep->fig.failed,
		      (unsigned long long)dep->fig.slow, (unsigned long long)dep->fig.inflight,
		      dep->s->max_inflight, dep->ndests, (unsigned long long)dep->fig.conns,
		      dep->s->enforce_connect ? "true" : "false",
		      dep->enforce.forced >= 0 ? "true" : "false");
	/* enforce = abort, abort_after: the mode in effect (abort: connect without sock_destroy) */
	dw_buf_printf(out, ",\"enforce_mode\":\"%s\",\"abort_after_ms\":", dw_dep_enforce_mode(deps, dep));
	dw_json_num(out, dep->s->abort_after_ns / 1e6, 3);
	dw_buf_printf(out, ",\"aborted_breaker\":%llu,\"aborted_timeout\":%llu,\"calls_aborted\":%llu",
		      (unsigned long long)dep->fig.aborted_breaker,
		      (unsigned long long)dep->fig.aborted_timeout,
		      (unsigned long long)dep->fig.calls_aborted);
	dw_buf_printf(out, ",\"eject\":\"%s\",\"ejected_dests\":%u,\"aborted_eject\":%llu",
		      dep->id && dep->s->eject ? "on" : "off", dep->ejected_dests,
		      (unsigned long long)dep->fig.aborted_eject);
	dw_json_field_opt(out, "oldest_inflight_ms", rv_age_ms(now, dep->fig.oldest_call_ns), 3);
	dw_json_field_opt(out, "p50_ms", dw_dep_percentile_ms(dep, 0.50), 3);
	dw_json_field_opt(out, "p99_ms", dw_dep_percentile_ms(dep, 0.99), 3);
	dw_buf_printf(out, ",\"slow_call_ms\":");
	dw_json_num(out, dep->s->slow_call_ns / 1e6, 3);
	dw_buf_printf(out, ",\"started\":%llu,\"abandoned\":%llu,\"retries\":%llu",
		      (unsigned long long)dep->fig.started, (unsigned long long)dep->fig.abandoned,
		      (unsigned long long)dep->fig.retried);
	dw_json_field_opt(out, "retry_ratio", dep->rates.retry_ratio, 3);
	dw_json_field_opt(out, "call_rate", dep->rates.call_rate, 2);
	dw_json_field_opt(out, "call_rate_baseline", dep->rates.call_rate_baseline, 2);
	dw_buf_printf(out, ",\"retry_storm\":%s,\"multiplexed\":\"%s\",\"multiplexed_conns\":%llu,"
		      "\"burst_timings\":%s", dep->rates.retry_storm ? "true" : "false",
		      dep->s->judge_multiplexed ? "judge" : "ignore", (unsigned long long)mux,
		      burst ? "true" : "false");
	dw_dep_figs_json(out, &dep->fig);
	json_answers(out, &dep->fig);
	json_callers(out, c, cl, now);
	dw_buf_putc(out, '}');
}

static void json_listen(struct dw_buf *out, const struct dw_service *cfg)
{
	char listen[DW_CGROUP_PATH_MAX + 16];

	if (cfg->cgroup[0])
		snprintf(listen, sizeof(listen), "cgroup:%s", cfg->cgroup);
	else if (cfg->port_lo == cfg->port_hi)
		snprintf(listen, sizeof(listen), "%u", cfg->port_lo);
	else
		snprintf(listen, sizeof(listen), "%u-%u", cfg->port_lo, cfg->port_hi);
	dw_json_str(out, listen);
}

static void json_service(struct dw_buf *out, const struct dw_svc *svc, const struct dw_deps *deps,
			 uint64_t now)
{
	char summary[160];

	dw_buf_printf(out, "{\"name\":");
	dw_json_str(out, svc->name);
	dw_buf_printf(out, ",\"listen\":");
	json_listen(out, svc->cfg);
	dw_buf_printf(out, ",\"pool\":%u", svc->cfg->pool);
	dw_json_field_opt(out, "deadline_ms", svc->cfg->deadline_ns ? svc->cfg->deadline_ns / 1e6 : -1, 3);
	dw_buf_printf(out, ",\"level\":\"%s\",\"requests\":%llu,\"failed\":%llu,\"inflight\":%llu",
		      dw_pool_level_name(svc->fc.level), (unsigned long long)svc->requests,
		      (unsigned long long)svc->failed, (unsigned long long)svc->inflight);
	dw_json_field_opt(out, "oldest_inflight_ms", svc->oldest_ns ? rv_age_ms(now, svc->oldest_ns) : -1, 3);
	dw_json_field_opt(out, "rate", svc->arrival_rate, 2);
	dw_buf_printf(out, ",\"rising\":");
	dw_json_num(out, svc->fc.rising > 0 ? svc->fc.rising : 0, 2);
	dw_json_field_opt(out, "p50_ms", svc->p50_ms, 3);
	dw_json_field_opt(out, "p99_ms", svc->p99_ms, 3);
	dw_json_field_opt(out, "latency_ms", isinf(svc->latency_s) ? -1 : svc->latency_s * 1e3, 3);
	dw_buf_printf(out, ",\"latency_unbounded\":%s", isinf(svc->latency_s) ? "true" : "false");
	dw_json_field_opt(out, "exhausted_in_s", svc->fc.exhausted_in_s, 3);
	dw_json_field_opt(out, "path_p99_ms", svc->path_p99_ms, 3);
	dw_buf_printf(out, ",\"waiting\":[");
	for (unsigned k = 0; k < svc->nwaits; k++) {
		dw_buf_printf(out, "%s{\"dependency\":", k ? "," : "");
		dw_json_str(out, deps->deps[svc->waits[k].dep].name);
		dw_buf_printf(out, ",\"count\":%u}", svc->waits[k].count);
	}
	dw_svc_summary(svc, deps, summary, sizeof(summary));
	dw_buf_printf(out, "],\"waiting_total\":%u,\"summary\":", svc->waiting);
	dw_json_str(out, summary);
	dw_buf_printf(out, ",\"process\":");
	if (svc->pid) {
		dw_buf_printf(out, "{\"pid\":%u,\"comm\":", svc->pid);
		dw_json_strn(out, svc->comm, sizeof(svc->comm));
		dw_buf_printf(out, "}}");
	} else {
		dw_buf_printf(out, "null}");
	}
}

static void json_services(struct dw_buf *out, const struct dw_deps *deps,
			  const struct dw_services *svcs, uint64_t now)
{
	dw_buf_printf(out, ",\"services\":[");
	for (unsigned i = 0; i < svcs->n; i++) {
		if (i)
			dw_buf_putc(out, ',');
		json_service(out, &svcs->svc[i], deps, now);
	}
	dw_buf_printf(out, "]");
}

/* Every listening port with accepted connections: requests this host answers. */
static void json_inbound(struct dw_buf *out, const struct dw_collector *c,
			 const struct dw_services *svcs)
{
	uint64_t *dense = malloc(DW_HIST_BUCKETS * sizeof(*dense));
	bool first = true;

	dw_buf_printf(out, ",\"inbound\":[");
	for (const struct dw_dest *d = dw_collect_next(c, NULL, DW_ROW_LISTENER); dense && d;
	     d = dw_collect_next(c, d, DW_ROW_LISTENER)) {
		const struct dw_svc *svc;
		struct dw_listener_fig f;
		struct dw_dep_figs answers = { 0 };

		dw_listener_fig_of(d, &f);
		dw_dep_figs_add_dest(&answers, d);
		svc = dw_services_at_port(svcs, d->key.port);
		dw_buf_printf(out, "%s{\"port\":%u,\"netns\":%u,\"service\":", first ? "" : ",",
			      d->key.port, d->key.netns);
		first = false;
		if (svc)
			dw_json_str(out, svc->name);
		else
			dw_buf_printf(out, "null");
		dw_buf_printf(out, ",\"requests\":%llu,\"failed\":%llu,\"dropped\":%llu,\"inflight\":%llu,\"connections\":%llu",
			      (unsigned long long)f.requests, (unsigned long long)f.failed,
			      (unsigned long long)f.dropped, (unsigned long long)f.inflight,
			      (unsigned long long)f.connections);
		/* of the failed, requests whose connection closed unanswered (bpf/core/closing.bpf.h) */
		dw_buf_printf(out, ",\"failed_closed\":%llu", (unsigned long long)d->sum.calls_failed_closed);
		json_streams(out, &d->sum);
		json_tls(out, &d->sum);
		json_answers(out, &answers);
		dw_buf_printf(out, ",\"multiplexed_conns\":%llu", (unsigned long long)d->sum.conns_multiplexed);
		dw_json_field_opt(out, "oldest_inflight_ms", rv_age_ms(c->now_ns, d->oldest_call_ns), 3);
		dw_window_merge(&d->call_win, dense);
		dw_json_field_opt(out, "p50_ms", pct_ms(dense, 0.50), 3);
		dw_json_field_opt(out, "p99_ms", pct_ms(dense, 0.99), 3);
		dw_buf_printf(out, ",\"process\":");
		if (d->sum.last_pid) {
			dw_buf_printf(out, "{\"pid\":%u,\"comm\":", d->sum.last_pid);
			dw_json_strn(out, d->sum.last_comm, sizeof(d->sum.last_comm));
			dw_buf_printf(out, "}}");
		} else {
			dw_buf_printf(out, "null}");
		}
	}
	dw_buf_printf(out, "]");
	free(dense);
}

/*
 * --max-series for the destinations table (logic/view/series.h): the kept keep
 * their rows, in their order; the rest are summed into *f. Returns the rows kept.
 */
size_t rv_cap_views(struct dest_view *views, size_t n, const struct dw_deps *deps, unsigned cap,
		    struct folded_rows *f)
{
	struct dw_topn_item *items = n ? calloc(n, sizeof(*items)) : NULL;
	bool *fold = n ? calloc(n, sizeof(*fold)) : NULL;
	size_t kept = 0;

	memset(f, 0, sizeof(*f));
	if (!items || !fold) {
		free(items);
		free(fold);
		return n;
	}
	for (size_t i = 0; i < n; i++)
		items[i] = dw_series_dest_item(deps, views[i].d, views[i].window_calls, i);
	f->n = dw_series_fold(items, n, cap, fold);
	for (size_t i = 0; i < n; i++) {
		const struct dw_dest *d = views[i].d;
		struct dw_dest_outcomes o;

		if (!fold[i]) {
			views[kept++] = views[i];
			continue;
		}
		o = dw_dest_outcomes(d);
		f->calls += o.calls;
		f->failed += o.failed;
		f->inflight += dw_dest_inflight(d);
		f->connects += d->sum.connect_attempts;
		f->cfail += dw_dest_connect_failures(d);
	}
	free(fold);
	free(items);
	return kept;
}

/*
 * --max-series for the dependencies table (logic/view/series.h): a calloc'ed
 * flag per dependency index (true: folded), NULL when nothing is.
 * *nfolded and *sum: what was folded.
 */
bool *rv_fold_deps(const struct dw_deps *deps, unsigned cap, size_t *nfolded,
		   struct dw_dep_figs *sum)
{
	bool *fold = deps->n ? calloc(deps->n, sizeof(*fold)) : NULL;

	*nfolded = fold ? dw_series_fold_deps(deps, cap, fold) : 0;
	if (!*nfolded) {
		free(fold);
		return NULL;
	}
	for (unsigned i = 0; i < deps->n; i++)
		if (fold[i])
			dw_dep_figs_add(sum, &deps->deps[i].fig);
	return fold;
}

static void json_deps(struct dw_buf *out, const struct dw_collector *c, const struct dw_deps *deps,
		      uint64_t now, unsigned cap)
{
	struct dw_caller_fig *callers;
	size_t ncallers = dw_collect_callers(c, &callers), k = 0, nfolded = 0;
	struct dw_dep_figs sum = { 0 };
	bool *fold = cap ? rv_fold_deps(deps, cap, &nfolded, &sum) : NULL;
	bool first = true;

	dw_buf_printf(out, ",\"dependencies\":[");
	for (unsigned i = 0; i < deps->n; i++) {
		struct dep_callers cl = rv_callers_of(callers, ncallers, &k, i);
		if (!dw_dep_shown(&deps->deps[i]) || (fold && fold[i]))
			continue;
		if (!first)
			dw_buf_putc(out, ',');
		first = false;
		json_dep(out, c, deps, &deps->deps[i], &cl, now);
	}
	if (nfolded)
		dw_buf_printf(out, "%s{\"name\":\"" DW_TOPN_OTHER "\",\"configured\":false,\"folded\":%zu,"
			      "\"calls\":%llu,\"failed\":%llu,\"inflight\":%llu}", first ? "" : ",", nfolded,
			      (unsigned long long)sum.calls, (unsigned long long)sum.failed,
			      (unsigned long long)sum.inflight);
	dw_buf_printf(out, "],\"dependencies_folded\":%zu", nfolded);
	free(fold);
	free(callers);
}

void dw_report_json(struct dw_buf *out, const struct dw_collector *c, const struct dw_deps *deps,
		    const struct dw_services *svcs, const struct dw_run_info *info)
{
	size_t n;
	struct dest_view *views = rv_views_of(c, &n);
	struct folded_rows folded = { 0 };

	dw_buf_printf(out, "{\"uptime_s\":");
	dw_json_num(out, (c->now_ns - info->started_ns) / 1e9, 3);
	dw_buf_printf(out, ",\"interval_ms\":%llu,\"window_ms\":%llu,",
		      (unsigned long long)(info->interval_ns / 1000000),
		      (unsigned long long)(info->window_ns / 1000000));
	json_kernel(out, c, info);
	json_control(out, info->control);
	dw_tls_json(out, info->tls);
	json_deps(out, c, deps, c->now_ns, info->json_max_series);
	json_services(out, deps, svcs, c->now_ns);
	json_inbound(out, c, svcs);
	if (views && info->json_max_series)
		n = rv_cap_views(views, n, deps, info->json_max_series, &folded);
	dw_buf_printf(out, ",\"destinations\":[");
	for (size_t i = 0; views && i < n; i++) {
		if (i)
			dw_buf_putc(out, ',');
		json_dest(out, &views[i], deps, c->now_ns);
	}
	if (folded.n)
		dw_buf_printf(out, "%s{\"dest\":\"" DW_TOPN_OTHER "\",\"folded\":%zu,\"calls\":%llu,"
			      "\"failed\":%llu,\"inflight\":%llu,\"connects\":%llu,\"connect_failures\":%llu}",
			      n ? "," : "", folded.n, (unsigned long long)folded.calls,
			      (unsigned long long)folded.failed, (unsigned long long)folded.inflight,
			      (unsigned long long)folded.connects, (unsigned long long)folded.cfail);
	dw_buf_printf(out, "],\"destinations_folded\":%zu}\n", folded.n);
	free(views);
}

