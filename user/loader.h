/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Loading, attaching and pinning the BPF side; reading its pending table and slot configuration. */
#ifndef DW_LOADER_H
#define DW_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "logic/dwtypes.h"

struct depwatch_bpf;

#define DW_MAX_PROGS 32

/* One tracing program: attached, or not and why. */
struct dw_prog_status {
	const char *name;	/* program, e.g. "dw_send" */
	const char *hook;	/* what it attaches to, e.g. "tp_btf/sock_send_length" */
	bool required;
	bool attached;
	bool syscall;		/* hook is a system call: name enters, exit_link its exit */
	char why[320];		/* when not attached */
	struct bpf_link *link;
	struct bpf_link *exit_link;
};

struct dw_bpf {
	struct depwatch_bpf *skel;
	char pin_dir[256];
	int pin_dir_fd;		/* held with flock() while the daemon runs */
	struct dw_prog_status progs[DW_MAX_PROGS];
	int nprogs;
	int backend;		/* enum dw_backend */
	char backend_why[96];	/* "forced by --backend", "kernel has sock_send_length", ... */
	unsigned max_dests;
	int ncpus;
	int stats_fd, globals_fd;
	const struct dw_dest_detail *details;	/* dest_details, mapped read-only: rows 0 .. details_rows-1 */
	size_t details_len;
	unsigned details_rows;
	/* cpu_rows, mapped read-only: slot s's CPU c at [s * ncpus + c], s < cpu_rows_slots */
	const struct dw_cpu_row *cpu_rows;
	size_t cpu_rows_len;
	unsigned cpu_rows_slots;
	const struct dw_pending_entry *pending;	/* the pending table, mapped read-only: entries 0 .. pending_rows-1 */
	size_t pending_len;
	unsigned pending_rows;
	char cgroup[256];	/* where enforcement is attached, "" if it is not */
	const struct dw_caller_stats *callers;	/* caller_stats, mapped read-only: rows 0 .. callers_rows-1 */
	size_t callers_len;
	unsigned callers_rows;
	/* caller_cpu_rows, mapped read-only: row r's CPU c at [r * ncpus + c], r < caller_rows_n */
	const struct dw_caller_cpu_row *caller_rows;
	size_t caller_rows_len;
	unsigned caller_rows_n;
	bool keep_pinned;
	unsigned max_conns;	/* entries of the pending table (and the syscalls backend's connection map) */
	const char *const *without;	/* hooks to treat as absent (--without), NULL-terminated */
	char without_line[512];	/* what --without took away and what that costs; "" if nothing */
	int group;		/* gid given read access to the pins (--group), -1: root only */
	/* the abort iterator (enforce = abort, abort_after): its link, NULL if missing and why */
	struct bpf_link *abort_link;
	char abort_why[160];
};

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
/* The hook names --without accepts, one per line with what is lost without it. */
void dw_bpf_list_hooks(FILE *out);
/* Detaches and unpins everything. */
void dw_bpf_stop(struct dw_bpf *b);
/* One line: which programs are attached, which are not and why. */
void dw_bpf_describe(const struct dw_bpf *b, char *buf, size_t len);
/* "sock" or "syscalls". */
const char *dw_backend_name(int backend);
/* 0 if name is a backend (*backend set), -EINVAL if not. */
int dw_backend_parse(const char *name, int *backend);

/* Adopts connections that were open before the programs were attached. Returns how many. */
int dw_bpf_classify_existing(struct dw_bpf *b);

/* The maps user space writes (kstate.c, their one writer, gets them here). */
enum dw_bpf_map {
	DW_MAP_DEP_CFG,		/* dependency id -> struct dw_dep_cfg */
	DW_MAP_DEP_MATCH,	/* the match trie: struct dw_match_key -> struct dw_match_rules */
	DW_MAP_SERVICE_PORTS,	/* port -> 1: a [service]'s */
	DW_MAP_SLOT_CFG,	/* destination slot -> struct dw_slot_cfg */
	DW_MAP_BREAKERS,	/* the pinned breakers map */
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

/* Sums the per-CPU global counters. */
int dw_bpf_globals(struct dw_bpf *b, struct dw_global_stats *out);

#endif /* DW_LOADER_H */
