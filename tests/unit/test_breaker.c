// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdbool.h>
#include <string.h>

#include "dwtest.h"

#include "logic/judge/breaker.h"

#define MS 1000000ULL
#define SEC (1000ULL * MS)
#define T0 (5000 * SEC)

static struct dw_dep_settings settings(void)
{
	struct dw_dep_settings s = {
	    .slow_call_ns = 500 * MS,
	    .window_ns = 10 * SEC,
	    .open_for_ns = 30 * SEC,
	    .slow_rate = 0.5,
	    .failure_rate = 0.5,
	    .sample = 20,
	    .min_calls = 10,
	    .half_open_calls = 5,
	    .max_inflight = 0,
	};

	return s;
}

/* A judgement of n calls, `slow` and `failed` of them, as dw_judge() reports one. */
static struct dw_judgement judged(const struct dw_dep_settings *s, double n, double slow,
				  double failed)
{
	struct dw_judgement j = {
	    .decided = n,
	    .slow = slow,
	    .failed = failed,
	    .slow_rate = n > 0 ? slow / n : 0,
	    .failure_rate = n > 0 ? failed / n : 0,
	    .enough = n >= s->min_calls,
	};

	return j;
}

static const struct dw_judgement healthy = {
    .decided = 20,
    .slow_rate = 0,
    .failure_rate = 0,
    .enough = true,
};

struct run {
	struct dw_dep_settings s;
	struct dw_breaker b;
	struct dw_breaker_events ev;
};

static void run_init(struct run *r)
{
	memset(r, 0, sizeof(*r));
	r->s = settings();
	dw_breaker_init(&r->b, &r->s, T0);
}

static void step(struct run *r, uint64_t now, const struct dw_judgement *j,
		 const struct dw_probe_result *p, unsigned inflight)
{
	struct dw_breaker_inputs in = {
	    .now_ns = now,
	    .j = j,
	    .probes = p,
	    .inflight = inflight,
	};

	memset(&r->ev, 0xa5, sizeof(r->ev)); /* out must be overwritten */
	dw_breaker_step(&r->b, &r->s, &in, &r->ev);
}

static void expect_no_events(const struct run *r)
{
	if (r->ev.n != 0)
		fail_msg("%u events, want none; the first is kind %d", r->ev.n, r->ev.ev[0].kind);
}

static void expect_transition(const struct run *r, unsigned i, enum dw_breaker_state from,
			      enum dw_breaker_state to, enum dw_breaker_reason reason)
{
	assert_true(i < r->ev.n);
	assert_int_equal(r->ev.ev[i].kind, DW_EV_TRANSITION);
	assert_string_equal(dw_breaker_state_name(r->ev.ev[i].from), dw_breaker_state_name(from));
	assert_string_equal(dw_breaker_state_name(r->ev.ev[i].to), dw_breaker_state_name(to));
	assert_string_equal(dw_breaker_reason_name(r->ev.ev[i].reason),
			    dw_breaker_reason_name(reason));
}

/* The one event of the last step is this transition, and the breaker is in its new state. */
static void expect_only_transition(const struct run *r, enum dw_breaker_state from,
				   enum dw_breaker_state to, enum dw_breaker_reason reason,
				   uint64_t now)
{
	assert_int_equal(r->ev.n, 1);
	expect_transition(r, 0, from, to, reason);
	assert_int_equal(r->b.state, to);
	assert_int_equal(r->b.reason, reason);
	assert_int_equal(r->b.since_ns, now);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(dw_breaker_state_name(DW_BREAKER_CLOSED), "closed");
	assert_string_equal(dw_breaker_state_name(DW_BREAKER_OPEN), "open");
	assert_string_equal(dw_breaker_state_name(DW_BREAKER_HALF_OPEN), "half_open");
	assert_string_equal(dw_breaker_state_name((enum dw_breaker_state)7), "unknown");
	assert_string_equal(dw_breaker_reason_name(DW_REASON_NONE), "none");
	assert_string_equal(dw_breaker_reason_name(DW_REASON_SLOW_RATE), "slow_rate");
	assert_string_equal(dw_breaker_reason_name(DW_REASON_FAILURE_RATE), "failure_rate");
	assert_string_equal(dw_breaker_reason_name(DW_REASON_CONCURRENCY), "concurrency");
	assert_string_equal(dw_breaker_reason_name(DW_REASON_FORCED), "forced");
	assert_string_equal(dw_breaker_reason_name((enum dw_breaker_reason)9), "unknown");
	/* the values are shared with the kernel's breakers map */
	assert_int_equal(DW_BREAKER_CLOSED, 0);
	assert_int_equal(DW_BREAKER_OPEN, 1);
	assert_int_equal(DW_BREAKER_HALF_OPEN, 2);
	assert_int_equal(DW_REASON_FORCED, 4);
}

static void test_init(void **state)
{
	struct run r;

	(void)state;
	memset(&r.b, 0xa5, sizeof(r.b));
	r.s = settings();
	dw_breaker_init(&r.b, &r.s, T0);
	assert_int_equal(r.b.state, DW_BREAKER_CLOSED);
	assert_int_equal(r.b.reason, DW_REASON_NONE);
	assert_int_equal(r.b.since_ns, T0);
	assert_int_equal(r.b.open_for_ns, 30 * SEC);
	assert_int_equal(r.b.opens, 0);
	assert_false(r.b.warned_slow);
	assert_false(r.b.warned_inflight);
}

static void test_closed_stays_closed_when_healthy(void **state)
{
	struct dw_judgement j;
	struct run r;

	(void)state;
	run_init(&r);
	step(&r, T0 + SEC, &healthy, NULL, 3);
	expect_no_events(&r);
	j = judged(&r.s, 20, 7, 0); /* 35%: below the 40% warning too */
	step(&r, T0 + 2 * SEC, &j, NULL, 3);
	expect_no_events(&r);
	step(&r, T0 + 3 * SEC, NULL, NULL, 0); /* nothing judged */
	expect_no_events(&r);
	assert_int_equal(r.b.state, DW_BREAKER_CLOSED);
	assert_int_equal(r.b.since_ns, T0);
}

static void test_open_on_slow_rate(void **state)
{
	struct dw_judgement j;
	struct run r;

	(void)state;
	run_init(&r);
	j = judged(&r.s, 20, 10, 0); /* exactly 50% */
	step(&r, T0 + SEC, &j, NULL, 0);
	expect_only_transition(&r, DW_BREAKER_CLOSED, DW_BREAKER_OPEN, DW_REASON_SLOW_RATE,
			       T0 + SEC);
	assert_int_equal(r.b.opens, 1);
	assert_int_equal(r.b.open_for_ns, 30 * SEC);
}

/* Rates computed from fractional counts meet the threshold they equal. */
static void test_threshold_rounding(void **state)
{
	struct dw_judgement j;
	struct run r;

	(void)state;
	run_init(&r);
	r.s.slow_rate = 0.8;
	j = judged(&r.s, 20, 16, 0);
	j.slow_rate = 0.7 + 0.1; /* 0.7999999999999999 */
	if (j.slow_rate >= r.s.slow_rate)
		fail_msg("the case is meant to round below: %.17g >= %.17g", j.slow_rate,
			 r.s.slow_rate);
	step(&r, T0 + SEC, &j, NULL, 0);
	expect_only_transition(&r, DW_BREAKER_CLOSED, DW_BREAKER_OPEN, DW_REASON_SLOW_RATE,
			       T0 + SEC);

	/* one call in 10000 below is below */
	run_init(&r);
	j = judged(&r.s, 20, 10, 0);
	j.slow_rate = 0.5 - 1e-4;
	step(&r, T0 + SEC, &j, NULL, 0);
	assert_int_equal(r.b.state, DW_BREAKER_CLOSED);
}

/* A failing dependency is usually slow too: the failure rate is the reason given. */
static void test_failure_rate_first(void **state)
{
	struct dw_judgement j;
	struct run r;

	(void)state;
	run_init(&r);
	j = judged(&r.s, 20, 10, 10);
	step(&r, T0 + SEC, &j, NULL, 0);
	expect_only_transition(&r, DW_BREAKER_CLOSED, DW_BREAKER_OPEN, DW_REASON_FAILURE_RATE,
			       T0 + SEC);

	run_init(&r);
	j = judged(&r.s, 20, 0, 11);
	step(&r, T0 + SEC, &j, NULL, 0);
	assert_int_equal(r.b.reason, DW_REASON_FAILURE_RATE);

	run_init(&r);
	j = judged(&r.s, 20, 0, 9);
	step(&r, T0 + SEC, &j, NULL, 0);
	expect_no_events(&r);
}

static void test_not_enough_calls(void **state)
{
	struct dw_judgement j;
	struct run r;

	(void)state;
	run_init(&r);
	j = judged(&r.s, 9, 9, 9); /* min_calls 10 */
	assert_false(j.enough);
	step(&r, T0 + SEC, &j, NULL, 0);
	expect_no_events(&r);
	assert_int_equal(r.b.state, DW_BREAKER_CLOSED);

	j = judged(&r.s, 10, 10, 0);
	step(&r, T0 + 2 * SEC, &j, NULL, 0);
	expect_only_transition(&r, DW_BREAKER_CLOSED, DW_BREAKER_OPEN, DW_REASON_SLOW_RATE,
			       T0 + 2 * SEC);
}

/* A threshold of 0% is off, not "always open". */
static void test_zero_threshold_is_off(void **state)
{
	struct dw_judgement j;
	struct run r;

	(void)state;
	run_init(&r);
	r.s.slow_rate = 0;
	r.s.failure_rate = 0;
	j = judged(&r.s, 20, 20, 0);
	step(&r, T0 + SEC, &j, NULL, 0);
	expect_no_events(&r);
	j = judged(&r.s, 20, 0, 20);
	step(&r, T0 + 2 * SEC, &j, NULL, 0);
	expect_no_events(&r);

	/* the other one still works */
	r.s.failure_rate = 0.5;
	step(&r, T0 + 3 * SEC, &j, NULL, 0);
	assert_int_equal(r.b.reason, DW_REASON_FAILURE_RATE);
}

static void test_concurrency_opens(void **state)
{
	struct dw_judgement j;
	struct run r;

	(void)state;
	run_init(&r);
	step(&r, T0 + SEC, &healthy, NULL, 1000);
	expect_no_events(&r); /* max_inflight 0: no limit */

	r.s.max_inflight = 25;
	step(&r, T0 + 2 * SEC, &healthy, NULL, 24);
	assert_int_equal(r.b.state, DW_BREAKER_CLOSED);
	step(&r, T0 + 3 * SEC, &healthy, NULL, 25);
	expect_only_transition(&r, DW_BREAKER_CLOSED, DW_BREAKER_OPEN, DW_REASON_CONCURRENCY,
			       T0 + 3 * SEC);
	/* before the rates, which would say failure_rate */
	run_init(&r);
	r.s.max_inflight = 25;
	j = judged(&r.s, 20, 20, 20);
	step(&r, T0 + SEC, &j, NULL, 30);
	assert_int_equal(r.b.reason, DW_REASON_CONCURRENCY);
}

static void test_open_to_half_open(void **state)
{
	struct dw_judgement j;
	struct run r;

	(void)state;
	run_init(&r);
	j = judged(&r.s, 20, 12, 0);
	step(&r, T0 + SEC, &j, NULL, 0);
	assert_int_equal(r.b.state, DW_BREAKER_OPEN);

	/* open stays open for open_for, whatever the judgement */
	step(&r, T0 + SEC + 30 * SEC - 1, &healthy, NULL, 0);
	expect_no_events(&r);
	assert_int_equal(r.b.state, DW_BREAKER_OPEN);
	/* a clock read before since is no time at all */
	step(&r, T0, &healthy, NULL, 0);
	expect_no_events(&r);

	step(&r, T0 + SEC + 30 * SEC, &j, NULL, 0);
	expect_only_transition(&r, DW_BREAKER_OPEN, DW_BREAKER_HALF_OPEN, DW_REASON_SLOW_RATE,
			       T0 + 31 * SEC);
	assert_int_equal(r.b.half_open_since_ns, T0 + 31 * SEC);
	assert_int_equal(r.b.opens, 1);
}

/* Drives a fresh breaker to half_open at T0 + 31 s; returns that time. */
static uint64_t to_half_open(struct run *r)
{
	struct dw_judgement j = judged(&r->s, 20, 20, 0);

	step(r, T0 + SEC, &j, NULL, 0);
	step(r, T0 + 31 * SEC, &j, NULL, 0);
	assert_int_equal(r->b.state, DW_BREAKER_HALF_OPEN);
	return T0 + 31 * SEC;
}

static void test_half_open_closes(void **state)
{
	struct dw_probe_result p = {.decided = 4, .bad = 0, .done = false};
	struct dw_judgement j;
	uint64_t t;
	struct run r;

	(void)state;
	run_init(&r);
	t = to_half_open(&r);

	/* no probes judged yet, or too few: waits; the closed-state rates do not matter */
	j = judged(&r.s, 20, 20, 20);
	step(&r, t + SEC, &j, NULL, 0);
	expect_no_events(&r);
	step(&r, t + 2 * SEC, &j, &p, 0);
	expect_no_events(&r);
	assert_int_equal(r.b.state, DW_BREAKER_HALF_OPEN);

	p.decided = 5;
	p.done = true;
	step(&r, t + 3 * SEC, &j, &p, 0);
	expect_only_transition(&r, DW_BREAKER_HALF_OPEN, DW_BREAKER_CLOSED, DW_REASON_NONE,
			       t + 3 * SEC);
	assert_int_equal(r.b.open_for_ns, 30 * SEC);
	assert_int_equal(r.b.opens, 1);
	/* the closed period is judged on its own calls, from the close */
	assert_int_equal(r.b.judged_since_ns, t + 3 * SEC);
}

/* Each failed recovery doubles open_for, up to 8 times the configured 30 s; closing resets it. */
static void test_reopen_doubles_up_to_cap(void **state)
{
	static const uint64_t want[] = {60, 120, 240, 240, 240};
	struct dw_probe_result bad = {.decided = 1, .bad = 1, .done = true};
	struct dw_probe_result good = {.decided = 5, .bad = 0, .done = true};
	struct dw_judgement j;
	uint64_t t;
	unsigned i;
	struct run r;

	(void)state;
	run_init(&r);
	t = to_half_open(&r);
	for (i = 0; i < 5; i++) {
		step(&r, t, &healthy, &bad, 0);
		expect_only_transition(&r, DW_BREAKER_HALF_OPEN, DW_BREAKER_OPEN,
				       DW_REASON_SLOW_RATE, t);
		assert_int_equal(r.b.open_for_ns, want[i] * SEC);
		assert_int_equal(r.b.opens, 2 + i);

		/* the doubled period, not the configured one */
		step(&r, t + want[i] * SEC - 1, &healthy, NULL, 0);
		assert_int_equal(r.b.state, DW_BREAKER_OPEN);
		t += want[i] * SEC;
		step(&r, t, &healthy, NULL, 0);
		assert_int_equal(r.b.state, DW_BREAKER_HALF_OPEN);
		assert_int_equal(r.b.half_open_since_ns, t);
	}
	step(&r, t + SEC, &healthy, &good, 0);
	assert_int_equal(r.b.state, DW_BREAKER_CLOSED);
	assert_int_equal(r.b.open_for_ns, 30 * SEC);

	/* the next open waits the configured time again */
	j = judged(&r.s, 20, 20, 0);
	step(&r, t + 2 * SEC, &j, NULL, 0);
	assert_int_equal(r.b.state, DW_BREAKER_OPEN);
	step(&r, t + 2 * SEC + 30 * SEC, &healthy, NULL, 0);
	assert_int_equal(r.b.state, DW_BREAKER_HALF_OPEN);
}

/* A bad probe wins over enough good ones: any bad call among them reopens. */
static void test_bad_probe_wins(void **state)
{
	struct dw_probe_result p = {.decided = 5, .bad = 0.25, .done = true};
	uint64_t t;
	struct run r;

	(void)state;
	run_init(&r);
	t = to_half_open(&r);
	step(&r, t + SEC, &healthy, &p, 0);
	expect_only_transition(&r, DW_BREAKER_HALF_OPEN, DW_BREAKER_OPEN, DW_REASON_SLOW_RATE,
			       t + SEC);
	assert_int_equal(r.b.open_for_ns, 60 * SEC);
}

/*
 * The probe result does not say slow or failed: a reopen keeps the reason
 * the breaker opened for.
 */
static void test_reopen_keeps_reason(void **state)
{
	struct dw_probe_result bad = {.decided = 1, .bad = 1, .done = true};
	struct dw_judgement j;
	struct run r;

	(void)state;
	run_init(&r);
	j = judged(&r.s, 20, 0, 20);
	step(&r, T0, &j, NULL, 0);
	step(&r, T0 + 30 * SEC, &healthy, NULL, 0);
	expect_only_transition(&r, DW_BREAKER_OPEN, DW_BREAKER_HALF_OPEN, DW_REASON_FAILURE_RATE,
			       T0 + 30 * SEC);
	step(&r, T0 + 31 * SEC, &healthy, &bad, 0);
	expect_only_transition(&r, DW_BREAKER_HALF_OPEN, DW_BREAKER_OPEN, DW_REASON_FAILURE_RATE,
			       T0 + 31 * SEC);

	run_init(&r);
	r.s.max_inflight = 4;
	step(&r, T0, &healthy, NULL, 4);
	step(&r, T0 + 30 * SEC, &healthy, NULL, 0);
	step(&r, T0 + 31 * SEC, &healthy, &bad, 0);
	expect_only_transition(&r, DW_BREAKER_HALF_OPEN, DW_BREAKER_OPEN, DW_REASON_CONCURRENCY,
			       T0 + 31 * SEC);
}

/* Closing takes half_open_calls good probes as configured now, whatever `done` says. */
static void test_close_needs_half_open_calls(void **state)
{
	struct dw_probe_result p = {.decided = 3, .bad = 0, .done = true};
	uint64_t t;
	struct run r;

	(void)state;
	run_init(&r);
	t = to_half_open(&r);
	step(&r, t + SEC, &healthy, &p, 0); /* judged for a limit of 3 */
	expect_no_events(&r);
	r.s.half_open_calls = 3; /* a reload lowered it */
	step(&r, t + 2 * SEC, &healthy, &p, 0);
	expect_only_transition(&r, DW_BREAKER_HALF_OPEN, DW_BREAKER_CLOSED, DW_REASON_NONE,
			       t + 2 * SEC);
}

/*
 * The whole path with the real probe judgement: the one probe let through
 * hangs. Once older than slow_call it is bad, and the breaker reopens: it
 * is not left waiting in half_open for calls that never come.
 */
static void test_hanging_probe_reopens(void **state)
{
	struct dw_slice_counts slice;
	struct dw_probe_result p;
	struct dw_judge_input in;
	uint64_t t, probe_start;
	struct run r;

	(void)state;
	run_init(&r);
	t = to_half_open(&r);
	probe_start = t + 40 * MS;
	memset(&slice, 0, sizeof(slice));
	slice.slice = probe_start >> DW_SLICE_SHIFT;
	slice.started = 1;
	memset(&in, 0, sizeof(in));
	in.slices = &slice;
	in.nslices = 1;
	in.pending_start_ns = &probe_start;
	in.npending = 1;
	in.s = &r.s;

	for (in.now_ns = t + 50 * MS; in.now_ns <= probe_start + 500 * MS; in.now_ns += 50 * MS) {
		dw_judge_probes(&in, r.b.half_open_since_ns, r.s.half_open_calls, &p);
		step(&r, in.now_ns, &healthy, &p, 1);
		expect_no_events(&r);
	}
	in.now_ns = probe_start + 500 * MS + 1;
	dw_judge_probes(&in, r.b.half_open_since_ns, r.s.half_open_calls, &p);
	assert_double_eq(p.bad, 1);
	step(&r, in.now_ns, &healthy, &p, 1);
	expect_only_transition(&r, DW_BREAKER_HALF_OPEN, DW_BREAKER_OPEN, DW_REASON_SLOW_RATE,
			       in.now_ns);
	assert_int_equal(r.b.open_for_ns, 60 * SEC);
}

static void test_half_open_concurrency(void **state)
{
	struct dw_probe_result p = {.decided = 0, .bad = 0, .done = false};
	uint64_t t;
	struct run r;

	(void)state;
	run_init(&r);
	r.s.max_inflight = 10;
	t = to_half_open(&r);
	step(&r, t + SEC, &healthy, &p, 9);
	expect_no_events(&r);
	step(&r, t + 2 * SEC, &healthy, &p, 10);
	expect_only_transition(&r, DW_BREAKER_HALF_OPEN, DW_BREAKER_OPEN, DW_REASON_CONCURRENCY,
			       t + 2 * SEC);
	assert_int_equal(r.b.open_for_ns, 60 * SEC);

	/* even with the probes all good: the limit is reached now */
	run_init(&r);
	r.s.max_inflight = 10;
	t = to_half_open(&r);
	p.decided = 5;
	p.done = true;
	step(&r, t + SEC, &healthy, &p, 12);
	assert_int_equal(r.b.state, DW_BREAKER_OPEN);
	assert_int_equal(r.b.reason, DW_REASON_CONCURRENCY);
}

/* Ignored: traced, never judged. Closed whatever happens, and silent. */
static void test_ignore(void **state)
{
	struct dw_probe_result bad = {.decided = 1, .bad = 1, .done = true};
	struct dw_judgement j;
	struct run r;

	(void)state;
	run_init(&r);
	r.s.ignore = true;
	r.s.max_inflight = 5;
	j = judged(&r.s, 20, 20, 20);
	step(&r, T0 + SEC, &j, &bad, 100);
	expect_no_events(&r);
	assert_int_equal(r.b.state, DW_BREAKER_CLOSED);
	assert_int_equal(r.b.opens, 0);

	/* set to ignore while open (a reload): closed at once, still silent */
	r.s.ignore = false;
	step(&r, T0 + 2 * SEC, &j, NULL, 0);
	assert_int_equal(r.b.state, DW_BREAKER_OPEN);
	r.s.ignore = true;
	step(&r, T0 + 3 * SEC, &j, NULL, 100);
	expect_no_events(&r);
	assert_int_equal(r.b.state, DW_BREAKER_CLOSED);
	assert_int_equal(r.b.reason, DW_REASON_NONE);
	assert_int_equal(r.b.since_ns, T0 + 3 * SEC);
}

static void expect_warning(const struct run *r, unsigned i, enum dw_breaker_event_kind kind,
			   enum dw_breaker_reason reason)
{
	assert_true(i < r->ev.n);
	assert_int_equal(r->ev.ev[i].kind, kind);
	assert_int_equal(r->ev.ev[i].from, DW_BREAKER_CLOSED);
	assert_int_equal(r->ev.ev[i].to, DW_BREAKER_CLOSED);
	assert_int_equal(r->ev.ev[i].reason, reason);
}

/* 80% of max_inflight 25 is 20: warned once, again only after dropping below. */
static void test_inflight_warning(void **state)
{
	struct run r;

	(void)state;
	run_init(&r);
	r.s.max_inflight = 25;
	step(&r, T0 + 1 * SEC, &healthy, NULL, 19);
	expect_no_events(&r);
	step(&r, T0 + 2 * SEC, &healthy, NULL, 20);
	assert_int_equal(r.ev.n, 1);
	expect_warning(&r, 0, DW_EV_WARN_INFLIGHT, DW_REASON_CONCURRENCY);
	assert_true(r.b.warned_inflight);
	step(&r, T0 + 3 * SEC, &healthy, NULL, 24);
	expect_no_events(&r);
	step(&r, T0 + 4 * SEC, &healthy, NULL, 20);
	expect_no_events(&r);
	step(&r, T0 + 5 * SEC, &healthy, NULL, 19); /* re-armed */
	expect_no_events(&r);
	assert_false(r.b.warned_inflight);
	step(&r, T0 + 6 * SEC, &healthy, NULL, 22);
	assert_int_equal(r.ev.n, 1);
	expect_warning(&r, 0, DW_EV_WARN_INFLIGHT, DW_REASON_CONCURRENCY);
	assert_int_equal(r.b.state, DW_BREAKER_CLOSED);

	/* no limit, no warning */
	run_init(&r);
	step(&r, T0 + SEC, &healthy, NULL, 1000000);
	expect_no_events(&r);
}

/* slow_rate 50%: from 40% a warning, once; too few calls neither warn nor re-arm. */
static void test_slow_rate_warning(void **state)
{
	struct dw_judgement j39, j40, j45, few;
	struct run r;

	(void)state;
	run_init(&r);
	j39 = judged(&r.s, 100, 39, 0);
	j40 = judged(&r.s, 20, 8, 0);
	j45 = judged(&r.s, 20, 9, 0);
	few = judged(&r.s, 5, 0, 0);

	step(&r, T0 + 1 * SEC, &j39, NULL, 0);
	expect_no_events(&r);
	step(&r, T0 + 2 * SEC, &j40, NULL, 0);
	assert_int_equal(r.ev.n, 1);
	expect_warning(&r, 0, DW_EV_WARN_SLOW_RATE, DW_REASON_SLOW_RATE);
	step(&r, T0 + 3 * SEC, &j45, NULL, 0);
	expect_no_events(&r);
	step(&r, T0 + 4 * SEC, &few, NULL, 0);
	expect_no_events(&r);
	step(&r, T0 + 5 * SEC, &j45, NULL, 0);
	expect_no_events(&r); /* not re-armed by the quiet spell */
	step(&r, T0 + 6 * SEC, &j39, NULL, 0);
	expect_no_events(&r);
	step(&r, T0 + 7 * SEC, &j45, NULL, 0);
	assert_int_equal(r.ev.n, 1);
	expect_warning(&r, 0, DW_EV_WARN_SLOW_RATE, DW_REASON_SLOW_RATE);
	assert_int_equal(r.b.state, DW_BREAKER_CLOSED);

	/* slow_rate off: no warning either */
	run_init(&r);
	r.s.slow_rate = 0;
	step(&r, T0 + SEC, &j45, NULL, 0);
	expect_no_events(&r);
}

/* Both warnings at once, in one step. */
static void test_both_warnings(void **state)
{
	struct dw_judgement j;
	struct run r;

	(void)state;
	run_init(&r);
	r.s.max_inflight = 10;
	j = judged(&r.s, 20, 9, 0);
	step(&r, T0 + SEC, &j, NULL, 8);
	assert_int_equal(r.ev.n, 2);
	expect_warning(&r, 0, DW_EV_WARN_INFLIGHT, DW_REASON_CONCURRENCY);
	expect_warning(&r, 1, DW_EV_WARN_SLOW_RATE, DW_REASON_SLOW_RATE);
}

/*
 * Opening says it all: no warning with it. A condition still present after
 * the breaker closes again is warned about anew.
 */
static void test_warnings_and_transitions(void **state)
{
	struct dw_probe_result good = {.decided = 5, .bad = 0, .done = true};
	struct dw_judgement j45, jopen;
	uint64_t t;
	struct run r;

	(void)state;
	run_init(&r);
	r.s.max_inflight = 10;
	j45 = judged(&r.s, 20, 9, 0);
	jopen = judged(&r.s, 20, 10, 0);
	step(&r, T0 + SEC, &j45, NULL, 8);
	assert_int_equal(r.ev.n, 2);
	step(&r, T0 + 2 * SEC, &jopen, NULL, 8);
	expect_only_transition(&r, DW_BREAKER_CLOSED, DW_BREAKER_OPEN, DW_REASON_SLOW_RATE,
			       T0 + 2 * SEC);
	t = T0 + 32 * SEC;
	step(&r, t, &j45, NULL, 8);
	expect_only_transition(&r, DW_BREAKER_OPEN, DW_BREAKER_HALF_OPEN, DW_REASON_SLOW_RATE, t);
	step(&r, t + SEC, &j45, &good, 8);
	expect_only_transition(&r, DW_BREAKER_HALF_OPEN, DW_BREAKER_CLOSED, DW_REASON_NONE,
			       t + SEC);
	step(&r, t + 2 * SEC, &j45, NULL, 8);
	assert_int_equal(r.ev.n, 2);
	expect_warning(&r, 0, DW_EV_WARN_INFLIGHT, DW_REASON_CONCURRENCY);
	expect_warning(&r, 1, DW_EV_WARN_SLOW_RATE, DW_REASON_SLOW_RATE);
}

/* open_for 24 h (the config's limit), reopened many times: the cap holds, no overflow. */
static void test_cap_large(void **state)
{
	struct dw_probe_result bad = {.decided = 1, .bad = 1, .done = true};
	struct dw_judgement j;
	uint64_t t;
	unsigned i;
	struct run r;

	(void)state;
	run_init(&r);
	r.s.open_for_ns = 24 * 3600 * SEC;
	dw_breaker_init(&r.b, &r.s, T0);
	j = judged(&r.s, 20, 20, 0);
	step(&r, T0, &j, NULL, 0);
	t = T0;
	for (i = 0; i < 70; i++) {
		t += r.b.open_for_ns;
		step(&r, t, &healthy, NULL, 0);
		assert_int_equal(r.b.state, DW_BREAKER_HALF_OPEN);
		step(&r, t, &healthy, &bad, 0);
		assert_int_equal(r.b.state, DW_BREAKER_OPEN);
		assert_true(r.b.open_for_ns <= 8 * 24 * 3600 * SEC);
	}
	assert_int_equal(r.b.open_for_ns, 8 * 24 * 3600 * SEC);
}

/* Forced open, half_open and closed hold their state; auto gives a fresh closed breaker back. */
static void test_force(void **state)
{
	struct dw_judgement j;
	uint64_t t = T0 + 10 * SEC;
	struct run r;

	(void)state;
	run_init(&r);
	j = judged(&r.s, 20, 20, 0);
	step(&r, T0, &j, NULL, 0);
	assert_int_equal(r.b.state, DW_BREAKER_OPEN);
	assert_int_equal(r.b.opens, 1);

	dw_breaker_force(&r.b, &r.s, DW_BREAKER_CLOSED, t);
	assert_int_equal(r.b.state, DW_BREAKER_CLOSED);
	assert_int_equal(r.b.reason, DW_REASON_FORCED);
	assert_int_equal(r.b.since_ns, t);
	/* an override is no transition of the rules: the count of opens stays */
	assert_int_equal(r.b.opens, 1);

	dw_breaker_force(&r.b, &r.s, DW_BREAKER_HALF_OPEN, t + SEC);
	assert_int_equal(r.b.state, DW_BREAKER_HALF_OPEN);
	assert_int_equal(r.b.reason, DW_REASON_FORCED);
	assert_int_equal(r.b.half_open_since_ns, t + SEC);

	dw_breaker_force(&r.b, &r.s, DW_BREAKER_OPEN, t + 2 * SEC);
	assert_int_equal(r.b.state, DW_BREAKER_OPEN);
	assert_int_equal(r.b.since_ns, t + 2 * SEC);

	dw_breaker_force(&r.b, &r.s, -1, t + 3 * SEC);
	assert_int_equal(r.b.state, DW_BREAKER_CLOSED);
	assert_int_equal(r.b.reason, DW_REASON_NONE);
	assert_int_equal(r.b.since_ns, t + 3 * SEC);
	assert_int_equal(r.b.open_for_ns, r.s.open_for_ns);
	assert_int_equal(r.b.opens, 0);
	/* on its calls from now: those a forced open aborted do not count */
	assert_int_equal(r.b.judged_since_ns, t + 3 * SEC);
	/* and the rules judge it again */
	step(&r, t + 4 * SEC, &j, NULL, 0);
	expect_only_transition(&r, DW_BREAKER_CLOSED, DW_BREAKER_OPEN, DW_REASON_SLOW_RATE,
			       t + 4 * SEC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_init),
	    cmocka_unit_test(test_closed_stays_closed_when_healthy),
	    cmocka_unit_test(test_open_on_slow_rate),
	    cmocka_unit_test(test_threshold_rounding),
	    cmocka_unit_test(test_failure_rate_first),
	    cmocka_unit_test(test_not_enough_calls),
	    cmocka_unit_test(test_zero_threshold_is_off),
	    cmocka_unit_test(test_concurrency_opens),
	    cmocka_unit_test(test_open_to_half_open),
	    cmocka_unit_test(test_half_open_closes),
	    cmocka_unit_test(test_reopen_doubles_up_to_cap),
	    cmocka_unit_test(test_bad_probe_wins),
	    cmocka_unit_test(test_reopen_keeps_reason),
	    cmocka_unit_test(test_close_needs_half_open_calls),
	    cmocka_unit_test(test_hanging_probe_reopens),
	    cmocka_unit_test(test_half_open_concurrency),
	    cmocka_unit_test(test_ignore),
	    cmocka_unit_test(test_inflight_warning),
	    cmocka_unit_test(test_slow_rate_warning),
	    cmocka_unit_test(test_both_warnings),
	    cmocka_unit_test(test_warnings_and_transitions),
	    cmocka_unit_test(test_cap_large),
	    cmocka_unit_test(test_force),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
