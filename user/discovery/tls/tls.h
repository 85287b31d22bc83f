/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The TLS discovery (issue 32), as the daemon drives it: at start one scan
 * of every process's maps for ELF objects exporting OpenSSL's API, each
 * distinct file (dev, inode) given the uprobes of bpf/tls/ssl.bpf.c once; then,
 * for each exec the kernel reports (bpf/tls/tlsexec.bpf.c's ring buffer), that
 * process's maps again, a few times over its first seconds (the loader maps
 * libssl after the exec). What stays opaque, and why, is kept for status.
 * The pure half is logic/discovery/tlsfind.c. doc/tls.md.
 *
 * After the start's scan, the discovery runs in a thread of its own
 * (dw_tls_run): reading a process's maps, an ELF file's symbols, a Go
 * binary's tables and attaching uprobes take milliseconds each, tens under
 * load, and another process's burst of execs must not make the daemon's
 * loop late for what it owes on time (an abort_after deadline, a call
 * turning slow, a status request). The thread owns every field below but
 * the snapshot; the loop reads only that (status, /metrics), and tells the
 * thread the kernel's exec_lost (dw_tls_set_exec_lost).
 */
#ifndef DW_TLS_TLS_H
#define DW_TLS_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include "logic/base/jsonw.h"
#include "logic/discovery/tlsfind.h"
#include "discovery/tls/attach.h"

struct dw_bpf;
struct bpf_object;
struct ring_buffer;

#define DW_TLS_ATTACHED_MAX 256		/* files with uprobes at once */
#define DW_TLS_QUEUE_MAX 256		/* exec'd processes waiting for a rescan */
#define DW_TLS_RESCAN_FULL_NS (30ULL * 1000000000ULL)	/* every process again: dlopen()s after a start's first seconds */

struct dw_tls_rescan {
	uint32_t pid;
	int step;		/* the next of rescan_after_ms's delays */
	uint64_t due_ns;
};

struct dw_tls {
	bool on;		/* the uprobes attach (probe: loader.c's decide_tls) */
	char why[200];		/* off: why */
	pid_t self;		/* the daemon's own process, never scanned */
	dev_t self_dev;		/* the daemon's executable file: processes running it (depwatch top, */
	ino_t self_ino;		/* status, ...) are depwatch's own, never scanned either; 0: unknown */
	struct bpf_object *obj;
	struct ring_buffer *ring;
	struct dw_tls_files *files;
	struct dw_tls_procs *procs;
	struct {
		int file;	/* index in files->e */
		struct dw_tls_links links;
	} att[DW_TLS_ATTACHED_MAX];
	unsigned natt;
	struct dw_tls_rescan q[DW_TLS_QUEUE_MAX];
	unsigned nq;
	uint64_t next_full_ns, next_prune_ns;
	uint64_t gen;		/* full scans begun: a file's seen_gen */
	bool gen_partial;	/* this full scan missed a process's objects (more than it holds): detach nothing */
	uint64_t detached;	/* files whose uprobes came off: no process mapped them any more */
	/* figures */
	uint64_t execs;		/* exec records read */
	uint64_t scans;		/* process maps read */
	uint64_t full_scans;
	double last_full_ms;	/* the last full scan's wall time */
	unsigned last_full_procs;
	uint64_t queue_full;	/* exec'd processes not rescanned: the queue was full */
	uint64_t unreadable;	/* processes whose maps could not be read (not for being gone) */
	uint64_t exec_lost;	/* the kernel's tls_exec_lost, as of the last poll (atomic: the loop writes it) */
	/* the thread (dw_tls_run) */
	pthread_t thread;
	bool running;
	int stop_fd;		/* eventfd: the loop asks the thread to end; -1: none */
	/* what status and /metrics read, rendered by the thread after a wake-up (tls.c's publish_throttled) */
	uint64_t published_ns;	/* the last rendering's time */
	bool publish_due;	/* a wake-up since then was not rendered */
	pthread_mutex_t snap_lock;
	bool snap_init;
	struct dw_buf snap_json, snap_text, snap_metrics;
};

/*
 * Starts the discovery when b->tls_on (else only remembers why not): the
 * full scan, the exec ring. 0, or -errno with a line logged.
 */
int dw_tls_start(struct dw_tls *t, struct dw_bpf *b, struct bpf_object *obj);
/*
 * Starts the thread that reads the exec ring and rescans from now on (when
 * on): after the daemon dropped its capabilities, which the thread
 * inherits. 0, or -errno with a line logged.
 */
int dw_tls_run(struct dw_tls *t);
/* Ends the thread (if any), detaches every uprobe, frees the tables. */
void dw_tls_stop(struct dw_tls *t);
/* The kernel's count of execs the ring lost, as the loop's poll reads it. */
void dw_tls_set_exec_lost(struct dw_tls *t, uint64_t lost);
/* One scan of every process (the start's, and every DW_TLS_RESCAN_FULL_NS). */
void dw_tls_scan_all(struct dw_tls *t);
/* The uprobes off the files the last full scan found no process mapping (scan.c). */
void dw_tls_detach_unmapped(struct dw_tls *t);
/* The host's own libssl files, mapped or not: their uprobes (scan.c). */
void dw_tls_scan_system(struct dw_tls *t);
/* The daemon executable's identity (scan.c): processes running it are depwatch's own. */
void dw_tls_self_exe(struct dw_tls *t);
/* Scans one process's maps, attaching what it maps that is new; never one of depwatch's own. */
void dw_tls_scan_pid(struct dw_tls *t, uint32_t pid);

/* What is off or why: "" when on. */
const char *dw_tls_why(const struct dw_tls *t);
/* status --json's "tls" object (with its leading comma), the table's line, /metrics' families:
 * the thread's last snapshot, for any thread to read. */
void dw_tls_json(struct dw_buf *out, const struct dw_tls *t);
void dw_tls_text(struct dw_buf *out, const struct dw_tls *t);
void dw_tls_metrics(struct dw_buf *out);
/* The daemon's one discovery (for /metrics, rendered without it at hand); NULL before start. */
const struct dw_tls *dw_tls_current(void);

#endif /* DW_TLS_TLS_H */
