// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The text of the metrics page (metrics.c serves it), rendered by the
 * daemon once per poll.
 *
 * Every figure is per dependency (label `dependency`): the sum over the
 * destinations the last poll assigned to it, as in `depwatch status`. A
 * reload that moves a destination from one dependency to another moves its
 * counts along, which Prometheus sees as a counter reset of the one it left.
 *
 * The histograms are the collector's cumulative coarse buckets
 * (dw_dest.cum_call, cum_connect; bounds in logic/base/hist.h): this file only
 * renders what the collector and the dependencies hold.
 *
 * A few counters are per destination as well (labels dependency, dest and
 * netns): those that say which destinations' latencies are burst timings
 * of multiplexed or pipelined connections, something a sum would hide.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collect/collect.h"
#include "control/control_figs.h"
#include "discovery/tls/tls.h"
#include "logic/depset/depset.h"
#include "logic/base/hist.h"
#include "logic/base/jsonw.h"
#include "logic/view/series.h"
#include "logic/view/topn.h"
#include "output/metrics_render.h"
#include "logic/services/services.h"

/* What one dependency exports: its figures (logic/depset/depfigs.h) and its gauges, as put on the page. */
struct fig {
	const struct dw_dep *dep;
	struct dw_dep_figs f;
	uint64_t ended;			/* calls that ended, answered or failed */
	double oldest_s, slow_rate, failure_rate, slow_call_s;
	double retry_ratio, call_rate, call_rate_baseline;
	uint64_t ignored;		/* never judged: ignore = yes, or no settings (~other) */
	char label[2 * DW_DEP_NAME_LEN + 16];	/* {dependency="NAME", escaped */
	size_t label_len;
};

/* The page being rendered, and what the last render chose. */
static struct {
	struct fig *figs;
	size_t figs_cap;
	unsigned max_series;		/* --max-series: 0 no cap */
	struct dw_dep other;		/* the dependency "~other": what the cap folded */
	bool *fold;			/* per dependency index: summed into ~other this render */
	size_t fold_cap;
	size_t folded_deps, folded_callers;
	uint64_t render_ns;		/* how long the last page took to render */
} pg;

/* ---- figures per dependency */

static double positive(double v)
{
	return v > 0 ? v : 0;
}

static void fig_of(struct fig *f, const struct dw_dep *dep, uint64_t now)
{
	memset(f, 0, sizeof(*f));
	f->dep = dep;
	f->f = dep->fig;
	f->ended = dep->fig.calls + dep->fig.failed;
	f->slow_rate = dw_rate_or_zero(dep->j.slow_rate);
	f->failure_rate = dw_rate_or_zero(dep->j.failure_rate);
	f->slow_call_s = dep->s ? dep->s->slow_call_ns / 1e9 : 0;
	f->ignored = !dep->s || dep->s->ignore;
	f->retry_ratio = positive(dep->rates.retry_ratio);
	f->call_rate = positive(dep->rates.call_rate);
	f->call_rate_baseline = positive(dep->rates.call_rate_baseline);
	if (dep->fig.oldest_call_ns && now > dep->fig.oldest_call_ns)
		f->oldest_s = (now - dep->fig.oldest_call_ns) / 1e9;
}

/* ---- the text: some 50 lines per dependency, so plain appends rather than printf */

static void put(struct dw_buf *o, const char *s, size_t n)
{
	dw_buf_write(o, s, n);
}

static void put_str(struct dw_buf *o, const char *s)
{
	dw_buf_write(o, s, strlen(s));
}

static void put_u64(struct dw_buf *o, uint64_t v)
{
	char tmp[20];
	size_t i = sizeof(tmp);

	do {
		tmp[--i] = '0' + v % 10;
		v /= 10;
	} while (v);
	put(o, tmp + i, sizeof(tmp) - i);
}

/* Seconds from nanoseconds, exactly: "2.004123456". */
static void put_seconds(struct dw_buf *o, uint64_t ns)
{
	char frac[10];
	uint64_t f = ns % 1000000000ULL;

	put_u64(o, ns / 1000000000ULL);
	frac[0] = '.';
	for (int i = 9; i >= 1; i--, f /= 10)
		frac[i] = '0' + f % 10;
	put(o, frac, sizeof(frac));
}

static void put_double(struct dw_buf *o, double v)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), "%.9g", v);

	put(o, tmp, n > 0 && (size_t)n < sizeof(tmp) ? (size_t)n : 0);
}

static void family(struct dw_buf *o, const char *name, const char *type, const char *help)
{
	dw_buf_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* {dependency="NAME" without the closing brace: backslash, double quote and line feed escaped. */
static void label_of(struct fig *f)
{
	static const char head[] = "{dependency=\"";
	size_t n = sizeof(head) - 1;

	memcpy(f->label, head, n);
	for (const char *s = f->dep->name; *s && n + 3 < sizeof(f->label); s++) {
		if (*s == '\\' || *s == '"' || *s == '\n')
			f->label[n++] = '\\';
		f->label[n++] = *s == '\n' ? 'n' : *s;
	}
	f->label[n++] = '"';
	f->label_len = n;
}

/* NAME{dependency="..."EXTRA} and the space before the value. */
static void series(struct dw_buf *o, const char *name, size_t name_len, const struct fig *f,
		   const char *extra)
{
	put(o, name, name_len);
	put(o, f->label, f->label_len);
	if (extra)
		put_str(o, extra);
	put(o, "} ", 2);
}

enum val { U64, DBL };

/*
 * A family per dependency: the figures of logic/depset/depfigs.h that are special (corrected,
 * derived, or none of a dependency's JSON: DW_DEST_FIGS's comment) and the gauges written
 * here; the uniform figures generated from DW_DEST_FIGS.
 */

static const struct simple {
	const char *name, *type, *help;
	size_t off;
	enum val v;
	bool dns;	/* DNS over UDP (issue 35): series only for dependencies that had queries */
} simples[] = {
	{ "depwatch_calls_total", "counter",
	  "Calls (request/response exchanges) to the dependency that ended, answered or failed.",
	  offsetof(struct fig, ended), U64, false },
	{ "depwatch_call_failures_total", "counter",
	  "Calls to the dependency that ended without an answer (reset, closed, timed out).",
	  offsetof(struct fig, f.failed), U64, false },
	{ "depwatch_slow_calls_total", "counter",
	  "Answered calls slower than the dependency's slow_call setting.",
	  offsetof(struct fig, f.slow), U64, false },
	{ "depwatch_connects_total", "counter",
	  "Outgoing TCP connection attempts to the dependency.",
	  offsetof(struct fig, f.connects), U64, false },
	{ "depwatch_connect_failures_total", "counter",
	  "Connection attempts to the dependency that failed (refused, timed out, aborted).",
	  offsetof(struct fig, f.connect_failures), U64, false },
	{ "depwatch_inflight", "gauge",
	  "Calls to the dependency sent and not yet answered.",
	  offsetof(struct fig, f.inflight), U64, false },
	{ "depwatch_oldest_inflight_seconds", "gauge",
	  "Age of the oldest call to the dependency still waiting for its answer; 0 when none is.",
	  offsetof(struct fig, oldest_s), DBL, false },
	{ "depwatch_open_connections", "gauge",
	  "TCP connections to the dependency open now.",
	  offsetof(struct fig, f.conns), U64, false },
	{ "depwatch_slow_rate", "gauge",
	  "Share (0..1) of the recently judged calls that were slow, as the breaker sees it.",
	  offsetof(struct fig, slow_rate), DBL, false },
	{ "depwatch_failure_rate", "gauge",
	  "Share (0..1) of the recently judged calls that failed, as the breaker sees it.",
	  offsetof(struct fig, failure_rate), DBL, false },
	{ "depwatch_slow_call_threshold_seconds", "gauge",
	  "The dependency's slow_call setting: an answered call slower than this is slow.",
	  offsetof(struct fig, slow_call_s), DBL, false },
	{ "depwatch_dependency_ignored", "gauge",
	  "1 for a dependency depwatch traces but never judges (ignore = yes; ~other), else 0.",
	  offsetof(struct fig, ignored), U64, false },
	{ "depwatch_calls_abandoned_total", "counter",
	  "Calls whose caller closed the connection while waiting for the answer.",
	  offsetof(struct fig, f.abandoned), U64, false },
	{ "depwatch_call_retries_total", "counter",
	  "Calls started by a process within 2 s of abandoning one to the same dependency.",
	  offsetof(struct fig, f.retried), U64, false },
	{ "depwatch_retry_ratio", "gauge",
	  "Attempts per original call over the last 10 s (1: no retries; 0: no calls).",
	  offsetof(struct fig, retry_ratio), DBL, false },
	/* the uniform figures (logic/depset/depfigs.h), the DNS ones only for dependencies that had queries */
#define FIG_SIMPLE(field, stat, json, metric, when, help) \
	{ metric, "counter", help, offsetof(struct fig, f.field), U64, (when) == DW_FIG_DNS },
	DW_DEST_FIGS(FIG_SIMPLE)
#undef FIG_SIMPLE
	{ "depwatch_call_rate", "gauge",
	  "Calls started per second, averaged over about 2 s.",
	  offsetof(struct fig, call_rate), DBL, false },
	{ "depwatch_call_rate_baseline", "gauge",
	  "Calls started per second, averaged over about 5 minutes: the dependency's normal.",
	  offsetof(struct fig, call_rate_baseline), DBL, false },
};


static void simple_family(struct dw_buf *o, const struct simple *s, const struct fig *figs, size_t n)
{
	size_t len = strlen(s->name);

	family(o, s->name, s->type, s->help);
	for (size_t i = 0; i < n; i++) {
		const char *p = (const char *)&figs[i] + s->off;

		if (s->dns && !figs[i].f.dns_queries)
			continue;
		series(o, s->name, len, &figs[i], NULL);
		if (s->v == U64)
			put_u64(o, *(const uint64_t *)p);
		else
			put_double(o, *(const double *)p);
		put(o, "\n", 1);
	}
}

static void breaker_family(struct dw_buf *o, const struct fig *figs, size_t n)
{
	static const char name[] = "depwatch_breaker_state";
	static const struct {
		enum dw_breaker_state state;
		const char *label;
	} states[] = { { DW_BREAKER_CLOSED, ",state=\"closed\"" },
		       { DW_BREAKER_OPEN, ",state=\"open\"" },
		       { DW_BREAKER_HALF_OPEN, ",state=\"half_open\"" } };

	family(o, name, "gauge",
	       "1 for the state the dependency's circuit breaker is in (closed, open, half_open), "
	       "0 for the others.");
	for (size_t i = 0; i < n; i++)
		for (unsigned k = 0; k < 3 && figs[i].dep != &pg.other; k++) {
			series(o, name, sizeof(name) - 1, &figs[i], states[k].label);
			put(o, figs[i].dep->br.state == states[k].state ? "1\n" : "0\n", 2);
		}
}

/* enforce = abort and abort_after: connections the kernel aborted, by reason. */
static void aborted_family(struct dw_buf *o, const struct fig *figs, size_t n)
{
	static const char name[] = "depwatch_connections_aborted_total";

	family(o, name, "counter",
	       "Established connections to the dependency depwatch aborted in the kernel: reason breaker "
	       "(enforce = abort, breaker open) or abort_after (a call older than abort_after).");
	for (size_t i = 0; i < n; i++) {
		series(o, name, sizeof(name) - 1, &figs[i], ",reason=\"breaker\"");
		put_u64(o, figs[i].dep->fig.aborted_breaker);
		put(o, "\n", 1);
		series(o, name, sizeof(name) - 1, &figs[i], ",reason=\"abort_after\"");
		put_u64(o, figs[i].dep->fig.aborted_timeout);
		put(o, "\n", 1);
	}
}

/* Whether any of the dependency's answers had their status read (not HTTP/1: none, and no series). */
static bool has_answers(const struct fig *f)
{
	for (int k = 0; k < DW_ANS_N; k++)
		if (f->f.answers[k])
			return true;
	return false;
}

/* Answers by class (outcome.h): the label is a class or a kind, never a path. */
static void answers_family(struct dw_buf *o, const struct fig *figs, size_t n)
{
	static const char name[] = "depwatch_answers_total", failed[] = "depwatch_call_failures_status_total";
	char label[48];

	family(o, name, "counter", "Answers whose status was read, by class (HTTP/1 unknown, bad: not read), "
	       "and gRPC answers by code name. Only dependencies with answers read.");
	for (size_t i = 0; i < n; i++)
		for (int k = 0, g; has_answers(&figs[i]) && k < DW_ANS_N + DW_GRPC_N + 1; k++) {
			if ((g = k - DW_ANS_N) >= 0 && !figs[i].f.grpc[g])
				continue;	/* HTTP/2's gRPC codes (lateout.h): the codes seen */
			snprintf(label, sizeof(label), g < 0 ? ",class=\"%s\"" : ",code=\"%s\"",
				 g < 0 ? dw_answer_names[k] : g < DW_GRPC_N ? dw_grpc_names[g] : "other");
			series(o, name, sizeof(name) - 1, &figs[i], label);
			put_u64(o, g < 0 ? figs[i].f.answers[k] : figs[i].f.grpc[g]);
			put(o, "\n", 1);
		}
	family(o, failed, "counter", "Of the failed calls, those whose answer's HTTP status is in failure_status.");
	for (size_t i = 0; i < n; i++) {
		if (!has_answers(&figs[i]))
			continue;
		series(o, failed, sizeof(failed) - 1, &figs[i], NULL);
		put_u64(o, figs[i].f.failed_status);
		put(o, "\n", 1);
	}
}

static void limit_family(struct dw_buf *o, const struct fig *figs, size_t n)
{
	static const char name[] = "depwatch_inflight_limit";
	bool any = false;

	for (size_t i = 0; i < n; i++) {
		const struct dw_dep_settings *s = figs[i].dep->s;

		if (!s || !s->max_inflight)
			continue;
		if (!any)
			family(o, name, "gauge",
			       "The dependency's max_inflight setting: the breaker opens when more "
			       "calls are in flight.");
		any = true;
		series(o, name, sizeof(name) - 1, &figs[i], NULL);
		put_u64(o, s->max_inflight);
		put(o, "\n", 1);
	}
}

enum { H_CALL, H_CONNECT };

static void histogram(struct dw_buf *o, const char *name, const char *help, int kind,
		      const struct fig *figs, size_t n)
{
	char bucket[96], sum[96], count[96], le[DW_HIST_COARSE][24];
	size_t lb = snprintf(bucket, sizeof(bucket), "%s_bucket", name);
	size_t ls = snprintf(sum, sizeof(sum), "%s_sum", name);
	size_t lc = snprintf(count, sizeof(count), "%s_count", name);

	for (unsigned b = 0; b < DW_HIST_COARSE; b++)
		snprintf(le[b], sizeof(le[b]), ",le=\"%s\"", dw_hist_coarse_le(b));
	family(o, name, "histogram", help);
	for (size_t i = 0; i < n; i++) {
		const struct dw_dep_figs *f = &figs[i].f;
		const uint64_t *hist = kind == H_CALL ? f->cum_call : f->cum_connect;
		uint64_t acc = 0;

		for (unsigned b = 0; b < DW_HIST_COARSE; b++) {
			acc += hist[b];
			series(o, bucket, lb, &figs[i], le[b]);
			put_u64(o, acc);
			put(o, "\n", 1);
		}
		series(o, sum, ls, &figs[i], NULL);
		put_seconds(o, kind == H_CALL ? f->call_ns_sum : f->connect_ns_sum);
		put(o, "\n", 1);
		series(o, count, lc, &figs[i], NULL);
		put_u64(o, acc);
		put(o, "\n", 1);
	}
}

static void process_families(struct dw_buf *o, const struct dw_collector *c)
{
	family(o, "depwatch_polls_total", "counter", "Polls of the kernel maps since the daemon started.");
	dw_buf_printf(o, "depwatch_polls_total %llu\n", (unsigned long long)c->polls);
	family(o, "depwatch_last_poll_duration_seconds", "gauge",
	       "How long the last poll of the kernel maps took.");
	put_str(o, "depwatch_last_poll_duration_seconds ");
	put_seconds(o, c->last_poll_ns);
	put(o, "\n", 1);
	family(o, "depwatch_destinations", "gauge",
	       "Destinations (netns, address, port) with a row in the kernel's map.");
	dw_buf_printf(o, "depwatch_destinations %zu\n", c->count);
	family(o, "depwatch_rows_unstable_total", "counter",
	       "Reads of a destination's per-CPU rows given up because folds kept coming; "
	       "its figures wait for the next poll.");
	dw_buf_printf(o, "depwatch_rows_unstable_total %llu\n", (unsigned long long)c->rows_unstable);
#define KERNEL_FAMILY(field, metric, help)					\
	family(o, "depwatch_kernel_" #metric "_total", "counter", help);	\
	dw_buf_printf(o, "depwatch_kernel_" #metric "_total %llu\n",		\
		      (unsigned long long)c->globals.field);
	DW_GLOBAL_COUNTERS(KERNEL_FAMILY)
#undef KERNEL_FAMILY
}

/* The control socket's clients: at the poll that rendered the page. */
static void control_families(struct dw_buf *o, const struct dw_control_figs *f)
{
	family(o, "depwatch_control_clients", "gauge",
	       "Clients connected to the control socket (status, top, breaker) at the last poll.");
	dw_buf_printf(o, "depwatch_control_clients %u\n", f ? f->clients : 0);
	family(o, "depwatch_control_refused_total", "counter",
	       "Control socket clients closed unanswered, every slot taken, since the daemon started.");
	dw_buf_printf(o, "depwatch_control_refused_total %llu\n", f ? (unsigned long long)f->refused : 0ULL);
}

/* {service="NAME" (names are checked by the config parser: no quote, backslash or newline) */
static void svc_series(struct dw_buf *o, const char *name, const struct dw_svc *svc)
{
	dw_buf_printf(o, "%s{service=\"%s\"} ", name, svc->name);
}

static void service_families(struct dw_buf *o, const struct dw_deps *deps,
			     const struct dw_services *s)
{

	/* the families are declared without services too: rules can refer to them */
	family(o, "depwatch_service_requests_total", "counter",
	       "Inbound requests to the service that ended, answered or failed.");
	for (unsigned i = 0; i < s->n; i++) {
		svc_series(o, "depwatch_service_requests_total", &s->svc[i]);
		dw_buf_printf(o, "%llu\n", (unsigned long long)(s->svc[i].requests + s->svc[i].failed));
	}
	family(o, "depwatch_service_inflight", "gauge",
	       "Inbound requests to the service received and not yet answered.");
	for (unsigned i = 0; i < s->n; i++) {
		svc_series(o, "depwatch_service_inflight", &s->svc[i]);
		dw_buf_printf(o, "%llu\n", (unsigned long long)s->svc[i].inflight);
	}
	family(o, "depwatch_service_pool", "gauge",
	       "The service's configured pool (0: not configured).");
	for (unsigned i = 0; i < s->n; i++) {
		svc_series(o, "depwatch_service_pool", &s->svc[i]);
		dw_buf_printf(o, "%u\n", s->svc[i].cfg->pool);
	}
	family(o, "depwatch_service_arrival_rate", "gauge",
	       "Inbound requests started per second, averaged over about 1 s.");
	for (unsigned i = 0; i < s->n; i++) {
		svc_series(o, "depwatch_service_arrival_rate", &s->svc[i]);
		put_double(o, s->svc[i].arrival_rate > 0 ? s->svc[i].arrival_rate : 0);
		put(o, "\n", 1);
	}
	family(o, "depwatch_service_pool_exhausted_in_seconds", "gauge",
	       "Forecast (Little's law) of the time until the pool is exhausted; absent when none is.");
	for (unsigned i = 0; i < s->n; i++) {
		if (s->svc[i].fc.exhausted_in_s < 0)
			continue;
		svc_series(o, "depwatch_service_pool_exhausted_in_seconds", &s->svc[i]);
		put_double(o, s->svc[i].fc.exhausted_in_s);
		put(o, "\n", 1);
	}
	family(o, "depwatch_service_waiting", "gauge",
	       "Inbound requests of the service waiting now on an outbound call to the dependency.");
	for (unsigned i = 0; i < s->n; i++)
		for (unsigned k = 0; k < s->svc[i].nwaits; k++)
			dw_buf_printf(o, "depwatch_service_waiting{service=\"%s\",dependency=\"%s\"} %u\n",
				      s->svc[i].name, deps->deps[s->svc[i].waits[k].dep].name,
				      s->svc[i].waits[k].count);
}

/* A label value: backslash, double quote and line feed escaped. */
static void put_label_value(struct dw_buf *o, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			dw_buf_putc(o, '\\');
		if (*s == '\n')
			put(o, "\\n", 2);
		else
			dw_buf_putc(o, *s);
	}
}

/* The rows status shows (dw_dest_shown), those with a dependency. */
static bool dest_exported(const struct dw_dest *d, const struct dw_deps *deps)
{
	return dw_dest_shown(d) && d->dep >= 0 && (unsigned)d->dep < deps->n;
}

/* One family of per-destination series: which rows, their value, the name of the label. */
struct dest_family_def {
	const char *name, *type, *help;
	const char *label;		/* "dest", or "destination" for the ejection's families */
	bool (*want)(const struct dw_dest *d, const struct dw_deps *deps);
	uint64_t (*value)(const struct dw_dest *d, const struct dw_deps *deps, size_t off);
	size_t off;			/* for counter_at: of the counter in struct dw_dest_stats */
};

static bool any_dest(const struct dw_dest *d, const struct dw_deps *deps)
{
	return dest_exported(d, deps);
}

static uint64_t counter_at(const struct dw_dest *d, const struct dw_deps *deps, size_t off)
{
	(void)deps;
	return *(const __u64 *)((const char *)&d->sum + off);
}

static void dest_family(struct dw_buf *o, const struct dw_collector *c, const struct dw_deps *deps,
			const struct dest_family_def *f)
{
	char dest[64];
	uint64_t other = 0;
	bool folded = false;

	family(o, f->name, f->type, f->help);
	for (size_t i = 0; i < c->cap; i++) {
		const struct dw_dest *d = &c->dests[i];

		if (!f->want(d, deps))
			continue;
		/* a destination of a dependency the cap folded: summed into ~other */
		if ((size_t)d->dep < pg.fold_cap && pg.fold[d->dep]) {
			other += f->value(d, deps, f->off);
			folded = true;
			continue;
		}
		dw_dest_format(&d->key, dest, sizeof(dest));
		put_str(o, f->name);
		put_str(o, "{dependency=\"");
		put_label_value(o, deps->deps[d->dep].name);
		dw_buf_printf(o, "\",%s=\"", f->label);
		put_label_value(o, dest);
		put_str(o, "\",netns=\"");
		put_u64(o, d->key.netns);
		put(o, "\"} ", 3);
		put_u64(o, f->value(d, deps, f->off));
		put(o, "\n", 1);
	}
	if (!folded)
		return;
	dw_buf_printf(o, "%s{dependency=\"" DW_TOPN_OTHER "\",%s=\"" DW_TOPN_OTHER "\",netns=\"0\"} ",
		      f->name, f->label);
	put_u64(o, other);
	put(o, "\n", 1);
}

/* The destinations of a dependency with eject = on: the only ones ejection has series for. */
static bool ejectable(const struct dw_dest *d, const struct dw_deps *deps)
{
	const struct dw_dep *dep;

	if (!dest_exported(d, deps))
		return false;
	dep = &deps->deps[d->dep];
	return dep->id && dep->s && dep->s->eject;
}

/* Out or probing in its dependency as configured now (an ejection a reload ended reads 0). */
static uint64_t ejected_now(const struct dw_dest *d, const struct dw_deps *deps, size_t off)
{
	(void)off;
	return dw_dest_ejected(d, deps->deps[d->dep].id);
}

static uint64_t ejections(const struct dw_dest *d, const struct dw_deps *deps, size_t off)
{
	(void)deps;
	(void)off;
	return d->ej.e.ejections;
}

static void dest_families(struct dw_buf *o, const struct dw_collector *c, const struct dw_deps *deps)
{
	static const struct dest_family_def defs[] = {
		{ "depwatch_dest_multiplexed_connections_total", "counter",
		  "Connections to the destination seen carrying overlapping requests (HTTP/2, pipelining), "
		  "each counted once.",
		  "dest", any_dest, counter_at, offsetof(struct dw_dest_stats, conns_multiplexed) },
		{ "depwatch_dest_burst_calls_total", "counter",
		  "Answered calls to the destination timed on such a connection: burst timings, not one "
		  "request's latency; counted in depwatch_calls_total too.",
		  "dest", any_dest, counter_at, offsetof(struct dw_dest_stats, calls_burst) },
		{ "depwatch_destination_ejected", "gauge",
		  "1 while the destination is ejected from its dependency (eject = on: out, or probing), else 0.",
		  "destination", ejectable, ejected_now, 0 },
		{ "depwatch_ejections_total", "counter",
		  "Times the destination was ejected from its dependency (eject = on), by hand or judged.",
		  "destination", ejectable, ejections, 0 },
	};

	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
		dest_family(o, c, deps, &defs[i]);
}

/* ---- callers (issue 16): the same cap, their own budget of series */

static void caller_series(struct dw_buf *o, const char *name, const char *dep, const char *caller,
			  const char *kind, uint64_t v)
{
	put_str(o, name);
	put_str(o, "{dependency=\"");
	put_label_value(o, dep);
	put_str(o, "\",caller=\"");
	put_label_value(o, caller);
	put_str(o, "\",kind=\"");
	put_str(o, kind);
	put(o, "\"} ", 3);
	put_u64(o, v);
	put(o, "\n", 1);
}

static void caller_families(struct dw_buf *o, const struct dw_collector *c, const struct dw_deps *deps)
{
	static const char *const names[] = { "depwatch_caller_calls_total", "depwatch_caller_inflight" };
	struct dw_caller_fig *v, other = { 0 };
	size_t n = dw_collect_callers(c, &v);
	struct dw_topn_item *items = n ? calloc(n, sizeof(*items)) : NULL;
	struct dw_topn_result res = { 0 };
	struct dw_cgname name;

	pg.folded_callers = 0;
	if (n && !items)
		n = 0;
	for (size_t i = 0; i < n; i++)
		items[i] = dw_series_caller_item(&v[i], i);
	dw_topn_choose(items, n, pg.max_series, &res);
	for (size_t i = res.kept; i < res.kept + res.folded; i++)
		dw_caller_fig_add(&other, &v[items[i].key]);
	pg.folded_callers = res.folded;
	family(o, names[0], "counter",
	       "Calls to the dependency that ended (answered or failed), by the calling cgroup (caller).");
	for (size_t i = 0; i < res.kept; i++) {
		const struct dw_caller_fig *f = &v[items[i].key];

		dw_collect_caller_name(c, f->cgroup_id, &name);
		caller_series(o, names[0], deps->deps[f->dep].name, name.name, dw_cg_kind_name(name.kind),
			      f->calls + f->failed);
	}
	if (res.folded)
		caller_series(o, names[0], DW_TOPN_OTHER, DW_TOPN_OTHER, "other", other.calls + other.failed);
	family(o, names[1], "gauge", "Calls to the dependency sent and not yet answered, by caller.");
	for (size_t i = 0; i < res.kept; i++) {
		const struct dw_caller_fig *f = &v[items[i].key];

		dw_collect_caller_name(c, f->cgroup_id, &name);
		caller_series(o, names[1], deps->deps[f->dep].name, name.name, dw_cg_kind_name(name.kind),
			      f->inflight);
	}
	if (res.folded)
		caller_series(o, names[1], DW_TOPN_OTHER, DW_TOPN_OTHER, "other", other.inflight);
	free(items);
	free(v);
}

static void fold_families(struct dw_buf *o)
{
	family(o, "depwatch_series_cap", "gauge",
	       "--max-series: series per family beyond which the least busy are summed into ~other (0: no cap).");
	dw_buf_printf(o, "depwatch_series_cap %u\n", pg.max_series);
	family(o, "depwatch_series_folded", "gauge",
	       "Series summed into the ~other series by --max-series: dependencies (with their "
	       "destinations) and callers.");
	dw_buf_printf(o, "depwatch_series_folded{series=\"dependency\"} %zu\n", pg.folded_deps);
	dw_buf_printf(o, "depwatch_series_folded{series=\"caller\"} %zu\n", pg.folded_callers);
	family(o, "depwatch_metrics_render_seconds", "gauge",
	       "How long rendering the previous page took (this page's is not known yet).");
	put_str(o, "depwatch_metrics_render_seconds ");
	put_seconds(o, pg.render_ns);
	put(o, "\n", 1);
}

static void render(struct dw_buf *o, const struct dw_collector *c, const struct dw_deps *deps,
		   const struct dw_services *svcs, const struct dw_control_figs *control,
		   const struct fig *figs, size_t n)
{
	for (size_t i = 0; i < sizeof(simples) / sizeof(simples[0]); i++)
		simple_family(o, &simples[i], figs, n);
	breaker_family(o, figs, n);
	aborted_family(o, figs, n);
	answers_family(o, figs, n);
	limit_family(o, figs, n);
	histogram(o, "depwatch_call_duration_seconds",
		  "Durations of answered calls, request sent to first answer byte, since the daemon started.",
		  H_CALL, figs, n);
	histogram(o, "depwatch_connect_duration_seconds",
		  "Durations of successful TCP connects, SYN to established, since the daemon started.",
		  H_CONNECT, figs, n);
	dest_families(o, c, deps);
	caller_families(o, c, deps);
	service_families(o, deps, svcs);
	process_families(o, c);
	control_families(o, control);
	dw_tls_metrics(o);
	fold_families(o);
}

/* Sums b into a: its figures (depfigs.h); of the gauges, the oldest call and the call rates. */
static void fig_add(struct fig *a, const struct fig *b)
{
	dw_dep_figs_add(&a->f, &b->f);
	a->ended += b->ended;
	if (b->oldest_s > a->oldest_s)
		a->oldest_s = b->oldest_s;
	a->call_rate += b->call_rate;
	a->call_rate_baseline += b->call_rate_baseline;
}

/*
 * --max-series (logic/view/series.h): the dependencies it folds, destinations
 * on their own, are summed into one "~other" at the end; the kept stay in
 * the set's order. Returns the figures left.
 */
static size_t cap_figs(const struct dw_deps *deps, size_t n)
{
	struct fig other;
	size_t out = 0;

	memset(pg.fold, 0, pg.fold_cap * sizeof(*pg.fold));
	pg.folded_deps = dw_series_fold_deps(deps, pg.max_series, pg.fold);
	if (!pg.folded_deps)
		return n;
	memset(&pg.other, 0, sizeof(pg.other));
	pg.other.used = true;
	snprintf(pg.other.name, sizeof(pg.other.name), "%s", DW_TOPN_OTHER);
	fig_of(&other, &pg.other, 0);
	for (size_t i = 0; i < n; i++) {
		if (pg.fold[pg.figs[i].dep - deps->deps])
			fig_add(&other, &pg.figs[i]);
		else
			pg.figs[out++] = pg.figs[i];
	}
	pg.figs[out] = other;
	label_of(&pg.figs[out]);
	return out + 1;
}

/* The whole page into o: 0, or -ENOMEM (o then holds part of it). */
int dw_metrics_render(struct dw_buf *o, const struct dw_collector *c, const struct dw_deps *deps,
		      const struct dw_services *svcs, const struct dw_control_figs *control,
		      unsigned max_series)
{
	uint64_t t0 = dw_monotonic_ns();
	size_t n = 0;

	pg.max_series = max_series;
	if (pg.figs_cap < deps->n + 1) {
		struct fig *p = realloc(pg.figs, (deps->n + 1) * sizeof(*p));
		bool *fold = realloc(pg.fold, (deps->n + 1) * sizeof(*fold));

		if (p)
			pg.figs = p;
		if (fold)
			pg.fold = fold;
		if (!p || !fold)
			return -ENOMEM;
		pg.figs_cap = pg.fold_cap = deps->n + 1;
	}
	for (unsigned i = 0; i < deps->n; i++) {
		if (!dw_dep_shown(&deps->deps[i]))
			continue;
		fig_of(&pg.figs[n], &deps->deps[i], c->now_ns);
		label_of(&pg.figs[n++]);
	}
	n = cap_figs(deps, n);
	render(o, c, deps, svcs, control, pg.figs, n);
	if (o->oom)
		return -ENOMEM;
	pg.render_ns = dw_monotonic_ns() - t0;
	return 0;
}

void dw_metrics_render_free(void)
{
	free(pg.figs);
	free(pg.fold);
	pg.figs = NULL;
	pg.fold = NULL;
	pg.figs_cap = pg.fold_cap = 0;
}
