// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>

#include "logic/judge/breaker.h"

/*
 * Rates are quotients of call counts and thresholds are percentages over
 * 100: 10/20 and 50/100 must meet, whatever the rounding. The slack is far
 * below one call in the largest sample (1e-4).
 */
#define DW_RATE_SLACK 1e-9

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

void dw_breaker_init(struct dw_breaker *b, const struct dw_dep_settings *s, uint64_t now_ns)
{
	memset(b, 0, sizeof(*b));
	b->state = DW_BREAKER_CLOSED;
	b->reason = DW_REASON_NONE;
	b->since_ns = now_ns;
	b->open_for_ns = s->open_for_ns;
}

static void emit(struct dw_breaker_events *out, enum dw_breaker_event_kind kind,
		 enum dw_breaker_state from, enum dw_breaker_state to,
		 enum dw_breaker_reason reason)
{
	if (out->n == ARRAY_SIZE(out->ev))
		return;
	out->ev[out->n].kind = kind;
	out->ev[out->n].from = from;
	out->ev[out->n].to = to;
	out->ev[out->n].reason = reason;
	out->n++;
}

static void go(struct dw_breaker *b, enum dw_breaker_state to, enum dw_breaker_reason reason,
	       uint64_t now_ns, struct dw_breaker_events *out)
{
	emit(out, DW_EV_TRANSITION, b->state, to, reason);
	b->state = to;
	b->reason = reason;
	b->since_ns = now_ns;
}

/* A threshold of 0 is off: "open when 0% are slow" would never close. */
static bool rate_reached(double rate, double threshold)
{
	return threshold > 0 && rate >= threshold - DW_RATE_SLACK;
}

static bool at_inflight_limit(const struct dw_dep_settings *s, unsigned inflight)
{
	return s->max_inflight > 0 && inflight >= s->max_inflight;
}

static uint64_t open_for_doubled(const struct dw_breaker *b, const struct dw_dep_settings *s)
{
	uint64_t cap = s->open_for_ns * DW_OPEN_FOR_CAP_FACTOR;

	/* a period already at or past the cap (open_for shrank on reload) stays capped */
	if (b->open_for_ns >= cap / 2)
		return cap;
	return b->open_for_ns * 2;
}

/*
 * Warnings belong to a closed period: the open event says more than they
 * would, and after closing a condition still present deserves a new one.
 */
static void trip(struct dw_breaker *b, const struct dw_dep_settings *s,
		 enum dw_breaker_reason reason, uint64_t now_ns, struct dw_breaker_events *out)
{
	/* a failed recovery means the dependency is not back yet: wait longer */
	if (b->state == DW_BREAKER_HALF_OPEN)
		b->open_for_ns = open_for_doubled(b, s);
	go(b, DW_BREAKER_OPEN, reason, now_ns, out);
	b->opens++;
	b->warned_slow = false;
	b->warned_inflight = false;
}

/*
 * The window still holds the calls that opened the breaker, and those
 * enforce = abort failed while it was open: judged again, they would
 * reopen it at once, before the callers' calls since the close are
 * decided (a pool reconnecting, its calls in flight; seen on one emulated
 * CPU, failure_rate 0.61 a poll after closing). The closed period is
 * judged on its own calls.
 */
static void close_breaker(struct dw_breaker *b, const struct dw_dep_settings *s, uint64_t now_ns,
			  struct dw_breaker_events *out)
{
	go(b, DW_BREAKER_CLOSED, DW_REASON_NONE, now_ns, out);
	b->open_for_ns = s->open_for_ns;
	b->judged_since_ns = now_ns;
}

/* Failures are checked first: a failing dependency is usually also slow, and failing says more. */
static enum dw_breaker_reason closed_reason(const struct dw_dep_settings *s,
					    const struct dw_breaker_inputs *in)
{
	const struct dw_judgement *j = in->j;

	if (at_inflight_limit(s, in->inflight))
		return DW_REASON_CONCURRENCY;
	if (!j || !j->enough)
		return DW_REASON_NONE;
	if (rate_reached(j->failure_rate, s->failure_rate))
		return DW_REASON_FAILURE_RATE;
	if (rate_reached(j->slow_rate, s->slow_rate))
		return DW_REASON_SLOW_RATE;
	return DW_REASON_NONE;
}

/* Integer arithmetic: 80% of 25 is 20 exactly, not 19.999. */
static void warn_inflight(struct dw_breaker *b, const struct dw_dep_settings *s,
			  const struct dw_breaker_inputs *in, struct dw_breaker_events *out)
{
	uint64_t near = (uint64_t)in->inflight * 100;

	if (s->max_inflight == 0 || near < (uint64_t)s->max_inflight * DW_WARN_PERCENT) {
		b->warned_inflight = false;
		return;
	}
	if (!b->warned_inflight)
		emit(out, DW_EV_WARN_INFLIGHT, b->state, b->state, DW_REASON_CONCURRENCY);
	b->warned_inflight = true;
}

/*
 * Too few calls say nothing about the rate, so they neither warn nor
 * re-arm: a trickle of calls would otherwise repeat the warning.
 */
static void warn_slow(struct dw_breaker *b, const struct dw_dep_settings *s,
		      const struct dw_breaker_inputs *in, struct dw_breaker_events *out)
{
	const struct dw_judgement *j = in->j;
	double near = s->slow_rate * DW_WARN_PERCENT / 100;

	if (s->slow_rate <= 0) {
		b->warned_slow = false;
		return;
	}
	if (!j || !j->enough)
		return;
	if (!rate_reached(j->slow_rate, near)) {
		b->warned_slow = false;
		return;
	}
	if (!b->warned_slow)
		emit(out, DW_EV_WARN_SLOW_RATE, b->state, b->state, DW_REASON_SLOW_RATE);
	b->warned_slow = true;
}

static void step_closed(struct dw_breaker *b, const struct dw_dep_settings *s,
			const struct dw_breaker_inputs *in, struct dw_breaker_events *out)
{
	enum dw_breaker_reason reason = closed_reason(s, in);

	if (reason != DW_REASON_NONE) {
		trip(b, s, reason, in->now_ns, out);
		return;
	}
	warn_inflight(b, s, in, out);
	warn_slow(b, s, in, out);
}

/* A clock that went back counts as no time passed. */
static void step_open(struct dw_breaker *b, const struct dw_breaker_inputs *in,
		      struct dw_breaker_events *out)
{
	if (in->now_ns < b->since_ns || in->now_ns - b->since_ns < b->open_for_ns)
		return;
	go(b, DW_BREAKER_HALF_OPEN, b->reason, in->now_ns, out);
	b->half_open_since_ns = in->now_ns;
}

/*
 * A bad probe reopens with the reason the breaker opened for: the probe
 * result does not say whether it was slow or failed.
 */
static void step_half_open(struct dw_breaker *b, const struct dw_dep_settings *s,
			   const struct dw_breaker_inputs *in, struct dw_breaker_events *out)
{
	const struct dw_probe_result *p = in->probes;

	if (at_inflight_limit(s, in->inflight)) {
		trip(b, s, DW_REASON_CONCURRENCY, in->now_ns, out);
		return;
	}
	if (!p)
		return;
	if (p->bad > 0) {
		trip(b, s, b->reason, in->now_ns, out);
		return;
	}
	if (p->decided >= s->half_open_calls)
		close_breaker(b, s, in->now_ns, out);
}

/* Ignored dependencies are traced, never judged: closed, and silent even when that changes. */
static void force_closed(struct dw_breaker *b, const struct dw_dep_settings *s, uint64_t now_ns)
{
	if (b->state != DW_BREAKER_CLOSED) {
		b->state = DW_BREAKER_CLOSED;
		b->reason = DW_REASON_NONE;
		b->since_ns = now_ns;
		b->open_for_ns = s->open_for_ns;
	}
	b->warned_slow = false;
	b->warned_inflight = false;
}

void dw_breaker_step(struct dw_breaker *b, const struct dw_dep_settings *s,
		     const struct dw_breaker_inputs *in, struct dw_breaker_events *out)
{
	memset(out, 0, sizeof(*out));
	if (s->ignore) {
		force_closed(b, s, in->now_ns);
		return;
	}
	switch (b->state) {
	case DW_BREAKER_CLOSED:
		step_closed(b, s, in, out);
		break;
	case DW_BREAKER_OPEN:
		step_open(b, in, out);
		break;
	case DW_BREAKER_HALF_OPEN:
		step_half_open(b, s, in, out);
		break;
	}
}

/* open_for and the warnings are kept: auto starts afresh, a forced state does not judge. */
void dw_breaker_force(struct dw_breaker *b, const struct dw_dep_settings *s, int state,
		      uint64_t now_ns)
{
	if (state < 0) {
		dw_breaker_init(b, s, now_ns);
		/* as after a close: what a forced open aborted is not held against it */
		b->judged_since_ns = now_ns;
		return;
	}
	b->state = state;
	b->reason = DW_REASON_FORCED;
	b->since_ns = now_ns;
	/* forced half_open judges its probes from now */
	b->half_open_since_ns = now_ns;
}

const char *dw_breaker_state_name(enum dw_breaker_state st)
{
	switch (st) {
	case DW_BREAKER_CLOSED:
		return "closed";
	case DW_BREAKER_OPEN:
		return "open";
	case DW_BREAKER_HALF_OPEN:
		return "half_open";
	}
	return "unknown";
}

const char *dw_breaker_reason_name(enum dw_breaker_reason r)
{
	switch (r) {
	case DW_REASON_NONE:
		return "none";
	case DW_REASON_SLOW_RATE:
		return "slow_rate";
	case DW_REASON_FAILURE_RATE:
		return "failure_rate";
	case DW_REASON_CONCURRENCY:
		return "concurrency";
	case DW_REASON_FORCED:
		return "forced";
	}
	return "unknown";
}
