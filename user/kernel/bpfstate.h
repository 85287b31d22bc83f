/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The BPF side as the daemon holds it, struct dw_bpf: filled by loader.c
 * (loader.h: loading, attaching), by maprows.c as it maps the arrays
 * (maprows.h: reading the maps), and by probe.c before the load (probe.h:
 * the backend, which programs load). Apart from loader.h so that probe.c
 * and maprows.c need no more than this.
 */
#ifndef DW_BPFSTATE_H
#define DW_BPFSTATE_H

#include <stdbool.h>
#include <stddef.h>

struct depwatch_bpf;
struct bpf_link;

#define DW_MAX_PROGS 32

/* One tracing program: attached, or not and why. */
struct dw_prog_status {
	const char *name;	/* program, e.g. "dw_send" */
	const char *hook;	/* what it attaches to, e.g. "tp_btf/sock_send_length" */
	bool required;
	bool attached;
	bool syscall;		/* hook is a system call: name enters, exit (exit_link) its exit */
	const char *exit;
	char why[320];		/* when not attached */
	struct bpf_link *link;
	struct bpf_link *exit_link;
};

/*
 * The first rows of an array map, mapped read-only (loader.c's map_rows
 * grows the mapping as more rows come into use; it may move). rows counts
 * the rows ptr covers, a row being what the map is read by: one entry, or
 * in a per-CPU layout (cpu_rows, caller_cpu_rows) one entry's ncpus
 * entries together. Typed access: loader.h's dw_bpf_detail() and others.
 */
struct dw_mapped {
	const void *ptr;	/* NULL: not mapped */
	size_t len;		/* bytes mapped */
	unsigned rows;		/* rows 0 .. rows-1 are readable */
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
	/* the maps read in place (struct dw_mapped), what a row of each is */
	struct dw_mapped details;	/* dest_details: a slot's struct dw_dest_detail */
	struct dw_mapped cpu_rows;	/* cpu_rows: a slot's ncpus struct dw_cpu_row */
	struct dw_mapped pending;	/* the pending table: one struct dw_pending_entry */
	struct dw_mapped callers;	/* caller_stats: a caller row's struct dw_caller_stats */
	struct dw_mapped caller_rows;	/* caller_cpu_rows: a caller row's ncpus struct dw_caller_cpu_row */
	char cgroup[256];	/* where enforcement is attached, "" if it is not */
	char h2_why[128];	/* why no connection is walked as HTTP/2 ("": they are) */
	unsigned refused;	/* the optional parts the kernel refused, a bit each (loader.c's load_parts) */
	bool dns_close_on;	/* the DNS close program (issue 48) is in the object being loaded */
	bool keep_pinned;
	unsigned max_conns;	/* entries of the pending table (and the syscalls backend's connection map) */
	const char *const *without;	/* hooks to treat as absent (--without), NULL-terminated */
	char without_line[512];	/* what --without took away and what that costs; "" if nothing */
	int group;		/* gid given read access to the pins (--group), -1: root only */
	/* the abort iterator (enforce = abort, abort_after): its link, NULL if missing and why */
	struct bpf_link *abort_link;
	char abort_why[200];
	int abort_path;		/* enum dw_abort_path: how it aborts */
	/* TLS (issue 32): the uprobes of bpf/tls/ssl.bpf.c load and attach (user/discovery/tls/); if not, why */
	bool tls_on;
	char tls_why[200];
};

/* How connections are aborted (enforce = abort, abort_after), as the probe found. */
enum dw_abort_path {
	DW_ABORT_PATH_NONE,	/* not at all: enforce = abort falls back to connect */
	DW_ABORT_PATH_KFUNC,	/* dw_abort calls bpf_sock_destroy (Linux 6.5+) */
	DW_ABORT_PATH_SOCK_DIAG,	/* dw_abort_list chooses, the daemon destroys (user/kernel/sockdiag.c) */
};

#endif /* DW_BPFSTATE_H */
