// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include "output/alert.h"
#include "collect/collect.h"
#include "daemon/deps.h"
#include "host/log.h"

int dw_deps_init(struct dw_deps_io *io, struct dw_config *cfg, uint64_t lease_ns, struct dw_bpf *b)
{
	unsigned ndeps = cfg->ndeps;
	int err;

	memset(io, 0, sizeof(*io));
	dw_kstate_init(&io->ks, b);
	err = dw_depset_init(&io->set, cfg, lease_ns, dw_monotonic_ns());
	if (err == -ENOSPC)
		dw_err("%s: %u dependencies, at most %d", io->set.cfg.source, ndeps, DW_MAX_DEPS - 1);
	return err;
}

void dw_deps_free(struct dw_deps_io *io)
{
	dw_depset_free(&io->set);
	dw_depset_out_free(&io->out);
	free(io->buckets);
	free(io->held);
	memset(io, 0, sizeof(*io));
}

/* The ids the set gave the config's dependencies, as the kernel's match rules name them. */
static void config_ids(const struct dw_deps *set, unsigned *ids)
{
	for (unsigned i = 0; i < set->cfg.ndeps; i++) {
		const struct dw_dep *dep = dw_depset_find(set, set->cfg.deps[i].name);

		ids[i] = dep ? dep->id : 0;
	}
}

int dw_deps_to_kernel(struct dw_deps_io *io)
{
	unsigned ids[DW_MAX_DEPS];

	config_ids(&io->set, ids);
	return dw_kstate_config(&io->ks, &io->set.cfg, ids, false, NULL, 0);
}

/* A new dependency's bucket is full; indexes are never reused, so a bucket is one dependency's. */
static struct dw_alert_bucket *bucket(struct dw_deps_io *io, unsigned index)
{
	if (index >= io->nbuckets) {
		unsigned n = io->set.n > index ? io->set.n : index + 1;
		struct dw_alert_bucket *p = realloc(io->buckets, n * sizeof(*p));

		if (!p)
			return NULL;
		for (unsigned i = io->nbuckets; i < n; i++) {
			p[i].open_sent = false;
			dw_ratelimit_init(&p[i].lines);
		}
		io->buckets = p;
		io->nbuckets = n;
	}
	return &io->buckets[index];
}

static const char *warning_reason(const struct dw_dep_event *ev)
{
	switch (ev->kind) {
	case DW_DEP_RETRY_STORM:
		return ev->storm ? "retry_storm" : "retry_storm_over";
	case DW_DEP_WARN_INFLIGHT:
		return "inflight";
	case DW_DEP_WARN_SLOW_RATE:
		return "slow_rate";
	default:
		return "rejecting_connects";
	}
}

static int severity(const struct dw_dep_event *ev, bool closing)
{
	if (ev->kind == DW_DEP_RETRY_STORM)
		return ev->storm ? LOG_WARNING : LOG_NOTICE;
	if (ev->kind == DW_DEP_TRANSITION && ev->state == DW_BREAKER_OPEN)
		return LOG_ERR;
	return closing ? LOG_NOTICE : LOG_WARNING;
}

/*
 * Whether the alert goes out, by the dependency's bucket: an open that was
 * announced is always followed by its close.
 */
static bool alert_allowed(struct dw_deps_io *io, const struct dw_dep_event *ev, bool closing,
			  unsigned *suppressed)
{
	struct dw_alert_bucket *b = bucket(io, ev->dep);
	bool transition = ev->kind == DW_DEP_TRANSITION;

	*suppressed = 0;
	if (!b)
		return true;
	if (!dw_ratelimit_take(&b->lines, ev->now_ns, closing && b->open_sent, suppressed))
		return false;
	if (transition)
		b->open_sent = !closing;
	return true;
}

/* Callers named on an open line: the top ones by calls in flight. */
#define ALERT_CALLERS 3

/*
 * "frontend.service:118,cron.service:2": the dependency's top callers by
 * calls in flight (then by calls), into buf; "" when none is known.
 */
static void top_callers(const struct dw_collector *c, unsigned dep, char *buf, size_t len)
{
	struct dw_caller_fig *v;
	size_t n = c ? dw_collect_callers(c, &v) : 0, used = 0;
	unsigned shown = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && shown < ALERT_CALLERS; i++) {
		struct dw_cgname name;
		int w;

		if (v[i].dep != (int)dep)
			continue;
		dw_collect_caller_name(c, v[i].cgroup_id, &name);
		w = snprintf(buf + used, len - used, "%s%s:%llu", shown ? "," : "", name.name,
			     (unsigned long long)v[i].inflight);
		if (w < 0 || (size_t)w >= len - used) {
			buf[used] = '\0';
			break;
		}
		used += w;
		shown++;
	}
	if (n)
		free(v);
}

/* One breaker event as a syslog line (and --events JSON), from the dependency's figures. */
static void alert(struct dw_deps_io *io, const struct dw_dep_event *ev)
{
	const struct dw_dep *dep = &io->set.deps[ev->dep];
	bool transition = ev->kind == DW_DEP_TRANSITION;
	bool closing = transition && ev->state == DW_BREAKER_CLOSED;
	char callers[3 * (DW_CG_NAME_LEN + 24)], outcome[32];
	struct dw_alert a = {
		.dependency = dep->name,
		.event = transition ? "transition" : "warning",
		.state = dw_breaker_state_name(ev->state),
		.from = transition ? dw_breaker_state_name(ev->from) : NULL,
		.slow_rate = dep->j.slow_rate,
		.failure_rate = dep->j.failure_rate,
		.slow_call_ns = dep->s->slow_call_ns,
		.calls = (uint64_t)dep->j.decided,
		.inflight = dep->fig.inflight,
		.max_inflight = dep->s->max_inflight,
		.oldest_ms = dep->fig.oldest_call_ns ?
			     (ev->now_ns - dep->fig.oldest_call_ns) / 1e6 : -1,
	};

	if (!alert_allowed(io, ev, closing, &a.suppressed))
		return;
	a.reason = transition ? dw_breaker_reason_name(ev->reason) : warning_reason(ev);
	a.severity = severity(ev, closing);
	if (ev->kind == DW_DEP_RETRY_STORM) {
		a.retry_ratio = dep->rates.retry_ratio;
		a.call_rate = dep->rates.call_rate;
		a.call_rate_baseline = dep->rates.call_rate_baseline;
	}
	a.p99_ms = dw_dep_percentile_ms(dep, 0.99);
	if (transition && ev->state == DW_BREAKER_OPEN) {
		top_callers(io->coll, ev->dep, callers, sizeof(callers));
		a.callers = callers[0] ? callers : NULL;
		if (ev->reason == DW_REASON_FAILURE_RATE)
			a.outcome = dw_dep_outcome(dep, outcome, sizeof(outcome));
	}
	dw_alert_emit(&a);
}

/* An operator's override is a note, not rate-limited. */
static void override_note(const struct dw_deps_io *io, const struct dw_dep_event *ev)
{
	const char *name = io->set.deps[ev->dep].name;

	if (!ev->forced) {
		dw_alert_note(LOG_NOTICE, "dependency=%s event=override breaker=auto state=closed", name);
		return;
	}
	dw_alert_note(LOG_WARNING, "dependency=%s event=override state=%s forced=yes", name,
		      dw_breaker_state_name(ev->state));
}

/* An ejection's line waits for the abort pass of its step; a full list drops it, and says so. */
static void hold(struct dw_deps_io *io, const struct dw_dep_event *ev)
{
	if (io->nheld == io->capheld) {
		unsigned cap = io->capheld ? 2 * io->capheld : 8;
		struct dw_dep_event *p = realloc(io->held, cap * sizeof(*p));

		if (!p) {
			dw_err("out of memory: an ejection's line is lost");
			return;
		}
		io->held = p;
		io->capheld = cap;
	}
	io->held[io->nheld++] = *ev;
}

static struct dw_dest *dest_in(const struct dw_dep *dep, const struct dw_dest_key *key)
{
	for (struct dw_dest *d = dep->dests; d; d = d->next_in_dep)
		if (!memcmp(&d->key, key, sizeof(*key)))
			return d;
	return NULL;
}

/* One ejection's (or return's) line: the destination against its siblings, and what was done. */
static void eject_line(struct dw_deps_io *io, const struct dw_dep_event *ev)
{
	const struct dw_dep *dep = &io->set.deps[ev->dep];
	const struct dw_dest *d = dest_in(dep, &ev->dest);
	char dest[64];
	struct dw_eject_alert a = { .dependency = dep->name, .destination = dest, .out = ev->out,
				    .enforce = dw_dep_enforce_mode(&io->set, dep) };
	uint64_t aborted;

	dw_dest_format(&ev->dest, dest, sizeof(dest));
	a.severity = ev->out ? LOG_WARNING : LOG_NOTICE;
	if (ev->ended || !d) {
		/* a reload ended it: the destination is another dependency's now */
		a.reason = "reload";
		dw_alert_eject(&a);
		return;
	}
	a.reason = ev->forced ? "forced" : !ev->out ? "probes" : dw_dest_eject_reason(&d->ej);
	a.slow_rate = d->ej.j.slow_rate;
	a.failure_rate = d->ej.j.failure_rate;
	a.siblings_slow_rate = d->ej.siblings_slow_rate;
	a.ejections = d->ej.e.ejections;
	a.for_ns = ev->out ? d->ej.e.until_ns - d->ej.e.since_ns : ev->now_ns - d->ej.out_since_ns;
	a.refused = d->sum.connects_rejected - d->ej.refused_at;
	aborted = d->sum.conns_aborted_eject - d->ej.aborted_at;
	a.aborted = aborted > d->ej.pass_aborted ? aborted : d->ej.pass_aborted;
	dw_alert_eject(&a);
}

void dw_deps_announce(struct dw_deps_io *io)
{
	for (unsigned i = 0; i < io->nheld; i++)
		eject_line(io, &io->held[i]);
	io->nheld = 0;
}

/* The kernel first, so that an alert never announces what the kernel does not do yet. */
static void apply(struct dw_deps_io *io)
{
	const struct dw_depset_out *out = &io->out;

	if (out->oom)
		dw_err("out of memory judging dependencies");
	dw_kstate_breakers(&io->ks, out->ops, out->nops);
	for (unsigned i = 0; i < out->nev; i++) {
		if (out->ev[i].kind == DW_DEP_OVERRIDE)
			override_note(io, &out->ev[i]);
		else if (out->ev[i].kind == DW_DEP_EJECT)
			hold(io, &out->ev[i]);
		else
			alert(io, &out->ev[i]);
	}
	dw_depset_out_reset(&io->out);
}

void dw_deps_poll(struct dw_deps_io *io, struct dw_collector *c)
{
	io->coll = c;
	dw_depset_poll(&io->set, c->dests, c->cap, c->now_ns, &io->out);
	apply(io);
}

uint64_t dw_deps_next_slow(struct dw_deps_io *io, struct dw_collector *c)
{
	return dw_depset_next_slow(&io->set, c->dests, c->cap, c->now_ns);
}

void dw_deps_rejudge(struct dw_deps_io *io, struct dw_collector *c)
{
	io->coll = c;
	dw_depset_rejudge(&io->set, c->now_ns, &io->out);
	apply(io);
}

int dw_deps_force(struct dw_deps_io *io, const char *name, int state, uint64_t now)
{
	int err = dw_depset_force(&io->set, name, state, now, &io->out);

	apply(io);
	return err;
}

int dw_deps_eject(struct dw_deps_io *io, const char *name, const struct dw_dest_key *dest, bool out,
		  uint64_t now)
{
	int err = dw_depset_eject(&io->set, name, dest, out, now, &io->out);

	apply(io);
	return err;
}

/* Against the kernel's limits, before anything is planned. */
static int reload_fits(const struct dw_config *cfg)
{
	unsigned prefixes = dw_kstate_match_prefixes(cfg);

	if (cfg->ndeps < DW_MAX_DEPS && prefixes <= DW_MATCH_TRIE_ENTRIES)
		return 0;
	dw_err("%s: %u dependencies and %u matches; the kernel takes at most %d and %d",
	       cfg->source, cfg->ndeps, prefixes, DW_MAX_DEPS - 1, DW_MATCH_TRIE_ENTRIES);
	return -ENOSPC;
}

int dw_deps_reload(struct dw_deps_io *io, struct dw_config *cfg, struct dw_collector *c)
{
	unsigned ids[DW_MAX_DEPS];
	int err = reload_fits(cfg);

	if (!err)
		err = dw_depset_prepare(&io->set, cfg, ids, &io->out);
	/* and so do the ejections it ends */
	if (!err)
		dw_depset_prepare_ejections(&io->set, cfg, c->dests, c->cap, &io->out);
	if (!err && io->out.oom)
		err = -ENOMEM;
	/* the retiring dependencies' breakers go in the same all-or-nothing step */
	if (!err)
		err = dw_kstate_config(&io->ks, cfg, ids, true, io->out.ops, io->out.nops);
	dw_depset_out_reset(&io->out);
	if (err) {
		dw_config_free(cfg);
		return err;
	}
	dw_depset_commit(&io->set, cfg, ids, c->now_ns, c->dests, c->cap);
	return 0;
}
