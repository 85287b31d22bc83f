// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "logic/depset/depset.h"
#include "logic/depset/depset_int.h"
#include "logic/base/hist.h"
#include "logic/config/match.h"

/* Time constants of the call rates (seconds). */
#define RATE_NOW_TAU 2.0
#define RATE_BASELINE_TAU 300.0
/* retry_ratio: over the last 10 s, from samples a second apart */
#define RETRY_SPAN_NS 10000000000ULL
#define RETRY_SAMPLE_NS 1000000000ULL

static int reserve(struct dw_deps *deps, unsigned more)
{
	unsigned cap = deps->cap ? deps->cap : 64;
	struct dw_dep *p;

	while (cap < deps->n + more)
		cap *= 2;
	if (cap == deps->cap)
		return 0;
	p = realloc(deps->deps, cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	deps->deps = p;
	deps->cap = cap;
	return 0;
}

static struct dw_dep *dep_add(struct dw_deps *deps)
{
	struct dw_dep *dep;

	if (reserve(deps, 1))
		return NULL;
	dep = &deps->deps[deps->n++];
	memset(dep, 0, sizeof(*dep));
	dep->used = true;
	dep->enforce.forced = -1;
	/* no history yet: the first sample seeds the averages */
	dep->rates.call_rate = dep->rates.call_rate_baseline = dep->rates.retry_ratio = -1;
	return dep;
}

static bool in_config(const struct dw_config *cfg, const char *name)
{
	for (unsigned k = 0; k < cfg->ndeps; k++)
		if (!strcmp(cfg->deps[k].name, name))
			return true;
	return false;
}

/* A configured dependency's entry is keyed by its id; a destination's by id 0 and itself. */
static void breaker_key(const struct dw_dep *dep, struct dw_breaker_key *key)
{
	memset(key, 0, sizeof(*key));
	key->dep_id = dep->id;
	if (!dep->id)
		key->dest = dep->dest;
}

static void unpublish(struct dw_dep *dep, struct dw_depset_out *out)
{
	struct dw_breaker_op op = { .remove = true };

	breaker_key(dep, &op.key);
	if (dw_ds_put_op(out, &op))
		dep->enforce.published = false;
}

/* The ids the set keeps under cfg: those of its dependencies cfg still has. */
static void kept_ids(const struct dw_deps *deps, const struct dw_config *cfg, bool *taken)
{
	memset(taken, 0, DW_MAX_DEPS * sizeof(*taken));
	taken[0] = true;
	for (unsigned id = 1; id < DW_MAX_DEPS; id++) {
		int i = deps->index_of_id[id];

		if (i >= 0 && in_config(cfg, deps->deps[i].name))
			taken[id] = true;
	}
}

/* The id of cfg->deps[i]: its same-named dependency's, an earlier same name's, or a free one. */
static unsigned id_for(const struct dw_deps *deps, const struct dw_config *cfg, const unsigned *ids,
		       unsigned i, bool *taken, unsigned *fresh)
{
	const struct dw_dep *dep = dw_ds_configured_named(deps, cfg->deps[i].name);

	if (dep)
		return dep->id;
	for (unsigned k = 0; k < i; k++)
		if (!strcmp(cfg->deps[k].name, cfg->deps[i].name))
			return ids[k];
	for (unsigned id = 1; id < DW_MAX_DEPS; id++) {
		if (taken[id])
			continue;
		taken[id] = true;
		(*fresh)++;
		return id;
	}
	return 0;
}

/* The breakers map entries of the dependencies cfg no longer has. */
static void retire_plan(const struct dw_deps *deps, const struct dw_config *cfg,
			struct dw_depset_out *out)
{
	for (unsigned i = 0; i < deps->n; i++) {
		const struct dw_dep *dep = &deps->deps[i];
		struct dw_breaker_op op = { .remove = true };

		if (!dep->used || !dep->id || in_config(cfg, dep->name))
			continue;
		breaker_key(dep, &op.key);
		dw_ds_put_op(out, &op);
	}
}

/* The dependencies cfg no longer has go (their entries went with the plan). */
static void retire_missing(struct dw_deps *deps, const struct dw_config *cfg)
{
	for (unsigned i = 0; i < deps->n; i++) {
		struct dw_dep *dep = &deps->deps[i];

		if (!dep->used || !dep->id || in_config(cfg, dep->name))
			continue;
		deps->index_of_id[dep->id] = -1;
		dep->used = false;
		dep->enforce.published = false;
	}
}

int dw_depset_prepare(struct dw_deps *deps, const struct dw_config *cfg, unsigned *ids,
		      struct dw_depset_out *out)
{
	bool taken[DW_MAX_DEPS];
	unsigned fresh = 0;
	int err;

	if (cfg->ndeps >= DW_MAX_DEPS)
		return -ENOSPC;
	kept_ids(deps, cfg, taken);
	for (unsigned i = 0; i < cfg->ndeps; i++) {
		ids[i] = id_for(deps, cfg, ids, i, taken, &fresh);
		if (!ids[i])
			return -ENOSPC;
	}
	err = reserve(deps, fresh);
	if (!err && out)
		retire_plan(deps, cfg, out);
	return err;
}

/* The configured dependencies of cfg, keeping the breaker of those already known by name. */
static void adopt_configured(struct dw_deps *deps, const struct dw_config *cfg, const unsigned *ids,
			     uint64_t now)
{
	for (unsigned i = 0; i < cfg->ndeps; i++) {
		const struct dw_dep_config *dc = &cfg->deps[i];
		struct dw_dep *dep = dw_ds_configured_named(deps, dc->name);

		if (!dep) {
			/* room was reserved: this cannot fail */
			dep = dep_add(deps);
			snprintf(dep->name, sizeof(dep->name), "%s", dc->name);
			dep->id = ids[i];
			deps->index_of_id[dep->id] = dep - deps->deps;
			dw_breaker_init(&dep->br, &dc->s, now);
		}
		dep->s = &dc->s;
	}
}

static const struct dw_dep_settings *dep_settings(struct dw_deps *deps, const struct dw_dep *dep)
{
	deps->overflow_settings = deps->cfg.defaults;
	deps->overflow_settings.ignore = true;
	if (!dep->id && dw_row_kind_of(&dep->dest) == DW_ROW_OVERFLOW)
		return &deps->overflow_settings;
	for (unsigned k = 0; dep->id && k < deps->cfg.ndeps; k++)
		if (!strcmp(deps->cfg.deps[k].name, dep->name))
			return &deps->cfg.deps[k].s;
	return &deps->cfg.defaults;
}

int dw_depset_init(struct dw_deps *deps, struct dw_config *cfg, uint64_t lease_ns, uint64_t now)
{
	unsigned ids[DW_MAX_DEPS];
	int err;

	memset(deps, 0, sizeof(*deps));
	for (unsigned i = 0; i < DW_MAX_DEPS; i++)
		deps->index_of_id[i] = -1;
	deps->cfg = *cfg;
	deps->lease_ns = lease_ns;
	err = dw_depset_prepare(deps, &deps->cfg, ids, NULL);
	if (err)
		return err;
	adopt_configured(deps, &deps->cfg, ids, now);
	return 0;
}

void dw_depset_free(struct dw_deps *deps)
{
	free(deps->deps);
	dw_config_free(&deps->cfg);
	memset(deps, 0, sizeof(*deps));
}

void dw_depset_commit(struct dw_deps *deps, struct dw_config *cfg, const unsigned *ids,
		      uint64_t now, struct dw_dest *dests, size_t cap)
{
	retire_missing(deps, cfg);
	adopt_configured(deps, cfg, ids, now);
	dw_config_free(&deps->cfg);
	deps->cfg = *cfg;
	/* settings pointers into the new config */
	for (unsigned i = 0; i < deps->n; i++) {
		struct dw_dep *dep = &deps->deps[i];

		if (dep->used)
			dep->s = dep_settings(deps, dep);
	}
	for (size_t i = 0; i < cap; i++)
		dests[i].dep = -1;
}

/* A destination no match covers is a dependency of its own, named by its dest string. */
static int own_dep_of(struct dw_deps *deps, struct dw_dest *d, uint64_t now)
{
	struct dw_dep *dep;

	if (d->own_dep >= 0 && deps->deps[d->own_dep].used)
		return d->own_dep;
	dep = dep_add(deps);
	if (!dep)
		return -1;
	dw_dest_format(&d->key, dep->name, sizeof(dep->name));
	dep->dest = d->key;
	dep->s = dep_settings(deps, dep);
	dw_breaker_init(&dep->br, dep->s, now);
	d->own_dep = dep - deps->deps;
	return d->own_dep;
}

static void assign(struct dw_deps *deps, struct dw_dest *d, uint64_t now)
{
	int cfg_index = -1;
	const struct dw_dep *dep;

	if (!dw_dest_is_overflow(d))
		cfg_index = dw_config_lookup(&deps->cfg, d->key.family, d->key.addr, d->key.port);
	if (cfg_index < 0) {
		d->dep = own_dep_of(deps, d, now);
		return;
	}
	dep = dw_ds_configured_named(deps, deps->cfg.deps[cfg_index].name);
	d->dep = dep ? deps->index_of_id[dep->id] : -1;
}

/* Every destination onto its dependency's list, with the figures summed. */
static void gather(struct dw_deps *deps, struct dw_dest *dests, size_t cap, uint64_t now)
{
	for (unsigned i = 0; i < deps->n; i++) {
		struct dw_dep *dep = &deps->deps[i];

		dep->dests = NULL;
		dep->ndests = 0;
		memset(&dep->fig, 0, sizeof(dep->fig));
	}
	for (size_t i = 0; i < cap; i++) {
		struct dw_dest *d = &dests[i];
		struct dw_dep *dep;

		/* listener rows are the services'; the overflow row once something landed in it */
		if (!dw_dest_shown(d))
			continue;
		if (d->dep < 0)
			assign(deps, d, now);
		if (d->dep < 0)
			continue;
		dep = &deps->deps[d->dep];
		d->next_in_dep = dep->dests;
		dep->dests = d;
		dep->ndests++;
		dw_dep_figs_add_dest(&dep->fig, d);
	}
}

static void judge(struct dw_dep *dep, struct judge_scratch *js, uint64_t now)
{
	struct dw_judge_input in = { .now_ns = now, .s = dep->s };

	/* a closed period after an open one is judged on its own calls (breaker.c) */
	if (dep->br.state == DW_BREAKER_CLOSED)
		in.since_ns = dep->br.judged_since_ns;

	js->nslices = js->npending = 0;
	for (const struct dw_dest *d = dep->dests; d; d = d->next_in_dep) {
		dw_ds_merge_slices(js, d, now >> DW_SLICE_SHIFT);
		dw_ds_merge_pending(js, d);
	}
	dw_ds_scratch_input(js, &in);
	dw_judge(&in, &dep->j);
	memset(&dep->probes, 0, sizeof(dep->probes));
	if (dep->br.state == DW_BREAKER_HALF_OPEN)
		dw_judge_probes(&in, dep->br.half_open_since_ns, dep->s->half_open_calls, &dep->probes);
}

bool dw_dep_shown(const struct dw_dep *dep)
{
	return dep->used && (dep->id || dep->ndests);
}

double dw_rate_or_zero(double r)
{
	return r >= 0 && r <= 1 ? r : 0;
}

double dw_dep_percentile_ms(const struct dw_dep *dep, double q)
{
	uint64_t dense[DW_HIST_BUCKETS] = { 0 }, one[DW_HIST_BUCKETS];
	double ns;

	for (const struct dw_dest *d = dep->dests; d; d = d->next_in_dep) {
		dw_window_merge(&d->call_win, one);
		for (unsigned i = 0; i < DW_HIST_BUCKETS; i++)
			dense[i] += one[i];
	}
	ns = dw_hist_percentile_ns(dense, q);
	return ns < 0 ? -1 : ns / 1e6;
}

/* Configured dependencies always have an entry; destinations only while not closed. */
static void publish(struct dw_deps *deps, struct dw_dep *dep, uint64_t now,
		    struct dw_depset_out *out)
{
	struct dw_breaker_op op = {};

	if (!dep->id && dep->br.state == DW_BREAKER_CLOSED) {
		if (dep->enforce.published)
			unpublish(dep, out);
		return;
	}
	breaker_key(dep, &op.key);
	op.v.state = dep->br.state;
	op.v.reason = dep->enforce.forced >= 0 ? DW_REASON_FORCED : dep->br.reason;
	op.v.since_ns = dep->br.since_ns;
	op.v.lease_expires_ns = now + deps->lease_ns;
	op.v.forced = dep->enforce.forced >= 0;
	/* a new state (or a new half_open period) gets a fresh budget */
	op.v.probes_left = dep->br.state == DW_BREAKER_HALF_OPEN ? dep->s->half_open_calls : 0;
	snprintf(op.v.name, sizeof(op.v.name), "%s", dep->name);
	if (dw_ds_put_op(out, &op))
		dep->enforce.published = true;
}

static void breaker_event(struct dw_deps *deps, struct dw_dep *dep, uint64_t now,
			  enum dw_dep_event_kind kind, enum dw_breaker_state from,
			  enum dw_breaker_reason reason, struct dw_depset_out *out)
{
	struct dw_dep_event ev = { .kind = kind, .from = from, .state = dep->br.state,
				   .reason = reason, .now_ns = now };

	dw_ds_emit(out, deps, dep, ev);
}

static enum dw_dep_event_kind event_kind(enum dw_breaker_event_kind k)
{
	if (k == DW_EV_WARN_SLOW_RATE)
		return DW_DEP_WARN_SLOW_RATE;
	if (k == DW_EV_WARN_INFLIGHT)
		return DW_DEP_WARN_INFLIGHT;
	return DW_DEP_TRANSITION;
}

/* A forced breaker is not stepped: it holds until the operator gives it back. */
static void step(struct dw_deps *deps, struct dw_dep *dep, uint64_t now, struct dw_depset_out *out)
{
	struct dw_breaker_inputs in = {
		.now_ns = now,
		.j = &dep->j,
		.probes = dep->br.state == DW_BREAKER_HALF_OPEN ? &dep->probes : NULL,
		.inflight = dep->fig.inflight,
	};
	struct dw_breaker_events ev = {};

	if (dep->enforce.forced < 0)
		dw_breaker_step(&dep->br, dep->s, &in, &ev);
	for (unsigned i = 0; i < ev.n; i++) {
		if (ev.ev[i].kind == DW_EV_TRANSITION && ev.ev[i].to == DW_BREAKER_OPEN) {
			dep->enforce.rejected_at_open = dep->fig.rejected;
			dep->enforce.rejection_alerted = false;
		}
		breaker_event(deps, dep, now, event_kind(ev.ev[i].kind), ev.ev[i].from,
			      ev.ev[i].reason, out);
	}
	if (dep->br.state != DW_BREAKER_CLOSED &&
	    dep->fig.rejected > dep->enforce.rejected_at_open && !dep->enforce.rejection_alerted) {
		dep->enforce.rejection_alerted = true;
		breaker_event(deps, dep, now, DW_DEP_REJECTING, dep->br.state, DW_REASON_NONE, out);
	}
}

/* Call rates and retries, from the cumulative counts of this poll and the last. */
static void rates(struct dw_dep_rates *r, const struct dw_dep_figs *f, uint64_t now)
{
	double dt = (now - r->prev_ns) / 1e9, started;
	uint64_t d_started, d_retried;

	if (r->prev_ns && dt > 0 && f->started >= r->prev_started) {
		started = (f->started - r->prev_started) / dt;
		r->call_rate = dw_ewma(r->call_rate, started, dt, RATE_NOW_TAU);
		r->call_rate_baseline = dw_ewma(r->call_rate_baseline, started, dt, RATE_BASELINE_TAU);
	}
	r->prev_started = f->started;
	r->prev_ns = now;
	if (dw_count_ring_delta(&r->retry_ring, now, f->started, f->retried, RETRY_SPAN_NS,
				&d_started, &d_retried))
		r->retry_ratio = dw_retry_ratio(d_started, d_retried);
	dw_count_ring_push(&r->retry_ring, now, f->started, f->retried, RETRY_SAMPLE_NS);
}

/* Slow now: its breaker is not closed, or its judged calls are slow or failing. */
static bool dep_slow(const struct dw_dep *dep)
{
	return dep->br.state != DW_BREAKER_CLOSED || (dep->j.decided > 0 &&
	       (dep->j.slow_rate > 0 || dep->j.failure_rate > 0));
}

static void retry_watch(struct dw_deps *deps, struct dw_dep *dep, uint64_t now,
			struct dw_depset_out *out)
{
	bool storm = dw_retry_storm(dep->rates.retry_ratio, dep_slow(dep));
	struct dw_dep_event ev = { .kind = DW_DEP_RETRY_STORM, .from = dep->br.state,
				   .state = dep->br.state, .now_ns = now };

	/* clears only once retries are back near none, not at the threshold */
	if (dep->rates.retry_storm && !storm && dep->rates.retry_ratio >= 1.1 && dep_slow(dep))
		storm = true;
	if (storm == dep->rates.retry_storm)
		return;
	dep->rates.retry_storm = storm;
	ev.storm = storm;
	dw_ds_emit(out, deps, dep, ev);
}

int dw_depset_force(struct dw_deps *deps, const char *name, int state, uint64_t now,
		    struct dw_depset_out *out)
{
	for (unsigned i = 0; i < deps->n; i++) {
		struct dw_dep *dep = &deps->deps[i];
		struct dw_dep_event ev = { .kind = DW_DEP_OVERRIDE, .forced = state >= 0,
					   .now_ns = now };

		if (!dep->used || strcmp(dep->name, name))
			continue;
		ev.from = dep->br.state;
		dep->enforce.forced = state;
		dw_breaker_force(&dep->br, dep->s, state, now);
		if (state >= 0) {
			dep->enforce.rejected_at_open = dep->fig.rejected;
			dep->enforce.rejection_alerted = false;
		}
		ev.state = dep->br.state;
		dw_ds_emit(out, deps, dep, ev);
		/* the kernel acts on it now, not at the next poll */
		publish(deps, dep, now, out);
		return 0;
	}
	return -ENOENT;
}

/* A destination's own dependency once a reload moved the destination into a configured one. */
static void retire_orphan(struct dw_dep *dep, struct dw_depset_out *out)
{
	if (dep->enforce.published)
		unpublish(dep, out);
}

/* hot: only the dependencies whose destinations are marked hot (dw_depset_next_slow). */
static void judge_all(struct dw_deps *deps, uint64_t now, bool hot, struct dw_depset_out *out)
{
	struct judge_scratch *js = calloc(1, sizeof(*js));

	if (!js) {
		out->oom = true;
		return;
	}
	for (unsigned i = 0; i < deps->n; i++) {
		struct dw_dep *dep = &deps->deps[i];

		if (!dep->used)
			continue;
		if (hot) {
			/* a dependency's destinations are hot together */
			if (!dep->dests || !dep->dests->hot)
				continue;
			memset(&dep->fig, 0, sizeof(dep->fig));
			for (const struct dw_dest *d = dep->dests; d; d = d->next_in_dep)
				dw_dep_figs_add_dest(&dep->fig, d);
		} else if (!dep->id && !dep->ndests) {
			retire_orphan(dep, out);
			continue;
		}
		judge(dep, js, now);
		/* call rates and retry storms keep the polling cadence */
		if (!hot)
			rates(&dep->rates, &dep->fig, now);
		step(deps, dep, now, out);
		if (!hot)
			retry_watch(deps, dep, now, out);
		publish(deps, dep, now, out);
		dw_ds_eject_dep(deps, dep, js, now, out);
	}
	free(js->pending);
	free(js);
}

void dw_depset_poll(struct dw_deps *deps, struct dw_dest *dests, size_t cap, uint64_t now,
		    struct dw_depset_out *out)
{
	gather(deps, dests, cap, now);
	judge_all(deps, now, false, out);
}

void dw_depset_rejudge(struct dw_deps *deps, uint64_t now, struct dw_depset_out *out)
{
	judge_all(deps, now, true, out);
}

/* The first moment after now at which one of dep's outstanding calls turns slow; 0: none. */
static uint64_t next_slow(const struct dw_dep *dep, uint64_t now)
{
	uint64_t first = 0;

	if (dep->s->ignore)
		return 0;
	for (const struct dw_dest *d = dep->dests; d; d = d->next_in_dep) {
		uint64_t t = dw_judge_next_slow(d->pending_start, d->pending_calls, dep->s->slow_call_ns, now);

		if (t && (!first || t < first))
			first = t;
	}
	return first;
}

uint64_t dw_depset_next_slow(struct dw_deps *deps, struct dw_dest *dests, size_t cap, uint64_t now)
{
	uint64_t first = 0;

	for (size_t i = 0; i < cap; i++)
		dests[i].hot = false;
	for (unsigned i = 0; i < deps->n; i++) {
		struct dw_dep *dep = &deps->deps[i];
		uint64_t t;

		if (!dep->used || !dep->ndests)
			continue;
		t = next_slow(dep, now);
		if (!t)
			continue;
		for (struct dw_dest *d = dep->dests; d; d = d->next_in_dep)
			d->hot = true;
		if (!first || t < first)
			first = t;
	}
	return first;
}

const struct dw_dep *dw_depset_find(const struct dw_deps *deps, const char *name)
{
	return dw_ds_configured_named(deps, name);
}

const struct dw_dep *dw_depset_configured(const struct dw_deps *deps, unsigned cfg_index)
{
	if (cfg_index >= deps->cfg.ndeps)
		return NULL;
	return dw_ds_configured_named(deps, deps->cfg.deps[cfg_index].name);
}

const struct dw_dep *dw_depset_at(const struct dw_deps *deps, int index)
{
	if (index < 0 || (unsigned)index >= deps->n)
		return NULL;
	return &deps->deps[index];
}

uint64_t dw_depset_timeout_ns(const struct dw_deps *deps, const struct dw_dep *dep)
{
	for (unsigned k = 0; dep->id && k < deps->cfg.ndeps; k++)
		if (!strcmp(deps->cfg.deps[k].name, dep->name))
			return deps->cfg.deps[k].timeout_ns;
	return 0;
}

const char *dw_dep_enforce_mode(const struct dw_deps *deps, const struct dw_dep *dep)
{
	if (dep->s->enforce_abort && deps->can_abort)
		return "abort";
	return dep->s->enforce_connect ? "connect" : "off";
}

const char *dw_dep_outcome(const struct dw_dep *dep, char *buf, size_t len)
{
	if (!dep->fig.failed)
		return NULL;
	for (const struct dw_dest *d = dep->dests; d; d = d->next_in_dep) {
		/* an HTTP/2 answer decoded by the daemon (lateout.h), else the kernel's HTTP/1 status */
		if (d->late && dw_late_outcome(d->late, buf, len))
			return buf;
		if (!d->sum.last_fail_status)
			continue;
		snprintf(buf, len, "http_%u", d->sum.last_fail_status);
		return buf;
	}
	return NULL;
}
