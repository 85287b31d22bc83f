/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Histogram bucket choice, the same in the kernel and in user space (a pure
 * header: dwcompat.h). Two geometries: the destinations' call and connect
 * histograms (struct dw_dest_detail) and the callers' (struct
 * dw_caller_stats).
 */
#ifndef DEPWATCH_BUCKET_H
#define DEPWATCH_BUCKET_H

#include "dwcompat.h"

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

/*
 * Caller histograms: 1.024 us units (ns >> 10); values below 4 units each have
 * a bucket, above that every power of two is split into 4 linear
 * sub-buckets: a bucket is at most 25% of its lower bound wide (a
 * percentile within +-12.5% taking the bucket's middle), from 4 us to
 * 2^33 us; the last bucket takes everything above.
 */
#define DW_CALLER_UNIT_SHIFT 10
#define DW_CALLER_SUB_BITS 2
#define DW_CALLER_SUB (1U << DW_CALLER_SUB_BITS)
#define DW_CALLER_BUCKETS 128

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

/* The caller histogram bucket of a duration in nanoseconds; the same in kernel and user space. */
static __always_inline __u32 dw_caller_bucket(__u64 ns)
{
	__u64 v = ns >> DW_CALLER_UNIT_SHIFT;
	__u32 k, b;

	if (v < DW_CALLER_SUB)
		return v;
	k = dw_log2(v);
	b = DW_CALLER_SUB + (k - DW_CALLER_SUB_BITS) * DW_CALLER_SUB +
	    ((v >> (k - DW_CALLER_SUB_BITS)) & (DW_CALLER_SUB - 1));
	return b < DW_CALLER_BUCKETS ? b : DW_CALLER_BUCKETS - 1;
}

#endif /* DEPWATCH_BUCKET_H */
