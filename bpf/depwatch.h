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

/* family value of the row that collects destinations the map had no room for */
#define DW_FAMILY_OVERFLOW 0

/* A destination: one (network namespace, family, address, port). */
struct dw_dest_key {
	__u32 netns;	/* inode number of the network namespace */
	__u16 family;	/* AF_INET, AF_INET6, or DW_FAMILY_OVERFLOW */
	__u16 port;	/* host byte order */
	__u8 addr[16];	/* IPv4 (and IPv4-mapped IPv6) in the first 4 bytes */
};

/*
 * Per-CPU counters of one destination. Everything is cumulative since the
 * map was created; user space sums the CPUs and takes differences.
 * In flight = calls_started - calls_completed - calls_failed.
 * Connecting = connect_attempts - connects_ok - connect failures.
 */
struct dw_dest_stats {
	__u64 calls_started;
	__u64 calls_completed;
	__u64 calls_failed;
	__u64 call_ns_sum;		/* sum of completed call durations */
	__u64 connect_attempts;
	__u64 connects_ok;
	__u64 connect_refused;		/* RST in answer to the SYN */
	__u64 connect_timedout;		/* SYN never answered */
	__u64 connect_other;		/* aborted, unreachable, closed while connecting */
	__u64 connect_ns_sum;		/* sum of successful connect durations */
	__u64 retransmits;
	__u64 last_call_ns;		/* CLOCK_MONOTONIC start of this CPU's newest call */
	__u32 last_pid;			/* thread group id of that call's sender */
	char last_comm[DW_COMM_LEN];	/* its command name, as the kernel has it (not escaped) */
	__u32 pad;
};

/* Histograms of one destination, shared by all CPUs (atomic adds). */
struct dw_dest_hist {
	__u32 call[DW_HIST_BUCKETS];	/* completed call durations; u32 wraps, readers take deltas */
	__u32 connect[DW_HIST_BUCKETS];	/* successful connect durations */
};

enum dw_role {
	DW_ROLE_NONE = 0,
	DW_ROLE_OUTBOUND = 1,	/* this host called connect() */
};

/* Socket-local state (SK_STORAGE): lives and dies with the socket. */
struct dw_conn {
	struct dw_dest_key dest;	/* row its counters go to (the overflow row if the map was full) */
	__u64 call_start_ns;		/* 0: no call outstanding */
	__u64 connect_start_ns;		/* 0: not connecting */
	__u8 role;			/* enum dw_role */
	__u8 pad[7];
};

/* Global per-CPU counters of things that went wrong in the kernel side. */
struct dw_global_stats {
	__u64 dest_map_full;	/* events whose destination had no row: counted in the overflow row */
	__u64 hist_map_full;	/* completions not added to a histogram */
	__u64 conn_storage_fail;	/* sockets that could not get socket-local storage */
};

/* What the oldest-outstanding scan (iterator) emits for each busy socket. */
enum dw_pending_kind {
	DW_PENDING_CALL = 1,
	DW_PENDING_CONNECT = 2,
};

struct dw_pending {
	struct dw_dest_key dest;
	__u64 start_ns;
	__u32 kind;	/* enum dw_pending_kind */
	__u32 pad;
};

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

#endif /* DEPWATCH_H */
