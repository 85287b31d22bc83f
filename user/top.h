/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * depwatch top: a live table of the dependencies, worst first, built from
 * the daemon's "top tsv" answer. What is here is pure (no I/O, no curses):
 * parsing the answer, the calls per second between two answers, the order
 * of the rows, which columns fit a width, and the text of each line. top.c
 * asks the daemon and draws these lines.
 */
#ifndef DW_TOP_H
#define DW_TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>
#include "logic/jsonw.h"

/* The fields of a "top tsv" row, in order; a newer daemon may append more. */
#define DW_TOP_FIELDS 16
/*
 * Two more that a daemon with multiplexed-connection counters appends,
 * "multiplexed_conns" and "burst_timings": read when the header has them.
 */
#define DW_TOP_FIELDS_MUX 18
/* A longer field is not something the daemon sends: the line is rejected. */
#define DW_TOP_FIELD_MAX 255
/* A cleaned field: each byte may have become "\xhh". */
#define DW_TOP_TEXT_LEN (4 * DW_TOP_FIELD_MAX + 1)
#define DW_TOP_WORD_LEN 16
/* Width of the one frame printed when stdout is not a terminal. */
#define DW_TOP_PLAIN_WIDTH 120

enum dw_top_state { DW_TOP_OPEN, DW_TOP_HALF_OPEN, DW_TOP_CLOSED, DW_TOP_OTHER };

struct dw_top_row {
	char name[DW_TOP_TEXT_LEN];	/* safe to print: printable ASCII only */
	char breaker[DW_TOP_WORD_LEN];	/* closed, open, half_open */
	/* none, slow_rate, failure_rate, concurrency, forced */
	char reason[DW_TOP_WORD_LEN];
	enum dw_top_state state;
	unsigned long long dests, calls, failed, inflight, max_inflight, rejected, conns;
	double p50_ms, p99_ms;		/* -1: no call in the window */
	double slow_rate, failure_rate;	/* 0..1 */
	double oldest_ms;
	double calls_per_s;		/* -1: unknown (first frame, or the count went back) */
	bool forced;
	unsigned long long mux_conns;	/* connections seen multiplexed (0 from an older daemon) */
	bool burst;			/* its percentiles are burst timings: P50 gets a '*' */
};

/* Services shown above the table, one line each ("@service" lines of the daemon's answer). */
#define DW_TOP_NOTES 8
#define DW_TOP_NOTE_LEN 160

struct dw_top_frame {
	struct dw_top_row *rows;
	size_t n, cap;
	char notes[DW_TOP_NOTES][DW_TOP_NOTE_LEN];	/* "frontend: 40/40 waiting on payments  [exhausted]" */
	size_t nnotes;
	size_t skipped;			/* malformed lines left out */
	size_t open, half_open;
	size_t burst;			/* rows whose percentiles are burst timings */
};

/* Below the table when a row's P50 is marked. */
#define DW_TOP_BURST_LEGEND "* P50/P99 of multiplexed or pipelined connections: burst timings, not one request's"

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
	DW_TOP_NCOLS
};

/* The columns that fit a width, in drawing order, and the width of each. */
struct dw_top_layout {
	int n;
	enum dw_top_col col[DW_TOP_NCOLS];
	int width[DW_TOP_NCOLS];
};

/*
 * One row line (no newline; split in place at tabs) with nfields fields,
 * of which the first DW_TOP_FIELDS are read, and DW_TOP_FIELDS_MUX when
 * mux (the header names the two). 0, or -EINVAL for a line that is not a
 * well-formed row, with row then undefined.
 */
int dw_top_parse_row(char *line, size_t nfields, bool mux, struct dw_top_row *row);

/*
 * The whole answer: the header, then rows; malformed rows are counted in
 * skipped and left out. 0, -EPROTO when the header is not top's, or -ENOMEM.
 */
int dw_top_parse(const char *text, size_t len, struct dw_top_frame *f);
void dw_top_frame_free(struct dw_top_frame *f);

/*
 * Each row's calls per second since prev (the same name's calls, elapsed_s
 * earlier); -1 without prev or without that name in it. Reorders prev.
 */
void dw_top_rates(struct dw_top_frame *cur, struct dw_top_frame *prev, double elapsed_s);

/* Worst first: open, half_open, then slow rate and in-flight descending, then name. */
int dw_top_compare(const struct dw_top_row *a, const struct dw_top_row *b);
void dw_top_sort(struct dw_top_frame *f);

/* The most important columns that fit in width; spare width goes to the name, then the breaker. */
void dw_top_layout(const struct dw_top_frame *f, int width, struct dw_top_layout *lay);

/* Lines without a newline, padded to the layout's full width. */
void dw_top_titles(const struct dw_top_layout *lay, struct dw_buf *out);
void dw_top_row_text(const struct dw_top_layout *lay, const struct dw_top_row *r,
		     struct dw_buf *out);
/* "depwatch top  14:03:27  3 dependencies, 1 open" and what else there is to say. */
void dw_top_header(const struct dw_top_frame *f, const struct tm *when, struct dw_buf *out);

#endif /* DW_TOP_H */
