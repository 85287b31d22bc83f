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

#define DW_COMM_LEN 16

/*
 * Latency histogram: 64 ns units; values below 16 units each have a bucket
 * of their own, above that every power of two is split into 16 linear
 * sub-buckets. A bucket is at most 1/16 (6.25%) of its lower bound wide,
 * and at 1 us a 64 ns bucket is 6.4% wide. The last bucket starts at
 * 31 * 2^26 units (133 s) and takes everything above.
 */
#define DW_HIST_UNIT_SHIFT 6
#define DW_HIST_SUB_BITS 4
#define DW_HIST_SUB (1U << DW_HIST_SUB_BITS)
#define DW_HIST_MAX_LOG2 30
#define DW_HIST_BUCKETS (DW_HIST_SUB + (DW_HIST_MAX_LOG2 - DW_HIST_SUB_BITS + 1) * DW_HIST_SUB)

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
	__u32 pad;
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
 * Per-CPU rows of the per-call counters (issue 17): the call histogram and
 * the start-time slices, counted on a line no other CPU writes, and moved to
 * the shared row (struct dw_dest_detail) now and then. One row per (slot,
 * CPU) in the cpu_rows map, at index slot * dw_ncpus + cpu: 64 bytes, one
 * cache line (the map is mmapable, so its rows are page-aligned), 16 MiB at
 * 64 CPUs x 4096 slots. Without them every call from several CPUs to one
 * destination moved the slice line and a histogram line between their
 * caches (bench/RESULTS.md, issue 17).
 *
 * Slices: the row counts the calls started, and ended, in one slice (its
 * `slice`). A start or an end in a newer slice first folds the row's counts
 * into the shared slice, then moves the row to the new slice. An end whose
 * call started in an older slice than the row's (a call longer than the rest
 * of its slice, or started on a CPU whose row was behind) counts in the
 * shared slice, as before the per-CPU rows. A row that stops moving keeps
 * its counts: readers add them by slice number, so nothing has to flush it.
 *
 * Histogram: not a per-CPU copy (1.75 KiB per slot per CPU, 0.45 GiB at 64
 * CPUs x 4096 slots) but DW_ROW_RUNS counters, each for one bucket: bucket b
 * counts in run[b % DW_ROW_RUNS] while that run holds b or nothing; a run
 * that holds another bucket is flushed first (one atomic add to the shared
 * histogram). Latencies cluster: DW_ROW_RUNS neighbouring buckets (a span of
 * 2^(10/16) = 1.5x above 1 us) never evict each other. A run is
 * (bucket + 1) << DW_ROW_RUN_SHIFT | count, 0 when empty.
 *
 * Who writes a row: only programs on its CPU, but a program in softirq
 * context (sk_data_ready, tcp_retransmit_skb) can interrupt one in task
 * context (tcp_sendmsg_locked, the syscalls backend's tracepoints) between
 * any two instructions, and a preemptible program can be preempted by a
 * task running another. So a program first claims the row: one
 * compare-and-swap setting DW_ROW_BUSY in seq (a local line: ~20 cycles).
 * A program that finds the row busy was, necessarily, interrupting its
 * holder on this CPU: it must not wait for it, and counts in the shared
 * row instead (atomic adds, exact). The holder then updates the row with
 * plain stores, which nothing else writes, and releases it.
 *
 * Readers (the daemon, another CPU) see a fold as a seqcount: the holder
 * sets DW_ROW_FOLDING (an atomic, a full barrier) before it adds the row's
 * counts to the shared row, and adds 1 at the end, which clears both bits
 * and counts one more fold (seq += DW_ROW_GEN). A reader loads seq, then
 * the rows and the shared row, then seq again (acquire order); it retries
 * if a fold was in progress at either load or seq / DW_ROW_GEN changed:
 * otherwise no count it read was in both places or in neither. Plain
 * updates (no fold) only grow the row's counts; a reader may see each
 * before or after, as it would see a shared counter's atomic add.
 *
 * Slots are never reused while the maps live (DW_SLOT_OVERFLOW's comment),
 * so rows are never reset: like the shared counters, a row's counts belong
 * to its slice number, and a reader ignores any count of a slice older than
 * the newest its ring position (slice % DW_SLICES) has seen anywhere.
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
};

/*
 * The abort iterators (iter/tcp, run by the daemon on demand: at a breaker
 * opening, at each poll while open, and when an abort_after deadline is
 * due) write one of these for each connection they chose: dw_abort for each
 * it aborted (bpf_sock_destroy) or failed to, dw_abort_list (kernels
 * without the kfunc) for each the daemon is to abort through sock_diag's
 * SOCK_DESTROY, which finds it by its 4-tuple and checks its cookie.
 */
enum dw_abort_reason { DW_ABORT_BREAKER = 1, DW_ABORT_TIMEOUT = 2 };

/* The socket as sock_diag looks it up (struct inet_diag_sockid). */
struct dw_abort_sock {
	__u64 cookie;			/* bpf_get_socket_cookie(): the same socket, not one reusing its 4-tuple */
	__u8 saddr[16];			/* local; AF_INET: the first 4 bytes */
	__u8 daddr[16];			/* remote */
	__u16 family;			/* the socket's: AF_INET, or AF_INET6 (also for IPv4-mapped peers) */
	__u16 sport, dport;		/* network byte order, as sock_diag takes them */
	__u16 pad;
	__u32 ifindex;			/* the device it is bound to, 0: none */
	__u32 pad2;
};

struct dw_abort_record {
	struct dw_dest_key dest;	/* the connection's destination (its row's key) */
	__u32 dep_id;			/* its configured dependency, 0: none */
	__u32 slot;
	__u8 reason;			/* enum dw_abort_reason */
	__u8 had_call;			/* a call was outstanding: its caller got the error */
	__u8 failed;			/* bpf_sock_destroy() refused: counted, not retried */
	__u8 pad;
	__s32 err;			/* what bpf_sock_destroy() returned */
	struct dw_abort_sock sock;
};

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
 * set, dest zero) and per destination on its own that is not closed
 * (dep_id 0, dest set). The daemon rewrites each entry every interval
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

enum dw_role {
	DW_ROLE_NONE = 0,
	DW_ROLE_OUTBOUND = 1,	/* this host called connect() */
	DW_ROLE_INBOUND = 2,	/* accepted from a listener: calls are requests this host answers */
};

/* Socket-local state (SK_STORAGE): lives and dies with the socket. */
struct dw_conn {
	struct dw_dest_key dest;	/* its peer (the overflow key if no slot was left for it) */
	__u32 slot;			/* its row in dest_stats, dest_details and slot_cfg (DW_SLOT_OVERFLOW: none left) */
	__u32 pend;			/* its entry in the pending table + 1; 0: none (table full) */
	__u64 call_start_ns;		/* 0: no call outstanding */
	__u64 connect_start_ns;		/* 0: not connecting */
	__u64 last_ns;			/* its newest event: adoption or a call's end (CLOCK_MONOTONIC) */
	__u32 req_seq;			/* outbound: TCP sequence number of the outstanding call's first byte */
	__u32 rcv_seq;			/* outbound, syscalls backend: rcv_nxt when the outstanding call's send began */
	__u32 closed;			/* 1 once nothing can answer: TCP_CLOSE, or outbound the peer's FIN */
	__u32 sender_tid;		/* outbound: the thread that sent the outstanding call (0: unknown) */
	__u32 sender_nvcsw;		/* its voluntary context switches then (low 32 bits): did it wait since */
	__u8 role;			/* enum dw_role */
	__u8 established;		/* counted in conns_opened, not yet in conns_closed */
	__u8 process_noted;		/* inbound: its first request's process went to the row */
	__u8 multiplexed;		/* seen carrying overlapping requests: its calls are burst timings */
	__u8 goodbye;			/* inbound: the client closed right behind the outstanding request */
	__u8 overlaps;			/* outbound: data seen that the peer sent before it had the request */
	__u8 abort_failed;		/* bpf_sock_destroy() refused it once, or it went to sock_diag: the abort iterators leave it alone */
	__u8 pad;
	__u32 caller;			/* its row in caller_stats (issue 16), taken once; 0: none */
};

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
	  "Connections whose caller found no row left: their calls count for the destination only.")

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
 *
 * The histogram: 1.024 us units (ns >> 10); values below 4 units each have
 * a bucket, above that every power of two is split into 4 linear
 * sub-buckets: a bucket is at most 25% of its lower bound wide (a
 * percentile within +-12.5% taking the bucket's middle), from 4 us to
 * 2^33 us; the last bucket takes everything above.
 */
#define DW_CALLER_UNIT_SHIFT 10
#define DW_CALLER_SUB_BITS 2
#define DW_CALLER_SUB (1U << DW_CALLER_SUB_BITS)
#define DW_CALLER_BUCKETS 128
#define DW_CALLER_ROWS_DEFAULT 4096

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

/* floor(log2(v)) for v > 0, without loops (the verifier likes it). */
static __always_inline __u32 dw_log2(__u64 v)
{
	__u32 r = 0, shift;

	shift = (v > 0xFFFFFFFFULL) << 5; v >>= shift; r |= shift;
	shift = (v > 0xFFFF) << 4; v >>= shift; r |= shift;
	shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
	shift = (v > 0xF) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

/* The histogram bucket of a duration in nanoseconds; the same in kernel and user space. */
static __always_inline __u32 dw_hist_bucket(__u64 ns)
{
	__u64 v = ns >> DW_HIST_UNIT_SHIFT;
	__u32 k;

	if (v < DW_HIST_SUB)
		return v;
	k = dw_log2(v);
	if (k > DW_HIST_MAX_LOG2)
		return DW_HIST_BUCKETS - 1;
	return DW_HIST_SUB + (k - DW_HIST_SUB_BITS) * DW_HIST_SUB +
	       ((v >> (k - DW_HIST_SUB_BITS)) & (DW_HIST_SUB - 1));
}

/* The caller histogram bucket of a duration in nanoseconds; the same in kernel and user space. */
static __always_inline __u32 dw_caller_bucket(__u64 ns)
{
	__u64 v = ns >> DW_CALLER_UNIT_SHIFT;
	__u32 k, b;

	if (v < DW_CALLER_SUB)
		return v;
	k = dw_log2(v);
	b = DW_CALLER_SUB + (k - DW_CALLER_SUB_BITS) * DW_CALLER_SUB +
	    ((v >> (k - DW_CALLER_SUB_BITS)) & (DW_CALLER_SUB - 1));
	return b < DW_CALLER_BUCKETS ? b : DW_CALLER_BUCKETS - 1;
}

#endif /* DEPWATCH_H */
