/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * DNS's maps (dns/): the queries outstanding, each UDP socket's last
 * queries, the syscalls backend's DNS system calls in progress, the ports
 * DNS is read on (which enforcement reads too, for a resolver's UDP connect
 * and sendmsg); __weak, one set for all programs (core/maps.bpf.h says how).
 *
 * Needs, included before it: core/conn.bpf.h (struct dw_conn, in struct dns_work).
 */
#ifndef DEPWATCH_DNS_MAPS_BPF_H
#define DEPWATCH_DNS_MAPS_BPF_H

#include "dns/dnsmsg.h"

/* DNS over UDP (issue 35, dns/dnscall.bpf.h): the queries outstanding; their ports */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DW_DNS_QUERIES_DEFAULT);
	__type(key, struct dw_dns_key);
	__type(value, struct dw_dns_query);
} dns_queries SEC(".maps") __weak;

/*
 * A UDP socket's last queries (struct dw_dns_sock) by its address: read at
 * its close and at an answer from a sender not known. LRU: a socket whose
 * close was not seen (the close program withheld) leaves by age.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, DW_DNS_QUERIES_DEFAULT);
	__type(key, __u64);
	__type(value, struct dw_dns_sock);
} dns_socks SEC(".maps") __weak;

/*
 * The syscalls backend's DNS system calls in progress (dns/dnssys.bpf.h),
 * per thread: a send to a DNS port, a receive on a socket that asked.
 */
struct dns_sys_call {
	__u64 sk;
	__u64 arg;		/* the buffer, iovec array, msghdr or mmsghdr array (enum dns_kind) */
	__u64 len;		/* the buffer's length, the iovecs' or the messages' count */
	__u64 name;		/* sendto()'s and recvfrom()'s address, 0: none */
	__u64 namelen;		/* sendto(): its length; recvfrom(): where its length is */
	__u64 enter_ns;		/* a send's entry: its queries start there */
	__u32 kind;
	__u32 send;
};

/* A message's first DW_DNS_WINDOW bytes. */
struct dns_win {
	__u8 b[DW_DNS_WINDOW];
};

/*
 * One message for dns_sent() or dns_arrived(), and their room: a global
 * function takes it by one pointer, and it lives where the caller has
 * room (the sock backend's stack; the syscalls backend's record of the
 * system call, dns_sys, since its exit programs' frames leave too little
 * below them for a window and a borrowed connection).
 */
struct dns_work {
	struct dw_dest_key peer;	/* the resolver (family 0: not known) */
	struct dns_win w;		/* the message's first n bytes */
	struct dw_conn conn;		/* borrowed for the counting functions' row numbers */
	__u64 sock;			/* the socket's address */
	__u64 now;			/* a send's: its queries start there */
	__u32 n;
	__u32 quiet;			/* an arrival looked at before: its misses were counted then */
	__u32 early;			/* the sock backend's arrival: may come before its query (dns_early) */
};

/* dns_sys's value: the call, and the room its exit reads each message in (dns/dnscall.bpf.h) */
struct dns_sys_rec {
	struct dns_sys_call c;
	struct dns_work k;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct dns_sys_rec);
} dns_sys SEC(".maps") __weak;

/* A zeroed record to create dns_sys's from (too large for a program's stack). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dns_sys_rec);
} dns_sys_zero SEC(".maps") __weak;

/*
 * The sock backend's room for an arrival (sk_data_ready, dns/dnssock.bpf.h),
 * per CPU: the receive path runs with bottom halves off, so no two arrivals
 * on one CPU overlap.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dns_work);
} dns_arrivals SEC(".maps") __weak;

/*
 * Answers that came before their query (the sock backend times a query
 * from its send's end, and a resolver on loopback can answer inside the
 * send: its softirq runs the resolver's wakeup before the sender returns).
 * The send's end claims its answer here (a call of about 0 ms, counted
 * once, as every query is); the sweep counts one left for a second
 * unmatched. LRU: more than its entries at once and the oldest leave
 * uncounted.
 */
struct dw_dns_early {
	__u64 at_ns;
	__u32 rcode;
	__u32 quiet;	/* seen at a quiet look (dns_work): uncounted if no send claims it */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 256);
	__type(key, struct dw_dns_key);
	__type(value, struct dw_dns_early);
} dns_early SEC(".maps") __weak;

#define DW_DNS_EARLY_NS 1000000000ULL

/*
 * The sock backend's arrivals not seen (dns/dnssock.bpf.h): per socket, the
 * datagrams a reader already running in recv took between their enqueue
 * and the wake-up that looks for them; each is read at its read instead,
 * loudly. LRU: a socket's entry outlives nothing it needs to.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, __u32);
} dns_unseen SEC(".maps") __weak;

/* 1 at the ports DNS is read on (dns_ports, by default 53); written by user space */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} dns_ports SEC(".maps") __weak;

#endif /* DEPWATCH_DNS_MAPS_BPF_H */
