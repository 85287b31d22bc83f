// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "dwtest.h"

#include "logic/judge/judge.h"

#define MS 1000000ULL
#define SEC (1000ULL * MS)
/* written out, not DW_SLICE_SHIFT: the tests pin the kernel's slice length */
#define SLICE_NS 67108864ULL
/* the kernel keeps this many slices per destination */
#define RING_SLICES 128

/* ---- hand-built inputs ---- */

struct fix {
	struct dw_dep_settings s;
	struct dw_slice_counts slices[512];
	unsigned nslices;
	uint64_t pending[1024];
	unsigned npending;
};

/* The spec's example settings: slow_call 500 ms, sample 20, min_calls 5, 50%. */
static void fix_init(struct fix *f)
{
	memset(f, 0, sizeof(*f));
	f->s.slow_call_ns = 500 * MS;
	f->s.window_ns = 10 * SEC;
	f->s.open_for_ns = 30 * SEC;
	f->s.slow_rate = 0.5;
	f->s.failure_rate = 0.5;
	f->s.sample = 20;
	f->s.min_calls = 5;
	f->s.half_open_calls = 5;
}

static void add_slice(struct fix *f, uint64_t slice, uint64_t started, uint64_t fast, uint64_t slow,
		      uint64_t failed)
{
	struct dw_slice_counts *c = &f->slices[f->nslices++];

	c->slice = slice;
	c->started = started;
	c->fast = fast;
	c->slow = slow;
	c->failed = failed;
}

static void add_pending(struct fix *f, uint64_t start_ns)
{
	f->pending[f->npending++] = start_ns;
}

static struct dw_judge_input fix_input(const struct fix *f, uint64_t now)
{
	struct dw_judge_input in = {
	    .now_ns = now,
	    .slices = f->slices,
	    .nslices = f->nslices,
	    .pending_start_ns = f->pending,
	    .npending = f->npending,
	    .s = &f->s,
	};

	return in;
}

static void judge(const struct fix *f, uint64_t now, struct dw_judgement *j)
{
	struct dw_judge_input in = fix_input(f, now);

	memset(j, 0xa5, sizeof(*j)); /* every field must be written */
	dw_judge(&in, j);
}

static void probes(const struct fix *f, uint64_t now, uint64_t since, unsigned limit,
		   struct dw_probe_result *p)
{
	struct dw_judge_input in = fix_input(f, now);

	memset(p, 0xa5, sizeof(*p));
	dw_judge_probes(&in, since, limit, p);
}

/* start of slice n, in ns */
static uint64_t at(uint64_t n)
{
	return n * SLICE_NS;
}

/* slice numbers near 15000 s of uptime */
#define BASE 223517ULL

/* ---- a model of the kernel: calls in, slices and pending out ---- */

struct call {
	uint64_t start, dur;
	bool fail;
};

static void shuffle_u64(uint64_t *a, unsigned n, uint64_t *seed)
{
	for (unsigned i = n; i > 1; i--) {
		unsigned k = dwt_rand(seed) % i;
		uint64_t t = a[i - 1];

		a[i - 1] = a[k];
		a[k] = t;
	}
}

static void shuffle_slices(struct dw_slice_counts *a, unsigned n, uint64_t *seed)
{
	for (unsigned i = n; i > 1; i--) {
		unsigned k = dwt_rand(seed) % i;
		struct dw_slice_counts t = a[i - 1];

		a[i - 1] = a[k];
		a[k] = t;
	}
}

/*
 * What the daemon sees at now: the kernel keeps the newest RING_SLICES
 * slices, classifies a call when it ends, and the scan lists every call
 * still outstanding. calls[] is sorted by start; from is the first call
 * that can still matter (moved on as time passes). Inputs come shuffled.
 */
static void observe(struct fix *f, const struct call *calls, unsigned ncalls, unsigned *from,
		    uint64_t now, uint64_t *seed)
{
	uint64_t now_slice = now / SLICE_NS, slice;
	const struct call *c;
	struct dw_slice_counts *sc;
	unsigned i;

	f->nslices = 0;
	f->npending = 0;
	/* 20 s back covers the ring and every call of these tests still outstanding */
	while (*from < ncalls && calls[*from].start + 20 * SEC < now)
		(*from)++;
	for (i = *from; i < ncalls && calls[i].start <= now; i++) {
		c = &calls[i];
		slice = c->start / SLICE_NS;
		if (c->start + c->dur > now)
			add_pending(f, c->start);
		if (slice + RING_SLICES <= now_slice)
			continue;
		sc = f->nslices ? &f->slices[f->nslices - 1] : NULL;
		if (!sc || sc->slice != slice) {
			add_slice(f, slice, 0, 0, 0, 0);
			sc = &f->slices[f->nslices - 1];
		}
		sc->started++;
		if (c->start + c->dur > now)
			continue;
		if (c->fail)
			sc->failed++;
		else if (c->dur > f->s.slow_call_ns)
			sc->slow++;
		else
			sc->fast++;
	}
	shuffle_slices(f->slices, f->nslices, seed);
	shuffle_u64(f->pending, f->npending, seed);
}

/* ---- tests ---- */

static void test_slice_shift(void **state)
{
	(void)state;
	assert_int_equal(1ULL << DW_SLICE_SHIFT, SLICE_NS);
}

static void test_empty(void **state)
{
	struct dw_probe_result p;
	struct dw_judgement j;
	struct fix f;

	(void)state;
	fix_init(&f);
	judge(&f, 1000 * SEC, &j);
	assert_double_eq(j.decided, 0);
	assert_double_eq(j.slow, 0);
	assert_double_eq(j.failed, 0);
	assert_double_eq(j.slow_rate, 0);
	assert_double_eq(j.failure_rate, 0);
	assert_false(j.enough);
	assert_int_equal(j.undecided_slices, 0);

	probes(&f, 1000 * SEC, 999 * SEC, 5, &p);
	assert_double_eq(p.decided, 0);
	assert_double_eq(p.bad, 0);
	assert_false(p.done);
}

/* Slices that started calls but counted none of them ending: nothing decided, no 0/0. */
static void test_nothing_decided_yet(void **state)
{
	struct dw_judgement j;
	struct fix f;

	(void)state;
	fix_init(&f);
	add_slice(&f, BASE, 4, 0, 0, 0);
	add_slice(&f, BASE + 1, 3, 0, 0, 0);
	judge(&f, at(BASE + 3), &j);
	assert_double_eq(j.decided, 0);
	assert_double_eq(j.slow_rate, 0);
	assert_double_eq(j.failure_rate, 0);
	assert_false(j.enough);
	assert_int_equal(j.undecided_slices, 0);
}

static void test_counts_and_min_calls(void **state)
{
	struct dw_judgement j;
	struct fix f;

	(void)state;
	fix_init(&f);
	add_slice(&f, BASE, 4, 2, 1, 1);
	judge(&f, at(BASE + 20), &j);
	assert_double_eq(j.decided, 4);
	assert_double_eq(j.slow, 1);
	assert_double_eq(j.failed, 1);
	assert_double_eq(j.slow_rate, 0.25);
	assert_double_eq(j.failure_rate, 0.25);
	assert_false(j.enough); /* 4 < min_calls 5 */

	add_slice(&f, BASE + 1, 1, 1, 0, 0);
	judge(&f, at(BASE + 20), &j);
	assert_double_eq(j.decided, 5);
	assert_double_eq(j.slow_rate, 0.2);
	assert_double_eq(j.failure_rate, 0.2);
	assert_true(j.enough);
}

/*
 * Newest first, the last slice in part: sample 10 takes all 6 of the
 * newest slice and 4 of the 7 of the older one, whose 3 slow and 2 failed
 * calls count 4/7 each. The oldest slice is not reached at all.
 */
static void test_fraction_of_last_slice(void **state)
{
	struct dw_judgement j;
	struct fix f;

	(void)state;
	fix_init(&f);
	f.s.sample = 10;
	add_slice(&f, BASE, 9, 0, 9, 0); /* all slow, never reached */
	add_slice(&f, BASE + 5, 7, 2, 3, 2);
	add_slice(&f, BASE + 9, 6, 3, 2, 1);
	judge(&f, at(BASE + 30), &j);
	assert_double_eq(j.decided, 10);
	assert_near(j.slow, 2 + 3.0 * 4 / 7, 1e-12);
	assert_near(j.failed, 1 + 2.0 * 4 / 7, 1e-12);
	assert_near(j.slow_rate, (2 + 12.0 / 7) / 10, 1e-12);
	assert_near(j.failure_rate, (1 + 8.0 / 7) / 10, 1e-12);
	assert_true(j.enough);

	/* exactly filling the sample takes no part of the next slice */
	f.s.sample = 13;
	judge(&f, at(BASE + 30), &j);
	assert_double_eq(j.decided, 13);
	assert_double_eq(j.slow, 5);
	assert_double_eq(j.failed, 3);
}

/*
 * A young outstanding call hides its whole slice: its 10 fast completions
 * would otherwise count before the call is known to be slow or not. The
 * older slice is still used. Once the call is older than slow_call, it
 * counts as slow and the slice is back.
 */
static void test_young_call_hides_its_slice(void **state)
{
	uint64_t now = at(BASE + 10) + 5 * MS;
	struct dw_judgement j;
	struct fix f;

	(void)state;
	fix_init(&f);
	add_slice(&f, BASE, 10, 5, 5, 0);
	add_slice(&f, BASE + 9, 11, 10, 0, 0);
	add_pending(&f, at(BASE + 9) + 1 * MS);
	judge(&f, now, &j);
	assert_int_equal(j.undecided_slices, 1);
	assert_double_eq(j.decided, 10);
	assert_double_eq(j.slow, 5);
	assert_double_eq(j.slow_rate, 0.5);

	/* exactly slow_call old is not slow yet ("exceeds") */
	judge(&f, at(BASE + 9) + 1 * MS + 500 * MS, &j);
	assert_int_equal(j.undecided_slices, 1);
	assert_double_eq(j.decided, 10);

	/* 1 ns later it is: 11 of the newer slice, then 9 of the 10 older */
	judge(&f, at(BASE + 9) + 1 * MS + 500 * MS + 1, &j);
	assert_int_equal(j.undecided_slices, 0);
	assert_double_eq(j.decided, 20);
	assert_near(j.slow, 1 + 5 * 0.9, 1e-12);
	assert_near(j.slow_rate, 5.5 / 20, 1e-12);
}

/* A hanging call in a newer slice does not hide an older decided one, and counts once slow. */
static void test_slow_now_and_undecided_mix(void **state)
{
	uint64_t now = at(BASE + 20);
	struct dw_judgement j;
	struct fix f;

	(void)state;
	fix_init(&f);
	add_slice(&f, BASE + 19, 2, 1, 0, 0); /* young call outstanding */
	add_pending(&f, at(BASE + 19) + 10 * MS);
	add_slice(&f, BASE + 5, 3, 0, 0, 0); /* three calls hanging for a second */
	add_pending(&f, at(BASE + 5));
	add_pending(&f, at(BASE + 5) + 1);
	add_pending(&f, at(BASE + 5) + 2);
	add_slice(&f, BASE + 2, 4, 4, 0, 0);
	judge(&f, now, &j);
	assert_int_equal(j.undecided_slices, 1);
	assert_double_eq(j.decided, 7);
	assert_double_eq(j.slow, 3);
	assert_near(j.slow_rate, 3.0 / 7, 1e-12);
	assert_true(j.enough);
}

/*
 * Counters that say more calls are outstanding than the scan found: the
 * rest ended after the counters were read, and are ignored. The pending
 * list is the truth, also when it is all that is left of a slice whose
 * slot the kernel reused.
 */
static void test_pending_is_the_truth(void **state)
{
	uint64_t now = at(BASE + 40);
	struct dw_judgement j;
	struct fix f;

	(void)state;
	fix_init(&f);
	add_slice(&f, BASE + 30, 10, 3, 0, 0); /* 7 "outstanding", none pending */
	judge(&f, now, &j);
	assert_double_eq(j.decided, 3);
	assert_int_equal(j.undecided_slices, 0);

	/* one of the 7 is really outstanding, young: the slice is hidden */
	add_pending(&f, at(BASE + 30) + 1);
	judge(&f, at(BASE + 30) + 300 * MS, &j);
	assert_int_equal(j.undecided_slices, 1);
	assert_double_eq(j.decided, 0);

	/* hanging calls of slices the counters no longer have still count as slow */
	f.npending = 0;
	add_pending(&f, at(BASE + 10));
	add_pending(&f, at(BASE + 10) + 7);
	add_pending(&f, at(BASE + 11));
	judge(&f, now, &j);
	assert_double_eq(j.decided, 6);
	assert_double_eq(j.slow, 3);
	assert_double_eq(j.slow_rate, 0.5);
	assert_true(j.enough);

	/* a start stamped after now (clocks read apart) is young, not slow */
	f.npending = 0;
	add_pending(&f, now + 2 * SEC);
	add_slice(&f, (now + 2 * SEC) / SLICE_NS, 1, 0, 0, 0);
	judge(&f, now, &j);
	assert_double_eq(j.decided, 3);
	assert_double_eq(j.slow, 0);
	assert_int_equal(j.undecided_slices, 1);
}

/*
 * window 1 s. Slices that start before now - window are not used, except
 * the one straddling the edge; the same for outstanding calls in them.
 */
static void test_window(void **state)
{
	uint64_t now, edge;
	struct dw_judgement j;
	struct fix f;

	(void)state;
	fix_init(&f);
	f.s.window_ns = 1 * SEC;
	f.s.sample = 100;
	edge = at(BASE) + 30 * MS; /* now - window falls inside slice BASE */
	now = edge + f.s.window_ns;
	add_slice(&f, BASE - 1, 8, 0, 8, 0); /* ends before the edge: out */
	add_pending(&f, at(BASE - 1) + 5);   /* hanging there: out too */
	add_slice(&f, BASE, 2, 1, 1, 0);     /* straddles: in */
	add_slice(&f, BASE + 3, 3, 3, 0, 0);
	judge(&f, now, &j);
	assert_double_eq(j.decided, 5);
	assert_double_eq(j.slow, 1);

	/* the edge exactly at a slice start: that slice is in, the one before out */
	now = at(BASE) + f.s.window_ns;
	judge(&f, now, &j);
	assert_double_eq(j.decided, 5);

	/* 1 ns earlier the edge falls in slice BASE - 1: it is in, with its hanging call */
	judge(&f, now - 1, &j);
	assert_double_eq(j.decided, 5 + 8 + 1);
	assert_double_eq(j.slow, 1 + 8 + 1);

	/* everything older than the window: nothing */
	judge(&f, at(BASE + 4) + f.s.window_ns, &j);
	assert_double_eq(j.decided, 0);
	assert_false(j.enough);
}

/*
 * A closed period after an open one (since_ns: the close): the calls that
 * opened it and those aborted while it was open are out, as if older than
 * the window, and a call from before the close still young ends nothing.
 * The pool reconnected, its calls in flight: too few decided to reopen.
 */
static void test_since(void **state)
{
	uint64_t since = at(BASE + 20) + 10 * MS, now = since + 250 * MS;
	struct dw_judge_input in;
	struct dw_judgement j;
	struct fix f;

	(void)state;
	fix_init(&f);
	add_slice(&f, BASE, 30, 0, 0, 30);	 /* aborted while open */
	add_slice(&f, BASE + 19, 3, 3, 0, 0);	 /* half_open's probes */
	add_pending(&f, at(BASE + 19) + 5 * MS); /* a probe's next call, young */
	add_slice(&f, BASE + 20, 3, 2, 0, 0);	 /* straddles the close: in */
	add_slice(&f, BASE + 21, 26, 0, 0, 0);	 /* the pool reconnected, in flight */
	for (unsigned i = 0; i < 26; i++)
		add_pending(&f, since + 100 * MS);

	in = fix_input(&f, now);
	in.since_ns = since;
	dw_judge(&in, &j);
	assert_double_eq(j.decided, 2);
	assert_double_eq(j.failed, 0);
	assert_false(j.enough);

	/* without it the sample ends at the young probe call: the aborted calls are all it takes */
	in.since_ns = 0;
	dw_judge(&in, &j);
	assert_double_eq(j.decided, 20);
	assert_double_eq(j.failure_rate, 1);
	assert_true(j.enough);

	/* the pool's calls answered, fast: judged on them */
	f.npending = 1;
	f.slices[f.nslices - 1].fast = 26;
	in = fix_input(&f, now);
	in.since_ns = since;
	dw_judge(&in, &j);
	assert_double_eq(j.decided, 20);
	assert_double_eq(j.failed, 0);
	assert_true(j.enough);
}

static void test_failures(void **state)
{
	struct dw_judgement j;
	struct fix f;

	(void)state;
	fix_init(&f);
	add_slice(&f, BASE + 1, 6, 1, 0, 5);
	add_slice(&f, BASE + 2, 4, 1, 1, 2);
	judge(&f, at(BASE + 30), &j);
	assert_double_eq(j.decided, 10);
	assert_double_eq(j.failed, 7);
	assert_double_eq(j.slow, 1);
	assert_double_eq(j.failure_rate, 0.7);
	assert_double_eq(j.slow_rate, 0.1);

	/* failures and slow-now calls are separate shares */
	add_pending(&f, at(BASE + 2) + 3);
	add_pending(&f, at(BASE + 2) + 4);
	judge(&f, at(BASE + 30), &j);
	assert_double_eq(j.decided, 12);
	assert_double_eq(j.slow, 3);
	assert_near(j.failure_rate, 7.0 / 12, 1e-12);
	assert_double_eq(j.slow_rate, 0.25);
	/* nothing after their slice answered: a stall, but the failures say more */
	assert_true(j.stalled);
	assert_int_equal(j.hanging, 2);

	/* failures below the limit: the stall is judged instead */
	f.s.failure_rate = 0.6;
	judge(&f, at(BASE + 30), &j);
	assert_true(j.stalled);
	assert_double_eq(j.decided, 2);
	assert_double_eq(j.slow, 2);
	assert_double_eq(j.failed, 0);
	assert_double_eq(j.slow_rate, 1);
	assert_double_eq(j.failure_rate, 0);
	assert_true(j.enough);
}

/* The input order does not matter. */
static void test_any_order(void **state)
{
	struct dw_judgement a, b;
	uint64_t seed = 7;
	struct fix f;
	unsigned i;

	(void)state;
	fix_init(&f);
	f.s.sample = 37;
	for (i = 0; i < 30; i++)
		add_slice(&f, BASE + i, 5, 5 - i % 3, i % 2, (i % 3 == 2));
	for (i = 0; i < 40; i++)
		add_pending(&f, at(BASE + i % 31) + i);
	judge(&f, at(BASE + 31) + 100 * MS, &a);
	for (i = 0; i < 20; i++) {
		shuffle_slices(f.slices, f.nslices, &seed);
		shuffle_u64(f.pending, f.npending, &seed);
		judge(&f, at(BASE + 31) + 100 * MS, &b);
		assert_double_eq(b.decided, a.decided);
		assert_double_eq(b.slow, a.slow);
		assert_double_eq(b.failed, a.failed);
		assert_int_equal(b.undecided_slices, a.undecided_slices);
	}
}

/* ---- a plain reference: every slice number in turn, no cleverness ---- */

struct ref {
	double decided, slow, failed;
	unsigned undecided, hanging;
	bool stopped, stalled, enough;
};

static void ref_slice(const struct fix *f, uint64_t now, uint64_t n, double *decided, double *slow,
		      double *failed, bool *young)
{
	unsigned i;

	*decided = *slow = *failed = 0;
	*young = false;
	for (i = 0; i < f->nslices; i++) {
		if (f->slices[i].slice != n)
			continue;
		*decided += f->slices[i].fast + f->slices[i].slow + f->slices[i].failed;
		*slow += f->slices[i].slow;
		*failed += f->slices[i].failed;
	}
	for (i = 0; i < f->npending; i++) {
		if (f->pending[i] / SLICE_NS != n)
			continue;
		if (now > f->pending[i] && now - f->pending[i] > f->s.slow_call_ns) {
			*decided += 1;
			*slow += 1;
		} else {
			*young = true;
		}
	}
}

/* Takes slice n into r; false when the walk is over. */
static bool ref_take(const struct fix *f, uint64_t now, uint64_t n, double limit, struct ref *r)
{
	double d, s, fl, part;
	bool young;

	if (r->decided >= limit)
		return false;
	ref_slice(f, now, n, &d, &s, &fl, &young);
	if (young)
		return false;
	part = d > limit - r->decided ? (limit - r->decided) / d : 1;
	r->decided = part < 1 ? limit : r->decided + d;
	r->slow += s * part;
	r->failed += fl * part;
	return true;
}

/* The stall as judge.h says it, plainly: slice by slice from the window's start. */
static void ref_stall(const struct fix *f, uint64_t now, uint64_t lo, struct ref *r)
{
	uint64_t oldest = UINT64_MAX, span, asked = 0;
	unsigned i;

	for (i = 0; i < f->npending; i++) {
		if (f->pending[i] / SLICE_NS < lo || now <= f->pending[i] ||
		    now - f->pending[i] <= f->s.slow_call_ns)
			continue;
		r->hanging++;
		if (f->pending[i] / SLICE_NS < oldest)
			oldest = f->pending[i] / SLICE_NS;
	}
	if (r->hanging < 2)
		return;
	for (i = 0; i < f->nslices; i++)
		if (f->slices[i].slice > oldest && f->slices[i].fast + f->slices[i].slow + f->slices[i].failed)
			return;
	/* the slices oldest - span .. oldest - 1, span = oldest .. now's slice */
	span = now / SLICE_NS - oldest + 1;
	for (uint64_t n = oldest - span; n < oldest; n++)
		for (i = 0; i < f->nslices; i++)
			if (f->slices[i].slice == n)
				asked += f->slices[i].started;
	if (asked < f->s.min_calls)
		return;
	for (i = 0; i < f->npending; i++)
		if (f->pending[i] >= now || now - f->pending[i] < f->s.slow_call_ns / 2)
			return;
	r->stalled = true;
	if (r->enough && r->decided > 0 && r->failed / r->decided >= f->s.failure_rate - 1e-9)
		return;
	r->decided = r->hanging < f->s.sample ? r->hanging : f->s.sample;
	r->slow = r->decided;
	r->failed = 0;
	r->enough = true;
}

/*
 * The random inputs lie in slices BASE .. now / SLICE_NS. The undecided
 * slices in the window are counted; the sample starts below the oldest
 * young call, in the window or not.
 */
static void ref_judge(const struct fix *f, uint64_t now, struct ref *r)
{
	uint64_t lo = now > f->s.window_ns ? (now - f->s.window_ns) / SLICE_NS : 0;
	uint64_t n, top = now / SLICE_NS + 1;
	double d, s, fl;
	bool young;
	unsigned i;

	memset(r, 0, sizeof(*r));
	for (n = now / SLICE_NS; n >= lo && n >= BASE; n--) {
		ref_slice(f, now, n, &d, &s, &fl, &young);
		r->undecided += young;
	}
	for (i = 0; i < f->npending; i++)
		if (now - f->pending[i] <= f->s.slow_call_ns && f->pending[i] / SLICE_NS < top)
			top = f->pending[i] / SLICE_NS;
	for (n = top - 1; n >= lo && n >= BASE; n--)
		if (!ref_take(f, now, n, f->s.sample, r))
			break;
	r->enough = r->decided >= f->s.min_calls;
	ref_stall(f, now, lo, r);
}

static void ref_probes(const struct fix *f, uint64_t now, uint64_t since, unsigned limit,
		       struct ref *r)
{
	uint64_t n;

	memset(r, 0, sizeof(*r));
	for (n = since / SLICE_NS; n <= now / SLICE_NS; n++)
		if (!ref_take(f, now, n, limit, r))
			break;
}

/*
 * Random inputs, with far more slices than judge.c walks at once, against
 * the reference: sparse and dense slices, pending calls hanging, young,
 * and in slices the counters do not list.
 */
static void test_against_reference(void **state)
{
	struct dw_probe_result p;
	struct dw_judgement j;
	uint64_t seed = 12345, now, since, last;
	unsigned round, i, span, limit, npending, quiet, stalls = 0;
	struct ref r;
	static struct fix f;

	(void)state;
	for (round = 0; round < 400; round++) {
		fix_init(&f);
		span = 1 + dwt_rand(&seed) % 300;
		f.s.sample = 1 + dwt_rand(&seed) % 400;
		f.s.min_calls = 1 + dwt_rand(&seed) % f.s.sample;
		f.s.slow_call_ns = (1 + dwt_rand(&seed) % 40) * 50 * MS;
		f.s.window_ns = (1 + dwt_rand(&seed) % 30) * SEC;
		now = at(BASE + span) + dwt_rand(&seed) % (2 * SEC);
		/* from quiet on, nothing is answered: a third of the rounds may be stalls */
		quiet = round % 3 ? span + 1 : dwt_rand(&seed) % (span + 1);
		for (i = 0; i <= span; i++) {
			if (dwt_rand(&seed) % 3 == 0)
				continue;
			if (i >= quiet) {
				add_slice(&f, BASE + i, 9, 0, 0, 0);
				continue;
			}
			add_slice(&f, BASE + i, 9, dwt_rand(&seed) % 4, dwt_rand(&seed) % 3,
				  dwt_rand(&seed) % 2);
		}
		npending = 1 + dwt_rand(&seed) % 200;
		/* the stall rounds' callers stopped asking, mostly: no young calls */
		last = now - at(BASE);
		if (round % 3 == 0 && dwt_rand(&seed) % 4 && last > f.s.slow_call_ns / 2)
			last -= f.s.slow_call_ns / 2;
		for (i = 0; i < npending; i++)
			add_pending(&f, at(BASE) + dwt_rand(&seed) % (last + 1));
		shuffle_slices(f.slices, f.nslices, &seed);

		judge(&f, now, &j);
		ref_judge(&f, now, &r);
		assert_near(j.decided, r.decided, 1e-12);
		assert_near(j.slow, r.slow, 1e-12);
		assert_near(j.failed, r.failed, 1e-12);
		assert_int_equal(j.undecided_slices, r.undecided);
		assert_true(j.decided <= f.s.sample);
		assert_int_equal(j.enough, r.enough);
		assert_int_equal(j.stalled, r.stalled);
		assert_int_equal(j.hanging, r.hanging);
		stalls += r.stalled;
		if (r.decided > 0)
			assert_near(j.slow_rate, r.slow / r.decided, 1e-12);

		since = at(BASE) + dwt_rand(&seed) % (now - at(BASE) + 1);
		limit = dwt_rand(&seed) % 30;
		probes(&f, now, since, limit, &p);
		ref_probes(&f, now, since, limit, &r);
		assert_near(p.decided, r.decided, 1e-12);
		assert_near(p.bad, r.slow + r.failed, 1e-12);
		assert_int_equal(p.done, r.decided >= limit || r.slow + r.failed > 0);
	}
	/* both ways taken often */
	assert_true(stalls >= 20);
	assert_true(stalls <= 360);
}

/* ---- probes ---- */

static void test_probes_oldest_first(void **state)
{
	uint64_t since = at(BASE + 10) + 40 * MS;
	struct dw_probe_result p;
	struct fix f;

	(void)state;
	fix_init(&f);
	add_slice(&f, BASE + 9, 5, 0, 5, 0);  /* before half_open: not a probe */
	add_slice(&f, BASE + 10, 2, 2, 0, 0); /* holds since: counts whole */
	add_slice(&f, BASE + 11, 2, 2, 0, 0);
	add_slice(&f, BASE + 12, 3, 2, 1, 0);
	probes(&f, at(BASE + 40), since, 3, &p);
	assert_double_eq(p.decided, 3);
	assert_double_eq(p.bad, 0);
	assert_true(p.done);
	probes(&f, at(BASE + 40), since, 4, &p);
	assert_double_eq(p.decided, 4);
	assert_double_eq(p.bad, 0);
	assert_true(p.done);

	/* the 5th probe is one of the 3 calls of slice BASE + 12, one of them slow */
	probes(&f, at(BASE + 40), since, 5, &p);
	assert_double_eq(p.decided, 5);
	assert_near(p.bad, 1.0 / 3, 1e-12);
	assert_true(p.done);

	/* without that slice: 4 good probes, waiting for the 5th */
	f.nslices = 3;
	probes(&f, at(BASE + 40), since, 5, &p);
	assert_double_eq(p.decided, 4);
	assert_double_eq(p.bad, 0);
	assert_false(p.done);
}

/* A bad call in the part of the last slice taken counts by its share, and any share is bad. */
static void test_probes_fraction(void **state)
{
	struct dw_probe_result p;
	struct fix f;

	(void)state;
	fix_init(&f);
	add_slice(&f, BASE, 2, 2, 0, 0);
	add_slice(&f, BASE + 1, 4, 2, 1, 1);
	probes(&f, at(BASE + 40), at(BASE), 3, &p);
	assert_double_eq(p.decided, 3);
	assert_double_eq(p.bad, 0.5);
	assert_true(p.done);
}

/* Probes are judged in order: the first undecided slice ends the walk. */
static void test_probes_stop_at_undecided(void **state)
{
	uint64_t now = at(BASE + 3) + 100 * MS;
	struct dw_probe_result p;
	struct fix f;

	(void)state;
	fix_init(&f);
	add_slice(&f, BASE, 2, 2, 0, 0);
	add_slice(&f, BASE + 1, 3, 2, 0, 0);
	add_pending(&f, at(BASE + 1) + 20 * MS); /* 214 ms old */
	add_slice(&f, BASE + 2, 5, 0, 0, 5);	 /* after it: not looked at */
	probes(&f, now, at(BASE), 5, &p);
	assert_double_eq(p.decided, 2);
	assert_double_eq(p.bad, 0);
	assert_false(p.done);

	/* the call passes slow_call: bad at once, and the walk goes on */
	probes(&f, at(BASE + 1) + 20 * MS + 500 * MS + 1, at(BASE), 5, &p);
	assert_double_eq(p.decided, 5);
	assert_double_eq(p.bad, 1);
	assert_true(p.done);
	probes(&f, at(BASE + 1) + 20 * MS + 500 * MS + 1, at(BASE), 6, &p);
	assert_double_eq(p.decided, 6);
	assert_double_eq(p.bad, 2);
}

/* A single probe that hangs is bad once older than slow_call, with nothing else going on. */
static void test_probe_hanging(void **state)
{
	uint64_t start = at(BASE) + 3 * MS;
	struct dw_probe_result p;
	struct fix f;

	(void)state;
	fix_init(&f);
	add_slice(&f, BASE, 1, 0, 0, 0);
	add_pending(&f, start);
	probes(&f, start + 500 * MS, start, 5, &p);
	assert_double_eq(p.decided, 0);
	assert_false(p.done);
	probes(&f, start + 500 * MS + 1, start, 5, &p);
	assert_double_eq(p.decided, 1);
	assert_double_eq(p.bad, 1);
	assert_true(p.done);
}

static void test_probes_zero_limit(void **state)
{
	struct dw_probe_result p;
	struct fix f;

	(void)state;
	fix_init(&f);
	add_slice(&f, BASE, 1, 0, 1, 0);
	probes(&f, at(BASE + 40), at(BASE), 0, &p);
	assert_double_eq(p.decided, 0);
	assert_double_eq(p.bad, 0);
	assert_true(p.done);
}


/* ---- the stall, by hand ---- */

/*
 * A pool of 3 at 20 ms: a slice before the hang holds 10 calls, all fast.
 * The hang begins in BASE + 10; the callers' last answers lie in that
 * slice too.
 */
static void stall_fix(struct fix *f)
{
	fix_init(f);
	for (uint64_t n = BASE; n < BASE + 10; n++)
		add_slice(f, n, 10, 10, 0, 0);
	add_slice(f, BASE + 10, 7, 4, 0, 0); /* 3 of them hang */
	add_pending(f, at(BASE + 10) + 30 * MS);
	add_pending(f, at(BASE + 10) + 40 * MS);
	add_pending(f, at(BASE + 10) + 66 * MS);
}

static void test_stall(void **state)
{
	uint64_t now = at(BASE + 10) + 40 * MS + 500 * MS + 1;
	struct dw_judgement j;
	struct fix f;

	(void)state;
	stall_fix(&f);
	/* one hanging: one slow call, whatever else happens */
	judge(&f, now - 10 * MS, &j);
	assert_false(j.stalled);
	assert_int_equal(j.hanging, 1);
	assert_false(j.slow_rate >= 0.5);

	/* two: the answers in their own slice came before them */
	judge(&f, now, &j);
	assert_true(j.stalled);
	assert_int_equal(j.hanging, 2);
	assert_double_eq(j.decided, 2);
	assert_double_eq(j.slow, 2);
	assert_double_eq(j.slow_rate, 1);
	assert_double_eq(j.failure_rate, 0);
	assert_true(j.enough);
	assert_int_equal(j.undecided_slices, 1); /* the third is young still */

	/* a call started after their slice answered: no stall, the sample decides */
	for (unsigned k = 0; k < 3; k++) {
		stall_fix(&f);
		add_slice(&f, BASE + 12, 1, k == 0, k == 1, k == 2);
		judge(&f, now, &j);
		assert_false(j.stalled);
		assert_int_equal(j.hanging, 2);
		assert_false(j.slow_rate >= 0.5);
	}

	/* started after it and outstanding, younger than slow_call: still a stall */
	stall_fix(&f);
	add_slice(&f, BASE + 14, 1, 0, 0, 0);
	add_pending(&f, now - 250 * MS);
	judge(&f, now, &j);
	assert_true(j.stalled);
	/* but one started in the last slow_call / 2: its caller was answered lately */
	f.pending[f.npending - 1] = now - 250 * MS + 1;
	judge(&f, now, &j);
	assert_false(j.stalled);
	assert_int_equal(j.hanging, 2);
	f.pending[f.npending - 1] = now + MS; /* clocks read apart: started just now */
	judge(&f, now, &j);
	assert_false(j.stalled);

	/* every call hanging past the sample: decided stays within it */
	stall_fix(&f);
	f.s.sample = 2;
	judge(&f, now + 30 * MS, &j);
	assert_true(j.stalled);
	assert_int_equal(j.hanging, 3);
	assert_double_eq(j.decided, 2);
}

/*
 * Two overlapping slow calls of a quiet dependency, nothing else asked:
 * no more evidence than two slow calls. As many calls asked before as
 * min_calls are.
 */
static void test_stall_needs_callers(void **state)
{
	uint64_t now = at(BASE + 10) + 40 * MS + 500 * MS + 1;
	struct dw_judgement j;
	struct fix f;

	(void)state;
	fix_init(&f); /* min_calls 5 */
	add_slice(&f, BASE + 2, 4, 4, 0, 0);
	add_slice(&f, BASE + 10, 2, 0, 0, 0);
	add_pending(&f, at(BASE + 10) + 30 * MS);
	add_pending(&f, at(BASE + 10) + 40 * MS);
	/* now is in BASE + 18: the 9 slices BASE + 1 .. BASE + 9 count */
	judge(&f, now, &j);
	assert_false(j.stalled);
	assert_int_equal(j.hanging, 2);

	add_slice(&f, BASE + 1, 1, 1, 0, 0);
	judge(&f, now, &j);
	assert_true(j.stalled);

	/* BASE + 1 is too long before for a stall this young */
	judge(&f, now - 67 * MS, &j);
	assert_false(j.stalled);
}

/* Hanging calls from before the window are no stall: long polls left over, not this hang. */
static void test_stall_window(void **state)
{
	uint64_t now;
	struct dw_judgement j;
	struct fix f;

	(void)state;
	stall_fix(&f);
	f.s.window_ns = 500 * MS;
	now = at(BASE + 10) + 40 * MS + 500 * MS + 1;
	judge(&f, now, &j);
	assert_true(j.stalled);
	judge(&f, now + 2 * SEC, &j);
	assert_false(j.stalled);
	assert_int_equal(j.hanging, 0);
}

/* ---- the issue's numbers ---- */

/* 40 calls/s; before t0 every call takes 20 ms, from t0 on 3 s. */
#define EX_CALLS 520
static struct call ex_calls[EX_CALLS];

static unsigned example_calls(uint64_t t0)
{
	unsigned n = 0;
	uint64_t start;
	int k;

	for (k = -400; k < 120; k++) {
		start = t0 + (uint64_t)((int64_t)k * 25 * (int64_t)MS);
		ex_calls[n].start = start;
		ex_calls[n].dur = k < 0 ? 20 * MS : 3 * SEC;
		ex_calls[n].fail = false;
		n++;
	}
	return n;
}

/* ms after t0 of the first poll (every 50 ms) that sees slow_rate >= 50%; -1: none */
static int example_first_open(uint64_t t0, uint64_t *seed)
{
	static struct fix f;
	unsigned n = example_calls(t0), from = 0;
	struct dw_judgement j;
	int ms;

	fix_init(&f);
	for (ms = -2000; ms <= 3000; ms += 50) {
		observe(&f, ex_calls, n, &from, t0 + (uint64_t)((int64_t)ms * (int64_t)MS), seed);
		judge(&f, t0 + (uint64_t)((int64_t)ms * (int64_t)MS), &j);
		if (ms < 0) {
			/* healthy: a full sample of fast calls */
			assert_true(j.enough);
			assert_double_eq(j.decided, 20);
			assert_double_eq(j.slow_rate, 0);
			continue;
		}
		if (j.enough && j.slow_rate >= f.s.slow_rate)
			return ms;
	}
	return -1;
}

/*
 * The issue's worked example: half of a 20-call sample is slow 250 ms of
 * starts after the slowdown, and those calls are known slow 500 ms after
 * they start, so the rate reaches 50% about 750 ms after t0 (up to one
 * slice and one poll later). t0 at several offsets into a slice. Open
 * loop, the callers never stop asking: no stall.
 */
static void test_issue_example(void **state)
{
	uint64_t seed = 99;
	unsigned off;
	int ms;

	(void)state;
	for (off = 0; off < 8; off++) {
		ms = example_first_open(at(BASE) + off * (SLICE_NS / 8) + 12345, &seed);
		if (ms < 700 || ms > 900)
			fail_msg("t0 offset %u/8 slice: slow_rate >= 50%% at t0 + %d ms", off, ms);
	}
}

/*
 * 40 calls/s for 5 minutes, 5-80 ms each except the slow ones, which take
 * 700 ms; judged every 50 ms. Returns the mean slow_rate over the polls.
 */
#define LONG_CALLS (40 * 300)
static struct call long_calls[LONG_CALLS];

static double run_long(struct fix *f, uint64_t *seed, double *max)
{
	uint64_t t0 = at(BASE), now;
	unsigned from = 0, polls = 0;
	struct dw_judgement j;
	double sum = 0;

	*max = 0;
	for (now = t0 + 10 * SEC; now < t0 + 300 * SEC; now += 50 * MS) {
		observe(f, long_calls, LONG_CALLS, &from, now, seed);
		judge(f, now, &j);
		assert_true(j.enough);
		polls++;
		sum += j.slow_rate;
		if (j.slow_rate > *max)
			*max = j.slow_rate;
	}
	return sum / polls;
}

static void long_calls_init(uint64_t *seed)
{
	for (unsigned i = 0; i < LONG_CALLS; i++) {
		long_calls[i].start = at(BASE) + i * 25 * MS + dwt_rand(seed) % (10 * MS);
		long_calls[i].dur = 5 * MS + dwt_rand(seed) % (75 * MS);
		long_calls[i].fail = false;
	}
}

/*
 * A healthy dependency with a tail: one call in each 20 (5%), at random in
 * the 20, is slow. The rate never gets near 50%: few slow calls ever share
 * 20 decided ones. And the slow calls are seen.
 */
static void test_healthy_tail(void **state)
{
	uint64_t seed = 2024;
	static struct fix f;
	double max;
	unsigned i;

	(void)state;
	fix_init(&f);
	long_calls_init(&seed);
	for (i = 0; i < LONG_CALLS; i += 20)
		long_calls[i + dwt_rand(&seed) % 20].dur = 700 * MS;
	run_long(&f, &seed, &max);
	if (!(max < 0.25))
		fail_msg("max slow_rate %.3f", max);
	if (!(max >= 0.05))
		fail_msg("max slow_rate %.3f: the slow calls were never seen", max);
}

/*
 * Half the calls slow, at random: the judged rate must hover around 50%,
 * or a breaker at 50% would not open. Using decided slices newer than a
 * young call (its slice skipped, the fast calls after it counted) reads
 * about 42% here; ending the sample before the oldest young call, 48%.
 */
static void test_no_bias_at_threshold(void **state)
{
	uint64_t seed = 77;
	static struct fix f;
	double mean, max;
	unsigned i;

	(void)state;
	fix_init(&f);
	long_calls_init(&seed);
	for (i = 0; i < LONG_CALLS; i++)
		if (dwt_rand(&seed) % 2)
			long_calls[i].dur = 700 * MS;
	mean = run_long(&f, &seed, &max);
	if (!(mean > 0.46 && mean < 0.54))
		fail_msg("mean slow_rate %.4f, want about 0.5", mean);
}

/*
 * Newer slices whose calls all ended fast are not used while an older call
 * is young: it may still turn slow, and they would outvote it.
 */
static void test_sample_ends_before_young_call(void **state)
{
	uint64_t now = at(BASE + 12);
	struct dw_judgement j;
	struct fix f;

	(void)state;
	fix_init(&f);
	add_slice(&f, BASE, 4, 0, 4, 0);
	add_slice(&f, BASE + 8, 3, 2, 0, 0); /* one call outstanding, 250 ms old */
	add_pending(&f, at(BASE + 8) + 20 * MS);
	add_slice(&f, BASE + 9, 6, 6, 0, 0); /* decided, but newer */
	add_slice(&f, BASE + 11, 6, 6, 0, 0);
	judge(&f, now, &j);
	assert_int_equal(j.undecided_slices, 1);
	assert_double_eq(j.decided, 4);
	assert_double_eq(j.slow_rate, 1);

	/* it turned slow: everything counts, newest first */
	judge(&f, at(BASE + 8) + 20 * MS + 500 * MS + 1, &j);
	assert_int_equal(j.undecided_slices, 0);
	assert_double_eq(j.decided, 6 + 6 + 3 + 4);
	assert_double_eq(j.slow, 1 + 4);
}

/* A dependency that stops answering: all calls hang, none ever completes. */
static void test_total_hang(void **state)
{
	uint64_t seed = 5, t0 = at(BASE) + 7 * MS;
	unsigned n = example_calls(t0), i, from = 0;
	static struct fix f;
	struct dw_judgement j;

	(void)state;
	for (i = 0; i < n; i++)
		ex_calls[i].dur = UINT64_MAX / 2;
	fix_init(&f);
	observe(&f, ex_calls, n, &from, t0 + 2 * SEC, &seed);
	judge(&f, t0 + 2 * SEC, &j);
	assert_true(j.enough);
	assert_double_eq(j.decided, 20);
	assert_double_eq(j.slow_rate, 1);
	assert_true(j.undecided_slices >= 7); /* 500 ms of young calls */
	assert_true(j.undecided_slices <= 9);
}


/* ---- a closed-loop pool: issue 13 ---- */

/*
 * n callers, each with one connection, calling back to back: every call
 * starts 0.1-0.5 ms after the caller's last one ended. Calls take 15-25 ms,
 * one in `one_in` of them (0: none) slow_dur; every call starting at or
 * after hang_at (0: never) hangs. Sorted by start, as observe() wants.
 */
#define POOL_CALLS 600000
static struct call pool_calls[POOL_CALLS];

static int call_cmp(const void *a, const void *b)
{
	const struct call *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static unsigned pool_run(unsigned n, uint64_t t_start, uint64_t t_end, unsigned one_in, uint64_t slow_dur,
			 uint64_t hang_at, uint64_t *seed)
{
	unsigned count = 0;
	uint64_t t;

	for (unsigned w = 0; w < n; w++) {
		t = t_start + dwt_rand(seed) % (25 * MS);
		while (t < t_end && count < POOL_CALLS) {
			struct call *c = &pool_calls[count++];

			c->start = t;
			c->fail = false;
			c->dur = 15 * MS + dwt_rand(seed) % (10 * MS);
			if (one_in && dwt_rand(seed) % one_in == 0)
				c->dur = slow_dur;
			if (hang_at && t >= hang_at) {
				c->dur = UINT64_MAX / 4;
				break;
			}
			t += c->dur + 100000 + dwt_rand(seed) % 400000;
		}
	}
	assert_true(count < POOL_CALLS);
	qsort(pool_calls, count, sizeof(pool_calls[0]), call_cmp);
	return count;
}

/* The first poll (every step) from `from_ns` on that opens on slow_rate; 0: none until until_ns. */
static uint64_t pool_first_open(struct fix *f, unsigned ncalls, uint64_t from_ns, uint64_t until_ns,
				uint64_t step, unsigned *stalls, uint64_t *seed)
{
	struct dw_judgement j;
	unsigned from = 0;

	*stalls = 0;
	for (uint64_t now = from_ns; now < until_ns; now += step) {
		observe(f, pool_calls, ncalls, &from, now, seed);
		judge(f, now, &j);
		*stalls += j.stalled;
		if (j.enough && j.slow_rate >= f->s.slow_rate)
			return now;
	}
	return 0;
}

/*
 * The issue: a pool of n callers whose dependency goes from 20 ms to a
 * hang at t0 opens by t0 + slow_call + one call (25 ms) + a poll (5 ms),
 * for every n; the sample alone (n < 10) never would, its 20 calls
 * filled by the fast ones from before. The daemon polls at the moment a
 * call turns slow; 5 ms polls stand in for that.
 */
static void test_pool_hang(void **state)
{
	static const unsigned pools[] = { 2, 3, 4, 8, 32, 200 };
	uint64_t seed = 1313, t0, opened;
	static struct fix f;
	unsigned n, ncalls, stalls;

	(void)state;
	for (unsigned i = 0; i < sizeof(pools) / sizeof(pools[0]); i++) {
		for (unsigned off = 0; off < 4; off++) {
			n = pools[i];
			t0 = at(BASE + 40) + off * (SLICE_NS / 4) + 777;
			ncalls = pool_run(n, at(BASE), t0 + 3 * SEC, 0, 0, t0, &seed);
			fix_init(&f);
			f.s.min_calls = 10;
			assert_int_equal(pool_first_open(&f, ncalls, at(BASE) + SEC, t0, 5 * MS, &stalls, &seed), 0);
			assert_int_equal(stalls, 0);
			opened = pool_first_open(&f, ncalls, t0, t0 + 3 * SEC, 5 * MS, &stalls, &seed);
			if (!opened || opened - t0 > 500 * MS + 25 * MS + 5 * MS + 1)
				fail_msg("pool of %u, t0 offset %u/4: open at t0 + %.0f ms", n, off,
					 opened ? (opened - t0) / 1e6 : -1.0);
			assert_true(opened - t0 > 500 * MS);
		}
	}
}

/*
 * A pool of 1 hanging is one slow call: the stall needs two, and the
 * sample's 19 fast calls from before outvote it.
 */
static void test_pool_of_one(void **state)
{
	uint64_t seed = 11, t0 = at(BASE + 40) + 12345;
	static struct fix f;
	unsigned ncalls, stalls;

	(void)state;
	ncalls = pool_run(1, at(BASE), t0 + 3 * SEC, 0, 0, t0, &seed);
	fix_init(&f);
	assert_int_equal(pool_first_open(&f, ncalls, t0, t0 + 3 * SEC, 5 * MS, &stalls, &seed), 0);
	assert_int_equal(stalls, 0);
}

/*
 * Null case (b): a pool of 4, one call in 100 taking 2 x slow_call, for 10
 * minutes (DW_POOL_TAIL_SECONDS, at most 4000), judged every 10 ms. A stall
 * needs all 4 callers stuck at once, within about a slice of each other:
 * rare, not impossible (doc/detection.md has the odds; DW_POOL_SEED picks
 * another run, DW_POOL_CALLERS another pool).
 */
static void test_pool_slow_tail(void **state)
{
	const char *env = getenv("DW_POOL_TAIL_SECONDS"), *env_seed = getenv("DW_POOL_SEED");
	const char *env_n = getenv("DW_POOL_CALLERS");
	unsigned callers = env_n ? (unsigned)strtoul(env_n, NULL, 10) : 4;
	uint64_t seed = env_seed ? strtoull(env_seed, NULL, 10) : 4242;
	uint64_t secs = env ? strtoull(env, NULL, 10) : 600, t_end, opened;
	static struct fix f;
	unsigned ncalls, stalls, opens = 0;

	(void)state;
	if (secs > 4000)
		secs = 4000;
	t_end = at(BASE) + secs * SEC;
	if (callers < 1 || callers > 64)
		callers = 4;
	ncalls = pool_run(callers, at(BASE), t_end, 100, 1000 * MS, 0, &seed);
	fix_init(&f);
	f.s.min_calls = 10;
	for (uint64_t from = at(BASE) + SEC; (opened = pool_first_open(&f, ncalls, from, t_end, 10 * MS,
							       &stalls, &seed)); from = opened + 2 * SEC) {
		print_message("pool of %u, 1%% at 1 s: open at %.2f s, %u calls\n", callers,
			      (opened - at(BASE)) / 1e9, ncalls);
		opens++;
	}
	print_message("pool of %u, 1%% at 1 s, %llu s: %u calls, %u opens\n", callers,
		      (unsigned long long)secs, ncalls, opens);
	assert_int_equal(opens, 0);
}

/* When the daemon must look again: the first outstanding call to turn slow, not one slow already. */
static void test_next_slow(void **state)
{
	uint64_t now = 100 * SEC;
	uint64_t pending[] = {
		now - 600 * MS,	/* slow already */
		now - 100 * MS,
		now - 300 * MS,	/* the first to turn slow: at now + 200 ms */
		now + 5 * MS,	/* started after now (clocks read apart) */
	};
	uint64_t edge[] = { now - 500 * MS };	/* age exactly slow_call: not slow yet */

	(void)state;
	assert_int_equal(dw_judge_next_slow(pending, 4, 500 * MS, now), now + 200 * MS + 1);
	assert_int_equal(dw_judge_next_slow(pending, 1, 500 * MS, now), 0);
	assert_int_equal(dw_judge_next_slow(pending, 0, 500 * MS, now), 0);
	assert_int_equal(dw_judge_next_slow(pending, 4, 0, now), 0);
	assert_int_equal(dw_judge_next_slow(edge, 1, 500 * MS, now), now + 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_slice_shift),
	    cmocka_unit_test(test_empty),
	    cmocka_unit_test(test_nothing_decided_yet),
	    cmocka_unit_test(test_counts_and_min_calls),
	    cmocka_unit_test(test_fraction_of_last_slice),
	    cmocka_unit_test(test_young_call_hides_its_slice),
	    cmocka_unit_test(test_sample_ends_before_young_call),
	    cmocka_unit_test(test_slow_now_and_undecided_mix),
	    cmocka_unit_test(test_pending_is_the_truth),
	    cmocka_unit_test(test_window),
	    cmocka_unit_test(test_failures),
	    cmocka_unit_test(test_any_order),
	    cmocka_unit_test(test_against_reference),
	    cmocka_unit_test(test_probes_oldest_first),
	    cmocka_unit_test(test_probes_fraction),
	    cmocka_unit_test(test_since),
	    cmocka_unit_test(test_probes_stop_at_undecided),
	    cmocka_unit_test(test_probe_hanging),
	    cmocka_unit_test(test_probes_zero_limit),
	    cmocka_unit_test(test_issue_example),
	    cmocka_unit_test(test_healthy_tail),
	    cmocka_unit_test(test_no_bias_at_threshold),
	    cmocka_unit_test(test_total_hang),
	    cmocka_unit_test(test_stall),
	    cmocka_unit_test(test_stall_needs_callers),
	    cmocka_unit_test(test_stall_window),
	    cmocka_unit_test(test_pool_hang),
	    cmocka_unit_test(test_pool_of_one),
	    cmocka_unit_test(test_pool_slow_tail),
	    cmocka_unit_test(test_next_slow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
