// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * depwatch top. The first half is pure (see top.h); the second asks the
 * daemon once a second and draws with curses, or prints one plain frame
 * when stdout is not a terminal.
 */
#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "commands.h"
#include "control.h"
#include "logic/parse.h"
#include "top.h"

/* ---- parsing ---- */

static const char *const field_names[DW_TOP_FIELDS] = {
	"name", "dests", "calls", "failed", "p50_ms", "p99_ms", "slow_rate", "failure_rate",
	"inflight", "max_inflight", "oldest_ms", "breaker", "reason", "rejected", "conns", "forced",
};

static const char *const mux_field_names[DW_TOP_FIELDS_MUX - DW_TOP_FIELDS] = {
	"multiplexed_conns", "burst_timings",
};

/* Splits line at tabs in place; returns how many fields there are, at most max are stored. */
static size_t split_tabs(char *line, char **field, size_t max)
{
	size_t n = 0;

	for (;;) {
		char *tab = strchr(line, '\t');

		if (n < max)
			field[n] = line;
		n++;
		if (!tab)
			return n;
		*tab = 0;
		line = tab + 1;
	}
}

/*
 * At most n bytes of src into dst (dstlen > 0), cut to fit: printable ASCII
 * is kept and every other byte becomes \xhh, so nothing the daemon sends can
 * move the cursor or recolour the terminal. The daemon has escaped names
 * already, so a backslash is not doubled a second time.
 */
static void clean(char *dst, size_t dstlen, const char *src, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)src;
	size_t o = 0;

	for (size_t i = 0; i < n && s[i]; i++) {
		if (s[i] >= 0x20 && s[i] < 0x7f) {
			if (o + 1 >= dstlen)
				break;
			dst[o++] = s[i];
			continue;
		}
		if (o + 4 >= dstlen)
			break;
		dst[o++] = '\\';
		dst[o++] = 'x';
		dst[o++] = hex[s[i] >> 4];
		dst[o++] = hex[s[i] & 15];
	}
	dst[o] = 0;
}

static int parse_count(const char *s, unsigned long long *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return *end || errno ? -EINVAL : 0;
}

/* Plain decimals only ("-1.000", "0.2500"): strtod alone would take "nan", "0x1p3", " 1". */
static int parse_real(const char *s, double min, double max, double *v)
{
	char *end;

	if (!*s || s[strspn(s, "-0123456789.")])
		return -EINVAL;
	errno = 0;
	*v = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(*v) || *v < min || *v > max)
		return -EINVAL;
	return 0;
}

/* A breaker state or reason: a short lowercase word. */
static int parse_word(const char *s, char *out)
{
	size_t n = strlen(s);

	if (!n || n >= DW_TOP_WORD_LEN || s[strspn(s, "abcdefghijklmnopqrstuvwxyz_")])
		return -EINVAL;
	memcpy(out, s, n + 1);
	return 0;
}

static enum dw_top_state state_of(const char *word)
{
	if (!strcmp(word, "open"))
		return DW_TOP_OPEN;
	if (!strcmp(word, "half_open"))
		return DW_TOP_HALF_OPEN;
	if (!strcmp(word, "closed"))
		return DW_TOP_CLOSED;
	return DW_TOP_OTHER;
}

static int parse_counts(char **f, struct dw_top_row *r)
{
	if (parse_count(f[1], &r->dests) || parse_count(f[2], &r->calls) ||
	    parse_count(f[3], &r->failed) || parse_count(f[8], &r->inflight) ||
	    parse_count(f[9], &r->max_inflight) || parse_count(f[13], &r->rejected) ||
	    parse_count(f[14], &r->conns))
		return -EINVAL;
	return 0;
}

static int parse_reals(char **f, struct dw_top_row *r)
{
	if (parse_real(f[4], -1, HUGE_VAL, &r->p50_ms) ||
	    parse_real(f[5], -1, HUGE_VAL, &r->p99_ms) || parse_real(f[6], 0, 1, &r->slow_rate) ||
	    parse_real(f[7], 0, 1, &r->failure_rate) ||
	    parse_real(f[10], 0, HUGE_VAL, &r->oldest_ms))
		return -EINVAL;
	/* any negative percentile means "none"; one meaning is enough for the cells */
	if (r->p50_ms < 0)
		r->p50_ms = -1;
	if (r->p99_ms < 0)
		r->p99_ms = -1;
	return 0;
}

int dw_top_parse_row(char *line, size_t nfields, bool mux, struct dw_top_row *row)
{
	char *f[DW_TOP_FIELDS_MUX];
	size_t want = mux ? DW_TOP_FIELDS_MUX : DW_TOP_FIELDS;

	if (nfields < want || split_tabs(line, f, want) != nfields)
		return -EINVAL;
	for (size_t i = 0; i < want; i++)
		if (strlen(f[i]) > DW_TOP_FIELD_MAX)
			return -EINVAL;
	row->mux_conns = 0;
	row->burst = false;
	if (mux && (parse_count(f[16], &row->mux_conns) ||
		    (strcmp(f[17], "0") && strcmp(f[17], "1"))))
		return -EINVAL;
	row->burst = mux && f[17][0] == '1';
	if (!*f[0] || parse_counts(f, row) || parse_reals(f, row) ||
	    parse_word(f[11], row->breaker) || parse_word(f[12], row->reason))
		return -EINVAL;
	if (strcmp(f[15], "0") && strcmp(f[15], "1"))
		return -EINVAL;
	clean(row->name, sizeof(row->name), f[0], DW_TOP_FIELD_MAX);
	row->forced = f[15][0] == '1';
	row->state = state_of(row->breaker);
	row->calls_per_s = -1;
	return 0;
}

/*
 * The number of header fields, or 0 when the header does not start with
 * top's fields; *mux: the two multiplexed-connection fields follow them.
 */
static size_t parse_header(char *line, bool *mux)
{
	char *f[DW_TOP_FIELDS_MUX];
	size_t n = split_tabs(line, f, DW_TOP_FIELDS_MUX);

	*mux = false;
	if (n < DW_TOP_FIELDS)
		return 0;
	for (size_t i = 0; i < DW_TOP_FIELDS; i++)
		if (strcmp(f[i], field_names[i]))
			return 0;
	*mux = n >= DW_TOP_FIELDS_MUX;
	for (size_t i = DW_TOP_FIELDS; *mux && i < DW_TOP_FIELDS_MUX; i++)
		*mux = !strcmp(f[i], mux_field_names[i - DW_TOP_FIELDS]);
	return n;
}

static struct dw_top_row *new_row(struct dw_top_frame *f)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 16;
		struct dw_top_row *rows = realloc(f->rows, cap * sizeof(*rows));

		if (!rows)
			return NULL;
		f->rows = rows;
		f->cap = cap;
	}
	return &f->rows[f->n];
}

static int add_line(struct dw_top_frame *f, char *line, size_t nfields, bool mux)
{
	struct dw_top_row *row = new_row(f);

	if (!row)
		return -ENOMEM;
	if (dw_top_parse_row(line, nfields, mux, row)) {
		f->skipped++;
		return 0;
	}
	f->n++;
	f->burst += row->burst;
	f->open += row->state == DW_TOP_OPEN;
	f->half_open += row->state == DW_TOP_HALF_OPEN;
	return 0;
}

/*
 * "@service<TAB>summary<TAB>level<TAB>inflight<TAB>pool<TAB>exhausted_in_s":
 * one line of text above the table. Malformed ones are skipped like rows.
 */
static void add_note(struct dw_top_frame *f, char *line)
{
	char *fld[6], what[DW_TOP_NOTE_LEN - 48], level[16], note[DW_TOP_NOTE_LEN + 64];
	double exhausted_in;
	size_t len;

	if (split_tabs(line, fld, 6) != 6 || parse_real(fld[5], -1, HUGE_VAL, &exhausted_in) ||
	    strlen(fld[2]) >= sizeof(level)) {
		f->skipped++;
		return;
	}
	if (f->nnotes == DW_TOP_NOTES)
		return;
	clean(what, sizeof(what), fld[1], strlen(fld[1]));
	clean(level, sizeof(level), fld[2], strlen(fld[2]));
	if (!strcmp(level, "ok"))
		snprintf(note, sizeof(note), "%s", what);
	else if (exhausted_in >= 0)
		snprintf(note, sizeof(note), "%s  [%s: pool exhausted in %.1fs]", what, level,
			 exhausted_in < 1e6 ? exhausted_in : 1e6);
	else
		snprintf(note, sizeof(note), "%s  [pool %s]", what, level);
	len = strnlen(note, DW_TOP_NOTE_LEN - 1);
	memcpy(f->notes[f->nnotes], note, len);
	f->notes[f->nnotes++][len] = 0;
}

/* The next line of text[*off, len), NUL-terminated in place; its length in *n. */
static char *next_line(char *text, size_t len, size_t *off, size_t *n)
{
	char *line = text + *off, *nl = memchr(line, '\n', len - *off);

	*n = nl ? (size_t)(nl - line) : len - *off;
	line[*n] = 0;
	*off += *n + 1;
	return line;
}

int dw_top_parse(const char *text, size_t len, struct dw_top_frame *f)
{
	char *copy = malloc(len + 1), *line;
	size_t off = 0, n, nfields = 0;
	bool mux = false;
	int err = 0;

	memset(f, 0, sizeof(*f));
	if (!copy)
		return -ENOMEM;
	if (len)
		memcpy(copy, text, len);
	copy[len] = 0;
	line = next_line(copy, len, &off, &n);
	if (strlen(line) == n)
		nfields = parse_header(line, &mux);
	if (!nfields)
		err = -EPROTO;
	while (!err && off < len) {
		line = next_line(copy, len, &off, &n);
		/* a NUL inside would hide the rest of the line from the string functions */
		if (strlen(line) != n)
			f->skipped++;
		else if (!strncmp(line, "@service\t", 9))
			add_note(f, line);
		else
			err = add_line(f, line, nfields, mux);
	}
	free(copy);
	if (err)
		dw_top_frame_free(f);
	return err;
}

void dw_top_frame_free(struct dw_top_frame *f)
{
	free(f->rows);
	memset(f, 0, sizeof(*f));
}

/* ---- calls per second, order ---- */

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct dw_top_row *)a)->name, ((const struct dw_top_row *)b)->name);
}

void dw_top_rates(struct dw_top_frame *cur, struct dw_top_frame *prev, double elapsed_s)
{
	bool known = prev && prev->n && elapsed_s > 0;

	if (known)
		qsort(prev->rows, prev->n, sizeof(*prev->rows), by_name);
	for (size_t i = 0; i < cur->n; i++) {
		struct dw_top_row *r = &cur->rows[i];
		const struct dw_top_row *was;

		r->calls_per_s = -1;
		if (!known)
			continue;
		was = bsearch(r, prev->rows, prev->n, sizeof(*prev->rows), by_name);
		/* fewer calls than before: a restarted daemon, not a negative rate */
		if (was && r->calls >= was->calls)
			r->calls_per_s = (r->calls - was->calls) / elapsed_s;
	}
}

int dw_top_compare(const struct dw_top_row *a, const struct dw_top_row *b)
{
	int sa = a->state == DW_TOP_OTHER ? DW_TOP_CLOSED : a->state;
	int sb = b->state == DW_TOP_OTHER ? DW_TOP_CLOSED : b->state;

	if (sa != sb)
		return sa < sb ? -1 : 1;
	if (a->slow_rate != b->slow_rate)
		return a->slow_rate > b->slow_rate ? -1 : 1;
	if (a->inflight != b->inflight)
		return a->inflight > b->inflight ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int compare_rows(const void *a, const void *b)
{
	return dw_top_compare(a, b);
}

void dw_top_sort(struct dw_top_frame *f)
{
	if (f->n)
		qsort(f->rows, f->n, sizeof(*f->rows), compare_rows);
}

/* ---- cells ---- */

#define CELL_LEN 64

/* A duration in at most 6 characters: "850us", "12.3ms", "450ms", "1.25s", "98.1s", "4125s". */
static const char *cell_ms(double ms, char *buf)
{
	double s = ms / 1000;

	if (ms < 0)
		snprintf(buf, CELL_LEN, "-");
	else if (ms * 1000 < 999.5)
		snprintf(buf, CELL_LEN, "%.0fus", ms * 1000);
	else if (ms < 99.95)
		snprintf(buf, CELL_LEN, "%.1fms", ms);
	else if (ms < 999.5)
		snprintf(buf, CELL_LEN, "%.0fms", ms);
	else if (s < 9.995)
		snprintf(buf, CELL_LEN, "%.2fs", s);
	else if (s < 99.95)
		snprintf(buf, CELL_LEN, "%.1fs", s);
	else if (s < 99999.5)
		snprintf(buf, CELL_LEN, "%.0fs", s);
	else
		snprintf(buf, CELL_LEN, "%.0fh", s / 3600);
	return buf;
}

/* A count, shortened with k, M, G once it has more than 7 digits. */
static const char *cell_count(unsigned long long v, char *buf)
{
	static const char units[] = "kMGTPE";
	double x = v;
	int u = -1;

	if (v < 10000000ULL) {
		snprintf(buf, CELL_LEN, "%llu", v);
		return buf;
	}
	while (x >= 999.5 && u < 5) {
		x /= 1000;
		u++;
	}
	snprintf(buf, CELL_LEN, "%.0f%c", x, units[u]);
	return buf;
}

static const char *cell_percent(double rate, char *buf)
{
	snprintf(buf, CELL_LEN, "%.1f", 100 * rate);
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
		snprintf(buf, CELL_LEN, "%s", "");
	else if (v < 99.95)
		snprintf(buf, CELL_LEN, "%.1f", v);
	else if (v < 999999.5)
		snprintf(buf, CELL_LEN, "%.0f", v);
	else
		snprintf(buf, CELL_LEN, "%.0fk", v / 1000);
	return buf;
}

/* "12.3ms*" when the row's percentiles are burst timings (see DW_TOP_BURST_LEGEND). */
static const char *cell_p50(const struct dw_top_row *r, char *buf)
{
	cell_ms(r->p50_ms, buf);
	if (r->burst && r->p50_ms >= 0)
		strcat(buf, "*");
	return buf;
}

/* The marked cell in 6 characters: "12.3ms*" becomes "12ms*"; the other forms fit already. */
static const char *cell_p50_brief(const struct dw_top_row *r, char *buf)
{
	if (r->burst && r->p50_ms >= 9.95 && r->p50_ms < 99.95) {
		snprintf(buf, CELL_LEN, "%.0fms*", r->p50_ms);
		return buf;
	}
	return cell_p50(r, buf);
}

static const char *cell_p99(const struct dw_top_row *r, char *buf)
{
	return cell_ms(r->p99_ms, buf);
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
		snprintf(buf, CELL_LEN, "%llu/%llu", r->inflight, r->max_inflight);
	else
		snprintf(buf, CELL_LEN, "%llu", r->inflight);
	return buf;
}

/* The daemon says 0 when nothing is in flight; "-" tells that from a fresh call. */
static const char *cell_oldest(const struct dw_top_row *r, char *buf)
{
	return cell_ms(r->inflight ? r->oldest_ms : -1, buf);
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

	snprintf(buf, CELL_LEN, "%s%s%s%s", r->breaker, say_reason ? " " : "",
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
	[DW_TOP_COL_NAME] = { "DEPENDENCY", 16, 0, true, cell_name },
	[DW_TOP_COL_DESTS] = { "DESTS", 5, 9, false, cell_dests },
	[DW_TOP_COL_RATE] = { "CALLS/S", 7, 5, false, cell_rate },
	[DW_TOP_COL_P50] = { "P50", 6, 6, false, cell_p50, cell_p50_brief },
	[DW_TOP_COL_P99] = { "P99", 6, 3, false, cell_p99 },
	[DW_TOP_COL_SLOW] = { "SLOW%", 5, 2, false, cell_slow },
	[DW_TOP_COL_FAIL] = { "FAIL%", 5, 8, false, cell_fail },
	[DW_TOP_COL_INFLIGHT] = { "INFLIGHT", 8, 4, false, cell_inflight },
	[DW_TOP_COL_OLDEST] = { "OLDEST", 6, 7, false, cell_oldest },
	[DW_TOP_COL_BREAKER] = { "BREAKER", 16, 1, true, cell_breaker, cell_breaker_brief },
	[DW_TOP_COL_REJECTED] = { "REJECTED", 8, 10, false, cell_rejected },
	[DW_TOP_COL_CONNS] = { "CONNS", 5, 11, false, cell_conns },
	[DW_TOP_COL_CALLS] = { "CALLS", 9, 12, false, cell_calls },
	[DW_TOP_COL_FAILED] = { "FAILED", 8, 13, false, cell_failed },
	[DW_TOP_COL_MUX] = { "MUX", 5, 14, false, cell_mux },
};

static int by_rank(const void *a, const void *b)
{
	return columns[*(const int *)a].rank - columns[*(const int *)b].rank;
}

/* The widest cell of a column among the rows. */
static int widest(const struct dw_top_frame *f, enum dw_top_col col)
{
	char buf[CELL_LEN];
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
	char buf[CELL_LEN];

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

/* ---- asking the daemon ---- */

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * One answer, parsed and sorted. On failure err says why, unless
 * dw_control_request already did on stderr (then err is empty).
 */
static int fetch(const char *run_dir, struct dw_top_frame *f, char *err, size_t errlen)
{
	struct dw_buf ans = {};
	int ret = dw_control_request(run_dir, "top tsv", &ans);

	err[0] = 0;
	memset(f, 0, sizeof(*f));
	if (ret) {
		dw_buf_free(&ans);
		return ret;
	}
	ret = dw_top_parse(ans.data, ans.len, f);
	if (ret == -EPROTO) {
		char first[81];

		/* the daemon's own words, cleaned: it may be an older one without "top tsv" */
		clean(first, sizeof(first), ans.data ? ans.data : "",
		      ans.data ? strcspn(ans.data, "\n") : 0);
		snprintf(err, errlen, "the daemon's answer is not a top table: %s",
			 first[0] ? first : "(empty)");
	} else if (ret) {
		snprintf(err, errlen, "%s", strerror(-ret));
	}
	dw_buf_free(&ans);
	if (!ret)
		dw_top_sort(f);
	return ret;
}

/* ---- one plain frame, for pipes ---- */

static void put_line(struct dw_buf *out, struct dw_buf *line)
{
	size_t n = line->len;

	while (n && line->data[n - 1] == ' ')
		n--;
	dw_buf_write(out, line->data, n);
	dw_buf_putc(out, '\n');
	line->len = 0;
}

static void plain_frame(const struct dw_top_frame *f, const struct tm *when, struct dw_buf *out)
{
	struct dw_top_layout lay;
	struct dw_buf line = {};

	dw_top_layout(f, DW_TOP_PLAIN_WIDTH, &lay);
	dw_top_header(f, when, &line);
	put_line(out, &line);
	for (size_t i = 0; i < f->nnotes; i++) {
		dw_buf_printf(&line, "%s", f->notes[i]);
		put_line(out, &line);
	}
	dw_top_titles(&lay, &line);
	put_line(out, &line);
	for (size_t i = 0; i < f->n; i++) {
		dw_top_row_text(&lay, &f->rows[i], &line);
		put_line(out, &line);
	}
	if (f->burst) {
		dw_buf_printf(&line, "%s", DW_TOP_BURST_LEGEND);
		put_line(out, &line);
	}
	dw_buf_free(&line);
}

static int top_plain(const char *run_dir)
{
	struct dw_top_frame f;
	struct dw_buf out = {};
	char err[160];
	time_t now = time(NULL);
	int ret = 0;

	if (fetch(run_dir, &f, err, sizeof(err))) {
		if (err[0])
			fprintf(stderr, "depwatch: %s\n", err);
		return 1;
	}
	plain_frame(&f, localtime(&now), &out);
	if (out.oom || fwrite(out.data, 1, out.len, stdout) != out.len || fflush(stdout)) {
		fprintf(stderr, "depwatch: top: cannot write the frame\n");
		ret = 1;
	}
	dw_buf_free(&out);
	dw_top_frame_free(&f);
	return ret;
}

/* ---- the live view ---- */

enum { PAIR_OPEN = 1, PAIR_HALF_OPEN };

struct live {
	const char *run_dir;
	uint64_t interval_ns;
	struct dw_top_frame cur;
	uint64_t cur_ns;	/* when cur was asked for */
	time_t cur_time;
	char err[160];		/* why the last refresh failed; cur is then older */
	bool color;
};

static volatile sig_atomic_t quit;

static void on_quit_signal(int sig)
{
	(void)sig;
	quit = 1;
}

/* No SA_RESTART: the signal should cut the wait for a key short. */
static void catch_quit_signals(void)
{
	struct sigaction sa = { .sa_handler = on_quit_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* https://no-color.org: set and not empty means no colour. */
static bool color_wanted(void)
{
	const char *no = getenv("NO_COLOR");

	return !(no && *no) && has_colors();
}

static void start_colors(struct live *t)
{
	t->color = color_wanted();
	if (!t->color)
		return;
	start_color();
	use_default_colors();
	init_pair(PAIR_OPEN, COLOR_RED, -1);
	init_pair(PAIR_HALF_OPEN, COLOR_YELLOW, -1);
}

/* A failed refresh keeps the last table on screen and says so in the header. */
static void refresh_frame(struct live *t)
{
	struct dw_top_frame next;
	uint64_t now = monotonic_ns();
	int ret = fetch(t->run_dir, &next, t->err, sizeof(t->err));

	if (ret) {
		if (!t->err[0])
			snprintf(t->err, sizeof(t->err), "cannot reach the daemon: %s",
				 strerror(-ret));
		return;
	}
	dw_top_rates(&next, &t->cur, (now - t->cur_ns) / 1e9);
	dw_top_frame_free(&t->cur);
	t->cur = next;
	t->cur_ns = now;
	t->cur_time = time(NULL);
}

static void draw_header(const struct live *t, int w)
{
	struct dw_buf line = {};

	dw_top_header(&t->cur, localtime(&t->cur_time), &line);
	if (t->err[0])
		dw_buf_printf(&line, "  [%s]", t->err);
	else
		dw_buf_printf(&line, "  (q quits)");
	attron(A_BOLD);
	if (line.data)
		mvaddnstr(0, 0, line.data, w);
	attroff(A_BOLD);
	dw_buf_free(&line);
}

static void draw_titles(const struct dw_top_layout *lay, int y, int w)
{
	struct dw_buf line = {};

	dw_top_titles(lay, &line);
	while (!line.oom && (int)line.len < w)
		dw_buf_putc(&line, ' ');
	attron(A_REVERSE);
	if (line.data)
		mvaddnstr(y, 0, line.data, w);
	attroff(A_REVERSE);
	dw_buf_free(&line);
}

static void draw_row(const struct live *t, const struct dw_top_layout *lay,
		     const struct dw_top_row *r, int y, int w)
{
	struct dw_buf line = {};
	int pair = r->state == DW_TOP_OPEN ? PAIR_OPEN :
		   r->state == DW_TOP_HALF_OPEN ? PAIR_HALF_OPEN : 0;

	dw_top_row_text(lay, r, &line);
	if (t->color && pair)
		attron(COLOR_PAIR(pair));
	if (line.data)
		mvaddnstr(y, 0, line.data, w);
	if (t->color && pair)
		attroff(COLOR_PAIR(pair));
	dw_buf_free(&line);
}

static void draw(const struct live *t)
{
	struct dw_top_layout lay;
	int h, w, y = 1;
	size_t i;

	getmaxyx(stdscr, h, w);
	erase();
	dw_top_layout(&t->cur, w, &lay);
	draw_header(t, w);
	/* services first: the cascade is the headline, and rows below can scroll off */
	for (i = 0; i < t->cur.nnotes && y < h - 1; i++, y++)
		mvaddnstr(y, 0, t->cur.notes[i], w);
	if (y < h)
		draw_titles(&lay, y++, w);
	for (i = 0; i < t->cur.n && y < h; i++, y++) {
		/* the last line says how many more there are rather than show one of them */
		if (y == h - 1 && i + 1 < t->cur.n) {
			mvprintw(y, 0, "... %zu more", t->cur.n - i);
			break;
		}
		draw_row(t, &lay, &t->cur.rows[i], y, w);
	}
	if (t->cur.burst && i == t->cur.n && y < h)
		mvaddnstr(y, 0, DW_TOP_BURST_LEGEND, w);
	refresh();
}

/* Milliseconds until the next refresh is due, for the key wait. */
static int wait_ms(uint64_t due)
{
	uint64_t now = monotonic_ns();

	if (now >= due)
		return 0;
	return (due - now) / 1000000 + 1;
}

static void run_loop(struct live *t)
{
	uint64_t due = t->cur_ns + t->interval_ns;

	draw(t);
	while (!quit) {
		int ch;

		timeout(wait_ms(due));
		ch = getch();
		if (quit || ch == 'q' || ch == 'Q')
			return;
		if (ch == KEY_RESIZE)
			draw(t);
		if (monotonic_ns() < due)
			continue;
		refresh_frame(t);
		draw(t);
		due += t->interval_ns;
		if (due < monotonic_ns())	/* we fell behind (suspended): no catching up */
			due = monotonic_ns() + t->interval_ns;
	}
}

/*
 * stderr goes to /dev/null while curses owns the screen: a failed refresh
 * would otherwise print over the table (dw_control_request says why on
 * stderr); the header says it instead.
 */
static int mute_stderr(void)
{
	int saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (saved >= 0 && null >= 0)
		dup2(null, STDERR_FILENO);
	if (null >= 0)
		close(null);
	return saved;
}

static void unmute_stderr(int saved)
{
	if (saved < 0)
		return;
	dup2(saved, STDERR_FILENO);
	close(saved);
}

static int top_live(struct live *t)
{
	SCREEN *scr;
	int saved;

	/* the first answer before curses starts, so a missing daemon is a plain error */
	t->cur_ns = monotonic_ns();
	t->cur_time = time(NULL);
	if (fetch(t->run_dir, &t->cur, t->err, sizeof(t->err))) {
		if (t->err[0])
			fprintf(stderr, "depwatch: %s\n", t->err);
		return 1;
	}
	catch_quit_signals();
	scr = newterm(NULL, stdout, stdin);
	if (!scr) {
		fprintf(stderr, "depwatch: top: cannot use terminal '%s'\n",
			getenv("TERM") ? getenv("TERM") : "(TERM unset)");
		dw_top_frame_free(&t->cur);
		return 1;
	}
	saved = mute_stderr();
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	start_colors(t);
	run_loop(t);
	endwin();
	delscreen(scr);
	unmute_stderr(saved);
	dw_top_frame_free(&t->cur);
	return 0;
}

/* ---- the command ---- */

#define INTERVAL_MIN_NS 100000000ULL		/* the daemon itself polls every 250 ms */
#define INTERVAL_MAX_NS 3600000000000ULL

static const char top_usage[] = "usage: depwatch top [--run-dir DIR] [--interval DUR]";

static int parse_interval(const char *s, uint64_t *ns)
{
	uint64_t v;

	if (dw_parse_duration(s, &v) || v < INTERVAL_MIN_NS || v > INTERVAL_MAX_NS)
		return dw_usage_error("top: --interval takes 100ms to 60m, not '%s'", s);
	*ns = v;
	return 0;
}

int dw_cmd_top(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "run-dir", required_argument, NULL, 'R' },
		{ "interval", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct live t = { .run_dir = DW_DEFAULT_RUN_DIR, .interval_ns = 1000000000ULL };
	int opt;

	while ((opt = getopt_long(argc, argv, "i:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'R': t.run_dir = optarg; break;
		case 'i':
			if (parse_interval(optarg, &t.interval_ns))
				return 2;
			break;
		case 'h': puts(top_usage); return 0;
		default: return 2;
		}
	}
	if (optind < argc) {
		dw_usage_error("top: unexpected argument '%s'", argv[optind]);
		return 2;
	}
	/* without a terminal to read keys from, curses would spin on end-of-file */
	if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO))
		return top_plain(t.run_dir);
	return top_live(&t);
}
