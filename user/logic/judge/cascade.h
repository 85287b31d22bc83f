/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Seeing the cascade coming: a service's request pool, forecast by Little's
 * law, and retries that multiply the load on a slow dependency.
 *
 * Little's law: in-flight = arrival rate x latency. A pool of N holds while
 * rate x latency < N. When a dependency slows down, the latency the pool
 * sees is what its callers wait: a dependency with calls hanging past
 * slow_call is waited on up to its configured timeout (unbounded without
 * one), so the level in-flight will climb to is known long before it gets
 * there, and the time it takes is (pool - in-flight) / growth.
 *
 * Pure: no I/O, no allocation.
 */
#ifndef DW_CASCADE_H
#define DW_CASCADE_H

#include <stdbool.h>
#include <stdint.h>

/* Warning at this share of the pool; it clears below DW_POOL_CLEAR. */
#define DW_POOL_WARN 0.80
#define DW_POOL_CLEAR 0.75
/* Attempts per original call from which retries amplify a slow dependency's load. */
#define DW_RETRY_STORM_RATIO 1.5

/*
 * An exponentially weighted moving average of a sampled quantity:
 * samples dt_s apart, time constant tau_s. prev < 0 means no history.
 */
double dw_ewma(double prev, double sample, double dt_s, double tau_s);

/*
 * How long a caller waits on one dependency now: its median, or, while it
 * has calls hanging past slow_call, its timeout (INFINITY without one).
 * Seconds; p50_s < 0 (no calls in the window) counts as 0.
 */
double dw_dep_wait_s(double p50_s, bool hanging, double timeout_s);

enum dw_pool_level { DW_POOL_OK = 0, DW_POOL_WARNING = 1, DW_POOL_EXHAUSTED = 2 };

struct dw_pool_input {
	unsigned pool;		/* requests the service can hold at once; 0: not configured */
	double inflight;	/* inbound requests received, not answered */
	double arrival_rate;	/* requests started per second */
	double rising;		/* measured growth of inflight per second */
	double latency_s;	/* what one request waits now (INFINITY: unbounded) */
	enum dw_pool_level was;	/* the level of the previous poll, for hysteresis */
};

struct dw_pool_forecast {
	double steady;		/* arrival_rate x latency: where inflight settles */
	double rising;		/* the growth the forecast uses, per second */
	double exhausted_in_s;	/* seconds until inflight reaches the pool; -1: not forecast */
	enum dw_pool_level level;
	const char *why;	/* "exhausted", "forecast", "pool_80pct" or "" */
};

/*
 * The pool's level and forecast. Exhaustion is forecast when the steady
 * level reaches the pool; the growth is the larger of the measured one and
 * Little's (arrival_rate - inflight / latency). Warning: forecast, or at
 * least DW_POOL_WARN of the pool in flight; exhausted: all of it.
 */
void dw_pool_forecast(const struct dw_pool_input *in, struct dw_pool_forecast *out);

const char *dw_pool_level_name(enum dw_pool_level level);

/*
 * Two cumulative counters sampled about once a second, the last
 * DW_COUNT_RING of them: their increase over the last span seconds.
 */
#define DW_COUNT_RING 12

struct dw_count_ring {
	uint64_t ns[DW_COUNT_RING], a[DW_COUNT_RING], b[DW_COUNT_RING];
	unsigned head, n;	/* next slot to write; samples held */
};

/* Keeps the sample if the newest is at least min_gap_ns older (or there is none). */
void dw_count_ring_push(struct dw_count_ring *r, uint64_t now_ns, uint64_t a, uint64_t b,
			uint64_t min_gap_ns);
/*
 * From the oldest sample at most span_ns before now_ns to (a, b) now: the
 * increases; false when there is no such sample (or the counters went back).
 */
bool dw_count_ring_delta(const struct dw_count_ring *r, uint64_t now_ns, uint64_t a, uint64_t b,
			 uint64_t span_ns, uint64_t *da, uint64_t *db);

/*
 * Attempts per original call, from calls started and the retries among
 * them (over the same period): 1 when there were no retries, 0 when no call.
 */
double dw_retry_ratio(double started, double retried);

/* Retries amplify load on a slow dependency: an alert. */
bool dw_retry_storm(double retry_ratio, bool dependency_slow);

#endif /* DW_CASCADE_H */
