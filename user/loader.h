/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Loading, attaching and pinning the BPF side; reading its pending table and slot configuration. */
#ifndef DW_LOADER_H
#define DW_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include "bpfstate.h"
#include "logic/dwtypes.h"

struct dw_bpf_opts {
	const char *pin_dir;
	unsigned max_dests;
	const char *cgroup;	/* where enforcement attaches; NULL or "": the cgroup v2 root */
	bool keep_pinned;	/* leave the maps pinned at a clean stop, for inspection */
	const char *backend;	/* "sock", "syscalls"; NULL: the best this kernel has */
	unsigned max_conns;	/* --max-conns: size of the pending table and the syscalls backend's connection map; 0: default */
	/* --without: hook names (as the start line prints them) to treat as absent, NULL-terminated */
	const char *const *without;
	int group;		/* --group: gid that may read the pinned maps; -1: root only */
	/* Fills the config maps once they exist, before any tracepoint fires. */
	int (*before_attach)(struct dw_bpf *b, void *arg);
	void *arg;
};

/* Opens, probes, loads, pins and attaches. On error, prints why and undoes what it did. */
int dw_bpf_start(struct dw_bpf *b, const struct dw_bpf_opts *opts);
/* Detaches and unpins everything. */
void dw_bpf_stop(struct dw_bpf *b);

/* DNS over UDP (issue 35): whether its hooks are attached; the timeout sweep, once a poll. */
bool dw_bpf_dns_on(const struct dw_bpf *b);
int dw_bpf_dns_sweep(struct dw_bpf *b);
/* One line: which programs are attached, which are not and why. */
void dw_bpf_describe(const struct dw_bpf *b, char *buf, size_t len);

/* The loaded object, for the TLS discovery's attaches (user/tls/). */
struct bpf_object *dw_bpf_object(const struct dw_bpf *b);

/* Adopts connections that were open before the programs were attached. Returns how many. */
int dw_bpf_classify_existing(struct dw_bpf *b);

/* The maps user space writes (kstate.c, their one writer, gets them here). */
enum dw_bpf_map {
	DW_MAP_DEP_CFG,		/* dependency id -> struct dw_dep_cfg */
	DW_MAP_DEP_MATCH,	/* the match trie: struct dw_match_key -> struct dw_match_rules */
	DW_MAP_SERVICE_PORTS,	/* port -> 1: a [service]'s */
	DW_MAP_SLOT_CFG,	/* destination slot -> struct dw_slot_cfg */
	DW_MAP_BREAKERS,	/* the pinned breakers map */
	DW_MAP_DNS_PORTS,	/* port -> 1: DNS over UDP's (user/dnsports.c) */
};
int dw_bpf_map_fd(const struct dw_bpf *b, enum dw_bpf_map map);
/* Whether the programs look for [service] requests at all. */
void dw_bpf_set_services_on(struct dw_bpf *b, bool on);

/*
 * Calls fn for every destination slot in use (not slot 0, the overflow),
 * with the destination the kernel keeps in it; stops at fn's first error.
 */
typedef int (*dw_slot_fn)(__u32 slot, const struct dw_dest_key *dest, void *arg);
int dw_bpf_for_each_slot(struct dw_bpf *b, dw_slot_fn fn, void *arg);

/* Calls fn for each connection with a call or a connect outstanding, with its destination. */
typedef void (*dw_pending_fn)(const struct dw_pending_entry *e, const struct dw_dest_key *dest, void *arg);
int dw_bpf_scan_pending(struct dw_bpf *b, dw_pending_fn fn, void *arg);

/* The maps read in place (maprows.c) from here on. */

/* Makes b->details cover at least rows 0 .. rows-1 (the mapping may move). */
int dw_bpf_map_details(struct dw_bpf *b, unsigned rows);

/* Makes b->cpu_rows cover at least slots 0 .. slots-1 (the mapping may move). */
int dw_bpf_map_cpu_rows(struct dw_bpf *b, unsigned slots);
/* Rows of dest_stats and dest_details that may be in use: slots 0 .. n-1. */
unsigned dw_bpf_slots_used(const struct dw_bpf *b);

/*
 * The caller rows (issue 16) that may be in use, mapped: *rows set to how
 * many of b->callers to read (row 0 is none and stays zero).
 */
int dw_bpf_map_callers(struct dw_bpf *b, unsigned *rows);

/* Makes b->pending cover at least its rows 0 .. rows-1 (the mapping may move). */
int dw_bpf_map_pending(struct dw_bpf *b, unsigned rows);

/* Unmaps every array mapped so far (at stop). */
void dw_bpf_unmap_all(struct dw_bpf *b);

/*
 * The mapped rows, typed: the caller keeps to the rows mapped (slot <
 * b->details.rows and so on), and reads again after a dw_bpf_map_*() call.
 */
static inline const struct dw_dest_detail *dw_bpf_detail(const struct dw_bpf *b, unsigned slot)
{
	return (const struct dw_dest_detail *)b->details.ptr + slot;
}

/* Slot slot's per-CPU rows, ncpus of them. */
static inline const struct dw_cpu_row *dw_bpf_cpu_rows(const struct dw_bpf *b, unsigned slot)
{
	return (const struct dw_cpu_row *)b->cpu_rows.ptr + (size_t)slot * b->ncpus;
}

static inline const struct dw_caller_stats *dw_bpf_caller(const struct dw_bpf *b, unsigned r)
{
	return (const struct dw_caller_stats *)b->callers.ptr + r;
}

/* Caller row r's per-CPU rows, ncpus of them. */
static inline const struct dw_caller_cpu_row *dw_bpf_caller_cpu_rows(const struct dw_bpf *b,
								       unsigned r)
{
	return (const struct dw_caller_cpu_row *)b->caller_rows.ptr + (size_t)r * b->ncpus;
}

/* Sums the per-CPU global counters. */
int dw_bpf_globals(struct dw_bpf *b, struct dw_global_stats *out);

#endif /* DW_LOADER_H */
