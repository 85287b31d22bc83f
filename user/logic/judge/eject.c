// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "logic/judge/eject.h"

bool dw_eject_outlier(const struct dw_eject_policy *p, const struct dw_judgement *j, bool *slow)
{
	if (!j->enough)
		return false;
	*slow = j->stalled || j->slow_rate >= p->slow_rate;
	return *slow || j->failure_rate >= p->failure_rate;
}

unsigned dw_eject_limit(const struct dw_eject_policy *p, unsigned nwith)
{
	unsigned lim;

	if (nwith < 2)
		return 0;
	lim = (unsigned)(p->max_ejected * nwith + 1e-9);
	return lim < nwith ? lim : nwith - 1;	/* never the last healthy one */
}

uint64_t dw_eject_duration(const struct dw_eject_policy *p, unsigned n)
{
	uint64_t mult = 1;

	for (unsigned i = 1; i < n && mult < DW_EJECT_MAX_GROWTH; i++)
		mult *= 2;
	return p->eject_for_ns * mult;
}

static void eject(const struct dw_eject_policy *p, struct dw_eject *e, bool slow, uint64_t now)
{
	e->state = DW_EJECT_OUT;
	e->since_ns = now;
	e->ejections++;
	e->until_ns = now + dw_eject_duration(p, e->ejections);
	e->slow = slow;
}

static bool dep_healthy(const struct dw_eject_policy *p, const struct dw_judgement *dep)
{
	return !dep->stalled && dep->slow_rate < p->slow_rate && dep->failure_rate < p->failure_rate;
}

uint64_t dw_eject_step(const struct dw_eject_policy *p, const struct dw_judgement *dep,
		       struct dw_eject_dest *d, unsigned n, uint64_t now)
{
	unsigned nwith = 0, out = 0, lim;
	uint64_t changed = 0;

	if (n > 64)
		n = 64;
	/* time and probes first: they free room before new ejections */
	for (unsigned i = 0; i < n; i++) {
		struct dw_eject *e = d[i].e;

		nwith += d[i].had_calls;
		if (e->state == DW_EJECT_OUT && now >= e->until_ns) {
			e->state = DW_EJECT_PROBING;
			e->since_ns = now;
			changed |= 1ULL << i;
		} else if (e->state == DW_EJECT_PROBING && d[i].probes.done) {
			if (d[i].probes.bad > 0) {
				eject(p, e, e->slow, now);
			} else {
				e->state = DW_EJECT_IN;
				e->since_ns = now;
			}
			changed |= 1ULL << i;
		}
		out += e->state != DW_EJECT_IN;
	}
	lim = dw_eject_limit(p, nwith);
	if (!dep_healthy(p, dep))
		return changed;	/* the breaker's job */
	for (unsigned i = 0; i < n && out < lim; i++) {
		bool slow = false;

		/* one back in this step was judged on its calls from before: not again now */
		if (d[i].e->state != DW_EJECT_IN || (changed & (1ULL << i)) || !d[i].had_calls ||
		    !dw_eject_outlier(p, &d[i].j, &slow))
			continue;
		eject(p, d[i].e, slow, now);
		out++;
		changed |= 1ULL << i;
	}
	return changed;
}

void dw_eject_force(const struct dw_eject_policy *p, struct dw_eject *e, bool out, uint64_t now)
{
	if (out) {
		eject(p, e, e->slow, now);
		return;
	}
	e->state = DW_EJECT_IN;
	e->since_ns = now;
}
