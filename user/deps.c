// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include "alert.h"
#include "collect.h"
#include "deps.h"
#include "loader.h"
#include "depwatch.skel.h"
#include "log.h"
#include "logic/cascade.h"
#include "logic/hist.h"

/* Alerts per dependency: a burst of 5, then one every 12 s. */
#define ALERT_BURST 5.0
#define ALERT_REFILL_NS 12000000000ULL
/* alert() kind for a retry storm starting (its end is a notice of the same kind) */
#define EV_RETRY_STORM 100

/* Time constants of the call rates (seconds). */
#define RATE_NOW_TAU 2.0
#define RATE_BASELINE_TAU 300.0
/* retry_ratio: over the last 10 s, from samples a second apart */
#define RETRY_SPAN_NS 10000000000ULL
#define RETRY_SAMPLE_NS 1000000000ULL

static struct dw_dep *dep_add(struct dw_deps *deps)
{
	struct dw_dep *dep;

	if (deps->n == deps->cap) {
		unsigned cap = deps->cap ? deps->cap * 2 : 64;
		struct dw_dep *p = realloc(deps->deps, cap * sizeof(*p));

		if (!p)
			return NULL;
		deps->deps = p;
		deps->cap = cap;
	}
	dep = &deps->deps[deps->n++];
	memset(dep, 0, sizeof(*dep));
	dep->used = true;
	dep->tokens = ALERT_BURST;
	dep->forced = -1;
	/* no history yet: the first sample seeds the averages */
	dep->call_rate = dep->call_rate_baseline = dep->retry_ratio = -1;
	return dep;
}

static unsigned free_id(const struct dw_deps *deps)
{
	for (unsigned id = 1; id < DW_MAX_DEPS; id++)
		if (deps->index_of_id[id] < 0)
			return id;
	return 0;
}

/* The configured dependencies of cfg, keeping the breaker and id of those already known by name. */
static int adopt_configured(struct dw_deps *deps, const struct dw_config *cfg, uint64_t now)
{
	for (unsigned i = 0; i < cfg->ndeps; i++) {
		const struct dw_dep_config *dc = &cfg->deps[i];
		struct dw_dep *dep = NULL;

		for (unsigned k = 0; k < deps->n && !dep; k++)
			if (deps->deps[k].used && deps->deps[k].id && !strcmp(deps->deps[k].name, dc->name))
				dep = &deps->deps[k];
		if (!dep) {
			unsigned id = free_id(deps);

			if (!id || !(dep = dep_add(deps)))
				return -ENOSPC;
			snprintf(dep->name, sizeof(dep->name), "%s", dc->name);
			dep->id = id;
			deps->index_of_id[id] = dep - deps->deps;
			dw_breaker_init(&dep->br, &dc->s, now);
		}
		dep->s = &dc->s;
	}
	return 0;
}

int dw_deps_init(struct dw_deps *deps, struct dw_config *cfg, uint64_t lease_ns)
{
	memset(deps, 0, sizeof(*deps));
	for (unsigned i = 0; i < DW_MAX_DEPS; i++)
		deps->index_of_id[i] = -1;
	deps->cfg = *cfg;
	deps->lease_ns = lease_ns;
	if (deps->cfg.ndeps >= DW_MAX_DEPS) {
		dw_err("%s: %u dependencies, at most %d", cfg->source, cfg->ndeps, DW_MAX_DEPS - 1);
		return -ENOSPC;
	}
	if (dw_services_sync(&deps->svcs, &deps->cfg))
		return -ENOMEM;
	return adopt_configured(deps, &deps->cfg, dw_monotonic_ns());
}

void dw_deps_free(struct dw_deps *deps)
{
	free(deps->deps);
	dw_services_free(&deps->svcs);
	dw_config_free(&deps->cfg);
	memset(deps, 0, sizeof(*deps));
}

/* The kernel's DW_ENFORCE_* bits of one dependency's settings (enforce = abort: both). */
static __u32 enforce_bits(const struct dw_dep_settings *s)
{
	return (s->enforce_connect ? DW_ENFORCE_CONNECT : 0) |
	       (s->enforce_abort ? DW_ENFORCE_ABORT : 0);
}

const char *dw_dep_enforce_mode(const struct dw_deps *deps, const struct dw_dep *dep)
{
	if (dep->s->enforce_abort && deps->can_abort)
		return "abort";
	return dep->s->enforce_connect ? "connect" : "off";
}

static int dep_cfg_write(struct dw_deps *deps, struct dw_bpf *b)
{
	struct dw_dep_cfg dc = { .slow_call_ns = deps->cfg.defaults.slow_call_ns,
				 .enforce = enforce_bits(&deps->cfg.defaults),
				 .multiplexed = deps->cfg.defaults.judge_multiplexed,
				 .abort_after_ns = deps->cfg.defaults.abort_after_ns };
	__u32 id = 0;

	if (bpf_map_update_elem(b->dep_cfg_fd, &id, &dc, BPF_ANY))
		return -errno;
	for (unsigned i = 0; i < deps->n; i++) {
		const struct dw_dep *dep = &deps->deps[i];

		if (!dep->used || !dep->id)
			continue;
		id = dep->id;
		dc.slow_call_ns = dep->s->slow_call_ns;
		dc.enforce = enforce_bits(dep->s);
		dc.multiplexed = dep->s->judge_multiplexed;
		dc.abort_after_ns = dep->s->abort_after_ns;
		if (bpf_map_update_elem(b->dep_cfg_fd, &id, &dc, BPF_ANY))
			return -errno;
	}
	return 0;
}

static bool covers(const struct dw_match *outer, const struct dw_match *inner)
{
	unsigned bytes = outer->prefix_len / 8, bits = outer->prefix_len % 8;

	if (outer->family != inner->family || outer->prefix_len > inner->prefix_len)
		return false;
	if (memcmp(outer->addr, inner->addr, bytes))
		return false;
	return !bits || !((outer->addr[bytes] ^ inner->addr[bytes]) & (0xff << (8 - bits)));
}

struct rule_ref {
	const struct dw_match *m;
	unsigned dep_id;
};

/* Most specific first: longer prefix, then narrower port range. */
static int by_specificity(const void *a, const void *b)
{
	const struct dw_match *x = ((const struct rule_ref *)a)->m, *y = ((const struct rule_ref *)b)->m;

	if (x->prefix_len != y->prefix_len)
		return y->prefix_len - x->prefix_len;
	return (x->port_hi - x->port_lo) - (y->port_hi - y->port_lo);
}

static void match_key(const struct dw_match *m, struct dw_match_key *key)
{
	__u32 family = htonl(m->family);

	memset(key, 0, sizeof(*key));
	key->prefixlen = 32 + m->prefix_len;
	memcpy(key->data, &family, 4);
	memcpy(key->data + 4, m->addr, 16);
}

static unsigned dep_id_of_config(const struct dw_deps *deps, unsigned cfg_index)
{
	const char *name = deps->cfg.deps[cfg_index].name;

	for (unsigned i = 0; i < deps->n; i++)
		if (deps->deps[i].used && deps->deps[i].id && !strcmp(deps->deps[i].name, name))
			return deps->deps[i].id;
	return 0;
}

/* The trie entry of one configured prefix: every rule covering it, most specific first. */
static int match_entry_write(struct dw_deps *deps, struct dw_bpf *b, const struct dw_match *at)
{
	struct rule_ref refs[DW_MATCH_RULES];
	struct dw_match_rules rules = {};
	struct dw_match_key key;
	unsigned n = 0;

	for (unsigned i = 0; i < deps->cfg.ndeps; i++) {
		const struct dw_dep_config *dc = &deps->cfg.deps[i];

		for (unsigned k = 0; k < dc->nmatches; k++) {
			if (!covers(&dc->matches[k], at))
				continue;
			if (n == DW_MATCH_RULES) {
				dw_err("more than %d matches cover %s line %d", DW_MATCH_RULES,
				       deps->cfg.source, at->line);
				return -E2BIG;
			}
			refs[n++] = (struct rule_ref){ &dc->matches[k], dep_id_of_config(deps, i) };
		}
	}
	qsort(refs, n, sizeof(refs[0]), by_specificity);
	rules.n = n;
	for (unsigned i = 0; i < n; i++)
		rules.rule[i] = (struct dw_match_rule){ refs[i].m->port_lo, refs[i].m->port_hi,
							refs[i].dep_id };
	match_key(at, &key);
	return bpf_map_update_elem(b->dep_match_fd, &key, &rules, BPF_ANY) ? -errno : 0;
}

/* A key that is never in the trie (no family bits) makes get_next_key start from the first one. */
static void match_trie_clear(struct dw_bpf *b)
{
	struct dw_match_key none = {}, key;

	while (bpf_map_get_next_key(b->dep_match_fd, &none, &key) == 0)
		if (bpf_map_delete_elem(b->dep_match_fd, &key))
			break;
}

/* The trie's size (maps.bpf.h); checked before anything is written, so a reload is all or nothing. */
#define MATCH_TRIE_ENTRIES 16384

static int match_prefixes(const struct dw_config *cfg)
{
	unsigned n = 0;

	for (unsigned i = 0; i < cfg->ndeps; i++)
		n += cfg->deps[i].nmatches;
	return n;
}

static bool is_service_port(const struct dw_config *cfg, unsigned port)
{
	for (unsigned i = 0; i < cfg->nservices; i++)
		if (port >= cfg->services[i].port_lo && port <= cfg->services[i].port_hi)
			return true;
	return false;
}

/* The kernel's service_ports: only the ports whose answer changed are written. */
static int service_ports_write(struct dw_deps *deps, struct dw_bpf *b)
{
	int fd = bpf_map__fd(b->skel->maps.service_ports);

	for (__u32 port = 1; port < 65536; port++) {
		__u8 want = is_service_port(&deps->cfg, port);
		__u8 *have = &deps->service_port[port / 8];

		if (!!(*have & (1u << (port % 8))) == want)
			continue;
		if (bpf_map_update_elem(fd, &port, &want, BPF_ANY)) {
			int err = -errno;

			dw_err("cannot write service ports to the kernel: %s", strerror(-err));
			return err;
		}
		*have ^= 1u << (port % 8);
	}
	b->skel->bss->dw_services_on = deps->cfg.nservices > 0;
	return 0;
}

int dw_deps_to_kernel(struct dw_deps *deps, struct dw_bpf *b)
{
	int err;

	if (match_prefixes(&deps->cfg) > MATCH_TRIE_ENTRIES) {
		dw_err("%s: %d matches, the kernel's match trie holds %d", deps->cfg.source,
		       match_prefixes(&deps->cfg), MATCH_TRIE_ENTRIES);
		return -E2BIG;
	}
	err = dep_cfg_write(deps, b);

	if (err) {
		dw_err("cannot write dependency settings to the kernel: %s", strerror(-err));
		return err;
	}
	match_trie_clear(b);
	for (unsigned i = 0; i < deps->cfg.ndeps; i++)
		for (unsigned k = 0; k < deps->cfg.deps[i].nmatches; k++) {
			err = match_entry_write(deps, b, &deps->cfg.deps[i].matches[k]);
			if (err)
				return err;
		}
	return service_ports_write(deps, b);
}

static const struct dw_dep_settings *dep_settings(struct dw_deps *deps, const struct dw_dep *dep)
{
	deps->overflow_settings = deps->cfg.defaults;
	deps->overflow_settings.ignore = true;
	if (!dep->id && dep->dest.family == DW_FAMILY_OVERFLOW)
		return &deps->overflow_settings;
	for (unsigned k = 0; dep->id && k < deps->cfg.ndeps; k++)
		if (!strcmp(deps->cfg.deps[k].name, dep->name))
			return &deps->cfg.deps[k].s;
	return &deps->cfg.defaults;
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

/* The configured dependency (its index in the config) whose matches cover dest, or -1. */
static int config_match(const struct dw_deps *deps, const struct dw_dest_key *dest)
{
	if (dest->family == DW_FAMILY_OVERFLOW || dest->family == DW_FAMILY_INBOUND)
		return -1;
	return dw_config_lookup(&deps->cfg, dest->family, dest->addr, dest->port);
}

static void assign(struct dw_deps *deps, struct dw_dest *d, uint64_t now)
{
	int cfg_index = config_match(deps, &d->key);

	if (cfg_index >= 0) {
		d->dep = deps->index_of_id[dep_id_of_config(deps, cfg_index)];
		return;
	}
	d->dep = own_dep_of(deps, d, now);
}

static void dep_zero(struct dw_dep *dep)
{
	dep->calls = dep->failed = dep->slow = dep->inflight = dep->oldest_call_ns = 0;
	dep->rejected = dep->conns = 0;
	dep->started = dep->abandoned = dep->retried = 0;
	dep->aborted_breaker = dep->aborted_timeout = dep->calls_aborted = 0;
}

/* One destination's figures into its dependency's. */
static void dep_count_dest(struct dw_dep *dep, const struct dw_dest *d)
{
	dep->calls += d->sum.calls_completed;
	dep->failed += d->sum.calls_failed;
	dep->slow += d->sum.calls_slow;
	dep->inflight += dw_dest_inflight(d);
	dep->rejected += d->sum.connects_rejected;
	dep->started += d->sum.calls_started;
	dep->abandoned += d->sum.calls_abandoned;
	dep->retried += d->sum.calls_retried;
	dep->aborted_breaker += d->sum.conns_aborted_breaker;
	dep->aborted_timeout += d->sum.conns_aborted_timeout;
	dep->calls_aborted += d->sum.calls_aborted;
	if (d->sum.conns_opened > d->sum.conns_closed)
		dep->conns += d->sum.conns_opened - d->sum.conns_closed;
	if (d->oldest_call_ns && (!dep->oldest_call_ns || d->oldest_call_ns < dep->oldest_call_ns))
		dep->oldest_call_ns = d->oldest_call_ns;
}

/* Every destination onto its dependency's list, with the figures summed. */
static void gather(struct dw_deps *deps, struct dw_collector *c)
{
	for (unsigned i = 0; i < deps->n; i++) {
		struct dw_dep *dep = &deps->deps[i];

		dep->dests = NULL;
		dep->ndests = 0;
		dep_zero(dep);
	}
	for (size_t i = 0; i < c->cap; i++) {
		struct dw_dest *d = &c->dests[i];
		struct dw_dep *dep;

		if (!d->used)
			continue;
		/* the overflow row is a dependency only once something landed in it */
		if (d->key.family == DW_FAMILY_OVERFLOW && !d->sum.calls_started &&
		    !d->sum.connect_attempts)
			continue;
		/* requests this host answers: services.c */
		if (d->key.family == DW_FAMILY_INBOUND)
			continue;
		if (d->dep < 0)
			assign(deps, d, c->now_ns);
		if (d->dep < 0)
			continue;
		dep = &deps->deps[d->dep];
		d->next_in_dep = dep->dests;
		dep->dests = d;
		dep->ndests++;
		dep_count_dest(dep, d);
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

static void judge(struct dw_dep *dep, struct judge_scratch *js, uint64_t now)
{
	struct dw_judge_input in = { .now_ns = now, .s = dep->s };

	js->nslices = js->npending = 0;
	for (const struct dw_dest *d = dep->dests; d; d = d->next_in_dep) {
		merge_slices(js, d, now >> DW_SLICE_SHIFT);
		merge_pending(js, d);
	}
	in.slices = js->slices;
	in.nslices = js->nslices;
	in.pending_start_ns = js->pending;
	in.npending = js->npending;
	dw_judge(&in, &dep->j);
	memset(&dep->probes, 0, sizeof(dep->probes));
	if (dep->br.state == DW_BREAKER_HALF_OPEN)
		dw_judge_probes(&in, dep->br.half_open_since_ns, dep->s->half_open_calls, &dep->probes);
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

static bool alert_allowed(struct dw_dep *dep, uint64_t now, bool must)
{
	dep->tokens += (double)(now - dep->tokens_ns) / ALERT_REFILL_NS;
	if (dep->tokens > ALERT_BURST)
		dep->tokens = ALERT_BURST;
	dep->tokens_ns = now;
	if (dep->tokens < 1 && !must) {
		dep->suppressed++;
		return false;
	}
	dep->tokens -= 1;
	return true;
}

static void alert(struct dw_dep *dep, const struct dw_collector *c, int kind,
		  enum dw_breaker_state from, enum dw_breaker_reason reason)
{
	bool transition = kind == DW_EV_TRANSITION;
	bool closing = transition && dep->br.state == DW_BREAKER_CLOSED;
	struct dw_alert a = {
		.dependency = dep->name,
		.event = transition ? "transition" : "warning",
		.state = dw_breaker_state_name(dep->br.state),
		.from = transition ? dw_breaker_state_name(from) : NULL,
		.slow_rate = dep->j.slow_rate,
		.failure_rate = dep->j.failure_rate,
		.slow_call_ns = dep->s->slow_call_ns,
		.calls = (uint64_t)dep->j.decided,
		.inflight = dep->inflight,
		.max_inflight = dep->s->max_inflight,
		.oldest_ms = dep->oldest_call_ns ? (c->now_ns - dep->oldest_call_ns) / 1e6 : -1,
	};

	/* an open that was announced is always followed by its close */
	if (!alert_allowed(dep, c->now_ns, closing && dep->open_alerted))
		return;
	if (transition)
		a.reason = dw_breaker_reason_name(reason);
	else if (kind == EV_RETRY_STORM)
		a.reason = "retry_storm";
	else if (kind == DW_EV_WARN_INFLIGHT)
		a.reason = "inflight";
	else if (kind == DW_EV_WARN_SLOW_RATE)
		a.reason = "slow_rate";
	else
		a.reason = "rejecting_connects";
	a.severity = closing ? LOG_NOTICE : LOG_WARNING;
	if (kind == EV_RETRY_STORM) {
		a.retry_ratio = dep->retry_ratio;
		a.call_rate = dep->call_rate;
		a.call_rate_baseline = dep->call_rate_baseline;
		a.severity = dep->retry_storm ? LOG_WARNING : LOG_NOTICE;
		a.reason = dep->retry_storm ? "retry_storm" : "retry_storm_over";
	}
	if (transition && dep->br.state == DW_BREAKER_OPEN)
		a.severity = LOG_ERR;
	a.p99_ms = dw_dep_percentile_ms(dep, 0.99);
	a.suppressed = dep->suppressed;
	dep->suppressed = 0;
	if (transition)
		dep->open_alerted = !closing;
	dw_alert_emit(&a);
}

static void breaker_key(const struct dw_dep *dep, struct dw_breaker_key *key)
{
	memset(key, 0, sizeof(*key));
	key->dep_id = dep->id;
	if (!dep->id)
		key->dest = dep->dest;
}

/*
 * The kernel spends the half-open probe budget; the lease renewal must not
 * refill it. A new state (or a new half-open period) gets a fresh budget.
 * A probe taken between this read and the write is given back: at most one
 * extra probe per interval.
 */
static __u32 probes_left(const struct dw_dep *dep, struct dw_bpf *b, const struct dw_breaker_key *key)
{
	struct dw_breaker_value old;

	if (dep->br.state != DW_BREAKER_HALF_OPEN)
		return 0;
	if (dep->in_map && !bpf_map_lookup_elem(b->breakers_fd, key, &old) &&
	    old.state == DW_BREAKER_HALF_OPEN && old.since_ns == dep->br.since_ns)
		return old.probes_left;
	return dep->s->half_open_calls;
}

/* Configured dependencies always have an entry; destinations only while not closed. */
static void publish(struct dw_dep *dep, struct dw_bpf *b, uint64_t now, uint64_t lease_ns)
{
	struct dw_breaker_value v = {};
	struct dw_breaker_key key;

	breaker_key(dep, &key);
	if (!dep->id && dep->br.state == DW_BREAKER_CLOSED) {
		if (dep->in_map)
			bpf_map_delete_elem(b->breakers_fd, &key);
		dep->in_map = false;
		return;
	}
	v.state = dep->br.state;
	v.reason = dep->forced >= 0 ? DW_REASON_FORCED : dep->br.reason;
	v.since_ns = dep->br.since_ns;
	v.lease_expires_ns = now + lease_ns;
	v.forced = dep->forced >= 0;
	v.probes_left = probes_left(dep, b, &key);
	snprintf(v.name, sizeof(v.name), "%s", dep->name);
	if (bpf_map_update_elem(b->breakers_fd, &key, &v, BPF_ANY)) {
		dw_debug("breakers map: cannot write %s: %s", dep->name, strerror(errno));
		return;
	}
	dep->in_map = true;
}

static void step(struct dw_dep *dep, const struct dw_collector *c)
{
	struct dw_breaker_inputs in = {
		.now_ns = c->now_ns,
		.j = &dep->j,
		.probes = dep->br.state == DW_BREAKER_HALF_OPEN ? &dep->probes : NULL,
		.inflight = dep->inflight,
	};
	struct dw_breaker_events ev = {};

	if (dep->forced < 0)
		dw_breaker_step(&dep->br, dep->s, &in, &ev);
	for (unsigned i = 0; i < ev.n; i++) {
		if (ev.ev[i].kind == DW_EV_TRANSITION && ev.ev[i].to == DW_BREAKER_OPEN) {
			dep->rejected_at_open = dep->rejected;
			dep->rejection_alerted = false;
		}
		alert(dep, c, ev.ev[i].kind, ev.ev[i].from, ev.ev[i].reason);
	}
	if (dep->br.state != DW_BREAKER_CLOSED && dep->rejected > dep->rejected_at_open &&
	    !dep->rejection_alerted) {
		dep->rejection_alerted = true;
		alert(dep, c, DW_EV_NONE, dep->br.state, DW_REASON_NONE);
	}
}

/* Call rates and retries, from the cumulative counts of this poll and the last. */
static void rates(struct dw_dep *dep, uint64_t now)
{
	double dt = (now - dep->rate_prev_ns) / 1e9, started;
	uint64_t d_started, d_retried;

	if (dep->rate_prev_ns && dt > 0 && dep->started >= dep->rate_prev_started) {
		started = (dep->started - dep->rate_prev_started) / dt;
		dep->call_rate = dw_ewma(dep->call_rate, started, dt, RATE_NOW_TAU);
		dep->call_rate_baseline = dw_ewma(dep->call_rate_baseline, started, dt, RATE_BASELINE_TAU);
	}
	dep->rate_prev_started = dep->started;
	dep->rate_prev_ns = now;
	if (dw_count_ring_delta(&dep->retry_ring, now, dep->started, dep->retried, RETRY_SPAN_NS,
				&d_started, &d_retried))
		dep->retry_ratio = dw_retry_ratio(d_started, d_retried);
	dw_count_ring_push(&dep->retry_ring, now, dep->started, dep->retried, RETRY_SAMPLE_NS);
}

/* Slow now: its breaker is not closed, or its judged calls are slow or failing. */
static bool dep_slow(const struct dw_dep *dep)
{
	return dep->br.state != DW_BREAKER_CLOSED || (dep->j.decided > 0 &&
	       (dep->j.slow_rate > 0 || dep->j.failure_rate > 0));
}

static void retry_watch(struct dw_dep *dep, const struct dw_collector *c)
{
	bool storm = dw_retry_storm(dep->retry_ratio, dep_slow(dep));

	/* clears only once retries are back near none, not at the threshold */
	if (dep->retry_storm && !storm && dep->retry_ratio >= 1.1 && dep_slow(dep))
		storm = true;
	if (storm == dep->retry_storm)
		return;
	dep->retry_storm = storm;
	alert(dep, c, EV_RETRY_STORM, dep->br.state, DW_REASON_NONE);
}

int dw_deps_force(struct dw_deps *deps, const char *name, int state, uint64_t now,
		  struct dw_bpf *b)
{
	for (unsigned i = 0; i < deps->n; i++) {
		struct dw_dep *dep = &deps->deps[i];

		if (!dep->used || strcmp(dep->name, name))
			continue;
		dep->forced = state;
		if (state < 0) {
			dw_breaker_init(&dep->br, dep->s, now);
			dw_alert_note(LOG_NOTICE, "dependency=%s event=override breaker=auto state=closed", name);
			publish(dep, b, now, deps->lease_ns);
			return 0;
		}
		dep->br.state = state;
		dep->br.reason = DW_REASON_FORCED;
		dep->br.since_ns = now;
		dep->br.half_open_since_ns = now;
		dep->rejected_at_open = dep->rejected;
		dep->rejection_alerted = false;
		dw_alert_note(LOG_WARNING, "dependency=%s event=override state=%s forced=yes", name,
			      dw_breaker_state_name(state));
		/* the kernel acts on it now, not at the next poll */
		publish(dep, b, now, deps->lease_ns);
		return 0;
	}
	return -ENOENT;
}

/* A destination's own dependency once a reload moved the destination into a configured one. */
static void retire_orphan(struct dw_dep *dep, struct dw_bpf *b)
{
	struct dw_breaker_key key;

	if (!dep->in_map)
		return;
	breaker_key(dep, &key);
	bpf_map_delete_elem(b->breakers_fd, &key);
	dep->in_map = false;
}

/* hot: only the dependencies whose destinations are marked hot (dw_deps_next_slow). */
static void judge_all(struct dw_deps *deps, struct dw_collector *c, struct dw_bpf *b, bool hot)
{
	struct judge_scratch *js = calloc(1, sizeof(*js));

	if (!js) {
		dw_err("out of memory judging dependencies");
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
			dep_zero(dep);
			for (const struct dw_dest *d = dep->dests; d; d = d->next_in_dep)
				dep_count_dest(dep, d);
		} else if (!dep->id && !dep->ndests) {
			retire_orphan(dep, b);
			continue;
		}
		judge(dep, js, c->now_ns);
		/* call rates and retry storms keep the polling cadence */
		if (!hot)
			rates(dep, c->now_ns);
		step(dep, c);
		if (!hot)
			retry_watch(dep, c);
		publish(dep, b, c->now_ns, deps->lease_ns);
	}
	free(js->pending);
	free(js);
}

void dw_deps_poll(struct dw_deps *deps, struct dw_collector *c, struct dw_bpf *b)
{
	gather(deps, c);
	judge_all(deps, c, b, false);
	dw_services_poll(&deps->svcs, c, deps);
}

void dw_deps_rejudge(struct dw_deps *deps, struct dw_collector *c, struct dw_bpf *b)
{
	judge_all(deps, c, b, true);
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

uint64_t dw_deps_next_slow(struct dw_deps *deps, struct dw_collector *c)
{
	uint64_t first = 0;

	for (size_t i = 0; i < c->cap; i++)
		c->dests[i].hot = false;
	for (unsigned i = 0; i < deps->n; i++) {
		struct dw_dep *dep = &deps->deps[i];
		uint64_t t;

		if (!dep->used || !dep->ndests)
			continue;
		t = next_slow(dep, c->now_ns);
		if (!t)
			continue;
		for (struct dw_dest *d = dep->dests; d; d = d->next_in_dep)
			d->hot = true;
		if (!first || t < first)
			first = t;
	}
	return first;
}

/* Dependencies the new config no longer has: their breaker entries go. */
static void retire_missing(struct dw_deps *deps, const struct dw_config *cfg, struct dw_bpf *b)
{
	for (unsigned i = 0; i < deps->n; i++) {
		struct dw_dep *dep = &deps->deps[i];
		struct dw_breaker_key key;
		bool kept = false;

		if (!dep->used || !dep->id)
			continue;
		for (unsigned k = 0; k < cfg->ndeps && !kept; k++)
			kept = !strcmp(cfg->deps[k].name, dep->name);
		if (kept)
			continue;
		breaker_key(dep, &key);
		bpf_map_delete_elem(b->breakers_fd, &key);
		deps->index_of_id[dep->id] = -1;
		dep->used = false;
	}
}

/* A slot's configuration as the kernel would fill it from the new config (slot_cfg_fill). */
static void slot_cfg_of(const struct dw_dest_key *dest, struct dw_slot_cfg *out, void *arg)
{
	const struct dw_deps *deps = arg;
	int cfg_index = config_match(deps, dest);

	if (dest->family == DW_FAMILY_INBOUND)
		out->service = is_service_port(&deps->cfg, dest->port);
	if (cfg_index >= 0)
		out->dep_id = dep_id_of_config(deps, cfg_index);
}

int dw_deps_reload(struct dw_deps *deps, struct dw_config *cfg, struct dw_collector *c,
		   struct dw_bpf *b)
{
	int err;

	if (cfg->ndeps >= DW_MAX_DEPS || match_prefixes(cfg) > MATCH_TRIE_ENTRIES) {
		dw_err("%s: %u dependencies and %d matches; the kernel takes at most %d and %d",
		       cfg->source, cfg->ndeps, match_prefixes(cfg), DW_MAX_DEPS - 1, MATCH_TRIE_ENTRIES);
		dw_config_free(cfg);
		return -ENOSPC;
	}
	retire_missing(deps, cfg, b);
	err = adopt_configured(deps, cfg, c->now_ns);
	if (err) {
		dw_config_free(cfg);
		return err;
	}
	if (dw_services_sync(&deps->svcs, cfg))
		dw_err("out of memory: services dropped until the next reload");
	dw_config_free(&deps->cfg);
	deps->cfg = *cfg;
	/* settings pointers into the new config */
	for (unsigned i = 0; i < deps->n; i++) {
		struct dw_dep *dep = &deps->deps[i];

		if (dep->used)
			dep->s = dep_settings(deps, dep);
	}
	for (size_t i = 0; i < c->cap; i++)
		c->dests[i].dep = -1;
	err = dw_deps_to_kernel(deps, b);
	if (!err)
		err = dw_bpf_remap(b, slot_cfg_of, deps);
	return err;
}
