/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The circuit breaker of one dependency:
 *
 *	closed --(slow_rate, failure_rate, concurrency)--> open
 *	open --(open_for)--> half_open
 *	half_open --(half_open_calls good probes)--> closed
 *	half_open --(a bad probe, or concurrency)--> open, open_for doubled
 *
 * Pure: the caller judges (judge.h), steps the breaker once per poll, and
 * reports the events it returns. No I/O, no allocation.
 */
#ifndef DW_BREAKER_H
#define DW_BREAKER_H

#include <stdbool.h>
#include <stdint.h>

#include "logic/base/dwtypes.h"
#include "logic/config/config.h"
#include "logic/judge/judge.h"

/* enum dw_breaker_state and enum dw_breaker_reason are the breakers map's, in bpf/depwatch.h. */

/* A reopened breaker waits at most this many times the configured open_for. */
#define DW_OPEN_FOR_CAP_FACTOR 8
/* Warnings come at this share of a limit, before the breaker opens. */
#define DW_WARN_PERCENT 80

struct dw_breaker {
	enum dw_breaker_state state;
	enum dw_breaker_reason reason; /* why it opened; kept through half_open, none when closed */
	uint64_t since_ns;	       /* of the current state */
	uint64_t open_for_ns; /* current open period: doubles on reopen, capped, reset on close */
	uint64_t half_open_since_ns;	   /* probes are judged from here */
	/* closed after an open period: judged on the calls started since (0: the whole window) */
	uint64_t judged_since_ns;
	unsigned opens;			   /* closed/half_open -> open transitions */
	bool warned_slow, warned_inflight; /* a warning is raised once until it clears */
};

struct dw_breaker_inputs {
	uint64_t now_ns;
	const struct dw_judgement *j; /* NULL: nothing judged, nothing opens on rates */
	/* judged since half_open_since_ns for half_open_calls; may be NULL when not half_open */
	const struct dw_probe_result *probes;
	unsigned inflight;
};

enum dw_breaker_event_kind {
	DW_EV_NONE,
	DW_EV_TRANSITION,     /* from -> to, for reason (none when closing) */
	DW_EV_WARN_SLOW_RATE, /* from == to == closed, reason slow_rate */
	DW_EV_WARN_INFLIGHT,  /* from == to == closed, reason concurrency */
};

struct dw_breaker_events {
	unsigned n;
	struct {
		enum dw_breaker_event_kind kind;
		enum dw_breaker_state from, to;
		enum dw_breaker_reason reason;
	} ev[4];
};

/* One change to the pinned breakers map (bpf/depwatch.h), as the breakers' owner wants it. */
struct dw_breaker_op {
	bool remove;			/* delete key; else write v */
	struct dw_breaker_key key;
	/*
	 * probes_left is a fresh half_open budget: the kernel spends it, so the
	 * writer keeps the kernel's count while the half_open period (since_ns)
	 * is the same.
	 */
	struct dw_breaker_value v;
};

/* Closed, since now_ns, with the configured open_for. */
void dw_breaker_init(struct dw_breaker *b, const struct dw_dep_settings *s, uint64_t now_ns);

/*
 * One poll: at most one transition, then (still closed) the warnings.
 * out is overwritten. With s->ignore the breaker is closed at once and
 * says nothing. Just closed, in->j may still hold calls from before the
 * breaker opened, when s->window is longer than open_for.
 */
void dw_breaker_step(struct dw_breaker *b, const struct dw_dep_settings *s,
		     const struct dw_breaker_inputs *in, struct dw_breaker_events *out);

/*
 * An operator's override (depwatch breaker open|close|auto NAME): state
 * -1 (auto) gives the breaker back to the rules, closed as new; any other
 * state holds from now_ns, reason forced, until the next override. The
 * caller stops stepping a forced breaker.
 */
void dw_breaker_force(struct dw_breaker *b, const struct dw_dep_settings *s, int state,
		      uint64_t now_ns);

/* "closed", "open", "half_open"; "unknown" for anything else. */
const char *dw_breaker_state_name(enum dw_breaker_state st);

/* "none", "slow_rate", "failure_rate", "concurrency", "forced"; "unknown" otherwise. */
const char *dw_breaker_reason_name(enum dw_breaker_reason r);

#endif /* DW_BREAKER_H */
