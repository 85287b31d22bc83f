// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <math.h>
#include "logic/judge/cascade.h"

double dw_ewma(double prev, double sample, double dt_s, double tau_s)
{
	double alpha;

	if (prev < 0 || tau_s <= 0)
		return sample;
	if (dt_s <= 0)
		return prev;
	alpha = 1 - exp(-dt_s / tau_s);
	return prev + alpha * (sample - prev);
}

double dw_dep_wait_s(double p50_s, bool hanging, double timeout_s)
{
	if (hanging)
		return timeout_s > 0 ? timeout_s : INFINITY;
	return p50_s > 0 ? p50_s : 0;
}

static enum dw_pool_level level_of(const struct dw_pool_input *in, bool forecast)
{
	double share = in->inflight / in->pool;

	if (in->inflight >= in->pool)
		return DW_POOL_EXHAUSTED;
	if (forecast || share >= DW_POOL_WARN)
		return DW_POOL_WARNING;
	/* no flapping around the threshold: a warning stays until clearly below it */
	if (in->was != DW_POOL_OK && share >= DW_POOL_CLEAR)
		return DW_POOL_WARNING;
	return DW_POOL_OK;
}

void dw_pool_forecast(const struct dw_pool_input *in, struct dw_pool_forecast *out)
{
	double little, lat = in->latency_s;
	bool forecast;

	out->steady = in->arrival_rate > 0 ? in->arrival_rate * lat : 0;
	if (isnan(out->steady))
		out->steady = 0;
	little = lat > 0 ? in->arrival_rate - in->inflight / lat : in->arrival_rate;
	out->rising = in->rising > little ? in->rising : little;
	out->exhausted_in_s = -1;
	out->level = DW_POOL_OK;
	out->why = "";
	if (!in->pool)
		return;
	forecast = out->steady >= in->pool && in->inflight < in->pool && out->rising > 0;
	if (forecast)
		out->exhausted_in_s = (in->pool - in->inflight) / out->rising;
	out->level = level_of(in, forecast);
	if (out->level == DW_POOL_EXHAUSTED)
		out->why = "exhausted";
	else if (forecast)
		out->why = "forecast";
	else if (out->level == DW_POOL_WARNING)
		out->why = "pool_80pct";
}

const char *dw_pool_level_name(enum dw_pool_level level)
{
	switch (level) {
	case DW_POOL_WARNING:
		return "warning";
	case DW_POOL_EXHAUSTED:
		return "exhausted";
	default:
		return "ok";
	}
}

double dw_retry_ratio(double started, double retried)
{
	double originals = started - retried;

	if (started <= 0)
		return 0;
	if (retried <= 0)
		return 1;
	/* every retry has an original somewhere, even if it started before the period */
	if (originals < 1)
		originals = 1;
	return started / originals;
}

bool dw_retry_storm(double retry_ratio, bool dependency_slow)
{
	return dependency_slow && retry_ratio >= DW_RETRY_STORM_RATIO;
}

void dw_count_ring_push(struct dw_count_ring *r, uint64_t now_ns, uint64_t a, uint64_t b,
			uint64_t min_gap_ns)
{
	unsigned newest = (r->head + DW_COUNT_RING - 1) % DW_COUNT_RING;

	if (r->n && now_ns - r->ns[newest] < min_gap_ns)
		return;
	r->ns[r->head] = now_ns;
	r->a[r->head] = a;
	r->b[r->head] = b;
	r->head = (r->head + 1) % DW_COUNT_RING;
	if (r->n < DW_COUNT_RING)
		r->n++;
}

bool dw_count_ring_delta(const struct dw_count_ring *r, uint64_t now_ns, uint64_t a, uint64_t b,
			 uint64_t span_ns, uint64_t *da, uint64_t *db)
{
	/* oldest first: the first sample inside the span covers the most of it */
	for (unsigned k = r->n; k > 0; k--) {
		unsigned i = (r->head + DW_COUNT_RING - k) % DW_COUNT_RING;

		if (now_ns < r->ns[i] || now_ns - r->ns[i] > span_ns)
			continue;
		if (a < r->a[i] || b < r->b[i])
			return false;
		*da = a - r->a[i];
		*db = b - r->b[i];
		return true;
	}
	return false;
}
