/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Alerts: one syslog(3) line per breaker transition or warning, as
 * key=value pairs, and the same event as a JSON line with --events.
 */
#ifndef DW_ALERT_H
#define DW_ALERT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct dw_alert {
	int severity;			/* LOG_WARNING, LOG_NOTICE, ... */
	const char *dependency;
	const char *event;		/* "transition" or "warning" */
	const char *state;		/* breaker state after the event */
	const char *from;		/* for transitions */
	const char *reason;		/* why it opened, or what the warning is about */
	double slow_rate, failure_rate;
	uint64_t slow_call_ns;
	uint64_t calls;			/* decided calls the rates are over */
	uint64_t inflight;
	unsigned max_inflight;
	double oldest_ms, p99_ms;	/* -1: none */
	double retry_ratio;		/* retry warnings: attempts per original call; else 0 */
	double call_rate, call_rate_baseline;	/* with retry_ratio: calls/s now and normally */
	unsigned suppressed;		/* lines rate-limited away since the last one */
	const char *callers;		/* an open: "unit:inflight,..." of the top 3 callers; NULL: none */
	const char *outcome;		/* an open on failure_rate with answers failing: "http_503"; NULL: none */
};

/* A service's pool level changed, or its path's p99s crossed its deadline. */
struct dw_service_alert {
	int severity;
	const char *service;
	const char *reason;		/* forecast, pool_80pct, exhausted, pool_ok, path_p99_... */
	const char *level;		/* ok, warning, exhausted */
	unsigned pool;			/* 0: none configured */
	uint64_t inflight;
	double rising, arrival_rate;	/* per second */
	double exhausted_in_s;		/* -1: not forecast */
	double path_p99_ms, deadline_ms;	/* -1 / 0: none */
	unsigned waiting;		/* requests waiting on waiting_on (NULL: none) */
	const char *waiting_on;
	const char *summary;		/* "frontend: 143/200 waiting on payments", or "" */
};

/* ident "depwatch", the given facility; events to this stream if not NULL. */
void dw_alert_open(int facility, FILE *events);
void dw_alert_set_facility(int facility);
void dw_alert_close(void);
void dw_alert_emit(const struct dw_alert *a);
void dw_alert_service(const struct dw_service_alert *a);
/* Connections the kernel aborted for one dependency (enforce = abort, abort_after). */
struct dw_abort_alert {
	int severity;
	const char *dependency;
	const char *reason;		/* "breaker" or "abort_after" */
	const char *state;		/* its breaker state */
	uint64_t abort_after_ns;	/* reason abort_after: the setting */
	uint64_t connections;		/* aborted in this pass */
	uint64_t calls;			/* of those, with a call outstanding */
	uint64_t failed;		/* bpf_sock_destroy() refused (not retried) */
	unsigned suppressed;		/* abort_after lines rate-limited away since the last one */
};

void dw_alert_abort(const struct dw_abort_alert *a);

/* A destination ejected from its dependency (eject = on), or back. */
struct dw_eject_alert {
	int severity;
	const char *dependency;
	const char *destination;	/* "10.0.0.2:443" */
	bool out;			/* ejected, else back */
	const char *reason;		/* out: slow_rate, failure_rate, forced; back: probes, forced, reload */
	double slow_rate, failure_rate;	/* the destination's own judgement */
	double siblings_slow_rate;	/* the other destinations' (in) together */
	unsigned ejections;		/* its ejections since start, this one included */
	uint64_t for_ns;		/* out: how long this ejection lasts before probing; back: how long it lasted */
	const char *enforce;		/* off, connect or abort: what the kernel does with it */
	uint64_t refused, aborted;	/* connects refused and connections aborted in this ejection so far */
};

void dw_alert_eject(const struct dw_eject_alert *a);
/* A line that is no breaker event (an operator's override): syslog and the daemon's log. */
void dw_alert_note(int severity, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* DW_ALERT_H */
