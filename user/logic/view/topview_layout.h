/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * depwatch top, the pure part's second half: a frame read by topview.h
 * put into lines of text, which columns fit a width and what each cell
 * says. Apart from topview.h because the daemon's side (report.c writes
 * the answer) needs the fields and never the drawing; user/cli/top.c draws
 * these lines.
 */
#ifndef DW_TOPVIEW_LAYOUT_H
#define DW_TOPVIEW_LAYOUT_H

#include <stdbool.h>
#include <time.h>
#include "logic/base/jsonw.h"
#include "logic/view/topview.h"

/* Below the table when a row's P50 is marked. */
#define DW_TOP_BURST_LEGEND "* P50/P99 of multiplexed or pipelined connections: burst timings, not one request's"
/* Below it when a row's STREAMS is marked. */
#define DW_TOP_DESYNC_LEGEND "! STREAMS: an HTTP/2 connection's frames were lost (h2_desync): its calls since are bursts"

/* The columns, in the order they are drawn. */
enum dw_top_col {
	DW_TOP_COL_NAME,
	DW_TOP_COL_DESTS,
	DW_TOP_COL_RATE,
	DW_TOP_COL_P50,
	DW_TOP_COL_P99,
	DW_TOP_COL_SLOW,
	DW_TOP_COL_FAIL,
	DW_TOP_COL_INFLIGHT,
	DW_TOP_COL_OLDEST,
	DW_TOP_COL_BREAKER,
	DW_TOP_COL_REJECTED,
	DW_TOP_COL_CONNS,
	DW_TOP_COL_CALLS,
	DW_TOP_COL_FAILED,
	DW_TOP_COL_MUX,
	DW_TOP_COL_ABORTED,
	DW_TOP_COL_STREAMS,
	DW_TOP_NCOLS
};

/* The columns that fit a width, in drawing order, and the width of each. */
struct dw_top_layout {
	int n;
	enum dw_top_col col[DW_TOP_NCOLS];
	int width[DW_TOP_NCOLS];
};

/* A cell's text, in a buffer of DW_TOP_CELL_LEN (or a string of r's); durations: dw_format_ms_cell. */
#define DW_TOP_CELL_LEN 64
/* brief: the shorter text drawn when the cell is wider than its column (if the column has one). */
const char *dw_top_cell(const struct dw_top_row *r, enum dw_top_col col, bool brief, char *buf);

/* The most important columns that fit in width; spare width goes to the name, then the breaker. */
void dw_top_layout(const struct dw_top_frame *f, int width, struct dw_top_layout *lay);

/* Lines without a newline, padded to the layout's full width. */
void dw_top_titles(const struct dw_top_layout *lay, struct dw_buf *out);
void dw_top_row_text(const struct dw_top_layout *lay, const struct dw_top_row *r,
		     struct dw_buf *out);
/* "    <- payments-api.service   calls 30  inflight 1  p99 2.1ms": a caller under its row. */
void dw_top_caller_text(const struct dw_top_caller *c, struct dw_buf *out);
/* "depwatch top  14:03:27  3 dependencies, 1 open" and what else there is to say. */
void dw_top_header(const struct dw_top_frame *f, const struct tm *when, struct dw_buf *out);

#endif /* DW_TOPVIEW_LAYOUT_H */
