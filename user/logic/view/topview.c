// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * depwatch top, the pure part (see topview.h): the "top tsv" answer, written
 * and read from one field list, the rates between two answers and the order
 * of the rows. What top draws of them is topview_layout.c's.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "logic/base/dwtypes.h"
#include "logic/view/topview.h"

/* ---- the answer's fields ---- */

const char *const dw_top_field_names[DW_TOP_NFIELDS_ALL] = {
#define FIELD_NAME(f, kind) [DW_TOP_F_##f] = #f,
	DW_TOP_FIELDS(FIELD_NAME)
#undef FIELD_NAME
};

void dw_top_tsv_header(struct dw_buf *out)
{
	for (int i = 0; i < DW_TOP_NFIELDS_ALL; i++)
		dw_buf_printf(out, "%s%s", i ? "\t" : "", dw_top_field_names[i]);
	dw_buf_putc(out, '\n');
}

static void put_TEXT(struct dw_buf *out, const char *s)
{
	dw_escape_text(out, s, DW_DEP_NAME_LEN);
}

static void put_COUNT(struct dw_buf *out, unsigned long long v)
{
	dw_buf_printf(out, "%llu", v);
}

static void put_MS(struct dw_buf *out, double v)
{
	dw_buf_printf(out, "%.3f", v);
}

static void put_RATE(struct dw_buf *out, double v)
{
	dw_buf_printf(out, "%.4f", v);
}

static void put_AGE(struct dw_buf *out, double v)
{
	dw_buf_printf(out, "%.1f", v);
}

static void put_WORD(struct dw_buf *out, const char *s)
{
	dw_buf_printf(out, "%s", s);
}

static void put_FLAG(struct dw_buf *out, bool v)
{
	dw_buf_putc(out, v ? '1' : '0');
}

void dw_top_tsv_row(struct dw_buf *out, const struct dw_top_wire *w)
{
#define PUT_FIELD(f, kind)                                                                         \
	if (DW_TOP_F_##f)                                                                          \
		dw_buf_putc(out, '\t');                                                            \
	put_##kind(out, w->f);
	DW_TOP_FIELDS(PUT_FIELD)
#undef PUT_FIELD
	dw_buf_putc(out, '\n');
}

/* ---- parsing ---- */

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
void dw_top_clean(char *dst, size_t dstlen, const char *src, size_t n)
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

/* A row's field by its name in DW_TOP_FIELDS. */
#define F(name) f[DW_TOP_F_##name]

static int parse_counts(char **f, struct dw_top_row *r)
{
	if (parse_count(F(dests), &r->dests) || parse_count(F(calls), &r->calls) ||
	    parse_count(F(failed), &r->failed) || parse_count(F(inflight), &r->inflight) ||
	    parse_count(F(max_inflight), &r->max_inflight) || parse_count(F(rejected), &r->rejected) ||
	    parse_count(F(conns), &r->conns))
		return -EINVAL;
	return 0;
}

static int parse_reals(char **f, struct dw_top_row *r)
{
	if (parse_real(F(p50_ms), -1, HUGE_VAL, &r->p50_ms) ||
	    parse_real(F(p99_ms), -1, HUGE_VAL, &r->p99_ms) ||
	    parse_real(F(slow_rate), 0, 1, &r->slow_rate) ||
	    parse_real(F(failure_rate), 0, 1, &r->failure_rate) ||
	    parse_real(F(oldest_ms), 0, HUGE_VAL, &r->oldest_ms))
		return -EINVAL;
	/* any negative percentile means "none"; one meaning is enough for the cells */
	if (r->p50_ms < 0)
		r->p50_ms = -1;
	if (r->p99_ms < 0)
		r->p99_ms = -1;
	return 0;
}

int dw_top_parse_row(char *line, size_t nfields, int mux, struct dw_top_row *row)
{
	char *f[DW_TOP_NFIELDS_ALL];
	static const size_t wants[] = { DW_TOP_NFIELDS, DW_TOP_NFIELDS_MUX, DW_TOP_NFIELDS_ABORT, DW_TOP_NFIELDS_ALL };
	size_t want = wants[mux < 0 ? 0 : mux > 3 ? 3 : mux];

	if (nfields < want || split_tabs(line, f, want) != nfields)
		return -EINVAL;
	for (size_t i = 0; i < want; i++)
		if (strlen(f[i]) > DW_TOP_FIELD_MAX)
			return -EINVAL;
	row->mux_conns = 0;
	row->burst = false;
	if (mux && (parse_count(F(multiplexed_conns), &row->mux_conns) ||
		    (strcmp(F(burst_timings), "0") && strcmp(F(burst_timings), "1"))))
		return -EINVAL;
	row->burst = mux && F(burst_timings)[0] == '1';
	row->aborted = row->streams = row->h2_desync = 0;
	if (want >= DW_TOP_NFIELDS_ABORT && parse_count(F(aborted), &row->aborted))
		return -EINVAL;
	if (want == DW_TOP_NFIELDS_ALL &&
	    (parse_count(F(streams), &row->streams) || parse_count(F(h2_desync), &row->h2_desync)))
		return -EINVAL;
	if (!*F(name) || parse_counts(f, row) || parse_reals(f, row) ||
	    parse_word(F(breaker), row->breaker) || parse_word(F(reason), row->reason))
		return -EINVAL;
	if (strcmp(F(forced), "0") && strcmp(F(forced), "1"))
		return -EINVAL;
	dw_top_clean(row->name, sizeof(row->name), F(name), DW_TOP_FIELD_MAX);
	row->forced = F(forced)[0] == '1';
	row->state = state_of(row->breaker);
	row->calls_per_s = -1;
	return 0;
}

#undef F

/*
 * The number of header fields, or 0 when the header does not start with
 * top's fields; *mux: the two multiplexed-connection fields follow them.
 */
static size_t parse_header(char *line, int *mux)
{
	char *f[DW_TOP_NFIELDS_ALL];
	size_t n = split_tabs(line, f, DW_TOP_NFIELDS_ALL);

	*mux = 0;
	if (n < DW_TOP_NFIELDS)
		return 0;
	for (size_t i = 0; i < DW_TOP_NFIELDS; i++)
		if (strcmp(f[i], dw_top_field_names[i]))
			return 0;
	*mux = n >= DW_TOP_NFIELDS_MUX;
	for (size_t i = DW_TOP_NFIELDS; *mux && i < DW_TOP_NFIELDS_MUX; i++)
		*mux = !strcmp(f[i], dw_top_field_names[i]);
	/* 2: the aborted count follows too; 3: and the HTTP/2 stream counts */
	if (*mux && n >= DW_TOP_NFIELDS_ABORT && !strcmp(f[DW_TOP_F_aborted], "aborted"))
		*mux = 2;
	if (*mux == 2 && n >= DW_TOP_NFIELDS_ALL && !strcmp(f[DW_TOP_F_streams], "streams") &&
	    !strcmp(f[DW_TOP_F_h2_desync], "h2_desync"))
		*mux = 3;
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

static int add_line(struct dw_top_frame *f, char *line, size_t nfields, int mux)
{
	struct dw_top_row *row = new_row(f);

	if (!row)
		return -ENOMEM;
	if (dw_top_parse_row(line, nfields, mux, row)) {
		f->skipped++;
		return 0;
	}
	row->caller_first = f->ncallers;
	row->ncallers = 0;
	f->n++;
	f->burst += row->burst;
	f->desync += row->h2_desync > 0;
	f->open += row->state == DW_TOP_OPEN;
	f->half_open += row->state == DW_TOP_HALF_OPEN;
	return 0;
}

/* "@caller<TAB>name<TAB>calls<TAB>inflight<TAB>p99_ms", for the row before it. */
static int add_caller(struct dw_top_frame *f, char *line)
{
	char *fld[5];
	struct dw_top_caller *c;
	struct dw_top_row *row = f->n ? &f->rows[f->n - 1] : NULL;

	if (split_tabs(line, fld, 5) != 5 || !row || row->caller_first + row->ncallers != f->ncallers) {
		f->skipped++;
		return 0;
	}
	if (f->ncallers == f->callers_cap) {
		size_t cap = f->callers_cap ? 2 * f->callers_cap : 16;
		struct dw_top_caller *p = realloc(f->callers, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		f->callers = p;
		f->callers_cap = cap;
	}
	c = &f->callers[f->ncallers];
	if (parse_count(fld[2], &c->calls) || parse_count(fld[3], &c->inflight) ||
	    parse_real(fld[4], -1, HUGE_VAL, &c->p99_ms)) {
		f->skipped++;
		return 0;
	}
	dw_top_clean(c->name, sizeof(c->name), fld[1], strlen(fld[1]));
	f->ncallers++;
	row->ncallers++;
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
	dw_top_clean(what, sizeof(what), fld[1], strlen(fld[1]));
	dw_top_clean(level, sizeof(level), fld[2], strlen(fld[2]));
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

/*
 * "@ejected<TAB>dependency<TAB>destination<TAB>reason<TAB>state<TAB>left_s":
 * a destination ejected from its dependency, marked above the table.
 */
static void add_ejected(struct dw_top_frame *f, char *line)
{
	char *fld[6], dep[64], dest[64], reason[DW_TOP_WORD_LEN], state[DW_TOP_WORD_LEN];
	char note[DW_TOP_NOTE_LEN + 200];
	double left;
	size_t len;

	if (split_tabs(line, fld, 6) != 6 || parse_real(fld[5], -1, HUGE_VAL, &left) ||
	    strlen(fld[3]) >= sizeof(reason) || strlen(fld[4]) >= sizeof(state)) {
		f->skipped++;
		return;
	}
	f->ejected++;
	if (f->nnotes == DW_TOP_NOTES)
		return;
	dw_top_clean(dep, sizeof(dep), fld[1], strlen(fld[1]));
	dw_top_clean(dest, sizeof(dest), fld[2], strlen(fld[2]));
	dw_top_clean(reason, sizeof(reason), fld[3], strlen(fld[3]));
	dw_top_clean(state, sizeof(state), fld[4], strlen(fld[4]));
	if (left >= 0)
		snprintf(note, sizeof(note), "%s: %s EJECTED  [%s, probed in %.1fs]", dep, dest, reason,
			 left < 1e6 ? left : 1e6);
	else
		snprintf(note, sizeof(note), "%s: %s EJECTED  [%s, %s]", dep, dest, reason, state);
	len = strnlen(note, DW_TOP_NOTE_LEN - 1);
	memcpy(f->notes[f->nnotes], note, len);
	f->notes[f->nnotes++][len] = 0;
}

/*
 * "@dns<TAB>dependency<TAB>queries<TAB>timeouts<TAB>rcode_failed<TAB>nxdomain" (issue 35):
 * a resolver's DNS outcomes since start, one line above the table.
 */
static void add_dns(struct dw_top_frame *f, char *line)
{
	char *fld[6], dep[64], note[DW_TOP_NOTE_LEN + 160];
	unsigned long long v[4];
	size_t len;

	if (split_tabs(line, fld, 6) != 6) {
		f->skipped++;
		return;
	}
	for (int i = 0; i < 4; i++)
		if (parse_count(fld[2 + i], &v[i])) {
			f->skipped++;
			return;
		}
	if (f->nnotes == DW_TOP_NOTES)
		return;
	dw_top_clean(dep, sizeof(dep), fld[1], strlen(fld[1]));
	snprintf(note, sizeof(note), "%s: DNS %llu queries  [%llu timeouts, %llu SERVFAIL/REFUSED, %llu NXDOMAIN]",
		 dep, v[0], v[1], v[2], v[3]);
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
	int mux = 0;
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
		else if (!strncmp(line, "@ejected\t", 9))
			add_ejected(f, line);
		else if (!strncmp(line, "@dns\t", 5))
			add_dns(f, line);
		else if (!strncmp(line, "@caller\t", 8))
			err = add_caller(f, line);
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
	free(f->callers);
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
