/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What `depwatch status` prints: JSON for machines, a table for people. */
#ifndef DW_REPORT_H
#define DW_REPORT_H

#include <stdint.h>
#include "logic/base/jsonw.h"

struct dw_collector;
struct dw_control_figs;
struct dw_deps;
struct dw_services;
struct dw_tls;

struct dw_run_info {
	uint64_t started_ns;	/* CLOCK_MONOTONIC */
	uint64_t interval_ns;
	uint64_t window_ns;
	unsigned max_dests;
	unsigned max_series;	/* --max-series: destinations listed in status (text), 0 no cap */
	unsigned json_max_series;	/* status --json --max-series N: the same for JSON, 0 (default) no cap */
	unsigned max_conns;	/* the syscalls backend's connection map; 0: socket storage, no size */
	const char *backend;
	const char *programs;	/* the start-up line's attached / not attached text */
	const struct dw_control_figs *control;	/* the control socket's clients, as of the request */
	const struct dw_tls *tls;	/* the TLS discovery (user/discovery/tls/); NULL: none */
};

void dw_report_json(struct dw_buf *out, const struct dw_collector *c, const struct dw_deps *deps,
		    const struct dw_services *svcs, const struct dw_run_info *info);
void dw_report_text(struct dw_buf *out, const struct dw_collector *c, const struct dw_deps *deps,
		    const struct dw_services *svcs, const struct dw_run_info *info);

/*
 * For `depwatch top`: a header line, then one line per dependency, fields
 * separated by tabs (names are escaped and never hold a tab):
 * name dests calls failed p50_ms p99_ms slow_rate failure_rate inflight max_inflight
 * oldest_ms breaker reason rejected conns forced. Percentiles are -1 when there are no calls.
 */
void dw_report_tsv(struct dw_buf *out, const struct dw_collector *c, const struct dw_deps *deps,
		   const struct dw_services *svcs);

#endif /* DW_REPORT_H */
