/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Services: the [service NAME] sections, fed by the inbound rows of their
 * listening ports. Every poll: requests in flight, their arrival rate and
 * durations, who they wait on (outstanding outbound calls made by threads
 * holding one of their requests), the pool forecast (logic/cascade.h), and
 * the observed p99s along the path against the deadline. Alerts on changes.
 */
#ifndef DW_SERVICES_H
#define DW_SERVICES_H

#include <stdbool.h>
#include <stdint.h>
#include "logic/cascade.h"
#include "logic/config.h"

struct dw_collector;
struct dw_deps;

/* Dependencies one service waits on at most, by count (the rest are summed in other_waiting). */
#define DW_SVC_WAITS 8

struct dw_svc_wait {
	int dep;			/* index in the dependency set (logic/depset.h) */
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
};

struct dw_services {
	struct dw_svc *svc;
	unsigned n;
};

/*
 * The services of cfg, keeping the figures of those known by name. cfg must
 * outlive them (the dependency set's config). 0 or -ENOMEM.
 */
int dw_services_sync(struct dw_services *s, const struct dw_config *cfg);
void dw_services_free(struct dw_services *s);
/* After the dependencies' poll: read through logic/depset.h's lookups. */
void dw_services_poll(struct dw_services *s, const struct dw_collector *c, const struct dw_deps *deps);
/* The service whose listening ports hold port, or NULL. */
const struct dw_svc *dw_services_at_port(const struct dw_services *s, unsigned port);
/* "frontend: 143/200 waiting on payments" (the dependency most wait on), "" when none. */
void dw_svc_summary(const struct dw_svc *svc, const struct dw_deps *deps, char *buf, size_t len);

#endif /* DW_SERVICES_H */
