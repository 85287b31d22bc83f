// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "depset.h"
#include "hist.h"
#include "match.h"

/* Time constants of the call rates (seconds). */
#define RATE_NOW_TAU 2.0
#define RATE_BASELINE_TAU 300.0
/* retry_ratio: over the last 10 s, from samples a second apart */
#define RETRY_SPAN_NS 10000000000ULL
#define RETRY_SAMPLE_NS 1000000000ULL

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

static void emit(struct dw_depset_out *out, const struct dw_deps *deps, const struct dw_dep *dep,
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

static bool put_op(struct dw_depset_out *out, const struct dw_breaker_op *op)
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

static struct dw_dep *configured_named(const struct dw_deps *deps, const char *name)
{
	for (unsigned i = 0; i < deps->n; i++)
		if (deps->deps[i].used && deps->deps[i].id && !strcmp(deps->deps[i].name, name))
			return &deps->deps[i];
	return NULL;
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
	if (put_op(out, &op))
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
	const struct dw_dep *dep = configured_named(deps, cfg->deps[i].name);

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
		put_op(out, &op);
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
		struct dw_dep *dep = configured_named(deps, dc->name);

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
	dep = configured_named(deps, deps->cfg.deps[cfg_index].name);
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

/* Scratch space for one dependency's merged slices and outstanding calls. */
struct judge_scratch {
	struct dw_slice_counts slices[DW_SLICES];
	unsigned nslices;
	uint64_t *pending;
	unsigned npending, cap;
};

static void merge_slices(struct judge_scratch *js, const struct dw_dest *d, uint64_t now_slice)
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
		acc->started += sl->started;
		acc->fast += sl->fast;
		acc->slow += sl->slow;
		acc->failed += sl->failed;
	}
}

static int merge_pending(struct judge_scratch *js, const struct dw_dest *d)
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
static void judge_scratch_input(const struct judge_scratch *js, struct dw_judge_input *in)
{
	in->slices = js->slices;
	in->nslices = js->nslices;
	in->pending_start_ns = js->pending;
	in->npending = js->npending;
}

static void judge(struct dw_dep *dep, struct judge_scratch *js, uint64_t now)
{
	struct dw_judge_input in = { .now_ns = now, .s = dep->s };

	/* a closed period after an open one is judged on its own calls (breaker.c) */
	if (dep->br.state == DW_BREAKER_CLOSED)
		in.since_ns = dep->br.judged_since_ns;

	js->nslices = js->npending = 0;
	for (const struct dw_dest *d = dep->dests; d; d = d->next_in_dep) {
		merge_slices(js, d, now >> DW_SLICE_SHIFT);
		merge_pending(js, d);
	}
	judge_scratch_input(js, &in);
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
	if (put_op(out, &op))
		dep->enforce.published = true;
}

static void breaker_event(struct dw_deps *deps, struct dw_dep *dep, uint64_t now,
			  enum dw_dep_event_kind kind, enum dw_breaker_state from,
			  enum dw_breaker_reason reason, struct dw_depset_out *out)
{
	struct dw_dep_event ev = { .kind = kind, .from = from, .state = dep->br.state,
				   .reason = reason, .now_ns = now };

	emit(out, deps, dep, ev);
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
	emit(out, deps, dep, ev);
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
		emit(out, deps, dep, ev);
		/* the kernel acts on it now, not at the next poll */
		publish(deps, dep, now, out);
		return 0;
	}
	return -ENOENT;
}

/* ---- Outlier ejection (eject.h): one destination against its siblings ---- */

static struct dw_eject_policy eject_policy(const struct dw_dep_settings *s)
{
	return (struct dw_eject_policy){ .slow_rate = s->slow_rate, .failure_rate = s->failure_rate,
					 .eject_for_ns = s->eject_for_ns,
					 .max_ejected = s->max_ejected };
}

static void eject_key(unsigned dep_id, const struct dw_dest *d, struct dw_breaker_key *key)
{
	memset(key, 0, sizeof(*key));
	key->dep_id = dep_id;
	key->dest = d->key;
}

static void eject_unpublish(struct dw_dest *d, struct dw_depset_out *out)
{
	struct dw_breaker_op op = { .remove = true };

	eject_key(d->ej.dep_id, d, &op.key);
	if (put_op(out, &op))
		d->ej.published = false;
}

/* Out: refused (and aborted) under a lease; probing: its probes let through; in: no entry. */
static void eject_publish(const struct dw_deps *deps, const struct dw_dep *dep, struct dw_dest *d,
			  uint64_t now, struct dw_depset_out *out)
{
	const struct dw_eject *e = &d->ej.e;
	struct dw_breaker_op op = {};

	if (e->state == DW_EJECT_IN) {
		if (d->ej.published)
			eject_unpublish(d, out);
		return;
	}
	eject_key(dep->id, d, &op.key);
	op.v.state = e->state == DW_EJECT_OUT ? DW_BREAKER_OPEN : DW_BREAKER_HALF_OPEN;
	op.v.reason = d->ej.forced ? DW_REASON_FORCED : e->slow ? DW_REASON_SLOW_RATE :
				     DW_REASON_FAILURE_RATE;
	op.v.since_ns = e->since_ns;
	op.v.lease_expires_ns = now + deps->lease_ns;
	op.v.forced = d->ej.forced;
	op.v.probes_left = e->state == DW_EJECT_PROBING ? dep->s->eject_probe_calls : 0;
	snprintf(op.v.name, sizeof(op.v.name), "%s", dep->name);
	if (put_op(out, &op))
		d->ej.published = true;
}

static void eject_event(struct dw_deps *deps, struct dw_dep *dep, struct dw_dest *d, bool by_hand,
			uint64_t now, struct dw_depset_out *out)
{
	struct dw_dep_event ev = { .kind = DW_DEP_EJECT, .from = dep->br.state,
				   .state = dep->br.state, .now_ns = now, .dest = d->key,
				   .out = d->ej.e.state == DW_EJECT_OUT, .forced = by_hand };

	emit(out, deps, dep, ev);
}

/*
 * Its ejection, from scratch: a destination new to this dependency, or one
 * whose ejection a reload ended (eject = off, or it moved): back at once,
 * and said so under the dependency it was out of, if that one is still there.
 */
static void eject_reset(struct dw_deps *deps, struct dw_dest *d, unsigned dep_id, uint64_t now,
			struct dw_depset_out *out)
{
	int was = d->ej.dep_id < DW_MAX_DEPS ? deps->index_of_id[d->ej.dep_id] : -1;

	if (d->ej.published)
		eject_unpublish(d, out);
	if (d->ej.dep_id && d->ej.e.state != DW_EJECT_IN && was >= 0) {
		d->ej.e.state = DW_EJECT_IN;
		d->ej.forced = false;
		struct dw_dep_event ev = { .kind = DW_DEP_EJECT, .now_ns = now, .dest = d->key,
					   .ended = true };

		emit(out, deps, &deps->deps[was], ev);
	}
	memset(&d->ej, 0, sizeof(d->ej));
	d->ej.dep_id = dep_id;
}

/*
 * The destination's own judgement by the dependency's rules, over the calls
 * started since it was last back (its slow calls from before its ejection
 * are not held against it again), and its probes while probing.
 */
static void eject_judge(const struct dw_dep *dep, struct dw_dest *d, struct judge_scratch *js,
			uint64_t now)
{
	const struct dw_eject *e = &d->ej.e;
	struct dw_judge_input in = { .now_ns = now, .s = dep->s,
				     .since_ns = e->state == DW_EJECT_IN ? e->since_ns : 0 };

	js->nslices = js->npending = 0;
	merge_slices(js, d, now >> DW_SLICE_SHIFT);
	merge_pending(js, d);
	judge_scratch_input(js, &in);
	dw_judge(&in, &d->ej.j);
	memset(&d->ej.probes, 0, sizeof(d->ej.probes));
	if (e->state == DW_EJECT_PROBING)
		dw_judge_probes(&in, e->since_ns, dep->s->eject_probe_calls, &d->ej.probes);
}

/* Calls started in the dependency's window: a destination that counts among the siblings. */
static bool had_calls(const struct dw_dep *dep, const struct dw_dest *d, uint64_t now)
{
	uint64_t from = now > dep->s->window_ns ? (now - dep->s->window_ns) >> DW_SLICE_SHIFT : 0;

	if (d->pending_calls)
		return true;
	for (unsigned i = 0; i < d->nslices; i++)
		if (d->slices[i].started && d->slices[i].slice >= from &&
		    d->slices[i].slice + DW_SLICES > now >> DW_SLICE_SHIFT)
			return true;
	return false;
}

/* The slow_rate of d's siblings: their decided calls together. */
static double siblings_slow_rate(const struct dw_dep *dep, const struct dw_dest *d)
{
	double decided = 0, slow = 0;

	for (const struct dw_dest *o = dep->dests; o; o = o->next_in_dep) {
		if (o == d || o->ej.e.state != DW_EJECT_IN)
			continue;
		decided += o->ej.j.decided;
		slow += o->ej.j.slow;
	}
	return decided > 0 ? slow / decided : 0;
}

/* It went out: what is refused and aborted counts from now, until it is back. */
static void eject_began(const struct dw_dep *dep, struct dw_dest *d, enum dw_eject_state was)
{
	if (was != DW_EJECT_IN)
		return;	/* a probe failed, or ejected by hand while out: still the same streak */
	d->ej.out_since_ns = d->ej.e.since_ns;
	d->ej.refused_at = d->sum.connects_rejected;
	d->ej.aborted_at = d->sum.conns_aborted_eject;
	d->ej.pass_aborted = 0;
	d->ej.siblings_slow_rate = siblings_slow_rate(dep, d);
}

/* Of dep's destinations, those out or probing. */
static unsigned ejected_count(const struct dw_dep *dep)
{
	unsigned n = 0;

	for (const struct dw_dest *d = dep->dests; d; d = d->next_in_dep)
		n += dw_dest_ejected(d, dep->id);
	return n;
}

/* A step of the ejection of dep's destinations (a configured dependency with eject = on). */
static void eject_dep(struct dw_deps *deps, struct dw_dep *dep, struct judge_scratch *js,
		      uint64_t now, struct dw_depset_out *out)
{
	struct dw_eject_policy p = eject_policy(dep->s);
	struct dw_eject_dest ed[64];
	struct dw_dest *dd[64];
	enum dw_eject_state was[64];
	unsigned n = 0;
	uint64_t changed;

	bool on = dep->id && dep->s->eject;

	for (struct dw_dest *d = dep->dests; d; d = d->next_in_dep) {
		if (d->ej.dep_id != dep->id ||
		    (!on && (d->ej.published || d->ej.e.state != DW_EJECT_IN)))
			eject_reset(deps, d, dep->id, now, out);
		if (!on || n == 64)
			continue;
		eject_judge(dep, d, js, now);
		ed[n] = (struct dw_eject_dest){ .e = &d->ej.e, .j = d->ej.j, .probes = d->ej.probes,
						.had_calls = had_calls(dep, d, now) };
		was[n] = d->ej.e.state;
		dd[n++] = d;
	}
	changed = dw_eject_step(&p, &dep->j, ed, n, now);
	for (unsigned i = 0; i < n; i++) {
		struct dw_dest *d = dd[i];

		if (changed & (1ULL << i)) {
			if (d->ej.e.state == DW_EJECT_OUT)
				eject_began(dep, d, was[i]);
			/* back: judged from now on, on its calls from now on */
			if (d->ej.e.state == DW_EJECT_IN)
				eject_judge(dep, d, js, now);
			if (d->ej.e.state != DW_EJECT_PROBING) {
				d->ej.forced = false;
				eject_event(deps, dep, d, false, now, out);
			}
		}
		eject_publish(deps, dep, d, now, out);
	}
	dep->ejected_dests = ejected_count(dep);
}

int dw_depset_eject(struct dw_deps *deps, const char *name, const struct dw_dest_key *dest, bool out,
		    uint64_t now, struct dw_depset_out *out_ops)
{
	struct dw_dep *dep = configured_named(deps, name);

	if (!dep)
		return -ENOENT;
	if (!dep->s->eject)
		return -EINVAL;	/* the next poll would end it */
	for (struct dw_dest *d = dep->dests; d; d = d->next_in_dep) {
		struct dw_eject_policy p = eject_policy(dep->s);

		/* the operator names an address and port: the destination in any netns */
		if (d->key.family != dest->family || d->key.port != dest->port ||
		    memcmp(d->key.addr, dest->addr, sizeof(dest->addr)))
			continue;
		enum dw_eject_state was;

		if (d->ej.dep_id != dep->id)
			eject_reset(deps, d, dep->id, now, out_ops);
		was = d->ej.e.state;
		dw_eject_force(&p, &d->ej.e, out, now);
		if (out)
			eject_began(dep, d, was);
		d->ej.forced = out;
		eject_event(deps, dep, d, true, now, out_ops);
		dep->ejected_dests = ejected_count(dep);
		/* the kernel acts on it now, not at the next poll */
		eject_publish(deps, dep, d, now, out_ops);
		return 0;
	}
	return -ENOENT;
}

/*
 * Whether d's ejection (in the dependency with id dep_id and name) lives on
 * under cfg: the dependency is still there by name, with eject = on, and
 * still the one d matches.
 */
static bool ejection_kept(const struct dw_config *cfg, const char *name, const struct dw_dest *d)
{
	int k = dw_config_lookup(cfg, d->key.family, d->key.addr, d->key.port);

	return k >= 0 && !strcmp(cfg->deps[k].name, name) && cfg->deps[k].s.eject;
}

void dw_depset_prepare_ejections(const struct dw_deps *deps, const struct dw_config *cfg,
				 const struct dw_dest *dests, size_t cap, struct dw_depset_out *out)
{
	for (size_t i = 0; i < cap; i++) {
		const struct dw_dest *d = &dests[i];
		int at;
		struct dw_breaker_op op = { .remove = true };

		if (!d->used || !d->ej.published || d->ej.dep_id >= DW_MAX_DEPS)
			continue;
		at = deps->index_of_id[d->ej.dep_id];
		if (at >= 0 && ejection_kept(cfg, deps->deps[at].name, d))
			continue;
		eject_key(d->ej.dep_id, d, &op.key);
		put_op(out, &op);
	}
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
		eject_dep(deps, dep, js, now, out);
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
	return configured_named(deps, name);
}

const struct dw_dep *dw_depset_configured(const struct dw_deps *deps, unsigned cfg_index)
{
	if (cfg_index >= deps->cfg.ndeps)
		return NULL;
	return configured_named(deps, deps->cfg.deps[cfg_index].name);
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
