// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The daemon's one clock for intervals and deadlines: CLOCK_MONOTONIC, as BPF's bpf_ktime_get_ns. */
#ifndef DW_HOST_CLOCK_H
#define DW_HOST_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t dw_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#endif /* DW_HOST_CLOCK_H */
