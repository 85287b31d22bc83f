/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The call model's maps and globals (the transport: connections, slots,
 * rows, callers, the pending table, the cascade); their sizes are
 * depwatch.h's. Sizes marked "set by user space" are overridden before load
 * from the daemon's options. Each feature above the transport has a maps
 * header of its own in its folder (h2/, tls/, tls/go/, dns/, answer/,
 * enforce/): doc/architecture.md lists which holds which.
 *
 * The programs' .bpf.c files include the maps headers they use, and
 * `bpftool gen object` links the objects into one (the Makefile): every
 * map and global variable in a maps header is __weak, so the linker keeps
 * one of the identical definitions and all programs share it.
 */
#ifndef DEPWATCH_MAPS_BPF_H
#define DEPWATCH_MAPS_BPF_H

#include "depwatch.h"

/* The kernel side's own map values, which user space never reads. */

/*
 * Per thread (the threads map): the inbound request it last received and
 * whether it has answered it yet. Thread-per-request servers hold one
 * request per thread while they call their dependencies.
 */
struct dw_thread_req {
	__u64 sk;		/* the inbound socket's address */
	__u32 netns;		/* its row: netns and listening port */
	__u16 port;
	__u16 active;		/* 1: received, not answered */
};

/* The abandons map: (process, dependency) -> when a call of it was abandoned. */
struct dw_abandon_key {
	__u32 tgid;
	__u32 dep_id;
	struct dw_dest_key dest;	/* zero for a configured dependency (any of its destinations) */
};

/* Per-connection state. SK_STORAGE: freed with the socket, never evicted. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct dw_conn);
} conns SEC(".maps") __weak;

/* Set by user space before load: which backend runs (enum dw_backend). */
const volatile __u32 dw_backend __weak = DW_BACKEND_SOCK;

/*
 * Per-connection state of the syscalls backend, keyed by the socket's
 * address: its system call tracepoint programs may not use socket storage.
 * Created at connect (or adoption), deleted when the socket reaches
 * TCP_CLOSE, which every TCP socket passes before it is freed.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DW_MAX_CONNS_DEFAULT);	/* set by user space (--max-conns) */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct dw_conn);
} conns_sk SEC(".maps") __weak;

/* struct dw_sys_call.op */
#define DW_SYS_SEND 1
#define DW_SYS_RECV 2

/* syscalls backend: the socket a thread's send or receive system call is on, from entry to exit. */
struct dw_sys_call {
	__u64 sk;	/* struct sock address */
	__u64 enter_ns;	/* a send: when it began (CLOCK_MONOTONIC), 0 if its socket could not be answered then */
	__u32 rcv_seq;	/* a send: its socket's rcv_nxt when it began */
	__u32 pad;
	__s32 flags;	/* the receive's MSG_* flags */
	__u32 op;	/* DW_SYS_SEND, DW_SYS_RECV */
	/* where its bytes are, for the stream layer (only on connections that are or may be HTTP/2) */
	__u64 buf;	/* user address of the buffer, or of the iovec array (nseg of them) */
	__u32 nseg;	/* 0: one buffer */
	__u32 seq;	/* TCP sequence number of its first byte: write_seq or copied_seq at entry */
	__u8 bytes;	/* 1: buf says where its bytes are */
	__u8 bye_len;	/* a send starting a call: the length of the goodbye its first bytes start (goodbye.h), 0: none;
			 * a receive: 1, it may begin an inbound request, 2, read a MySQL body (layers_sys_read()) */
	__u8 pad2[6];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DW_SYS_CALLS_MAX);	/* full: counted */
	__type(key, __u64);		/* pid_tgid */
	__type(value, struct dw_sys_call);
} sys_calls SEC(".maps") __weak;

/*
 * Destination -> slot (see DW_SLOT_OVERFLOW). Looked up once per connect;
 * the per-call path indexes the arrays below with the connection's slot,
 * lookups the verifier inlines, instead of hashing a 24-byte key.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DW_MAX_DESTS_DEFAULT);	/* set by user space (--max-dests) */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct dw_dest_key);
	__type(value, __u32);
} dest_slots SEC(".maps") __weak;

/* Set by user space before load: the rows of dest_stats and dest_details (--max-dests). */
const volatile __u32 dw_max_slots __weak = DW_MAX_DESTS_DEFAULT;
/* Slots handed out so far besides slot 0; user space reads it to bound its scan. */
__u32 dw_slots_taken __weak;

/* Exact counters per destination slot, per CPU: no atomics on the hot path. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DW_MAX_DESTS_DEFAULT);	/* set by user space (--max-dests) */
	__type(key, __u32);
	__type(value, struct dw_dest_stats);
} dest_stats SEC(".maps") __weak;

/*
 * Latency histograms and start-time slices per destination slot. Shared by
 * all CPUs: a per-CPU copy would cost 7.5 KiB per destination per CPU. The
 * per-call counts come through cpu_rows (struct dw_cpu_row), a line per CPU,
 * and reach these rows by folds and flushes; connects add here directly.
 * Mmapable: the daemon reads it in place, without a system call per row.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DW_MAX_DESTS_DEFAULT);	/* set by user space (--max-dests) */
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct dw_dest_detail);
} dest_details SEC(".maps") __weak;

/*
 * The per-CPU rows of the per-call counters (struct dw_cpu_row): row
 * slot * dw_ncpus + cpu. An array indexed by CPU rather than a
 * PERCPU_ARRAY so that the daemon reads it in place (mmapable), between
 * its loads of a row's seq, without a system call.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DW_MAX_DESTS_DEFAULT);	/* set by user space: --max-dests x possible CPUs */
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct dw_cpu_row);
} cpu_rows SEC(".maps") __weak;

/* Set by user space before load: the possible CPUs (rows of cpu_rows per slot). */
const volatile __u32 dw_ncpus __weak = 2;

/* Per destination slot: its dependency and service flag (struct dw_slot_cfg). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DW_MAX_DESTS_DEFAULT);	/* set by user space (--max-dests) */
	__type(key, __u32);
	__type(value, struct dw_slot_cfg);
} slot_cfg SEC(".maps") __weak;

/*
 * The pending table (struct dw_pending_entry), read in place by the daemon.
 * Entries are handed out in order (dw_pend_taken) and, once given back at
 * a close, reused from pending_free first: the part in use stays as small
 * as the most connections open at once.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DW_MAX_CONNS_DEFAULT);	/* set by user space (--max-conns) */
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct dw_pending_entry);
} pending SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_STACK);
	__uint(max_entries, DW_MAX_CONNS_DEFAULT);	/* set by user space (--max-conns) */
	__type(value, __u32);
} pending_free SEC(".maps") __weak;

/* Set by user space before load: the entries of pending. */
const volatile __u32 dw_max_pend __weak = DW_MAX_CONNS_DEFAULT;
/* Entries handed out in order so far; user space reads it to bound its scan. */
__u32 dw_pend_taken __weak;

/*
 * Callers (issue 16): (destination slot, cgroup id) -> row, looked up once
 * per connection; the per-call path indexes caller_stats with the row the
 * connection keeps. Rows are handed out in order (dw_callers_taken), never
 * reused while the maps live; row 0 is none (see struct dw_caller_stats).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DW_CALLER_ROWS_DEFAULT);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct dw_caller_key);
	__type(value, __u32);
} caller_slots SEC(".maps") __weak;

/* Per caller row, shared like dest_details (calls via caller_cpu_rows); read in place. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DW_CALLER_ROWS_DEFAULT);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct dw_caller_stats);
} caller_stats SEC(".maps") __weak;

/* Rows handed out so far besides row 0; user space reads it to bound its scan. */
__u32 dw_callers_taken __weak;

/* Per caller row and CPU (struct dw_caller_cpu_row): row * dw_ncpus + cpu, read in place. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DW_CALLER_ROWS_DEFAULT);	/* set by user space: x CPUs */
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct dw_caller_cpu_row);
} caller_cpu_rows SEC(".maps") __weak;

/* slow_call per dependency; index 0 for destinations no match covers. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DW_MAX_DEPS);
	__type(key, __u32);
	__type(value, struct dw_dep_cfg);
} dep_cfg SEC(".maps") __weak;

/* Which configured dependency a destination belongs to; looked up once per connect. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, DW_MATCH_TRIE_ENTRIES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct dw_match_key);
	__type(value, struct dw_match_rules);
} dep_match SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dw_global_stats);
} globals SEC(".maps") __weak;

/* (netns, port) of listening sockets, filled at start to tell accepted sockets from outbound ones. */
struct dw_listen_key {
	__u32 netns;
	__u32 port;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DW_LISTEN_PORTS_MAX);
	__type(key, struct dw_listen_key);
	__type(value, __u8);
} listen_ports SEC(".maps") __weak;

/*
 * Per thread, the inbound request it holds (see struct dw_thread_req): an
 * outbound call that thread starts is attributed to that request's row.
 * LRU: threads that exit leave their entries to be recycled.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, DW_THREADS_MAX);
	__type(key, __u32);		/* thread id */
	__type(value, struct dw_thread_req);
} threads SEC(".maps") __weak;

/*
 * Set by user space: 1 while the config has a [service]. Without one no
 * thread holds a request, and an outbound call skips looking for its caller.
 */
__u32 dw_services_on __weak;

/*
 * Set by user space: 1 once dw_data_ready is attached, so that a successful
 * receive has nothing left to tell unless a [service] is configured.
 */
__u32 dw_data_ready_on __weak;

/* Per port, 1 if a configured [service] listens on it (any netns); written by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DW_PORTS);
	__type(key, __u32);
	__type(value, __u8);
} service_ports SEC(".maps") __weak;

/* Calls abandoned lately, to recognise the retries that follow them. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, DW_ABANDONS_MAX);
	__type(key, struct dw_abandon_key);
	__type(value, __u64);		/* CLOCK_MONOTONIC of the abandon */
} abandons SEC(".maps") __weak;

/*
 * Per dependency id, the newest abandon: a call start looks in abandons
 * only within DW_RETRY_WINDOW_NS of one (an array lookup is inlined).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DW_MAX_DEPS);
	__type(key, __u32);
	__type(value, __u64);
} dep_abandoned SEC(".maps") __weak;

/*
 * Two of the layers' globals that a new connection's adoption
 * (slots.bpf.h, through the seam's layers_conn_begins(), layers/conn.bpf.h)
 * reads: it leaves dw_tls_live if the socket still counted in it, and the
 * h2 state it resets to depends on dw_h2_enabled. Adoption is in every
 * program that makes connections, the layers' own headers in those that
 * carry calls only, so these two stay with the transport's maps.
 *
 * Connections whose first bytes were a TLS hello (dw_conn.tls.live), until
 * their TCP_CLOSE: while 0, a plain TCP read leaves dw_recv before its
 * socket-storage lookup when TLS is on (issue 36). One that never reaches
 * TCP_CLOSE in our sight leaves it high: the lookup again, never a miss.
 */
__u32 dw_tls_live __weak;

/*
 * Set by user space before load: 0 where the kernel cannot show the stream
 * layer both directions (the sock backend without its receive program):
 * every connection keeps today's model.
 */
const volatile __u32 dw_h2_enabled __weak = 1;

#endif /* DEPWATCH_MAPS_BPF_H */
