/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * depwatch top, the pure part: the daemon's "top tsv" answer (its fields,
 * written by report.c and read here, from one list), the calls per second
 * between two answers and the order of the rows. Which columns fit a width
 * and the text of each line are topview_layout.h's. No I/O, no curses:
 * user/cli/top.c asks the daemon and draws the lines.
 */
#ifndef DW_TOPVIEW_H
#define DW_TOPVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include "logic/base/jsonw.h"

/*
 * The fields of a "top tsv" row, in order, as X(name, kind); the header
 * line names them. kind is how the daemon writes the value:
 * TEXT an escaped name, COUNT "%llu", MS "%.3f" (negative: none),
 * RATE "%.4f" (0..1), AGE "%.1f", WORD a lowercase word, FLAG 0 or 1.
 * The last two (from multiplexed_conns on) are the ones a daemon with
 * multiplexed-connection counters appends: an older one stops at forced.
 * A newer daemon may append more: top reads the ones it knows.
 */
#define DW_TOP_FIELDS(X)                                                                          \
	X(name, TEXT)                                                                              \
	X(dests, COUNT)                                                                            \
	X(calls, COUNT)                                                                            \
	X(failed, COUNT)                                                                           \
	X(p50_ms, MS)                                                                              \
	X(p99_ms, MS)                                                                              \
	X(slow_rate, RATE)                                                                         \
	X(failure_rate, RATE)                                                                      \
	X(inflight, COUNT)                                                                         \
	X(max_inflight, COUNT)                                                                     \
	X(oldest_ms, AGE)                                                                          \
	X(breaker, WORD)                                                                           \
	X(reason, WORD)                                                                            \
	X(rejected, COUNT)                                                                         \
	X(conns, COUNT)                                                                            \
	X(forced, FLAG)                                                                            \
	X(multiplexed_conns, COUNT)                                                                \
	X(burst_timings, FLAG)                                                                     \
	X(aborted, COUNT)                                                                          \
	X(streams, COUNT)                                                                          \
	X(h2_desync, COUNT)

/* DW_TOP_F_name, DW_TOP_F_dests, ...: a field's place in a row. */
enum dw_top_field {
#define DW_TOP_F_ENUM_(f, kind) DW_TOP_F_##f,
	DW_TOP_FIELDS(DW_TOP_F_ENUM_)
#undef DW_TOP_F_ENUM_
	DW_TOP_NFIELDS_ALL
};
/*
 * A daemon with multiplexed-connection counters sends up to these; one with
 * aborts (issue 15) the aborted count too; one with HTTP/2 streams all.
 */
#define DW_TOP_NFIELDS_MUX DW_TOP_F_aborted
#define DW_TOP_NFIELDS_ABORT DW_TOP_F_streams
/* The fields every daemon sends; the rest are read when the header names them. */
#define DW_TOP_NFIELDS DW_TOP_F_multiplexed_conns

/* "name", "dests", ...: the header line's words, by enum dw_top_field. */
extern const char *const dw_top_field_names[DW_TOP_NFIELDS_ALL];

/* One row as the daemon writes it; the C type of each kind. */
#define DW_TOP_T_TEXT const char *	/* at most DW_DEP_NAME_LEN bytes are written */
#define DW_TOP_T_COUNT unsigned long long
#define DW_TOP_T_MS double
#define DW_TOP_T_RATE double
#define DW_TOP_T_AGE double
#define DW_TOP_T_WORD const char *
#define DW_TOP_T_FLAG bool
struct dw_top_wire {
#define DW_TOP_WIRE_MEMBER_(f, kind) DW_TOP_T_##kind f;
	DW_TOP_FIELDS(DW_TOP_WIRE_MEMBER_)
#undef DW_TOP_WIRE_MEMBER_
};

/* The header line and one row line of the daemon's answer, each with its newline. */
void dw_top_tsv_header(struct dw_buf *out);
void dw_top_tsv_row(struct dw_buf *out, const struct dw_top_wire *w);

/* A longer field is not something the daemon sends: the line is rejected. */
#define DW_TOP_FIELD_MAX 255
/* A cleaned field: each byte may have become "\xhh". */
#define DW_TOP_TEXT_LEN (4 * DW_TOP_FIELD_MAX + 1)
#define DW_TOP_WORD_LEN 16

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
	unsigned long long aborted;	/* by enforce = abort or abort_after (0 from an older daemon) */
	/* calls on HTTP/2 streams, connections that lost step (0 from an older daemon) */
	unsigned long long streams, h2_desync;
	size_t caller_first, ncallers;	/* its callers in the frame's callers[] */
};

/*
 * A dependency's top caller (issue 16): an "@caller<TAB>name<TAB>calls<TAB>
 * inflight<TAB>p99_ms" line right after its row (older tops skip it as a
 * malformed row).
 */
#define DW_TOP_CALLER_LEN 132
struct dw_top_caller {
	char name[DW_TOP_CALLER_LEN];	/* safe to print */
	unsigned long long calls, inflight;
	double p99_ms;			/* -1: none */
};

/*
 * Services shown above the table, one line each ("@service" lines of the
 * daemon's answer), then ejected destinations ("@ejected" lines).
 */
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
	size_t desync;			/* rows with an HTTP/2 connection that lost step */
	size_t ejected;			/* destinations ejected from their dependency ("@ejected" lines) */
	struct dw_top_caller *callers;	/* by row (caller_first, ncallers) */
	size_t ncallers, callers_cap;
};

/*
 * At most n bytes of src into dst (dstlen > 0), cut to fit: printable ASCII
 * is kept and every other byte becomes \xhh, so nothing the daemon sends can
 * move the cursor or recolour the terminal.
 */
void dw_top_clean(char *dst, size_t dstlen, const char *src, size_t n);

/*
 * One row line (no newline; split in place at tabs) with nfields fields,
 * of which the first DW_TOP_NFIELDS are read, DW_TOP_NFIELDS_MUX when mux
 * is 1 (the header names the two), and DW_TOP_NFIELDS_ALL when it is 2
 * (the header names aborted too). 0, or -EINVAL for a line that is not a
 * well-formed row, with row then undefined.
 */
int dw_top_parse_row(char *line, size_t nfields, int mux, struct dw_top_row *row);

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

#endif /* DW_TOPVIEW_H */
