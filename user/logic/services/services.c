// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "logic/depset/depset.h"
#include "logic/depset/dest.h"
#include "logic/base/hist.h"
#include "logic/services/services.h"

static void svc_reset_history(struct dw_svc *svc)
{
	svc->arrival_rate = svc->rising = -1;
	svc->prev_ns = 0;
	svc->p50_ms = svc->p99_ms = svc->path_p99_ms = -1;
	svc->fc.exhausted_in_s = -1;
	svc->fc.why = "";
}

int dw_services_sync(struct dw_services *s, const struct dw_config *cfg)
{
	struct dw_svc *fresh = calloc(cfg->nservices ? cfg->nservices : 1, sizeof(*fresh));

	if (!fresh) {
		/* the old entries point into a config about to go */
		dw_services_free(s);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < cfg->nservices; i++) {
		struct dw_svc *svc = &fresh[i];

		svc_reset_history(svc);
		for (unsigned k = 0; k < s->n; k++)
			if (!strcmp(s->svc[k].name, cfg->services[i].name))
				*svc = s->svc[k];
		snprintf(svc->name, sizeof(svc->name), "%s", cfg->services[i].name);
		svc->cfg = &cfg->services[i];
	}
	free(s->svc);
	s->svc = fresh;
	s->n = cfg->nservices;
	return 0;
}

void dw_services_free(struct dw_services *s)
{
	free(s->svc);
	memset(s, 0, sizeof(*s));
}

static struct dw_svc *svc_at_port(const struct dw_services *s, unsigned port)
{
	for (unsigned i = 0; i < s->n; i++) {
		const struct dw_service *cfg = s->svc[i].cfg;

		/* a cgroup service has no port range (both 0) */
		if (port && port >= cfg->port_lo && port <= cfg->port_hi)
			return &s->svc[i];
	}
	return NULL;
}

const struct dw_svc *dw_services_at_port(const struct dw_services *s, unsigned port)
{
	return svc_at_port(s, port);
}

/* The inbound rows of svc: counts, oldest request, the window's durations. */
static void gather_rows(struct dw_svc *svc, const struct dw_dest *dests, size_t cap,
			uint64_t *dense)
{
	uint64_t one[DW_HIST_BUCKETS], pid_ns = 0;

	svc->rows = 0;
	svc->requests = svc->failed = svc->started = svc->inflight = svc->oldest_ns = 0;
	memset(dense, 0, DW_HIST_BUCKETS * sizeof(*dense));
	for (size_t i = 0; i < cap; i++) {
		const struct dw_dest *d = &dests[i];
		const struct dw_service *cfg = svc->cfg;

		if (!d->used || !dw_dest_is_listener(d) || !d->key.port ||
		    d->key.port < cfg->port_lo || d->key.port > cfg->port_hi)
			continue;
		svc->rows++;
		svc->requests += d->sum.calls_completed;
		svc->failed += d->sum.calls_failed;
		svc->started += d->sum.calls_started;
		svc->inflight += dw_dest_inflight(d);
		if (d->oldest_call_ns && (!svc->oldest_ns || d->oldest_call_ns < svc->oldest_ns))
			svc->oldest_ns = d->oldest_call_ns;
		if (d->sum.last_pid && d->sum.last_conn_ns >= pid_ns) {
			pid_ns = d->sum.last_conn_ns;
			svc->pid = d->sum.last_pid;
			memcpy(svc->comm, d->sum.last_comm, sizeof(svc->comm));
		}
		dw_window_merge(&d->call_win, one);
		for (unsigned b = 0; b < DW_HIST_BUCKETS; b++)
			dense[b] += one[b];
	}
	svc->p50_ms = dw_hist_percentile_ns(dense, 0.50) / 1e6;
	svc->p99_ms = dw_hist_percentile_ns(dense, 0.99) / 1e6;
	if (svc->p50_ms < 0)
		svc->p50_ms = svc->p99_ms = -1;
}

static void rates(struct dw_svc *svc, uint64_t now)
{
	double dt = (now - svc->prev_ns) / 1e9;

	if (svc->prev_ns && dt > 0 && svc->started >= svc->prev_started) {
		svc->arrival_rate = dw_ewma(svc->arrival_rate,
					    (svc->started - svc->prev_started) / dt, dt,
					    DW_SVC_RATE_TAU);
		svc->rising = dw_ewma(svc->rising,
				      ((double)svc->inflight - (double)svc->prev_inflight) / dt, dt,
				      DW_SVC_RATE_TAU);
	}
	svc->prev_started = svc->started;
	svc->prev_inflight = svc->inflight;
	svc->prev_ns = now;
}

void dw_services_begin(struct dw_services *s)
{
	for (unsigned i = 0; i < s->n; i++) {
		struct dw_svc *svc = &s->svc[i];

		svc->nwaits = svc->waiting = svc->other_waiting = 0;
	}
}

/* Outstanding calls made for requests of the service at caller_port, by dependency. */
void dw_services_wait(struct dw_services *s, unsigned caller_port, int dep, unsigned count)
{
	struct dw_svc *svc = svc_at_port(s, caller_port);
	unsigned k;

	if (dep < 0 || !svc)
		return;
	svc->waiting += count;
	for (k = 0; k < svc->nwaits && svc->waits[k].dep != dep; k++)
		;
	if (k == svc->nwaits) {
		if (k == DW_SVC_WAITS) {
			svc->other_waiting += count;
			return;
		}
		svc->waits[svc->nwaits++] = (struct dw_svc_wait){ .dep = dep };
	}
	svc->waits[k].count += count;
}

/* Most waited on first; equal counts keep the order they came in. */
static void sort_waits(struct dw_svc *svc)
{
	for (unsigned a = 1; a < svc->nwaits; a++)
		for (unsigned b = a; b > 0 && svc->waits[b].count > svc->waits[b - 1].count; b--) {
			struct dw_svc_wait t = svc->waits[b];

			svc->waits[b] = svc->waits[b - 1];
			svc->waits[b - 1] = t;
		}
}

/* What a caller of dep waits now: its median, or while it hangs past slow_call, its timeout. */
static double dep_wait_s(const struct dw_deps *deps, const struct dw_dep *dep, uint64_t now)
{
	uint64_t oldest = dep->fig.oldest_call_ns;
	bool hanging = oldest && now - oldest > dep->s->slow_call_ns;
	double p50 = dw_dep_percentile_ms(dep, 0.50);

	return dw_dep_wait_s(p50 < 0 ? -1 : p50 / 1e3, hanging, dw_depset_timeout_ns(deps, dep) / 1e9);
}

/*
 * What one request waits now: the dependencies of its path one after the
 * other, or, without a path, those its requests wait on now; at least its
 * own median.
 */
static double latency_s(const struct dw_svc *svc, const struct dw_deps *deps, uint64_t now)
{
	double w = 0;

	for (unsigned k = 0; k < svc->cfg->npath; k++) {
		const struct dw_dep *dep = dw_depset_configured(deps, svc->cfg->path[k]);

		if (dep)
			w += dep_wait_s(deps, dep, now);
	}
	for (unsigned k = 0; !svc->cfg->npath && k < svc->nwaits; k++)
		w += dep_wait_s(deps, dw_depset_at(deps, svc->waits[k].dep), now);
	if (svc->p50_ms / 1e3 > w)
		w = svc->p50_ms / 1e3;
	return w;
}

/* The observed p99s along the path, added up; -1 without a path or calls. */
static double path_p99_ms(const struct dw_svc *svc, const struct dw_deps *deps)
{
	double sum = 0;
	bool any = false;

	for (unsigned k = 0; k < svc->cfg->npath; k++) {
		const struct dw_dep *dep = dw_depset_configured(deps, svc->cfg->path[k]);
		double p99 = dep ? dw_dep_percentile_ms(dep, 0.99) : -1;

		if (p99 < 0)
			continue;
		sum += p99;
		any = true;
	}
	return any ? sum : -1;
}

void dw_svc_summary(const struct dw_svc *svc, const struct dw_deps *deps, char *buf, size_t len)
{
	char pool[24] = "";

	buf[0] = 0;
	if (!svc->nwaits)
		return;
	if (svc->cfg->pool)
		snprintf(pool, sizeof(pool), "/%u", svc->cfg->pool);
	snprintf(buf, len, "%s: %u%s waiting on %s", svc->name, svc->waits[0].count, pool,
		 dw_depset_at(deps, svc->waits[0].dep)->name);
}

/* An event on each change of the pool's level and of the path against the deadline. */
static void watch(struct dw_svc *svc)
{
	bool over = svc->cfg->deadline_ns && svc->path_p99_ms > svc->cfg->deadline_ns / 1e6;

	svc->nev = 0;
	if (svc->fc.level != svc->level) {
		svc->level = svc->fc.level;
		svc->ev[svc->nev++] = svc->level == DW_POOL_OK ? "pool_ok" : svc->fc.why;
	}
	if (over != svc->path_over) {
		svc->path_over = over;
		svc->ev[svc->nev++] = over ? "path_p99_over_deadline" : "path_p99_ok";
	}
}

static void step_one(struct dw_svc *svc, const struct dw_dest *dests, size_t cap, uint64_t now,
		     const struct dw_deps *deps, uint64_t *dense)
{
	struct dw_pool_input in;

	gather_rows(svc, dests, cap, dense);
	rates(svc, now);
	sort_waits(svc);
	svc->latency_s = latency_s(svc, deps, now);
	svc->path_p99_ms = path_p99_ms(svc, deps);
	in = (struct dw_pool_input){
		.pool = svc->cfg->pool,
		.inflight = svc->inflight,
		.arrival_rate = svc->arrival_rate > 0 ? svc->arrival_rate : 0,
		.rising = svc->rising,
		.latency_s = svc->latency_s,
		.was = svc->level,
	};
	dw_pool_forecast(&in, &svc->fc);
	watch(svc);
}

void dw_services_step(struct dw_services *s, const struct dw_dest *dests, size_t cap, uint64_t now,
		      const struct dw_deps *deps)
{
	uint64_t dense[DW_HIST_BUCKETS];

	for (unsigned i = 0; i < s->n; i++)
		step_one(&s->svc[i], dests, cap, now, deps, dense);
}
