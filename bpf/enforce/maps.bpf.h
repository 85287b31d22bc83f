/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Enforcement's map (enforce/): the breakers' entries the daemon writes
 * (leased) and the connect hooks and the abort iterators read; __weak, one
 * set for all programs (core/maps.bpf.h says how). Its layout is the ABI
 * other programs and tools read too (depwatch.h).
 */
#ifndef DEPWATCH_ENFORCE_MAPS_BPF_H
#define DEPWATCH_ENFORCE_MAPS_BPF_H

#include "depwatch.h"

/* Breaker states, for other programs and tools; see struct dw_breaker_value. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DW_BREAKERS_MAX);
	__type(key, struct dw_breaker_key);
	__type(value, struct dw_breaker_value);
} breakers SEC(".maps") __weak;

#endif /* DEPWATCH_ENFORCE_MAPS_BPF_H */
