// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The floor (issue 17): the least any tracer on depwatch's hooks can cost.
 * One trivial program on every hook the sock backend attaches per event
 * (user/kernel/hooks.c's dw_prog_specs on a 6.3+ kernel, and the cgroup connect
 * hooks), each bumping a per-CPU counter and nothing else: what is left is
 * the kernel's dispatch of the hook itself (bpf_trace_run, the recursion
 * guard, the cgroup program array). iter/tcp runs once at start, not per
 * event: not here. make bench's arm 'floor' runs it through bench/floor.c.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

enum fl_hook { FL_SENDMSG, FL_RECV, FL_DATA_READY, FL_SET_STATE, FL_RETRANSMIT, FL_CONNECT, FL_HOOKS };

/* Invocations per hook, per CPU: no shared line, no atomic. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FL_HOOKS);
	__type(key, __u32);
	__type(value, __u64);
} fl_counts SEC(".maps");

/* hook is a constant at every call: an inlined array lookup and an add */
static __always_inline void count(__u32 hook)
{
	__u64 *n = bpf_map_lookup_elem(&fl_counts, &hook);

	if (n)
		(*n)++;
}

/*
 * Experiments, built only on request (FLOOR_CFLAGS=-DFLOOR_CLOCK and/or
 * -DFLOOR_STORAGE, into an OUT of their own; bench/README.md): the floor
 * plus one clock read per send (as a call timer needs: a call's start, an
 * inbound request's end), plus one socket-storage lookup per send and per
 * data_ready: what these helper calls cost on this machine, apart from any
 * call model.
 */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} fl_socks SEC(".maps");

static __always_inline void count_sk(__u32 hook, struct sock *sk, int clock)
{
	__u64 *n = bpf_map_lookup_elem(&fl_counts, &hook);

	if (!n)
		return;
	(*n)++;
#ifdef FLOOR_CLOCK
	if (clock)
		*n += bpf_ktime_get_ns() & 1;
#endif
#ifdef FLOOR_STORAGE
	*n += !!bpf_sk_storage_get(&fl_socks, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
#endif
}

SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(fl_sendmsg, struct sock *sk)
{
	count_sk(FL_SENDMSG, sk, 1);
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(fl_recv)
{
	count(FL_RECV);
	return 0;
}

SEC("tp_btf/sk_data_ready")
int BPF_PROG(fl_data_ready, struct sock *sk)
{
	count_sk(FL_DATA_READY, sk, 0);
	return 0;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(fl_set_state)
{
	count(FL_SET_STATE);
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(fl_retransmit)
{
	count(FL_RETRANSMIT);
	return 0;
}

/* cgroup/connect4|6 allow every connect (1), as depwatch's do unless a breaker is open. */
SEC("cgroup/connect4")
int fl_connect4(struct bpf_sock_addr *ctx)
{
	count(FL_CONNECT);
	return 1;
}

SEC("cgroup/connect6")
int fl_connect6(struct bpf_sock_addr *ctx)
{
	count(FL_CONNECT);
	return 1;
}
