// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * depwatch top, what it draws of a frame (see topview_layout.h): each
 * cell's text, the columns that fit a width, and the lines. Apart from the
 * answer's parser (topview.c) so that the wire format and the look of the
 * table change on their own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "logic/base/parse.h"
#include "logic/view/topview_layout.h"

/* ---- cells ---- */

/* A count, shortened with k, M, G once it has more than 7 digits. */
static const char *cell_count(unsigned long long v, char *buf)
{
	static const char units[] = "kMGTPE";
	double x = v;
	int u = -1;

	if (v < 10000000ULL) {
		snprintf(buf, DW_TOP_CELL_LEN, "%llu", v);
		return buf;
	}
	while (x >= 999.5 && u < 5) {
		x /= 1000;
		u++;
	}
	snprintf(buf, DW_TOP_CELL_LEN, "%.0f%c", x, units[u]);
	return buf;
}

static const char *cell_percent(double rate, char *buf)
{
	snprintf(buf, DW_TOP_CELL_LEN, "%.1f", 100 * rate);
	return buf;
}

static const char *cell_name(const struct dw_top_row *r, char *buf)
{
	(void)buf;
	return r->name;
}

static const char *cell_dests(const struct dw_top_row *r, char *buf)
{
	return cell_count(r->dests, buf);
}

/* Blank until there are two answers to compare. */
static const char *cell_rate(const struct dw_top_row *r, char *buf)
{
	double v = r->calls_per_s;

	if (v < 0)
		snprintf(buf, DW_TOP_CELL_LEN, "%s", "");
	else if (v < 99.95)
		snprintf(buf, DW_TOP_CELL_LEN, "%.1f", v);
	else if (v < 999999.5)
		snprintf(buf, DW_TOP_CELL_LEN, "%.0f", v);
	else
		snprintf(buf, DW_TOP_CELL_LEN, "%.0fk", v / 1000);
	return buf;
}

/* "12.3ms*" when the row's percentiles are burst timings (see DW_TOP_BURST_LEGEND). */
static const char *cell_p50(const struct dw_top_row *r, char *buf)
{
	dw_format_ms_cell(r->p50_ms, buf, DW_TOP_CELL_LEN);
	if (r->burst && r->p50_ms >= 0)
		strcat(buf, "*");
	return buf;
}

/* The marked cell in 6 characters: "12.3ms*" becomes "12ms*"; the other forms fit already. */
static const char *cell_p50_brief(const struct dw_top_row *r, char *buf)
{
	if (r->burst && r->p50_ms >= 9.95 && r->p50_ms < 99.95) {
		snprintf(buf, DW_TOP_CELL_LEN, "%.0fms*", r->p50_ms);
		return buf;
	}
	return cell_p50(r, buf);
}

static const char *cell_p99(const struct dw_top_row *r, char *buf)
{
	return dw_format_ms_cell(r->p99_ms, buf, DW_TOP_CELL_LEN);
}

static const char *cell_slow(const struct dw_top_row *r, char *buf)
{
	return cell_percent(r->slow_rate, buf);
}

static const char *cell_fail(const struct dw_top_row *r, char *buf)
{
	return cell_percent(r->failure_rate, buf);
}

static const char *cell_inflight(const struct dw_top_row *r, char *buf)
{
	if (r->max_inflight)
		snprintf(buf, DW_TOP_CELL_LEN, "%llu/%llu", r->inflight, r->max_inflight);
	else
		snprintf(buf, DW_TOP_CELL_LEN, "%llu", r->inflight);
	return buf;
}

/* The daemon says 0 when nothing is in flight; "-" tells that from a fresh call. */
static const char *cell_oldest(const struct dw_top_row *r, char *buf)
{
	return dw_format_ms_cell(r->inflight ? r->oldest_ms : -1, buf, DW_TOP_CELL_LEN);
}

/* What a narrow breaker column says instead of a long reason. */
static const char *brief_reason(const char *reason)
{
	if (!strcmp(reason, "slow_rate"))
		return "slow";
	if (!strcmp(reason, "failure_rate"))
		return "fail";
	if (!strcmp(reason, "concurrency"))
		return "conc";
	return reason;
}

/* "closed", "open slow_rate", "half_open forced", "closed forced" (an operator's close). */
static const char *breaker_text(const struct dw_top_row *r, bool brief, char *buf)
{
	bool say_reason = r->state != DW_TOP_CLOSED && strcmp(r->reason, "none");
	bool say_forced = r->forced && (!say_reason || strcmp(r->reason, "forced"));
	const char *reason = brief ? brief_reason(r->reason) : r->reason;

	snprintf(buf, DW_TOP_CELL_LEN, "%s%s%s%s", r->breaker, say_reason ? " " : "",
		 say_reason ? reason : "", say_forced ? " forced" : "");
	return buf;
}

static const char *cell_breaker(const struct dw_top_row *r, char *buf)
{
	return breaker_text(r, false, buf);
}

static const char *cell_breaker_brief(const struct dw_top_row *r, char *buf)
{
	return breaker_text(r, true, buf);
}

static const char *cell_rejected(const struct dw_top_row *r, char *buf)
{
	return cell_count(r->rejected, buf);
}

static const char *cell_conns(const struct dw_top_row *r, char *buf)
{
	return cell_count(r->conns, buf);
}

static const char *cell_calls(const struct dw_top_row *r, char *buf)
{
	return cell_count(r->calls, buf);
}

static const char *cell_failed(const struct dw_top_row *r, char *buf)
{
	return cell_count(r->failed, buf);
}

static const char *cell_mux(const struct dw_top_row *r, char *buf)
{
	return cell_count(r->mux_conns, buf);
}

static const char *cell_aborted(const struct dw_top_row *r, char *buf)
{
	return cell_count(r->aborted, buf);
}

/* Calls on HTTP/2 streams; "!" when a connection's frames were lost (DW_TOP_DESYNC_LEGEND). */
static const char *cell_streams(const struct dw_top_row *r, char *buf)
{
	snprintf(buf, DW_TOP_CELL_LEN, "%llu%s", r->streams, r->h2_desync ? "!" : "");
	return buf;
}

/* ---- columns and lines ---- */

struct column {
	const char *title;
	int width;	/* the narrowest it is drawn */
	int rank;	/* as the width allows, columns are added in this order */
	bool left;
	const char *(*cell)(const struct dw_top_row *r, char *buf);
	/* when the cell is wider than the column: a shorter text, rather than a cut one */
	const char *(*brief)(const struct dw_top_row *r, char *buf);
};

/* At 80 columns the first eight ranks fit; at 120 all but FAILED and MUX. */
static const struct column columns[DW_TOP_NCOLS] = {
	[DW_TOP_COL_NAME] = { "DEPENDENCY", 16, 0, true, cell_name, NULL },
	[DW_TOP_COL_DESTS] = { "DESTS", 5, 9, false, cell_dests, NULL },
	[DW_TOP_COL_RATE] = { "CALLS/S", 7, 5, false, cell_rate, NULL },
	[DW_TOP_COL_P50] = { "P50", 6, 6, false, cell_p50, cell_p50_brief },
	[DW_TOP_COL_P99] = { "P99", 6, 3, false, cell_p99, NULL },
	[DW_TOP_COL_SLOW] = { "SLOW%", 5, 2, false, cell_slow, NULL },
	[DW_TOP_COL_FAIL] = { "FAIL%", 5, 8, false, cell_fail, NULL },
	[DW_TOP_COL_INFLIGHT] = { "INFLIGHT", 8, 4, false, cell_inflight, NULL },
	[DW_TOP_COL_OLDEST] = { "OLDEST", 6, 7, false, cell_oldest, NULL },
	[DW_TOP_COL_BREAKER] = { "BREAKER", 16, 1, true, cell_breaker, cell_breaker_brief },
	[DW_TOP_COL_REJECTED] = { "REJECTED", 8, 10, false, cell_rejected, NULL },
	[DW_TOP_COL_CONNS] = { "CONNS", 5, 11, false, cell_conns, NULL },
	[DW_TOP_COL_CALLS] = { "CALLS", 9, 12, false, cell_calls, NULL },
	[DW_TOP_COL_FAILED] = { "FAILED", 8, 13, false, cell_failed, NULL },
	[DW_TOP_COL_MUX] = { "MUX", 5, 14, false, cell_mux, NULL },
	[DW_TOP_COL_ABORTED] = { "ABORTED", 7, 15, false, cell_aborted, NULL },
	[DW_TOP_COL_STREAMS] = { "STREAMS", 7, 16, false, cell_streams, NULL },
};

const char *dw_top_cell(const struct dw_top_row *r, enum dw_top_col col, bool brief, char *buf)
{
	const struct column *c = &columns[col];

	return brief && c->brief ? c->brief(r, buf) : c->cell(r, buf);
}

static int by_rank(const void *a, const void *b)
{
	return columns[*(const int *)a].rank - columns[*(const int *)b].rank;
}

/* The widest cell of a column among the rows. */
static int widest(const struct dw_top_frame *f, enum dw_top_col col)
{
	char buf[DW_TOP_CELL_LEN];
	int w = 0;

	for (size_t i = 0; i < f->n; i++) {
		int n = strlen(columns[col].cell(&f->rows[i], buf));

		if (n > w)
			w = n;
	}
	return w;
}

static int grow(struct dw_top_layout *lay, const struct dw_top_frame *f, enum dw_top_col col,
		int spare)
{
	for (int i = 0; i < lay->n; i++) {
		int more;

		if (lay->col[i] != col)
			continue;
		more = widest(f, col) - lay->width[i];
		if (more <= 0)
			return spare;
		more = more < spare ? more : spare;
		lay->width[i] += more;
		return spare - more;
	}
	return spare;
}

void dw_top_layout(const struct dw_top_frame *f, int width, struct dw_top_layout *lay)
{
	int order[DW_TOP_NCOLS], used = 0, n = 0, spare;
	bool keep[DW_TOP_NCOLS] = {};

	for (int i = 0; i < DW_TOP_NCOLS; i++)
		order[i] = i;
	qsort(order, DW_TOP_NCOLS, sizeof(order[0]), by_rank);
	/* the first column that does not fit ends the choice, so narrower never shows more */
	for (; n < DW_TOP_NCOLS; n++) {
		int need = columns[order[n]].width + (n ? 1 : 0);

		if (used + need > width)
			break;
		used += need;
		keep[order[n]] = true;
	}
	memset(lay, 0, sizeof(*lay));
	for (int i = 0; i < DW_TOP_NCOLS; i++) {
		if (!keep[i])
			continue;
		lay->col[lay->n] = i;
		lay->width[lay->n++] = columns[i].width;
	}
	if (!n && width > 0) {	/* not even the name fits whole: a cut name is still a name */
		lay->n = 1;
		lay->col[0] = DW_TOP_COL_NAME;
		lay->width[0] = width;
		return;
	}
	spare = grow(lay, f, DW_TOP_COL_NAME, width - used);
	grow(lay, f, DW_TOP_COL_BREAKER, spare);
}

/* Too long for its column: cut, and the last character shown is '~' to say so. */
static void put_cell(struct dw_buf *out, const char *s, int width, bool left)
{
	int n = strlen(s);

	if (n > width) {
		if (width <= 0)
			return;
		dw_buf_write(out, s, width - 1);
		dw_buf_putc(out, '~');
		return;
	}
	if (left)
		dw_buf_printf(out, "%s%*s", s, width - n, "");
	else
		dw_buf_printf(out, "%*s%s", width - n, "", s);
}

void dw_top_titles(const struct dw_top_layout *lay, struct dw_buf *out)
{
	for (int i = 0; i < lay->n; i++) {
		const struct column *c = &columns[lay->col[i]];

		if (i)
			dw_buf_putc(out, ' ');
		put_cell(out, c->title, lay->width[i], c->left);
	}
}

void dw_top_row_text(const struct dw_top_layout *lay, const struct dw_top_row *r,
		     struct dw_buf *out)
{
	char buf[DW_TOP_CELL_LEN];

	for (int i = 0; i < lay->n; i++) {
		const struct column *c = &columns[lay->col[i]];
		const char *s = c->cell(r, buf);

		if (c->brief && (int)strlen(s) > lay->width[i])
			s = c->brief(r, buf);
		if (i)
			dw_buf_putc(out, ' ');
		put_cell(out, s, lay->width[i], c->left);
	}
}

void dw_top_caller_text(const struct dw_top_caller *c, struct dw_buf *out)
{
	char p99[DW_TOP_CELL_LEN];

	dw_buf_printf(out, "    <- %-40s calls %llu  inflight %llu  p99 %s", c->name, c->calls, c->inflight,
		      dw_format_ms_cell(c->p99_ms, p99, sizeof(p99)));
}

void dw_top_header(const struct dw_top_frame *f, const struct tm *when, struct dw_buf *out)
{
	dw_buf_printf(out, "depwatch top  %02d:%02d:%02d  %zu %s, %zu open", when->tm_hour,
		      when->tm_min, when->tm_sec, f->n, f->n == 1 ? "dependency" : "dependencies",
		      f->open);
	if (f->half_open)
		dw_buf_printf(out, ", %zu half_open", f->half_open);
	if (f->skipped)
		dw_buf_printf(out, "; %zu malformed %s skipped", f->skipped,
			      f->skipped == 1 ? "line" : "lines");
}
