// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* `depwatch status` as a table, and the TSV answer `depwatch top` reads. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collect/collect.h"
#include "control/control_figs.h"
#include "discovery/tls/tls.h"
#include "logic/depset/depset.h"
#include "logic/base/hist.h"
#include "logic/base/parse.h"
#include "logic/view/topn.h"
#include "logic/view/topview.h"
#include "output/report.h"
#include "output/report_view.h"
#include "logic/services/services.h"

#define CELL_LEN 16

/* A duration cell (dw_format_ms_cell); burst: marked as burst timings, "12.3ms*". */
static const char *cell(double ms, bool burst, char buf[CELL_LEN])
{
	size_t n = strlen(dw_format_ms_cell(ms, buf, CELL_LEN));

	if (burst && ms >= 0)
		snprintf(buf + n, CELL_LEN - n, "%s", BURST_MARK);
	return buf;
}

static void text_row(struct dw_buf *out, const struct dest_view *v)
{
	const struct dw_dest *d = v->d;
	struct dw_dest_outcomes o = dw_dest_outcomes(d);
	char oldest[CELL_LEN], p50[CELL_LEN], p90[CELL_LEN], p99[CELL_LEN];

	/* a fixed layout (120 columns): calls and connections; the uniform figures (DW_DEST_FIGS) are the JSON's */
	dw_buf_printf(out, "%-24.24s %8llu %6llu %5llu %7s %7s %7s %7s %7llu %5llu %5llu %6llu %5llu ",
		      v->dest, (unsigned long long)o.calls, (unsigned long long)o.failed,
		      (unsigned long long)dw_dest_inflight(d),
		      cell(d->oldest_call_ns ? v->oldest_ms : -1, false, oldest),
		      cell(v->p50, v->burst, p50),
		      cell(v->p90, v->burst, p90),
		      cell(v->p99, v->burst, p99),
		      (unsigned long long)d->sum.connect_attempts,
		      (unsigned long long)dw_dest_connect_failures(d),
		      (unsigned long long)dw_dest_connecting(d),
		      (unsigned long long)d->sum.retransmits,
		      (unsigned long long)d->sum.conns_multiplexed);
	if (d->sum.last_conn_ns) {
		dw_buf_printf(out, "%u/", d->sum.last_pid);
		dw_escape_text(out, d->sum.last_comm, sizeof(d->sum.last_comm));
	}
	dw_buf_putc(out, '\n');
}

/* Returns whether its percentiles are marked as burst timings. */
static bool text_dep(struct dw_buf *out, const struct dw_collector *c, const struct dw_dep *dep,
		     uint64_t now)
{
	char oldest[CELL_LEN], p50[CELL_LEN], p99[CELL_LEN];
	double oldest_ms = dep->fig.oldest_call_ns ? rv_age_ms(now, dep->fig.oldest_call_ns) : -1;
	bool burst;

	rv_dep_mux(c, dep, &burst);

	dw_buf_printf(out, "%-24.24s %-9s %-12s %5.1f%% %5.1f%% %8llu %6llu %5llu %7s %7s %7s\n", dep->name,
		      dw_breaker_state_name(dep->br.state),
		      dep->br.state == DW_BREAKER_CLOSED ? "" : dw_breaker_reason_name(dep->br.reason),
		      100 * dw_rate_or_zero(dep->j.slow_rate),
		      100 * dw_rate_or_zero(dep->j.failure_rate),
		      (unsigned long long)dep->fig.calls, (unsigned long long)dep->fig.failed,
		      (unsigned long long)dep->fig.inflight,
		      cell(oldest_ms, false, oldest),
		      cell(dw_dep_percentile_ms(dep, 0.50), burst, p50),
		      cell(dw_dep_percentile_ms(dep, 0.99), burst, p99));
	return burst;
}

/* Callers shown under each dependency in the status table. */
#define DW_TEXT_CALLERS 3

/* Under a dependency's line: its top callers (most in flight first), in the same columns. */
static void text_callers(struct dw_buf *out, const struct dw_collector *c, const struct dep_callers *cl,
			 uint64_t now)
{
	char oldest[CELL_LEN], p50[CELL_LEN], p99[CELL_LEN];
	struct dw_cgname name;
	int pad;

	for (size_t i = 0; i < cl->n && i < DW_TEXT_CALLERS; i++) {
		const struct dw_caller_fig *f = &cl->v[i];

		dw_collect_caller_name(c, f->cgroup_id, &name);
		dw_buf_printf(out, "  <- ");
		pad = (int)out->len;
		dw_escape_text(out, name.name, 52);
		pad = 56 - ((int)out->len - pad);
		dw_buf_printf(out, "%*s %8llu %6llu %5llu %7s %7s %7s\n", pad > 0 ? pad : 1, "",
			      (unsigned long long)f->calls, (unsigned long long)f->failed,
			      (unsigned long long)f->inflight,
			      cell(f->oldest_ns ? rv_age_ms(now, f->oldest_ns) : -1, false, oldest),
			      cell(dw_caller_percentile_ns(f->hist, 0.50) / 1e6, false, p50),
			      cell(dw_caller_percentile_ns(f->hist, 0.99) / 1e6, false, p99));
	}
	if (cl->n > DW_TEXT_CALLERS)
		dw_buf_printf(out, "  <- (%zu more callers)\n", cl->n - DW_TEXT_CALLERS);
}

/*
 * What the HTTP/2 stream layer could not do for a dependency (doc/callmodel.md): connections whose
 * frames it lost step in (their calls since are bursts), streams it had no room to time.
 */
static void text_h2_note(struct dw_buf *out, const struct dw_dep *dep)
{
	if (!dw_dep_shown(dep) || (!dep->fig.h2_desync && !dep->fig.streams_untracked))
		return;
	dw_buf_printf(out, "warning: ");
	dw_escape_text(out, dep->name, strlen(dep->name));
	dw_buf_printf(out, ": HTTP/2: %llu of %llu connections lost step (h2_desync: bursts since), "
		      "%llu streams not timed (streams_untracked)\n",
		      (unsigned long long)dep->fig.h2_desync, (unsigned long long)dep->fig.h2_conns,
		      (unsigned long long)dep->fig.streams_untracked);
}

/*
 * A dependency's answers by class (doc/callmodel.md, outcomes) where any was read, and HTTP/2's gRPC
 * codes: a line under the table, not a column of it (most dependencies are not HTTP).
 */
static void text_answers_note(struct dw_buf *out, const struct dw_dep *dep)
{
	uint64_t any = 0;

	for (int k = 0; k < DW_ANS_N; k++)
		any += dep->fig.answers[k];
	if (!dw_dep_shown(dep) || !any)
		return;
	dw_buf_printf(out, "answers: ");
	dw_escape_text(out, dep->name, strlen(dep->name));
	dw_buf_printf(out, ":");
	for (int k = 0; k < DW_ANS_N; k++)
		if (dep->fig.answers[k])
			dw_buf_printf(out, " %s %llu", dw_answer_names[k],
				      (unsigned long long)dep->fig.answers[k]);
	dw_buf_printf(out, " (failed by status %llu)", (unsigned long long)dep->fig.failed_status);
	/* HTTP/2's gRPC codes (lateout.h), the codes seen */
	for (int k = 0, any = 0; k <= DW_GRPC_N; k++) {
		if (!dep->fig.grpc[k])
			continue;
		dw_buf_printf(out, "%s %s %llu", any++ ? "" : "; grpc:", k < DW_GRPC_N ? dw_grpc_names[k] : "other",
			      (unsigned long long)dep->fig.grpc[k]);
	}
	if (dep->fig.failed_grpc || dep->fig.hpack_desync)
		dw_buf_printf(out, " (failed by code %llu, hpack_desync %llu)",
			      (unsigned long long)dep->fig.failed_grpc, (unsigned long long)dep->fig.hpack_desync);
	dw_buf_putc(out, '\n');
}

/*
 * Of a dependency's failed calls, those its connection's end failed (the peer's FIN or reset, a
 * timeout: failed_closed, issue 50), where there are any: a line under the table, as the answers'
 * failures by status have theirs; told apart from the caller's own closes (abandoned, the JSON's).
 */
static void text_failed_note(struct dw_buf *out, const struct dw_dep *dep)
{
	if (!dw_dep_shown(dep) || !dep->fig.failed_closed)
		return;
	dw_buf_printf(out, "failed: ");
	dw_escape_text(out, dep->name, strlen(dep->name));
	dw_buf_printf(out, ": %llu of %llu failed calls ended by their connection's close (failed_closed)\n",
		      (unsigned long long)dep->fig.failed_closed, (unsigned long long)dep->fig.failed);
}

/*
 * DNS over UDP (issue 35) where the dependency had queries: one line under the table, what an
 * on-call reads first about a resolver (its timeouts and SERVFAIL/REFUSED answers fail calls,
 * NXDOMAIN answers do not), since start. One per dependency shown, none for folded ones: bounded.
 */
static void text_dns_note(struct dw_buf *out, const struct dw_dep *dep)
{
	if (!dw_dep_shown(dep) || !dep->fig.dns_queries)
		return;
	dw_buf_printf(out, "dns: ");
	dw_escape_text(out, dep->name, strlen(dep->name));
	dw_buf_printf(out, ": %llu queries, %llu timeouts, %llu SERVFAIL/REFUSED, %llu NXDOMAIN\n",
		      (unsigned long long)dep->fig.dns_queries, (unsigned long long)dep->fig.dns_timeouts,
		      (unsigned long long)dep->fig.dns_rcode_failed, (unsigned long long)dep->fig.dns_nxdomain);
}

/* The first destination of dep ejected from it (eject = on) from d on, or NULL. */
static const struct dw_dest *ejected_from(const struct dw_dep *dep, const struct dw_dest *d)
{
	for (; d && dep->ejected_dests; d = d->next_in_dep)
		if (dw_dest_ejected(d, dep->id))
			return d;
	return NULL;
}

/* Each destination ejected from the dependency (eject = on), and until when. */
static void text_eject_note(struct dw_buf *out, const struct dw_dep *dep, uint64_t now)
{
	char dest[64];

	for (const struct dw_dest *d = ejected_from(dep, dep->dests); d; d = ejected_from(dep, d->next_in_dep)) {
		const struct dw_eject *e = &d->ej.e;

		dw_dest_format(&d->key, dest, sizeof(dest));
		dw_buf_printf(out, "warning: ");
		dw_escape_text(out, dep->name, strlen(dep->name));
		dw_buf_printf(out, ": %s ejected (%s, ejection %u)", dest, dw_dest_eject_reason(&d->ej), e->ejections);
		if (e->state == DW_EJECT_OUT && e->until_ns > now)
			dw_buf_printf(out, ", probed in %.1fs\n", (e->until_ns - now) / 1e9);
		else
			dw_buf_printf(out, ", probing\n");
	}
}

/* Returns whether a row is marked as burst timings. */
static bool text_deps(struct dw_buf *out, const struct dw_collector *c, const struct dw_deps *deps,
		      uint64_t now, unsigned cap)
{
	struct dw_caller_fig *callers;
	size_t ncallers = dw_collect_callers(c, &callers), k = 0, nfolded;
	struct dw_dep_figs sum = { 0 };
	bool *fold = rv_fold_deps(deps, cap, &nfolded, &sum);
	bool burst = false;

	dw_buf_printf(out, "%-24s %-9s %-12s %6s %6s %8s %6s %5s %7s %7s %7s\n", "DEPENDENCY",
		      "BREAKER", "REASON", "SLOW", "FAIL", "CALLS", "FAILED", "INFL", "OLDEST", "P50",
		      "P99");
	for (unsigned i = 0; i < deps->n; i++) {
		struct dep_callers cl = rv_callers_of(callers, ncallers, &k, i);
		if (!dw_dep_shown(&deps->deps[i]) || (fold && fold[i]))
			continue;
		burst |= text_dep(out, c, &deps->deps[i], now);
		text_callers(out, c, &cl, now);
	}
	if (nfolded)
		dw_buf_printf(out, "%-24.24s %-9s %-12s %6s %6s %8llu %6llu %5llu %7s %7s %7s (%zu dependencies)\n",
			      DW_TOPN_OTHER, "", "", "", "", (unsigned long long)sum.calls,
			      (unsigned long long)sum.failed, (unsigned long long)sum.inflight, "-", "-", "-",
			      nfolded);
	for (unsigned i = 0; i < deps->n; i++) {
		text_h2_note(out, &deps->deps[i]);
		text_answers_note(out, &deps->deps[i]);
		if (!fold || !fold[i]) {
			text_failed_note(out, &deps->deps[i]);
			text_dns_note(out, &deps->deps[i]);
		}
		if (dw_dep_shown(&deps->deps[i]))
			text_eject_note(out, &deps->deps[i], now);
	}
	free(fold);
	free(callers);
	dw_buf_putc(out, '\n');
	return burst;
}

static void text_services(struct dw_buf *out, const struct dw_deps *deps,
			  const struct dw_services *svcs)
{
	char summary[160], p99[CELL_LEN];

	if (!svcs->n)
		return;
	dw_buf_printf(out, "%-24s %-9s %6s %8s %7s %9s %8s  %s\n", "SERVICE", "POOL", "INFL", "RATE",
		      "P99", "RISING", "EXHAUST", "WAITING");
	for (unsigned i = 0; i < svcs->n; i++) {
		const struct dw_svc *svc = &svcs->svc[i];
		char pool[16] = "-", exhaust[16] = "-";

		if (svc->cfg->pool)
			snprintf(pool, sizeof(pool), "%u", svc->cfg->pool);
		if (svc->fc.exhausted_in_s >= 0)
			snprintf(exhaust, sizeof(exhaust), "%.1fs", svc->fc.exhausted_in_s);
		dw_svc_summary(svc, deps, summary, sizeof(summary));
		dw_buf_printf(out, "%-24.24s %-9s %6llu %6.1f/s %7s %7.1f/s %8s  %s%s%s\n", svc->name, pool,
			      (unsigned long long)svc->inflight,
			      svc->arrival_rate > 0 ? svc->arrival_rate : 0,
			      cell(svc->p99_ms, false, p99),
			      svc->fc.rising > 0 ? svc->fc.rising : 0, exhaust, summary,
			      svc->fc.level ? "  " : "", svc->fc.level ? dw_pool_level_name(svc->fc.level) : "");
	}
	dw_buf_putc(out, '\n');
}

void dw_report_text(struct dw_buf *out, const struct dw_collector *c, const struct dw_deps *deps,
		    const struct dw_services *svcs, const struct dw_run_info *info)
{
	size_t n;
	struct dest_view *views = rv_views_of(c, &n);
	struct folded_rows folded = { 0 };
	bool burst;

	dw_buf_printf(out, "depwatch: %zu destinations, up %.0fs, percentiles over %llus; %s\n",
		      n, (c->now_ns - info->started_ns) / 1e9,
		      (unsigned long long)(info->window_ns / 1000000000ULL), info->programs);
	if (c->globals.dest_map_full)
		dw_buf_printf(out, "warning: destination map full (%u rows): %llu events counted in the overflow row\n",
			      info->max_dests, (unsigned long long)c->globals.dest_map_full);
	if (info->control && info->control->refused)
		dw_buf_printf(out, "warning: control socket full: %llu clients closed unanswered since start\n",
			      (unsigned long long)info->control->refused);
	dw_tls_text(out, info->tls);
	burst = text_deps(out, c, deps, c->now_ns, info->max_series);
	text_services(out, deps, svcs);
	/* MUX: connections seen carrying overlapping requests, since start */
	dw_buf_printf(out, "%-24s %8s %6s %5s %7s %7s %7s %7s %7s %5s %5s %6s %5s %s\n", "DEST", "CALLS",
		      "FAILED", "INFL", "OLDEST", "P50", "P90", "P99", "CONNS", "CFAIL", "CONNG",
		      "RETX", "MUX", "LAST CALLER");
	n = views ? rv_cap_views(views, n, deps, info->max_series, &folded) : 0;
	for (size_t i = 0; views && i < n; i++) {
		text_row(out, &views[i]);
		burst |= views[i].burst;
	}
	if (folded.n)
		dw_buf_printf(out, "%-24.24s %8llu %6llu %5llu %7s %7s %7s %7s %7llu %5llu %5s %6s %5s (%zu destinations)\n",
			      DW_TOPN_OTHER, (unsigned long long)folded.calls,
			      (unsigned long long)folded.failed, (unsigned long long)folded.inflight, "-",
			      "-", "-", "-", (unsigned long long)folded.connects,
			      (unsigned long long)folded.cfail, "-", "-", "-", folded.n);
	if (burst)
		dw_buf_printf(out, "\n" BURST_LEGEND);
	free(views);
}

static void tsv_dep(struct dw_buf *out, const struct dw_collector *c, const struct dw_dep *dep,
		    uint64_t now)
{
	bool burst;
	uint64_t mux = rv_dep_mux(c, dep, &burst);

	/* the fields, their order and their formats: DW_TOP_FIELDS in logic/view/topview.h */
	struct dw_top_wire w = {
		.name = dep->name,
		.dests = dep->ndests,
		.calls = dep->fig.calls,
		.failed = dep->fig.failed,
		.p50_ms = dw_dep_percentile_ms(dep, 0.50),
		.p99_ms = dw_dep_percentile_ms(dep, 0.99),
		.slow_rate = dw_rate_or_zero(dep->j.slow_rate),
		.failure_rate = dw_rate_or_zero(dep->j.failure_rate),
		.inflight = dep->fig.inflight,
		.max_inflight = dep->s->max_inflight,
		.oldest_ms = rv_age_ms(now, dep->fig.oldest_call_ns),
		.breaker = dw_breaker_state_name(dep->br.state),
		.reason = dw_breaker_reason_name(dep->br.reason),
		.rejected = dep->fig.rejected,
		.conns = dep->fig.conns,
		.forced = dep->enforce.forced >= 0,
		.multiplexed_conns = mux,
		.burst_timings = burst,
		.aborted = dep->fig.aborted_breaker + dep->fig.aborted_timeout,
		.streams = dep->fig.streams,
		.h2_desync = dep->fig.h2_desync,
	};

	dw_top_tsv_row(out, &w);
}

/* "@service<TAB>summary<TAB>level<TAB>inflight<TAB>pool<TAB>exhausted_in_s": top shows it above the table. */
static void tsv_service(struct dw_buf *out, const struct dw_svc *svc, const struct dw_deps *deps)
{
	char summary[160];

	dw_svc_summary(svc, deps, summary, sizeof(summary));
	/* names are config names or dest strings: no tab, newline or escape can be in them */
	dw_buf_printf(out, "@service\t%s\t%s\t%llu\t%u\t%.1f\n", summary[0] ? summary : svc->name,
		      dw_pool_level_name(svc->fc.level),
		      (unsigned long long)svc->inflight, svc->cfg->pool, svc->fc.exhausted_in_s);
}

/*
 * "@ejected<TAB>dependency<TAB>destination<TAB>reason<TAB>state<TAB>left_s":
 * top marks each ejected destination above the table (left_s: until it is
 * probed; -1 while probing).
 */
static void tsv_ejected(struct dw_buf *out, const struct dw_dep *dep, uint64_t now)
{
	char dest[64];

	for (const struct dw_dest *d = ejected_from(dep, dep->dests); d; d = ejected_from(dep, d->next_in_dep)) {
		const struct dw_eject *e = &d->ej.e;

		dw_dest_format(&d->key, dest, sizeof(dest));
		/* config names and dest strings: no tab, newline or escape can be in them */
		dw_buf_printf(out, "@ejected\t%s\t%s\t%s\t%s\t%.1f\n", dep->name, dest, dw_dest_eject_reason(&d->ej),
			      e->state == DW_EJECT_OUT ? "out" : "probing",
			      e->state == DW_EJECT_OUT && e->until_ns > now ? (e->until_ns - now) / 1e9 : -1.0);
	}
}

/*
 * "@dns<TAB>dependency<TAB>queries<TAB>timeouts<TAB>rcode_failed<TAB>nxdomain" (issue 35), since
 * start, for a dependency whose DNS queries had a timeout or an answer other than NOERROR: top
 * shows it above the table, among its at most DW_TOP_NOTES notes. An older top skips the line.
 */
static void tsv_dns(struct dw_buf *out, const struct dw_dep *dep)
{
	const struct dw_dep_figs *f = &dep->fig;

	if (!f->dns_queries || !(f->dns_timeouts + f->dns_rcode_failed + f->dns_nxdomain))
		return;
	/* config names and dest strings: no tab, newline or escape can be in them */
	dw_buf_printf(out, "@dns\t%s\t%llu\t%llu\t%llu\t%llu\n", dep->name, (unsigned long long)f->dns_queries,
		      (unsigned long long)f->dns_timeouts, (unsigned long long)f->dns_rcode_failed,
		      (unsigned long long)f->dns_nxdomain);
}

/* Callers sent to top per dependency. */
#define DW_TOP_CALLERS 5

/* "@caller<TAB>name<TAB>calls<TAB>inflight<TAB>p99_ms" (calls: completed and failed). */
static void tsv_callers(struct dw_buf *out, const struct dw_collector *c, const struct dep_callers *cl)
{
	struct dw_cgname name;

	for (size_t i = 0; i < cl->n && i < DW_TOP_CALLERS; i++) {
		const struct dw_caller_fig *f = &cl->v[i];
		double p99 = dw_caller_percentile_ns(f->hist, 0.99);

		dw_collect_caller_name(c, f->cgroup_id, &name);
		dw_buf_printf(out, "@caller\t");
		/* cgroup names are chosen by whoever makes cgroups: escaped (no tab, no newline) */
		dw_escape_text(out, name.name, sizeof(name.name));
		dw_buf_printf(out, "\t%llu\t%llu\t%.3f\n", (unsigned long long)(f->calls + f->failed),
			      (unsigned long long)f->inflight, p99 < 0 ? -1 : p99 / 1e6);
	}
}

void dw_report_tsv(struct dw_buf *out, const struct dw_collector *c, const struct dw_deps *deps,
		   const struct dw_services *svcs)
{
	struct dw_caller_fig *callers;
	size_t ncallers = dw_collect_callers(c, &callers), k = 0;

	dw_top_tsv_header(out);
	for (unsigned i = 0; i < deps->n; i++) {
		struct dep_callers cl = rv_callers_of(callers, ncallers, &k, i);
		if (!dw_dep_shown(&deps->deps[i]))
			continue;
		tsv_dep(out, c, &deps->deps[i], c->now_ns);
		tsv_callers(out, c, &cl);
	}
	for (unsigned i = 0; i < deps->n; i++)
		if (dw_dep_shown(&deps->deps[i]))
			tsv_ejected(out, &deps->deps[i], c->now_ns);
	free(callers);
	for (unsigned i = 0; i < svcs->n; i++)
		tsv_service(out, &svcs->svc[i], deps);
	for (unsigned i = 0; i < deps->n; i++)
		if (dw_dep_shown(&deps->deps[i]))
			tsv_dns(out, &deps->deps[i]);
}
