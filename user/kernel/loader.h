/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Loading, attaching and pinning the BPF side (its maps are read through maprows.h). */
#ifndef DW_LOADER_H
#define DW_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include "kernel/bpfstate.h"
#include "logic/base/dwtypes.h"

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

/* The loaded object, for the TLS discovery's attaches (user/discovery/tls/). */
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
	DW_MAP_DNS_PORTS,	/* port -> 1: DNS over UDP's (user/dns/dnsports.c) */
};
int dw_bpf_map_fd(const struct dw_bpf *b, enum dw_bpf_map map);
/* Whether the programs look for [service] requests at all. */
void dw_bpf_set_services_on(struct dw_bpf *b, bool on);

#endif /* DW_LOADER_H */
