/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The config file: which destinations form which dependency, and the
 * circuit-breaker settings of each. INI style:
 *
 *	[defaults]			at most once; every key optional
 *	slow_call = 1s			# comments start at '#', anywhere
 *	enforce_cgroup = /sys/fs/cgroup/app.slice	[defaults] only, like syslog_facility
 *	[dependency payments]		NAME: 1-63 of A-Z a-z 0-9 _ . -
 *	match = 10.0.3.0/24:443		CIDR[:PORT[-PORT]], repeatable, at least one
 *	slow_call = 500ms		overrides [defaults] wherever that section is
 *	timeout = 800ms			[dependency] only, no default: what callers wait
 *	enforce = abort			off | connect | abort (see doc/enforcement.md)
 *	abort_after = 300ms		0 (off) | a duration: the kernel aborts older calls
 *	multiplexed = judge		ignore (default) | judge: burst timings in slow_rate
 *	eject = on			off (default) | on: eject one slow destination (replica)
 *	failure_status = 5xx, 429	HTTP statuses that fail a call: classes, codes, or none
 *	failure_grpc = unavailable, internal	gRPC statuses that fail a call, by name, or none
 *	[service shop]			NAME as above, unique among services and dependencies
 *	listen = 8080			PORT, LOW-HIGH or cgroup:/PATH; exactly one
 *	pool = 200			optional: its thread or connection pool
 *	deadline = 2s			optional: its callers' deadline for one request
 *	path = auth, cart, payments	optional: [dependency] names, each at most once
 *
 * The timeouts of the dependencies on a service's path must add up to at
 * most its deadline: a request that waits out each of them has missed the
 * deadline already, so such a config describes an outage and is an error
 * (and every dependency on the path of a service with a deadline needs a
 * timeout). Sections may come in any order; paths are resolved at the end.
 *
 * Pure: text in, struct out; reading the file is user/host/config_file.c's.
 * Errors are one line, "FILE:LINE: what is wrong", and parsing stops at
 * the first. Errors about the text as a whole (too big) are "FILE: ...".
 *
 * The kernel's limits are config errors too, so `depwatch check` finds
 * them: at most DW_MAX_DEPS - 1 dependencies, and at most DW_MATCH_RULES
 * matches covering any one match's prefix (itself included).
 */
#ifndef DW_CONFIG_H
#define DW_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "logic/base/jsonw.h"
#include "logic/outcome/outcome.h"

/* Matches (match.h) point into the config, and their lookups take it: match.h includes this. */
struct dw_match;

/* Larger files are refused unread: a config is a page or two, not a log. */
#define DW_CONFIG_MAX_BYTES (1024 * 1024)
/* Longer lines are an error, so a line always fits a stack buffer. */
#define DW_CONFIG_MAX_LINE 4096
#define DW_DEP_NAME_MAX 63
/* Longest enforce_cgroup path, NUL not included. */
#define DW_CGROUP_PATH_MAX 255

struct dw_dep_settings {
	uint64_t slow_call_ns, window_ns, open_for_ns;
	double slow_rate, failure_rate;	/* fractions, 0..1 */
	unsigned sample, min_calls, half_open_calls, max_inflight;
	/* enforce = connect sets enforce_connect; abort sets both (it does what connect does) */
	bool enforce_connect, ignore;
	bool enforce_abort;
	/* abort_after: a call unanswered this long has its connection aborted; 0: never */
	uint64_t abort_after_ns;
	/*
	 * multiplexed = judge: calls timed on a connection seen carrying
	 * overlapping requests (HTTP/2, pipelining) count in slow_rate. Their
	 * timings are bursts, not one request's latency: by default (ignore)
	 * they are traced and shown, never judged.
	 */
	bool judge_multiplexed;
	/*
	 * Outlier ejection (doc/enforcement.md, "Ejection"): eject = on judges
	 * each destination against its siblings; an outlier is out for
	 * eject_for (longer at each ejection), then eject_probe_calls probes
	 * decide its return. At most max_ejected (a share of the destinations
	 * that had calls) at once.
	 */
	bool eject;
	double max_ejected;
	uint64_t eject_for_ns;
	unsigned eject_probe_calls;
	/* failure_status (outcome.h): the answers' HTTP statuses that fail a call; default 5xx */
	struct dw_status_set failure_status;
	/* failure_grpc (h2answer.h): HTTP/2 answers' grpc-status codes that fail a call, bit per code */
	uint32_t failure_grpc;
	/* DNS over UDP (issue 35): a query unanswered this long failed, reason timeout */
	uint64_t dns_timeout_ns;
};

struct dw_dep_config {
	char name[DW_DEP_NAME_MAX + 1];
	struct dw_dep_settings s;	/* effective: [defaults] with this section's keys on top */
	struct dw_match *matches;
	unsigned nmatches;
	int line;			/* of the section header */
	/*
	 * The timeout the application puts on one call to this dependency,
	 * 1 ms to 60 min; 0: not set. Declared, not enforced: only the
	 * budgets of the services whose path it is on use it.
	 */
	uint64_t timeout_ns;
};

/*
 * A service this host runs, [service NAME]: where it listens, and the
 * budget of one request to it. Exactly one of the port range and the
 * cgroup is set. Ports of two services never overlap and no two name the
 * same cgroup (after '//', '/./' and a trailing '/'); nested cgroups may.
 */
struct dw_service {
	char name[DW_DEP_NAME_MAX + 1];
	uint16_t port_lo, port_hi;	/* inclusive, 1-65535; both 0 for a cgroup */
	char cgroup[DW_CGROUP_PATH_MAX + 1];	/* as written after "cgroup:"; "" for ports */
	unsigned pool;			/* its thread or connection pool, 1..1000000; 0: not set */
	uint64_t deadline_ns;		/* 1 ms to 60 min; 0: not set */
	unsigned *path;			/* indexes into cfg->deps, in the order written */
	unsigned npath;
	int line, path_line;		/* of the section header and of 'path' (0: no path) */
};

/* At most this many dns_ports: a short list of resolver ports, not a range to scan. */
#define DW_DNS_PORTS_MAX 16

struct dw_config {
	struct dw_dep_settings defaults;	/* also for destinations no match covers */
	struct dw_dep_config *deps;		/* in file order */
	unsigned ndeps;
	struct dw_service *services;		/* in file order */
	unsigned nservices;
	int syslog_facility;			/* LOG_DAEMON etc. */
	/*
	 * Where the connect() enforcement programs are attached: a cgroup v2
	 * directory, absolute, no '..' (checked as text only, the parser does
	 * not look at the file system). "": not set, the cgroup v2 root.
	 */
	char enforce_cgroup[DW_CGROUP_PATH_MAX + 1];
	/*
	 * DNS over UDP (issue 35): the resolver ports whose datagrams are read
	 * as queries and answers, host-wide (one kernel map for every
	 * dependency and namespace), in the order written, no port twice.
	 * [defaults] only; the built-in config says 53.
	 */
	uint16_t dns_ports[DW_DNS_PORTS_MAX];
	unsigned ndns_ports;
	char source[256];			/* file name errors and describe use */
};

/* The built-in config, the [defaults] block of examples/depwatch.conf. */
extern const char dw_default_config[];

/* cfg = dw_default_config parsed: [defaults] as documented, no dependencies. */
void dw_config_defaults(struct dw_config *cfg);

/*
 * Parses len bytes of text (NUL bytes in it are an error, not an end).
 * 0: *cfg is overwritten as a whole; it need not be initialised, and what
 * it held before is not freed (parse into a spare, then swap). -EINVAL:
 * err = "SOURCE:LINE: ..."; -ENOMEM. On error *cfg is not touched.
 * err may be NULL; messages longer than errlen are cut.
 */
int dw_config_parse(const char *source_name, const char *text, size_t len,
		    struct dw_config *cfg, char *err, size_t errlen);

/*
 * "SRC: message" into err (cut to errlen), as errors about a file as a
 * whole are worded; returns -EINVAL. err may be NULL.
 */
int dw_config_error(const char *src, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Frees what parse allocated and zeroes cfg; safe on a zeroed cfg, and twice. */
void dw_config_free(struct dw_config *cfg);

/*
 * The timeouts along svc's path, added up, into *sum_ns. 0; -ENODATA if a
 * dependency on it has no timeout (*sum_ns then adds those that have one);
 * -EINVAL if the path holds an index cfg has no dependency for.
 */
int dw_service_path_timeout(const struct dw_config *cfg, const struct dw_service *svc,
			    uint64_t *sum_ns);

/*
 * `depwatch check`: the effective settings, [defaults], one block per
 * dependency with every key spelt out (timeout only when set), then one
 * per service, with a comment giving its path's timeouts against its
 * deadline. The text is itself a valid config that parses back to the
 * same settings, matches and services.
 */
void dw_config_describe(const struct dw_config *cfg, struct dw_buf *out);

#endif /* DW_CONFIG_H */
