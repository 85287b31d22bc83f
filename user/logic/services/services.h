/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Services: the [service NAME] sections, fed by the inbound rows of their
 * listening ports. Every poll: requests in flight, their arrival rate and
 * durations, who they wait on (outstanding outbound calls made by threads
 * holding one of their requests), the pool forecast (cascade.h), and the
 * observed p99s along the path against the deadline. What changed is
 * returned as events (dw_svc.ev) for the caller to raise (user/daemon/services.c).
 *
 * Pure: no I/O, no syslog. Only memory is allocated (dw_services_sync).
 */
#ifndef DW_LOGIC_SERVICES_H
#define DW_LOGIC_SERVICES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "logic/judge/cascade.h"
#include "logic/config/config.h"

struct dw_dest;
struct dw_deps;

/* Time constant of the arrival rate and the growth of in-flight (seconds). */
#define DW_SVC_RATE_TAU 1.0
/* Dependencies one service waits on at most, by count (the rest are summed in other_waiting). */
#define DW_SVC_WAITS 8
/* Events one service raises in one poll at most: its pool level, its path against the deadline. */
#define DW_SVC_EVENTS 2

struct dw_svc_wait {
	int dep;			/* index in the dependency set (depset.h) */
	unsigned count;			/* of its inbound requests, waiting on that dependency now */
};

struct dw_svc {
	char name[DW_DEP_NAME_MAX + 1];
	const struct dw_service *cfg;	/* in the dependency set's config; renewed on reload */
	/* figures of the last poll, over its inbound rows */
	unsigned rows;
	uint64_t requests, failed, started, inflight, oldest_ns;
	double p50_ms, p99_ms;		/* -1: no requests in the window */
	double arrival_rate, rising;	/* per second, smoothed; -1 before two polls */
	uint64_t prev_started, prev_inflight, prev_ns;
	double latency_s;		/* what a request waits now, for Little's law */
	struct dw_pool_forecast fc;
	struct dw_svc_wait waits[DW_SVC_WAITS];
	unsigned nwaits, waiting, other_waiting;
	double path_p99_ms;		/* sum of the path's p99s; -1: no path or no calls */
	bool path_over;			/* alerted: path_p99_ms > deadline */
	enum dw_pool_level level;	/* alerted level */
	unsigned pid;			/* the process answering, as the kernel last saw it */
	char comm[16];
	/*
	 * The last poll's events, in the order raised, each a reason: "pool_ok",
	 * fc.why ("exhausted", "forecast", "pool_80pct") when the level rose or
	 * moved, "path_p99_over_deadline" or "path_p99_ok".
	 */
	const char *ev[DW_SVC_EVENTS];
	unsigned nev;
};

struct dw_services {
	struct dw_svc *svc;
	unsigned n;
};

/*
 * The services of cfg, keeping the figures of those known by name. cfg must
 * outlive them (the dependency set's config). 0 or -ENOMEM (then s is
 * emptied: its entries pointed into the old config).
 */
int dw_services_sync(struct dw_services *s, const struct dw_config *cfg);
void dw_services_free(struct dw_services *s);

/*
 * A poll, in three steps. Begin: every service's waits emptied. Then one
 * dw_services_wait per group of outstanding calls the collector saw: count
 * calls to dependency index dep (< 0: none, skipped) made while holding a
 * request of the listening port caller_port. Then dw_services_step: each
 * service's rows gathered from dests[0..cap) (unused ones skipped), its
 * rates at now, its waits ordered (most first), its latency, path p99 and
 * forecast computed, and its events (ev, nev) decided.
 */
void dw_services_begin(struct dw_services *s);
void dw_services_wait(struct dw_services *s, unsigned caller_port, int dep, unsigned count);
void dw_services_step(struct dw_services *s, const struct dw_dest *dests, size_t cap, uint64_t now,
		      const struct dw_deps *deps);

/* The service whose listening ports hold port, or NULL. */
const struct dw_svc *dw_services_at_port(const struct dw_services *s, unsigned port);
/* "frontend: 143/200 waiting on payments" (the dependency most wait on), "" when none. */
void dw_svc_summary(const struct dw_svc *svc, const struct dw_deps *deps, char *buf, size_t len);

#endif /* DW_LOGIC_SERVICES_H */
