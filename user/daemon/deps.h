/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The daemon's side of the dependencies: it hands the collector's
 * destinations to the dependency set (logic/depset/depset.h), the breakers map
 * changes it returns to the kernel (kstate.h), and its events to syslog
 * (alert.h), rate-limited per dependency.
 */
#ifndef DW_DEPS_H
#define DW_DEPS_H

#include <stdint.h>
#include "output/alert.h"
#include "kernel/kstate.h"
#include "logic/config/config.h"
#include "logic/depset/depset.h"
#include "logic/base/ratelimit.h"

struct dw_bpf;
struct dw_collector;

/* One dependency's alerts: rate-limited, and an open that went out is always followed by its close. */
struct dw_alert_bucket {
	struct dw_ratelimit lines;
	bool open_sent;			/* the last transition that went out left the breaker not closed */
};

struct dw_deps_io {
	struct dw_deps set;
	struct dw_kstate ks;
	struct dw_depset_out out;		/* reused by every step */
	struct dw_alert_bucket *buckets;	/* by dependency index (never reused) */
	unsigned nbuckets;
	const struct dw_collector *coll;	/* the last poll's figures: callers on an open line */
	/* ejections whose lines wait for the abort pass that acts on them (dw_deps_announce) */
	struct dw_dep_event *held;
	unsigned nheld, capheld;
};

/* Takes cfg over (it is freed with the deps). b: the kernel side, loaded later. */
int dw_deps_init(struct dw_deps_io *io, struct dw_config *cfg, uint64_t lease_ns, struct dw_bpf *b);
void dw_deps_free(struct dw_deps_io *io);
/* Writes the config's dependency settings, match trie and service ports to the kernel. */
int dw_deps_to_kernel(struct dw_deps_io *io);
/*
 * A new config: same-named dependencies keep their breakers; maps rewritten,
 * connections re-matched. All or nothing: on failure the old config stays in
 * force, in the kernel too. Takes cfg over, also when it fails.
 */
int dw_deps_reload(struct dw_deps_io *io, struct dw_config *cfg, struct dw_collector *c);
/* After each collector poll. */
void dw_deps_poll(struct dw_deps_io *io, struct dw_collector *c);
/* Between polls (see dw_depset_next_slow): when to look again, 0: no need. */
uint64_t dw_deps_next_slow(struct dw_deps_io *io, struct dw_collector *c);
/* After dw_collect_refresh: the hot dependencies judged and stepped. */
void dw_deps_rejudge(struct dw_deps_io *io, struct dw_collector *c);
/* depwatch breaker open|close|auto NAME: state is -1 for auto. 0, or -ENOENT. */
int dw_deps_force(struct dw_deps_io *io, const char *name, int state, uint64_t now);
/* depwatch breaker eject|return NAME DEST: as dw_depset_eject. */
int dw_deps_eject(struct dw_deps_io *io, const char *name, const struct dw_dest_key *dest, bool out,
		  uint64_t now);
/*
 * After the abort pass that follows a step (dw_abort_check): the lines of
 * the ejections and returns of that step, with what the pass aborted.
 */
void dw_deps_announce(struct dw_deps_io *io);

#endif /* DW_DEPS_H */
