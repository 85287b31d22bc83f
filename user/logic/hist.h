/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Bucket bounds and percentiles of the latency histograms the BPF side
 * fills with dw_hist_bucket().
 */
#ifndef DW_HIST_H
#define DW_HIST_H

#include <stdint.h>

#include "dwtypes.h"

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

#endif /* DW_HIST_H */
