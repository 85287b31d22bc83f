/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * depwatch: the layout of every map shared between the BPF programs and user
 * space. Other programs and tools may read the pinned maps with these types;
 * `bpftool map dump pinned /sys/fs/bpf/depwatch/<map>` prints them by name.
 *
 * Only fixed-size __u* fields, explicit padding: the same bytes in the kernel
 * and in user space, on every architecture.
 */
#ifndef DEPWATCH_H
#define DEPWATCH_H

#include "dwcompat.h"
#include "bucket.h"

/*
 * Every size of the BPF side, in one place: the maps (bpf/core/maps.bpf.h), the
 * loader that resizes some of them before load (user/kernel/loader.c) and the
 * daemon's defaults and checks read these. "Default" ones are the daemon's
 * option defaults, which the loader writes into the maps before load.
 */
#define DW_MAX_DESTS_DEFAULT 4096	/* --max-dests: destination slots (dest_slots, dest_stats, ...) */
#define DW_MAX_CONNS_DEFAULT 262144	/* --max-conns: tracked connections (conns_sk, pending) */
#define DW_CALLER_ROWS_DEFAULT 4096	/* caller rows (caller_slots, caller_stats) */
#define DW_SYS_CALLS_MAX 16384		/* threads in a traced system call at once (syscalls backend) */
#define DW_MATCH_TRIE_ENTRIES 16384	/* prefixes in the match trie (dep_match) */
#define DW_BREAKERS_MAX 8192		/* entries of the pinned breakers map */
#define DW_LISTEN_PORTS_MAX 16384	/* listening (netns, port)s recorded at start */
#define DW_THREADS_MAX 65536		/* threads holding a [service]'s request (LRU) */
#define DW_ABANDONS_MAX 16384		/* recent abandoned calls, for retries (LRU) */
#define DW_PORTS 65536			/* one entry per TCP port (service_ports) */
#define DW_H2_STREAMS 128		/* open streams tracked per HTTP/2 connection (bpf/h2/h2.h) */
#define DW_H2_PROBES 8			/* slots a stream may take, from its home slot on */
#define DW_H2_CONNS_MAX 16384		/* HTTP/2 connections with stream state (syscalls backend's hash) */
#define DW_H2_STEPS 16384		/* walker steps per event (bpf_loop): ~2 a frame, more is a desync */

#define DW_COMM_LEN 16

/*
 * Start-time slices: calls are counted by when they started, in slices of
 * 2^26 ns (67 ms); a destination keeps the newest DW_SLICES of them (8.6 s).
 * Each counter is one __u64, (slice << 32) | count: the slice number says
 * which slice the count belongs to, so a counter resets itself (with one
 * compare-and-swap) when its slot is reused, and a reader ignores counters
 * of a slice older than the newest its slot holds, in the shared counters or
 * in a CPU's row (struct dw_cpu_row: the per-call counts go there first).
 */
#define DW_SLICE_SHIFT 26
#define DW_SLICES 128

/* Configured dependencies, 1..DW_MAX_DEPS-1; 0 is every destination no match covers. */
#define DW_MAX_DEPS 1024
#define DW_DEP_NAME_LEN 64
/* Rules of one prefix in the match trie, most specific first. */
#define DW_MATCH_RULES 8

/* family value of the row that collects destinations the map had no room for */
#define DW_FAMILY_OVERFLOW 0
/*
 * family value of an inbound row: the requests this host answers on one
 * listening port (port = the local port, addr all zero), per netns.
 */
#define DW_FAMILY_INBOUND 0xffff

/*
 * A message its sender closes the connection behind within this time (TLS
 * close_notify, then close()) was never waited for: no call, counted in
 * calls_dropped instead of failed. So is one whose sending thread closes
 * the connection without having blocked since the send, however late (it
 * was preempted): nobody waited for an answer. Mirrored for inbound: a
 * request whose client closed this soon after it and that was never
 * answered.
 */
#define DW_GOODBYE_NS 1000000ULL

/*
 * Sends and receives of a multiplexed TLS connection at most this long are
 * control frames, not requests or answers: a TLS record around an HTTP/2
 * PING (17 bytes), WINDOW_UPDATE or RST_STREAM (13), SETTINGS ACK (9) or
 * two of them is 30 to 64 bytes (TLS 1.3 adds 22, 1.2 with AES-GCM 29).
 * So a peer that answers only PINGs while the requests hang does not end
 * the burst, and a client's WINDOW_UPDATE starts none (doc/callmodel.md; bpf/tls/hello.h).
 */
#define DW_TLS_SMALL 64

/*
 * A call abandoned by its caller (closed while outstanding) and a new call
 * from the same process to the same dependency within this time: a retry.
 */
#define DW_RETRY_WINDOW_NS 2000000000ULL

/*
 * Every destination (and inbound row) gets a slot number once, at its
 * first connect, accept or adoption: dest_slots maps its dw_dest_key to
 * the slot, and the slot indexes dest_stats and dest_details. Slot 0 is
 * the overflow row, for destinations that came when every slot was taken.
 * Slots are never reused while the maps live.
 */
#define DW_SLOT_OVERFLOW 0

/* A destination: one (network namespace, family, address, port); or an inbound row. */
struct dw_dest_key {
	__u32 netns;	/* inode number of the network namespace */
	__u16 family;	/* AF_INET, AF_INET6, or DW_FAMILY_OVERFLOW */
	__u16 port;	/* host byte order */
	__u8 addr[16];	/* IPv4 (and IPv4-mapped IPv6) in the first 4 bytes */
};

/*
 * Per-CPU counters of one destination. An inbound row counts requests in
 * the calls_* fields: a request starts when its first bytes arrive and
 * completes at the first bytes of the answer. Everything is cumulative since the
 * map was created; user space sums the CPUs and takes differences.
 * In flight = calls_started - calls_completed - calls_failed - calls_dropped.
 * Connecting = connect_attempts - connects_ok - connect failures.
 */
struct dw_dest_stats {
	__u64 calls_started;
	__u64 calls_completed;
	__u64 calls_failed;
	__u64 calls_slow;		/* completed, slower than their dependency's slow_call */
	__u64 call_ns_sum;		/* sum of completed call durations */
	__u64 connect_attempts;
	__u64 connects_ok;
	__u64 connect_refused;		/* RST in answer to the SYN */
	__u64 connect_timedout;		/* SYN never answered */
	__u64 connect_other;		/* aborted, unreachable, closed while connecting */
	__u64 connect_ns_sum;		/* sum of successful connect durations */
	__u64 retransmits;
	__u64 connects_rejected;	/* connect() failed at once by an enforced open breaker */
	__u64 conns_opened;		/* connections established (or adopted at start) */
	__u64 conns_closed;		/* of those, closed since: open now = opened - closed */
	__u64 calls_late;		/* ended 8.6 s after their start slice, or its reuse */
	__u64 calls_abandoned;		/* of the failed: the caller closed the connection while waiting */
	__u64 calls_retried;		/* started within DW_RETRY_WINDOW_NS of an abandoned one, same process */
	__u64 conns_multiplexed;	/* connections seen carrying overlapping requests (pipelined or multiplexed), once each */
	__u64 calls_burst;		/* of the completed: timed on such a connection (a burst, not one request) */
	__u64 calls_dropped;		/* started, then no call after all: a goodbye (see DW_GOODBYE_NS) */
	__u64 conns_aborted_breaker;	/* established connections aborted (bpf_sock_destroy) while the breaker was open: enforce = abort */
	__u64 conns_aborted_timeout;	/* connections aborted under a call older than abort_after */
	__u64 calls_aborted;		/* of those aborted: a call was outstanding on them */
	/* HTTP/2 (bpf/h2/streams.bpf.h): calls on cleartext HTTP/2 connections are their streams */
	__u64 calls_streams;		/* of the started: calls on an HTTP/2 stream */
	__u64 conns_h2;			/* connections recognised as cleartext HTTP/2 (h2c), once each */
	__u64 h2_desync;		/* of those, connections whose frames the parser lost step in: today's model after */
	__u64 streams_untracked;	/* streams seen but not timed: their connection's table was full (no call counted) */
	__u64 calls_cancelled;		/* of the failed: the client reset its stream (RST_STREAM: a gRPC deadline, a cancel) */
	__u64 conns_aborted_eject;	/* established connections aborted while this destination was ejected: enforce = abort */
	/*
	 * Call outcomes (issue 33, bpf/answer/outcome.bpf.h): the HTTP/1 status line
	 * at each answer's first bytes, on cleartext connections. An answer
	 * whose status is in its dependency's failure_status (default 5xx) is
	 * failed, not completed.
	 */
	__u64 answers_2xx;		/* answers read, by class */
	__u64 answers_3xx;
	__u64 answers_4xx;
	__u64 answers_5xx;
	__u64 answers_unknown;		/* answers of an HTTP/1 connection whose status could not be read (a short or missed read) */
	__u64 answers_bad;		/* of those, bytes that start like a status line and break its grammar */
	__u64 calls_failed_status;	/* of the failed: their answer's status is a failure (failure_status) */
	/* DNS over UDP (bpf/dns/dnscall.bpf.h, issue 35): a query is a call */
	__u64 calls_dns;		/* of the started: DNS queries */
	__u64 dns_nxdomain;		/* of the completed: NXDOMAIN answers (no failure) */
	__u64 dns_timeouts;		/* of the failed: queries unanswered after dns_timeout, or at their socket's close */
	__u64 dns_rcode_failed;		/* of the failed: SERVFAIL and REFUSED answers */
	/* TLS plaintext (issue 32, bpf/tls/ssl.bpf.c) */
	__u64 conns_tls;		/* connections tied to a TLS session: their calls timed from its plaintext, once each */
	__u64 calls_failed_closed;	/* of the failed: their connection ended under them (peer's FIN or reset, a timeout); no HTTP/2 stream */
	/* all fields above are __u64 counters (user space sums them as an array) */
	/*
	 * Who opened this CPU's newest connection to the destination: taken at
	 * connect, not per call, to keep the send path short (a process sending
	 * on a connection another one opened is not seen). Adopted connections
	 * (open before the daemon started) leave them alone. An inbound row:
	 * the process answering on the port, noted when it changes.
	 */
	__u64 last_conn_ns;		/* CLOCK_MONOTONIC of that connect (or note), 0: none seen */
	__u32 last_pid;			/* thread group id of the connecting process */
	char last_comm[DW_COMM_LEN];	/* its command name, as the kernel has it (not escaped) */
	__u32 last_fail_status;		/* the newest failing status this CPU counted (calls_failed_status), 0: none */
};

struct dw_slice {
	__u64 started;
	__u64 fast;	/* completed within the dependency's slow_call */
	__u64 slow;	/* completed, slower than slow_call */
	__u64 failed;
};

/*
 * Histograms and start-time slices of one destination, shared by all CPUs
 * (atomic adds). dest says whose slot this is: written once the slot is
 * taken, all zero in slot 0 (overflow) and in slots not handed out.
 * The per-call counts reach these rows through the per-CPU rows below
 * (struct dw_cpu_row): a reader adds those to get the figures.
 */
struct dw_dest_detail {
	struct dw_dest_key dest;
	__u32 call[DW_HIST_BUCKETS];	/* completed call durations; u32 wraps, readers take deltas */
	__u32 connect[DW_HIST_BUCKETS];	/* successful connect durations */
	struct dw_slice slices[DW_SLICES];	/* slot = slice % DW_SLICES */
};

/*
 * Per-CPU rows of the per-call counters (issue 17): one 64-byte row per
 * (slot, CPU) in the cpu_rows map, at index slot * dw_ncpus + cpu. The
 * protocol that keeps them exact (the claim, the folds into struct
 * dw_dest_detail, the seqcount readers use, the histogram runs) is in
 * bpf/core/rows.h, with the code that writes them.
 */
#define DW_ROW_BUSY 1U
#define DW_ROW_FOLDING 2U
#define DW_ROW_GEN 4U
#define DW_ROW_RUNS 10
#define DW_ROW_RUN_SHIFT 23
#define DW_ROW_RUN_MAX ((1U << DW_ROW_RUN_SHIFT) - 1)

struct dw_cpu_row {
	__u32 seq;		/* DW_ROW_BUSY, DW_ROW_FOLDING, folds * DW_ROW_GEN */
	__u32 slice;		/* the slice its counts below belong to */
	__u32 started;
	__u32 fast;
	__u32 slow;
	__u32 failed;
	__u32 run[DW_ROW_RUNS];	/* unflushed completions, per bucket (see above) */
};

/* dw_dep_cfg.enforce, bits: what the kernel does while the dependency's breaker is open. */
#define DW_ENFORCE_CONNECT 1	/* fail connect() (enforce = connect, and abort) */
#define DW_ENFORCE_ABORT 2	/* abort its established outbound connections (enforce = abort) */

/* Per dependency, written by user space: what the kernel needs to classify a call. */
struct dw_dep_cfg {
	__u64 slow_call_ns;
	__u32 enforce;		/* DW_ENFORCE_* bits; 0: nothing */
	__u32 multiplexed;	/* 1: calls timed on multiplexed connections count in the slow-call rate (multiplexed = judge) */
	__u64 abort_after_ns;	/* abort a connection whose call is older than this; 0: never */
	__u64 fail_status[8];	/* failure_status: bit (status - 100) set, the answer fails its call (bpf/answer/http1.h) */
	__u64 dns_timeout_ns;	/* a DNS query unanswered this long failed (reason timeout); 0: DW_DNS_TIMEOUT_DEFAULT_NS */
};

/* What the abort iterators write of each connection they chose: bpf/enforce/abortrec.h. */

/*
 * The match trie (LPM): key data is the family as a big-endian __u32, then
 * the address; prefixlen counts the family's 32 bits. The value lists every
 * configured rule covering that prefix, most specific first: the first
 * whose port range holds the port names the dependency.
 */
struct dw_match_key {
	__u32 prefixlen;
	__u8 data[20];
};

struct dw_match_rule {
	__u16 port_lo;
	__u16 port_hi;
	__u32 dep_id;
};

struct dw_match_rules {
	__u32 n;
	struct dw_match_rule rule[DW_MATCH_RULES];
};

enum dw_breaker_state { DW_BREAKER_CLOSED = 0, DW_BREAKER_OPEN = 1, DW_BREAKER_HALF_OPEN = 2 };
enum dw_breaker_reason {
	DW_REASON_NONE = 0,
	DW_REASON_SLOW_RATE = 1,
	DW_REASON_FAILURE_RATE = 2,
	DW_REASON_CONCURRENCY = 3,
	DW_REASON_FORCED = 4,
};

/*
 * The pinned `breakers` map: one entry per configured dependency (dep_id
 * set, dest zero), per destination on its own that is not closed (dep_id
 * 0, dest set), and per ejected destination of a configured dependency
 * (both set: open while ejected, half_open while its probes are let
 * through, gone once it is back; doc/enforcement.md, "Ejection"). The daemon rewrites each entry every interval
 * with a lease; a reader must treat an entry whose lease_expires_ns (the
 * kernel's CLOCK_MONOTONIC, bpf_ktime_get_ns()) has passed as closed: the
 * daemon is gone and nobody vouches for the state any more.
 */
struct dw_breaker_key {
	__u32 dep_id;
	struct dw_dest_key dest;
};

struct dw_breaker_value {
	enum dw_breaker_state state;
	enum dw_breaker_reason reason;
	__u64 since_ns;			/* CLOCK_MONOTONIC when it entered this state */
	__u64 lease_expires_ns;		/* CLOCK_MONOTONIC */
	__u32 probes_left;		/* half_open: connects still let through */
	__u32 forced;			/* 1: set by an operator, not by the judgement */
	char name[DW_DEP_NAME_LEN];	/* the dependency's name, or its dest string */
};

/*
 * A connection's own state (struct dw_conn, its role, whether its calls are
 * HTTP/2 streams) is the BPF side's alone: bpf/core/conn.bpf.h.
 */

/*
 * Per destination slot (the slot_cfg map): what the per-call path needs to
 * know of its row's configuration. Filled when the slot is taken and
 * rewritten by user space at every reload, so that a reload reaches the
 * connections already open without walking them.
 */
struct dw_slot_cfg {
	__u32 dep_id;		/* configured dependency, 0 for none (and for inbound rows) */
	__u16 service;		/* inbound row: a configured [service] listens on its port */
	__u16 pad;
};

/*
 * The pending table (mmapped by the daemon): one entry per tracked
 * connection, taken when the connection is adopted and given back when it
 * closes, so that user space finds every outstanding call and connect, in
 * every network namespace, by reading an array instead of walking sockets.
 * Connections beyond its size (--max-conns) are counted exactly all the
 * same; only their outstanding calls are missing from the ages
 * (kernel.pending_table_full).
 */
struct dw_pending_entry {
	__u64 call_start_ns;	/* the connection's outstanding call, 0: none */
	__u64 connect_start_ns;	/* its connect in progress, 0: none */
	__u32 slot;		/* its destination's slot */
	__u32 caller_netns;	/* outbound: the inbound row whose request the sending thread held, 0: none */
	__u16 caller_port;
	__u16 flags;		/* DW_PEND_MULTIPLEXED */
	__u32 caller;		/* the connection's caller row (struct dw_caller_stats), 0: none */
};

/*
 * The connection is multiplexed: its outstanding "call" may be a control
 * frame nobody answers (an HTTP/2 WINDOW_UPDATE), so its age is shown
 * (oldest_inflight_ms) but does not make the dependency slow now.
 */
#define DW_PEND_MULTIPLEXED 1

/*
 * The global counters of things that went wrong in the kernel side, the one
 * list of them: X(field, metric, help), in struct dw_global_stats's order
 * (an ABI: append only). field names the counter in status --json's
 * "kernel" object; the /metrics family is depwatch_kernel_<metric>_total,
 * a counter with HELP help.
 */
#define DW_GLOBAL_COUNTERS(X)							\
	X(dest_map_full, dest_map_full,						\
	  "Events whose destination found the kernel's map full; counted in the overflow row.") \
	X(hist_map_full, hist_map_full,						\
	  "Completions the kernel could not add to any histogram.")		\
	X(conn_storage_fail, conn_storage_failures,				\
	  "Sockets that could not get socket-local storage and are not tracked.") \
	X(thread_map_full, thread_map_full,					\
	  "Socket system calls not traced because the per-thread map was full (syscalls backend).") \
	X(pending_table_full, pending_table_full,				\
	  "Connections tracked without a pending-table entry: their outstanding calls have no age.") \
	X(abort_failed, abort_failed,						\
	  "Connections enforce = abort or abort_after meant to abort that bpf_sock_destroy() refused; not retried.") \
	X(caller_map_full, caller_map_full,					\
	  "Connections whose caller found no row left: their calls count for the destination only.") \
	X(h2_state_full, h2_state_full,						\
	  "HTTP/2 connections that found no room for their stream state: timed as today's model, as multiplexed.") \
	/* DNS over UDP (bpf/dns/dnscall.bpf.h, issue 35) */			\
	X(dns_table_full, dns_table_full,					\
	  "DNS queries not timed: the query table was full.") \
	X(dns_unread, dns_unread,						\
	  "DNS-port datagrams not read: no query or answer, cut short, or too long.") \
	X(dns_unmatched, dns_unmatched,						\
	  "DNS answers matching no outstanding query.") \
	X(dns_retransmits, dns_retransmits,					\
	  "DNS queries sent again (same id, question, socket): one call.") \
	/* TLS (issue 32): the uprobes on the TLS library (bpf/tls/ssl.bpf.c) and the exec watch (bpf/tls/tlsexec.bpf.c) */ \
	X(tls_writes, tls_writes,						\
	  "SSL_write and SSL_write_ex calls seen by the TLS uprobes.") \
	X(tls_exec_lost, tls_exec_lost,						\
	  "Execs the TLS discovery missed: its ring was full.") \
	X(tls_linked, tls_linked,						\
	  "TLS sessions tied to their TCP connection: timed from the plaintext.") \
	X(tls_unlinked, tls_unlinked,						\
	  "TLS connections whose session could not be tied to them: timed from the records.") \
	X(tls_links_full, tls_links_full,					\
	  "TLS sessions that found the link table full (also counted in tls_unlinked).") \
	X(tls_linked_late, tls_linked_late,					\
	  "Of tls_linked, sessions tied by the thread's last SSL call (memory BIOs: grpc-core, asyncio).") \
	/* Go's crypto/tls (bpf/tls/go/gotls.bpf.c, doc/go.md) */				\
	X(go_tls_writes, go_tls_writes,						\
	  "Entries of Go's crypto/tls.(*Conn).Write in probed Go programs.")	\
	X(go_tls_fd_unread, go_tls_fd_unread,					\
	  "Go TLS writes and reads whose socket fd was not read.") \
	X(go_tls_reads, go_tls_reads,						\
	  "Go's crypto/tls.(*Conn).Read calls in probed Go programs: entries, or returns where only those are probed.") \
	X(go_tls_ret_unread, go_tls_ret_unread,					\
	  "Go TLS reads whose result, taken in the caller's frame at its deferred closure, did not read.") \
	/* HTTP/2 header blocks to the daemon's HPACK decoder (bpf/h2/hblock.bpf.h, issue 33) */ \
	X(hblocks_lost, hblocks_lost,						\
	  "Header-block records lost: the ring was full.")		\
	/* the call model (bpf/core/callmodel.bpf.h) */				\
	X(answers_unseen, answers_unseen,					\
	  "Calls whose answer no data-arrival event reported: completed at the next send or the close.") \
	/* DNS over UDP: a query whose socket closed unanswered (bpf/dns/dnscall.bpf.h, issue 48) */ \
	X(dns_closed, dns_closed,						\
	  "DNS queries failed at their socket's close, unanswered (also counted in dns_timeouts).")

/* Global per-CPU counters (DW_GLOBAL_COUNTERS), one __u64 each. */
struct dw_global_stats {
#define DW_GLOBAL_FIELD(field, metric, help) __u64 field;
	DW_GLOBAL_COUNTERS(DW_GLOBAL_FIELD)
#undef DW_GLOBAL_FIELD
};

/*
 * Callers (issue 16, doc/callers.md). A caller is the cgroup v2 id of the
 * task that connect()ed (outbound), or of the socket's owner for accepted
 * and adopted connections (the cgroup the socket was created in: for an
 * accepted one, its listener's). Each (destination slot, cgroup id) gets a
 * row once, at the connection's connect, accept or adoption (caller_slots
 * maps the key to the row); the connection keeps the row number, and each
 * call's end counts in its CPU's row of it (struct dw_caller_cpu_row,
 * issue 17), or in caller_stats[row] with atomic adds when that row is
 * busy; readers add the CPUs' rows. Row 0 is never handed out: a
 * connection that found no row left has caller 0, and its calls count for
 * the destination only (caller_map_full). In flight and the oldest
 * outstanding call come from the pending table
 * (dw_pending_entry.caller).
 */

struct dw_caller_key {
	__u64 cgroup_id;	/* 0: the owner could not be found (unknown) */
	__u32 slot;		/* the destination's slot */
	__u32 pad;
};

/* One caller row, shared by all CPUs (atomic adds, flushes of CPUs' rows); all zero until taken. */
struct dw_caller_stats {
	__u64 cgroup_id;
	__u32 slot;
	__u32 taken;		/* 1 once cgroup_id and slot are written (after the key's insert) */
	__u64 calls_failed;
	__u64 calls_slow;	/* completed, slower than their dependency's slow_call */
	/*
	 * Completed call durations (dw_caller_bucket); u32 wraps, readers take
	 * deltas. With the CPUs' rows' runs, their sum is the completed calls:
	 * a completion counts once, here or in a run (and in slow when slow).
	 */
	__u32 call[DW_CALLER_BUCKETS];
};

/*
 * Per-CPU rows of the caller rows (caller_cpu_rows, row * dw_ncpus + cpu),
 * for the same reason and with the same claim and seqcount as struct
 * dw_cpu_row: a call's end counts here, on a line of its CPU, instead of
 * in its caller row, which every CPU calling the destination from the
 * same cgroup shares. failed and slow are never folded (u64: they cannot
 * wrap); readers add them to the caller row's. The histogram runs work as
 * dw_cpu_row's, over the caller buckets (DW_ROW_RUNS of them: a 5.7x span).
 */
struct dw_caller_cpu_row {
	__u32 seq;		/* DW_ROW_BUSY, DW_ROW_FOLDING, folds * DW_ROW_GEN */
	__u32 pad;
	__u64 failed;
	__u64 slow;
	__u32 run[DW_ROW_RUNS];	/* unflushed completions, per caller bucket */
};

/*
 * Which hooks feed the call model (the BPF object's read-only dw_backend).
 * sock: the socket tracepoints sock_send_length, sock_recv_length and
 * sk_data_ready (Linux 6.3+); per-connection state in socket storage.
 * syscalls: the send and receive system call tracepoints; per-connection
 * state in a hash keyed by the socket's address (the tracepoint programs
 * cannot use socket storage).
 */
enum dw_backend { DW_BACKEND_SOCK = 0, DW_BACKEND_SYSCALLS = 1 };

/*
 * TLS discovery (issue 32): a process start, one record per exec into the
 * ring buffer tls_execs (bpf/tls/tlsexec.bpf.c), so the daemon scans that
 * process's maps for TLS libraries (user/discovery/tls/). Never one per call.
 */
struct dw_tls_exec {
	__u32 pid;		/* the thread group that exec'd */
	__u32 pad;
};
/* Bytes of the ring: 4096 starts between two reads of the daemon before one is lost (tls_exec_lost). */
#define DW_TLS_EXEC_RING (64 * 1024)

#endif /* DEPWATCH_H */
