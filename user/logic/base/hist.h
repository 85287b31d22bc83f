/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Bucket bounds and percentiles of the latency histograms the BPF side
 * fills with dw_hist_bucket().
 */
#ifndef DW_HIST_H
#define DW_HIST_H

#include <stdint.h>

#include "logic/base/dwtypes.h"

/* Inclusive lower bound of bucket b in ns; UINT64_MAX for b out of range. */
uint64_t dw_hist_lower_ns(unsigned b);

/* Exclusive upper bound of bucket b in ns; UINT64_MAX for the last bucket. */
uint64_t dw_hist_upper_ns(unsigned b);

/* Midpoint of bucket b; the last bucket has no upper end, so its lower bound. */
double dw_hist_value_ns(unsigned b);

/* Sum of counts[0..DW_HIST_BUCKETS). */
uint64_t dw_hist_total(const uint64_t *counts);

/*
 * Nearest-rank q-quantile (0 < q <= 1) of a dense histogram: the value of
 * the bucket holding rank ceil(q * total). -1.0 when the histogram is empty
 * or q is out of range.
 */
double dw_hist_percentile_ns(const uint64_t *counts, double q);

/*
 * The coarse buckets a latency histogram is exported with (Prometheus
 * `le` bounds): DW_HIST_COARSE of them, the last one +Inf. A fine bucket
 * counts in the smallest coarse bucket whose bound is at or above its
 * (exclusive) upper bound, so a count at a bound never holds a call slower
 * than the bound, and misses at most the calls of the one fine bucket that
 * straddles it: exact up to that bucket's width, at most 6.25% of its
 * lower bound.
 */
#define DW_HIST_COARSE 16

/* Upper bound of coarse bucket i in ns (UINT64_MAX: +Inf, also for i out of range). */
uint64_t dw_hist_coarse_ns(unsigned i);

/* Its `le` text: "0.001" ... "60", "+Inf". */
const char *dw_hist_coarse_le(unsigned i);

/* The coarse bucket fine bucket b counts in. */
unsigned dw_hist_coarse_of(unsigned b);

#endif /* DW_HIST_H */
