/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The dependency set: the configured dependencies (a name and matches) and,
 * for destinations no match covers, each destination on its own. Every
 * poll the caller hands in the collector's destinations; the set gathers
 * their figures per dependency, judges them (judge.h), steps the breakers
 * (breaker.h), follows call rates and retry storms, and returns what is to
 * be done: the alerts to raise (events) and the breakers map entries to
 * write or delete (the desired state, which kstate.c applies).
 *
 * Pure: no I/O, no bpf calls, no syslog. Only memory is allocated.
 */
#ifndef DW_DEPSET_H
#define DW_DEPSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "logic/judge/breaker.h"
#include "logic/judge/cascade.h"
#include "logic/config/config.h"
#include "logic/depset/depfigs.h"
#include "logic/depset/dest.h"
#include "logic/judge/judge.h"

/* Call rates and retries, followed over the polls from the figures' cumulative counts. */
struct dw_dep_rates {
	uint64_t prev_started, prev_ns;	/* fig.started at the last poll, and when */
	double call_rate;		/* calls started per second, over about 2 s */
	double call_rate_baseline;	/* the same over about 5 min: its normal */
	struct dw_count_ring retry_ring;	/* (started, retried), a sample a second */
	double retry_ratio;		/* attempts per original call over the last 10 s; -1: none yet */
	bool retry_storm;		/* raised: retries amplify load on a slow dependency */
};

/* What the kernel is told to do: an operator's force, the breakers map entry, rejections. */
struct dw_dep_enforcement {
	int forced;			/* -1, or the state an operator forced */
	bool published;			/* the last breaker plan gave it an entry */
	uint64_t rejected_at_open;	/* fig.rejected when this open period began */
	bool rejection_alerted;		/* the first rejection of this open period was raised */
};

struct dw_dep {
	/* identity: read everywhere, so its fields are the dependency's own names */
	struct {
		bool used;
		char name[DW_DEP_NAME_LEN];	/* configured name, or the destination's */
		unsigned id;			/* 1.. configured, 0 a destination's own */
		struct dw_dest_key dest;	/* id 0: the destination */
		const struct dw_dep_settings *s;	/* its settings, in the set's config */
	};
	/* the judgement of the last poll and the breaker it steps */
	struct dw_breaker br;
	struct dw_judgement j;
	struct dw_probe_result probes;
	/* per-poll figures: its destinations (a list through next_in_dep), summed */
	struct dw_dest *dests;
	unsigned ndests;
	struct dw_dep_figs fig;
	struct dw_dep_rates rates;
	struct dw_dep_enforcement enforce;
	unsigned ejected_dests;		/* of its destinations, out or probing (eject = on) */
};

struct dw_deps {
	struct dw_config cfg;
	struct dw_dep *deps;		/* configured and per-destination, by index; never reused */
	unsigned n, cap;
	int index_of_id[DW_MAX_DEPS];	/* configured id -> index, -1 */
	uint64_t lease_ns;		/* how long a breakers map entry is good for */
	/* the overflow row mixes unrelated destinations: traced, never judged */
	struct dw_dep_settings overflow_settings;
	bool can_abort;			/* the abort iterator runs: enforce = abort is in force */
};

/* What the caller raises: every dependency event that used to be a syslog line. */
enum dw_dep_event_kind {
	DW_DEP_TRANSITION,	/* the breaker moved from -> state, for reason */
	DW_DEP_WARN_SLOW_RATE,	/* closed, the slow rate near its limit */
	DW_DEP_WARN_INFLIGHT,	/* closed, calls in flight near max_inflight */
	DW_DEP_REJECTING,	/* the first connect refused in this open (or half_open) period */
	DW_DEP_RETRY_STORM,	/* a retry storm began (storm) or is over */
	DW_DEP_OVERRIDE,	/* an operator forced the breaker (forced) or gave it back */
	DW_DEP_EJECT,		/* a destination (dest) was ejected (out), or is back */
};

struct dw_dep_event {
	enum dw_dep_event_kind kind;
	unsigned dep;			/* index in deps->deps; its figures are the event's */
	enum dw_breaker_state from, state;
	enum dw_breaker_reason reason;
	bool storm;			/* DW_DEP_RETRY_STORM: began, else over */
	bool forced;			/* DW_DEP_OVERRIDE: forced, else auto; DW_DEP_EJECT: by hand */
	bool out;			/* DW_DEP_EJECT: ejected, else back */
	bool ended;			/* DW_DEP_EJECT, back: a reload ended it (eject off, moved) */
	struct dw_dest_key dest;	/* DW_DEP_EJECT: which destination */
	uint64_t now_ns;
};

/* The result of a step: events in the order raised, then breakers map changes. */
struct dw_depset_out {
	struct dw_dep_event *ev;
	unsigned nev, capev;
	struct dw_breaker_op *ops;
	unsigned nops, capops;
	bool oom;			/* an event or an op was dropped */
};

/* Takes cfg over (it is freed with the set). 0, -ENOSPC (too many dependencies) or -ENOMEM. */
int dw_depset_init(struct dw_deps *deps, struct dw_config *cfg, uint64_t lease_ns, uint64_t now);
void dw_depset_free(struct dw_deps *deps);
/* Empties out for the next step, keeping its memory. */
void dw_depset_out_reset(struct dw_depset_out *out);
void dw_depset_out_free(struct dw_depset_out *out);

/*
 * One poll over the collector's destinations (dests[0..cap), unused ones
 * skipped): each onto its dependency (registering a destination no match
 * covers), then every dependency judged, its breaker stepped, its rates and
 * retries followed, and its breakers map entry renewed with a fresh lease.
 */
void dw_depset_poll(struct dw_deps *deps, struct dw_dest *dests, size_t cap, uint64_t now,
		    struct dw_depset_out *out);
/*
 * Between polls: when an outstanding call turns slow, the judgement can
 * change before the next poll. Returns the first moment after now at which
 * one does (0: none) and marks the destinations of those dependencies hot;
 * after the caller re-read them, dw_depset_rejudge judges and steps only
 * those dependencies.
 */
uint64_t dw_depset_next_slow(struct dw_deps *deps, struct dw_dest *dests, size_t cap, uint64_t now);
void dw_depset_rejudge(struct dw_deps *deps, uint64_t now, struct dw_depset_out *out);
/*
 * depwatch breaker eject|return NAME DEST: one destination of a configured
 * dependency out (as an automatic ejection would be) or back at once.
 * 0, -ENOENT (no such dependency, or dest is not one of its destinations),
 * -EINVAL (its eject is off).
 */
int dw_depset_eject(struct dw_deps *deps, const char *name, const struct dw_dest_key *dest, bool out,
		    uint64_t now, struct dw_depset_out *out_ops);
/* The breakers map entries of ejections cfg ends (dependency gone, eject off), into out. */
void dw_depset_prepare_ejections(const struct dw_deps *deps, const struct dw_config *cfg,
				 const struct dw_dest *dests, size_t cap, struct dw_depset_out *out);
/* depwatch breaker open|close|auto NAME: state is -1 for auto. 0, or -ENOENT. */
int dw_depset_force(struct dw_deps *deps, const char *name, int state, uint64_t now,
		    struct dw_depset_out *out);

/*
 * A reload in two steps, so that the kernel can take the new config whole
 * or not at all in between. Prepare: the id of each of cfg's dependencies
 * (ids[i] for cfg->deps[i]: a same-named one keeps its id, and so its
 * breaker), room reserved, and into out (if not NULL) the removal of the
 * breakers map entries of the dependencies cfg no longer has; nothing else
 * changes. 0, -ENOSPC or -ENOMEM.
 */
int dw_depset_prepare(struct dw_deps *deps, const struct dw_config *cfg, unsigned *ids,
		      struct dw_depset_out *out);
/*
 * Commit (cannot fail): takes cfg over with those ids; the dependencies cfg
 * no longer has go; every destination is matched again at the next poll.
 */
void dw_depset_commit(struct dw_deps *deps, struct dw_config *cfg, const unsigned *ids,
		      uint64_t now, struct dw_dest *dests, size_t cap);

/* The configured dependency named name, or NULL. */
const struct dw_dep *dw_depset_find(const struct dw_deps *deps, const char *name);
/* The dependency of the set's cfg.deps[cfg_index] (a service's path names them so), or NULL. */
const struct dw_dep *dw_depset_configured(const struct dw_deps *deps, unsigned cfg_index);
/* The dependency at index (a destination's dep), or NULL. */
const struct dw_dep *dw_depset_at(const struct dw_deps *deps, int index);
/* The timeout its config declares; 0: none (or not configured). */
uint64_t dw_depset_timeout_ns(const struct dw_deps *deps, const struct dw_dep *dep);
/* Percentile over the window of every destination of dep, in ms; -1 when no calls. */
double dw_dep_percentile_ms(const struct dw_dep *dep, double q);
/*
 * What status, top and /metrics show, alike: dependencies worth a row
 * (configured ones, and destinations' own that have some), and a judged
 * rate, 0 where there is none (out of 0..1: not judged yet).
 */
bool dw_dep_shown(const struct dw_dep *dep);
double dw_rate_or_zero(double r);
/* enforce in effect: "off", "connect", or "abort" (only where the kernel can abort). */
const char *dw_dep_enforce_mode(const struct dw_deps *deps, const struct dw_dep *dep);

/*
 * A breaker opened on failures names the answers that failed (outcome.h):
 * "http_503", the newest failing status its destinations counted, into buf;
 * NULL if none of its failures was an answer's status.
 */
const char *dw_dep_outcome(const struct dw_dep *dep, char *buf, size_t len);

#endif /* DW_DEPSET_H */
