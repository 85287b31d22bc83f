/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The cascade: who waits on whom, and retries. The thread that receives a
 * [service]'s request holds it (threads map) until it answers, so that an
 * outbound call it starts meanwhile is attributed to that request's row; a
 * call its caller abandons is remembered per (process, dependency) for
 * DW_RETRY_WINDOW_NS, and the process's next call to that dependency within
 * it is a retry.
 *
 * Needs, included before it: core/slots.bpf.h.
 */
#ifndef DEPWATCH_CASCADE_BPF_H
#define DEPWATCH_CASCADE_BPF_H

/* The sending thread's inbound request, if it holds one: the call waits on its behalf. */
static __always_inline const struct dw_thread_req *caller_of(void)
{
	struct dw_thread_req *req;
	__u32 tid;

	if (!*(volatile __u32 *)&dw_services_on)
		return 0;
	tid = (__u32)bpf_get_current_pid_tgid();
	req = bpf_map_lookup_elem(&threads, &tid);
	return req && req->active ? req : 0;
}

static __always_inline void abandon_key_of(struct dw_conn *conn, __u32 tgid,
					   struct dw_abandon_key *key)
{
	__builtin_memset(key, 0, sizeof(*key));
	key->tgid = tgid;
	key->dep_id = dep_id_of(conn);
	if (!key->dep_id)
		__builtin_memcpy(&key->dest, &conn->dest, sizeof(key->dest));
}

/* A new call from a process that abandoned one to the same dependency lately: a retry. */
static __always_inline void retry_check(struct dw_conn *conn, struct dw_dest_stats *st, __u64 now)
{
	__u32 dep_id = dep_id_of(conn);
	__u64 *newest = bpf_map_lookup_elem(&dep_abandoned, &dep_id);
	struct dw_abandon_key key;
	__u64 *at;

	if (!newest || now - *newest > DW_RETRY_WINDOW_NS)
		return;
	abandon_key_of(conn, bpf_get_current_pid_tgid() >> 32, &key);
	at = bpf_map_lookup_elem(&abandons, &key);
	if (!at || now - *at > DW_RETRY_WINDOW_NS)
		return;
	bpf_map_delete_elem(&abandons, &key);
	st->calls_retried++;
}

/* The caller closed the connection while its call was outstanding (process context). */
static __always_inline void call_abandon(struct dw_conn *conn)
{
	__u64 now = bpf_ktime_get_ns();
	struct dw_abandon_key key;
	struct dw_dest_stats *st;
	__u64 *newest;

	abandon_key_of(conn, bpf_get_current_pid_tgid() >> 32, &key);
	bpf_map_update_elem(&abandons, &key, &now, BPF_ANY);
	newest = bpf_map_lookup_elem(&dep_abandoned, &key.dep_id);
	if (newest)
		*newest = now;
	st = stats_of(conn);
	if (st)
		st->calls_abandoned++;
}

/* The thread took an inbound request of a service: it holds it until it answers. */
static __always_inline void thread_hold(const struct sock *sk, struct dw_conn *conn, __u32 tid)
{
	struct dw_thread_req *req = bpf_map_lookup_elem(&threads, &tid);
	struct dw_thread_req fresh = {
		.sk = (__u64)(unsigned long)sk,
		.netns = conn->dest.netns,
		.port = conn->dest.port,
		.active = 1,
	};

	if (req)
		*req = fresh;
	else
		bpf_map_update_elem(&threads, &tid, &fresh, BPF_ANY);
}

/*
 * The row's process, who answers on this port: noted once per connection
 * (like an outbound connection's at connect), at its first answer, or at
 * its first request where the receive is looked at anyway. Not at the
 * accept: that runs in softirq, where no process is current.
 */
static __always_inline void row_process(struct dw_conn *conn, __u32 tgid)
{
	struct dw_dest_stats *st;

	if (conn->process_noted)
		return;
	conn->process_noted = 1;
	st = stats_of(conn);
	if (!st)
		return;
	st->last_conn_ns = bpf_ktime_get_ns();
	st->last_pid = tgid;
	bpf_get_current_comm(st->last_comm, sizeof(st->last_comm));
}

/* The row is a configured [service]'s: its requests' threads are tracked. */
static __always_inline int is_service_conn(const struct dw_conn *conn)
{
	__u32 slot = conn->slot;
	struct dw_slot_cfg *cfg;

	/* no lookup at all on hosts without a [service] */
	if (!*(volatile __u32 *)&dw_services_on)
		return 0;
	cfg = bpf_map_lookup_elem(&slot_cfg, &slot);
	return cfg && cfg->service;
}

static __always_inline void thread_release(const struct sock *sk)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct dw_thread_req *req = bpf_map_lookup_elem(&threads, &tid);

	if (req && req->sk == (__u64)(unsigned long)sk)
		req->active = 0;
}

#endif /* DEPWATCH_CASCADE_BPF_H */
