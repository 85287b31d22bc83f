/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Slow-call judgement by start time. The kernel counts calls per
 * destination in start-time slices; user space also knows the start of
 * every outstanding call. A call is slow once its duration, or while still
 * in flight its age, exceeds slow_call.
 *
 * Calls are judged by start slice, and only once every call started in
 * the slice and in every older one is decided (completed, failed, or
 * already slow): counting fast completions while slow calls still hang
 * biases the rate low, whether they share a slice or not. The rate is taken
 * over the newest `sample` decided calls, so it follows the latest calls
 * instead of averaging the whole window.
 *
 * Pure: no I/O, no allocation.
 */
#ifndef DW_JUDGE_H
#define DW_JUDGE_H

#include <stdbool.h>
#include <stdint.h>

#include "logic/base/dwtypes.h"
#include "logic/config/config.h"

/* One start-time slice: slice = start_ns >> DW_SLICE_SHIFT. */
struct dw_slice_counts {
	uint64_t slice;
	uint64_t started, fast, slow, failed; /* fast: duration <= slow_call */
};

/*
 * What one judgement looks at. Slices may come in any order, with distinct
 * slice numbers; a slice not listed had no counted calls. pending_start_ns
 * is the truth about outstanding calls: a slice's counters may say more
 * calls are outstanding than pending lists (they ended after the scan and
 * are not counted yet; they are ignored), and a pending call may lie in a
 * slice that is not listed (its slot was reused; it still counts).
 */
struct dw_judge_input {
	uint64_t now_ns;
	const struct dw_slice_counts *slices;
	unsigned nslices;
	const uint64_t *pending_start_ns; /* any order */
	unsigned npending;
	const struct dw_dep_settings *s;
	/* slices before the one holding it are out of the window, as if older (0: none) */
	uint64_t since_ns;
};

struct dw_judgement {
	double decided;	     /* calls in the sample, at most s->sample; may be fractional */
	double slow, failed; /* of them; a slow-now outstanding call counts as slow */
	double slow_rate, failure_rate; /* slow/decided, failed/decided; 0 when decided == 0 */
	bool enough;			/* decided >= s->min_calls, or stalled */
	unsigned undecided_slices;	/* in the window, with a young call outstanding */
	bool stalled;			/* see below; the fields above then judge the stall, unless failing */
	unsigned hanging;		/* outstanding past slow_call, in the window */
};

/* A stall needs this many hanging calls: one cannot be told from one slow call. */
#define DW_STALL_MIN_CALLS 2

/*
 * The newest s->sample decided calls by start time, from slices that do
 * not start before now - s->window nor before since_ns (the slice
 * straddling that edge is used). A slice with an outstanding call no older than slow_call is
 * undecided; it and every newer slice are passed over, decided or not.
 * Slices are walked newest first; the last one taken may be taken in part,
 * its slow and failed calls scaled by the same fraction, so that decided
 * never exceeds the sample.
 *
 * Unless the dependency is stalled: at least DW_STALL_MIN_CALLS calls in
 * the window are outstanding past slow_call; no call started in a slice
 * newer than the oldest of them has completed or failed (nothing asked
 * since the hang began has been answered); no call started in the last
 * slow_call / 2 is outstanding (the callers stopped asking: one that asks
 * anew had an answer lately, or calls open-loop, and then the sample sees
 * the slow calls); and at least s->min_calls calls started in as many
 * slices just before the oldest one's as the stall has lasted (the callers
 * were asking: a healthy dependency would have answered about as many
 * since; two slow calls of a quiet dependency are no stall). A small pool
 * of callers hung on a dependency starts no more calls, so the sample
 * would stay filled with the fast calls from before. Stalled, the
 * judgement is of the hanging calls alone (decided = slow = as many of
 * them as the sample holds, slow_rate 1, failure_rate 0, enough): they are
 * the newest decided calls by start. A sample whose failure_rate already
 * reaches s->failure_rate is kept as it is: failures say more. Completions
 * in the oldest hanging call's own slice are taken to have started before
 * it (a slice does not order its calls). doc/detection.md has the odds of
 * a stall without a hang.
 */
void dw_judge(const struct dw_judge_input *in, struct dw_judgement *out);

struct dw_probe_result {
	double decided, bad; /* bad = slow + failed among the decided */
	bool done;	     /* decided >= limit, or bad > 0 */
};

/*
 * Half-open probes: the calls of slices numbered since_ns >> DW_SLICE_SHIFT
 * and later, oldest first, until limit decided calls (the last slice in
 * part, as above). Probes are judged in order, so the first undecided
 * slice ends the walk. The window does not apply. A probe still in flight
 * past slow_call is bad at once, as soon as its slice holds no younger
 * outstanding call: a hanging probe cannot wedge half_open.
 */
void dw_judge_probes(const struct dw_judge_input *in, uint64_t since_ns, unsigned limit,
		     struct dw_probe_result *out);

/*
 * The first moment after now_ns at which one of the outstanding calls turns
 * slow (its age then exceeds slow_call: start + slow_call + 1 ns), or 0 if
 * none will (none outstanding, all slow already, or slow_call 0). A
 * judgement can change then without any call starting or ending: the
 * daemon looks again at that moment instead of at its next poll.
 */
uint64_t dw_judge_next_slow(const uint64_t *pending_start_ns, unsigned npending, uint64_t slow_call_ns,
			    uint64_t now_ns);

#endif /* DW_JUDGE_H */
