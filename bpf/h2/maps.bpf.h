/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The stream layer's maps (HTTP/2, h2/): the connections' HTTP/2 state and
 * the header blocks' ring to the daemon; __weak, one set for all programs
 * (core/maps.bpf.h says how).
 */
#ifndef DEPWATCH_H2_MAPS_BPF_H
#define DEPWATCH_H2_MAPS_BPF_H

#include "h2/h2.h"
#include "h2/hblock.h"

/*
 * HTTP/2 connections' state (struct dw_h2_conn: the walkers' places, the
 * open streams), made when a new connection's first bytes are cleartext
 * HTTP/2's (h2/streams.bpf.h): socket storage in the sock backend, a hash
 * keyed by the socket's address in the syscalls backend (deleted at
 * TCP_CLOSE, like conns_sk). 2.9 KiB a connection; none for any other.
 */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct dw_h2_conn);
} h2_conns SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DW_H2_CONNS_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct dw_h2_conn);
} h2_conns_sk SEC(".maps") __weak;

/*
 * Connections with HTTP/2 state now, and connections whose first received
 * bytes are still to be looked at (dw_conn.h2.seen DW_H2_RX_PENDING): the
 * sock backend's receive program, which runs at every copy to user space
 * of every socket, leaves at once while both are 0.
 */
__u32 dw_h2_live __weak;
__u32 dw_h2_pending __weak;

/*
 * The server's header blocks (HEADERS, CONTINUATION) to the daemon
 * (h2/hblock.bpf.h; the record is h2/hblock.h).
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, DW_HB_RING_BYTES);
} hblocks SEC(".maps") __weak;

#endif /* DEPWATCH_H2_MAPS_BPF_H */
