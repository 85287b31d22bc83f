/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Claiming slots and callers: who a connection is. At its connect, accept
 * or adoption a connection gets its destination's slot (dest_slots, once
 * per destination, never reused), its dependency (the match trie, kept per
 * slot in slot_cfg), its caller row (caller_slots, per slot and cgroup) and
 * a pending-table entry; the per-call path then indexes arrays with the
 * numbers the connection keeps.
 *
 * Needs, included before it: core/sockread.bpf.h, layers/conn.bpf.h (a new connection's layers).
 */
#ifndef DEPWATCH_SLOTS_BPF_H
#define DEPWATCH_SLOTS_BPF_H

/* The configured dependency of the connection's destination, 0 for none. */
static __always_inline __u32 dep_id_of(const struct dw_conn *conn)
{
	__u32 slot = conn->slot;
	struct dw_slot_cfg *cfg = bpf_map_lookup_elem(&slot_cfg, &slot);

	return cfg ? cfg->dep_id : 0;
}

static __always_inline struct dw_dep_cfg *dep_cfg_of(struct dw_conn *conn)
{
	__u32 dep_id = dep_id_of(conn);

	return bpf_map_lookup_elem(&dep_cfg, &dep_id);
}

/* The configured dependency of a destination: the trie's longest prefix, then its first rule holding the port. */
static __always_inline __u32 dep_of(const struct dw_dest_key *dest)
{
	struct dw_match_key key = { .prefixlen = 32 + (dest->family == AF_INET ? 32 : 128) };
	struct dw_match_rules *rules;

	if (dest->family == DW_FAMILY_OVERFLOW)
		return 0;
	*(__u32 *)key.data = bpf_htonl(dest->family);
	__builtin_memcpy(key.data + 4, dest->addr, 16);
	rules = bpf_map_lookup_elem(&dep_match, &key);
	if (!rules)
		return 0;
	for (int i = 0; i < DW_MATCH_RULES; i++) {
		if (i >= (int)rules->n)
			break;
		if (dest->port >= rules->rule[i].port_lo && dest->port <= rules->rule[i].port_hi)
			return rules->rule[i].dep_id;
	}
	return 0;
}

static __always_inline __u16 is_service_port(__u32 port)
{
	__u8 *svc = bpf_map_lookup_elem(&service_ports, &port);

	return svc && *svc;
}

/* What the per-call path needs of a new slot's configuration; user space rewrites it at reloads. */
static __always_inline void slot_cfg_fill(__u32 slot, const struct dw_dest_key *dest)
{
	struct dw_slot_cfg *cfg = bpf_map_lookup_elem(&slot_cfg, &slot);

	if (!cfg)
		return;
	if (dest->family == DW_FAMILY_INBOUND) {
		cfg->dep_id = 0;
		cfg->service = is_service_port(dest->port);
		return;
	}
	cfg->dep_id = dep_of(dest);
	cfg->service = 0;
}

/*
 * The destination's slot, taken on first sight. With none left (or the
 * dest_slots map full) it goes to the overflow row, dest becomes the
 * overflow key, counted. Two CPUs racing for a new destination both take a
 * number; the loser's insert fails and it uses the winner's slot, leaving
 * its own unused (all zero, user space skips it).
 */
static __always_inline __u32 dest_claim(struct dw_dest_key *dest)
{
	struct dw_dest_detail *detail;
	__u32 *have, slot;

	have = bpf_map_lookup_elem(&dest_slots, dest);
	if (have)
		return *have;
	/* checked before taking one, so the counter stops at the limit (no wrap) */
	slot = *(volatile __u32 *)&dw_slots_taken + 1;
	if (slot < dw_max_slots)
		slot = __sync_fetch_and_add(&dw_slots_taken, 1) + 1;
	if (slot >= dw_max_slots || bpf_map_update_elem(&dest_slots, dest, &slot, BPF_NOEXIST)) {
		have = bpf_map_lookup_elem(&dest_slots, dest);
		if (have)
			return *have;
		global_count(G_dest_map_full);
		__builtin_memcpy(dest, (const void *)&overflow_key, sizeof(*dest));
		return DW_SLOT_OVERFLOW;
	}
	slot_cfg_fill(slot, dest);
	/* after the insert: a slot whose dest is set is never a race's loser */
	detail = bpf_map_lookup_elem(&dest_details, &slot);
	if (detail)
		detail->dest = *dest;
	return slot;
}

/*
 * The caller row of (slot, cgroup_id), taken on first sight like a
 * destination's slot (see dest_claim); 0 with none left, counted.
 */
static __always_inline __u32 caller_claim(__u32 slot, __u64 cgroup_id)
{
	struct dw_caller_key key = { .cgroup_id = cgroup_id, .slot = slot };
	struct dw_caller_stats *row;
	__u32 *have, idx;

	have = bpf_map_lookup_elem(&caller_slots, &key);
	if (have)
		return *have;
	idx = *(volatile __u32 *)&dw_callers_taken + 1;
	if (idx < DW_CALLER_ROWS_DEFAULT)
		idx = __sync_fetch_and_add(&dw_callers_taken, 1) + 1;
	if (idx >= DW_CALLER_ROWS_DEFAULT ||
	    bpf_map_update_elem(&caller_slots, &key, &idx, BPF_NOEXIST)) {
		have = bpf_map_lookup_elem(&caller_slots, &key);
		if (have)
			return *have;
		global_count(G_caller_map_full);
		return 0;
	}
	row = bpf_map_lookup_elem(&caller_stats, &idx);
	if (row) {
		row->cgroup_id = cgroup_id;
		row->slot = slot;
		/* after the insert and the key: a taken row is never a race's loser */
		__sync_fetch_and_add(&row->taken, 1);
	}
	return idx;
}

/*
 * Connection level: marks sk outbound, towards its current peer, or
 * inbound, on its listening port's row, called by cgroup_id.
 */
static __always_inline struct dw_conn *conn_adopt_as(const struct sock *sk, __u8 role, __u64 cgroup_id)
{
	struct dw_pending_entry *e;
	struct dw_conn *conn;

	conn = conn_create(sk);
	if (!conn) {
		global_count(G_conn_storage_fail);
		return 0;
	}
	if (role == DW_ROLE_INBOUND)
		inbound_row_of(sk, &conn->dest);
	else
		dest_of(sk, &conn->dest);
	conn->slot = dest_claim(&conn->dest);
	conn->caller = caller_claim(conn->slot, cgroup_id);
	conn->role = role;
	conn->call_start_ns = 0;
	conn->connect_start_ns = 0;
	conn->req_seq = 0;
	conn->closed = 0;
	conn->established = 0;
	conn->process_noted = 0;
	conn->multiplexed = 0;
	conn->overlaps = 0;
	conn->goodbye = 0;
	/* a new connection on this socket: each layer's state afresh (the seam's) */
	layers_conn_begins(conn);
	conn->last_ns = bpf_ktime_get_ns();
	if (!conn->pend)
		conn->pend = pend_take();
	e = pend_of(conn);
	if (e) {
		e->call_start_ns = 0;
		e->connect_start_ns = 0;
		e->slot = conn->slot;
		e->caller = conn->caller;
		e->flags = 0;
	}
	return conn;
}

/* The same, the caller being the socket's owner: accepted and adopted connections. */
static __always_inline struct dw_conn *conn_adopt(const struct sock *sk, __u8 role)
{
	return conn_adopt_as(sk, role, sk_cgroup_id(sk));
}

#endif /* DEPWATCH_SLOTS_BPF_H */
