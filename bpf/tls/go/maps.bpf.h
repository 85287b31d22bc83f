/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Go's crypto/tls maps (tls/go/): the struct layouts user space found, and
 * each goroutine's state inside a Write or Read; __weak, one set for all
 * programs (core/maps.bpf.h says how).
 */
#ifndef DEPWATCH_GO_MAPS_BPF_H
#define DEPWATCH_GO_MAPS_BPF_H

#include "tls/go/gotls.h"

/* Go's crypto/tls (tls/go/gotls.bpf.c): the struct layouts, by attach cookie, set by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DW_GO_LAYOUTS);
	__type(key, __u32);
	__type(value, struct dw_go_layout);
} go_layouts SEC(".maps") __weak;

/*
 * A goroutine's state inside Go's TLS Write, keyed by (process, g). LRU: a goroutine that
 * exits leaves its entry to be evicted; none is refused for want of room.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, DW_GO_GOROUTINES);
	__type(key, struct dw_go_gkey);
	__type(value, struct dw_go_gstate);
} go_goroutines SEC(".maps") __weak;

#endif /* DEPWATCH_GO_MAPS_BPF_H */
