/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * DNS's maps (dns/): the queries outstanding, each UDP socket's last
 * queries, the ports DNS is read on (which enforcement reads too, for a
 * resolver's UDP connect and sendmsg); __weak, one set for all programs
 * (core/maps.bpf.h says how).
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

/* A UDP socket's last queries (struct dw_dns_sock), read at its close: lives and dies with it. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct dw_dns_sock);
} dns_socks SEC(".maps") __weak;

/* 1 at the ports DNS is read on (dns_ports, by default 53); written by user space */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} dns_ports SEC(".maps") __weak;

#endif /* DEPWATCH_DNS_MAPS_BPF_H */
