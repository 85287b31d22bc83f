/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Outlier ejection (issue 25): one destination of a dependency judged
 * against its siblings. Each destination's own judgement (judge.h, the
 * dependency's sample, stall and slow-call rules over that destination's
 * slices alone) is an outlier when its slow_rate (or its stall) reaches the
 * dependency's slow_rate, or its failure_rate the dependency's
 * failure_rate, while the dependency as a whole stays below both: a
 * dependency slow everywhere is the breaker's, not ejection's.
 *
 * Per destination: in -> ejected (for eject_for x 2^(ejections-1), up to
 * DW_EJECT_MAX_GROWTH x eject_for) -> probing (the connect program lets
 * probe calls through, as half_open does) -> in once they are all good, or
 * ejected again (longer) at the first bad one.
 *
 * Safety: nothing is ejected when fewer than two destinations had calls in
 * the window; never more than max_ejected of those that had, and never the
 * last healthy one.
 *
 * Pure: no I/O, no allocation.
 */
#ifndef DW_EJECT_H
#define DW_EJECT_H

#include <stdbool.h>
#include <stdint.h>
#include "logic/judge/judge.h"

#define DW_EJECT_MAX_GROWTH 8	/* an ejection lasts at most 8 x eject_for */

enum dw_eject_state { DW_EJECT_IN = 0, DW_EJECT_OUT = 1, DW_EJECT_PROBING = 2 };

struct dw_eject {
	enum dw_eject_state state;
	uint64_t since_ns;	/* entered this state */
	uint64_t until_ns;	/* DW_EJECT_OUT: when probing begins */
	unsigned ejections;	/* since start: each one lasts longer */
	bool slow;		/* the reason of the last ejection: slow_rate (or stall), else failure_rate */
};

/* One destination of a dependency, as ejection sees it at one judgement. */
struct dw_eject_dest {
	struct dw_eject *e;
	struct dw_judgement j;		/* its own judgement */
	struct dw_probe_result probes;	/* DW_EJECT_PROBING: its probes since since_ns */
	bool had_calls;			/* calls started in the window */
};

struct dw_eject_policy {
	double slow_rate, failure_rate;	/* the dependency's thresholds */
	uint64_t eject_for_ns;		/* base ejection time */
	double max_ejected;		/* share of the destinations with calls, 0..1 */
};

/* Whether the destination's judgement makes it an outlier (reason through *slow). */
bool dw_eject_outlier(const struct dw_eject_policy *p, const struct dw_judgement *j, bool *slow);

/* How many of nwith destinations (with calls in the window) may be out at once. */
unsigned dw_eject_limit(const struct dw_eject_policy *p, unsigned nwith);

/* How long the ejection number n (1, 2, ...) lasts. */
uint64_t dw_eject_duration(const struct dw_eject_policy *p, unsigned n);

/*
 * One step over a dependency's n destinations. dep is the dependency's own
 * judgement. Returns a bit per destination whose state changed (bit i:
 * d[i]; n <= 64 destinations are judged, the rest stay in).
 */
uint64_t dw_eject_step(const struct dw_eject_policy *p, const struct dw_judgement *dep,
		       struct dw_eject_dest *d, unsigned n, uint64_t now);

/* An operator's eject (out) or return of one destination. */
void dw_eject_force(const struct dw_eject_policy *p, struct dw_eject *e, bool out, uint64_t now);

#endif /* DW_EJECT_H */
