// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Outlier ejection's glue (eject.h holds the rules): one destination against its siblings. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "logic/depset/depset.h"
#include "logic/depset/depset_int.h"
#include "logic/config/match.h"


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
	if (dw_ds_put_op(out, &op))
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
	if (dw_ds_put_op(out, &op))
		d->ej.published = true;
}

static void eject_event(struct dw_deps *deps, struct dw_dep *dep, struct dw_dest *d, bool by_hand,
			uint64_t now, struct dw_depset_out *out)
{
	struct dw_dep_event ev = { .kind = DW_DEP_EJECT, .from = dep->br.state,
				   .state = dep->br.state, .now_ns = now, .dest = d->key,
				   .out = d->ej.e.state == DW_EJECT_OUT, .forced = by_hand };

	dw_ds_emit(out, deps, dep, ev);
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

		dw_ds_emit(out, deps, &deps->deps[was], ev);
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
	dw_ds_merge_slices(js, d, now >> DW_SLICE_SHIFT);
	dw_ds_merge_pending(js, d);
	dw_ds_scratch_input(js, &in);
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
void dw_ds_eject_dep(struct dw_deps *deps, struct dw_dep *dep, struct judge_scratch *js,
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
	struct dw_dep *dep = dw_ds_configured_named(deps, name);

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
		dw_ds_put_op(out, &op);
	}
}

