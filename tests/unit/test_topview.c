// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* depwatch top's pure part: the "top tsv" answer, the order, the columns, the cells. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwtest.h"

#include "logic/view/topview.h"
#include "logic/view/topview_layout.h"

#define HEADER_OLD                                                                                 \
	"name\tdests\tcalls\tfailed\tp50_ms\tp99_ms\tslow_rate\tfailure_rate\tinflight\t"         \
	"max_inflight\toldest_ms\tbreaker\treason\trejected\tconns\tforced"
#define HEADER HEADER_OLD "\tmultiplexed_conns\tburst_timings"

/* A row as the daemon writes it, with the fields a test varies. */
struct rowspec {
	const char *name, *calls, *p50, *slow, *inflight, *breaker, *reason, *forced, *mux, *burst;
	bool old;
};

static const char *row_line(const struct rowspec *s, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s\t1\t%s\t0\t%s\t4.000\t%s\t0.0000\t%s\t0\t0.0\t%s\t%s\t0\t2\t%s",
			 s->name, s->calls ? s->calls : "10", s->p50 ? s->p50 : "1.500",
			 s->slow ? s->slow : "0.0000", s->inflight ? s->inflight : "0",
			 s->breaker ? s->breaker : "closed", s->reason ? s->reason : "none",
			 s->forced ? s->forced : "0");

	if (!s->old)
		snprintf(buf + n, len - n, "\t%s\t%s", s->mux ? s->mux : "0", s->burst ? s->burst : "0");
	return buf;
}

#define ROW(...) row_line(&(struct rowspec){ __VA_ARGS__ }, (char[1024]){ 0 }, 1024)

static int parse(const char *text, struct dw_top_frame *f)
{
	return dw_top_parse(text, strlen(text), f);
}

static const struct dw_top_row *find(const struct dw_top_frame *f, const char *name)
{
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->rows[i].name, name))
			return &f->rows[i];
	fail_msg("no row %s", name);
	return NULL;
}

/* ---- the field list ---- */

static void test_field_names(void **state)
{
	struct dw_buf b = {};

	(void)state;
	assert_int_equal(DW_TOP_NFIELDS, 16);
	assert_int_equal(DW_TOP_NFIELDS_MUX, 18);
	assert_int_equal(DW_TOP_NFIELDS_ABORT, 19);
	assert_int_equal(DW_TOP_NFIELDS_ALL, 21);
	dw_top_tsv_header(&b);
	assert_string_equal(b.data, HEADER "\taborted\tstreams\th2_desync\n");
	dw_buf_free(&b);
}

/* The writer's bytes are the daemon's answer as it has always been. */
static void test_tsv_row_format(void **state)
{
	struct dw_top_wire w = {
		.name = "pay ments\\", .dests = 3, .calls = 1234, .failed = 5, .p50_ms = 1.5,
		.p99_ms = -1, .slow_rate = 0.25, .failure_rate = 0.125, .inflight = 2,
		.max_inflight = 40, .oldest_ms = 12.34, .breaker = "half_open",
		.reason = "slow_rate", .rejected = 7, .conns = 9, .forced = true,
		.multiplexed_conns = 4, .burst_timings = true, .aborted = 31, .streams = 800,
		.h2_desync = 1,
	};
	struct dw_buf b = {};

	(void)state;
	dw_top_tsv_row(&b, &w);
	assert_string_equal(b.data, "pay\\x20ments\\\\\t3\t1234\t5\t1.500\t-1.000\t0.2500\t0.1250\t2\t40\t"
				    "12.3\thalf_open\tslow_rate\t7\t9\t1\t4\t1\t31\t800\t1\n");
	dw_buf_free(&b);
}

/* What the writer writes, the parser reads back. */
static void test_tsv_round_trip(void **state)
{
	struct dw_top_wire w = {
		.name = "db", .dests = 2, .calls = 99, .failed = 1, .p50_ms = 0.25, .p99_ms = 31.5,
		.slow_rate = 0.5, .failure_rate = 0.01, .inflight = 3, .max_inflight = 8,
		.oldest_ms = 250, .breaker = "open", .reason = "concurrency", .rejected = 4,
		.conns = 6, .forced = false, .multiplexed_conns = 2, .burst_timings = true,
		.aborted = 12, .streams = 90, .h2_desync = 1,
	};
	struct dw_buf b = {};
	struct dw_top_frame f;
	const struct dw_top_row *r;

	(void)state;
	dw_top_tsv_header(&b);
	dw_top_tsv_row(&b, &w);
	w.name = "idle";
	w.p50_ms = w.p99_ms = -1;
	w.breaker = "closed";
	w.reason = "none";
	w.burst_timings = false;
	w.h2_desync = 0;
	dw_top_tsv_row(&b, &w);
	assert_int_equal(dw_top_parse(b.data, b.len, &f), 0);
	assert_int_equal(f.n, 2);
	assert_int_equal(f.skipped, 0);
	r = find(&f, "db");
	assert_int_equal(r->dests, 2);
	assert_int_equal(r->calls, 99);
	assert_int_equal(r->failed, 1);
	assert_double_eq(r->p50_ms, 0.25);
	assert_double_eq(r->p99_ms, 31.5);
	assert_double_eq(r->slow_rate, 0.5);
	assert_double_eq(r->failure_rate, 0.01);
	assert_int_equal(r->inflight, 3);
	assert_int_equal(r->max_inflight, 8);
	assert_double_eq(r->oldest_ms, 250);
	assert_string_equal(r->breaker, "open");
	assert_int_equal(r->state, DW_TOP_OPEN);
	assert_string_equal(r->reason, "concurrency");
	assert_int_equal(r->rejected, 4);
	assert_int_equal(r->conns, 6);
	assert_false(r->forced);
	assert_int_equal(r->mux_conns, 2);
	assert_true(r->burst);
	assert_int_equal(r->aborted, 12);
	assert_int_equal(r->streams, 90);
	assert_int_equal(r->h2_desync, 1);
	assert_double_eq(r->calls_per_s, -1);
	assert_int_equal(f.desync, 1);
	r = find(&f, "idle");
	assert_double_eq(r->p50_ms, -1);
	assert_int_equal(r->state, DW_TOP_CLOSED);
	assert_false(r->burst);
	assert_int_equal(f.burst, 1);
	assert_int_equal(f.open, 1);
	dw_top_frame_free(&f);
	dw_buf_free(&b);
}

/* ---- parsing ---- */

/* "@ejected" lines: a note per ejected destination, counted; malformed ones skipped. */
static void test_parse_ejected(void **state)
{
	char text[4096];
	struct dw_top_frame f;

	(void)state;
	snprintf(text, sizeof(text), "%s\n%s\n%s\n%s\n%s\n", HEADER, ROW(.name = "pay"),
		 "@ejected\tpay\t10.0.0.2:8080\tslow_rate\tout\t12.5",
		 "@ejected\tpay\t10.0.0.3:8080\tforced\tprobing\t-1.0",
		 "@ejected\tpay\t10.0.0.4:8080\tslow_rate\tout\tsoon");
	assert_int_equal(parse(text, &f), 0);
	assert_int_equal(f.n, 1);
	assert_int_equal(f.ejected, 2);
	assert_int_equal(f.skipped, 1);
	assert_int_equal(f.nnotes, 2);
	assert_string_equal(f.notes[0], "pay: 10.0.0.2:8080 EJECTED  [slow_rate, probed in 12.5s]");
	assert_string_equal(f.notes[1], "pay: 10.0.0.3:8080 EJECTED  [forced, probing]");
	dw_top_frame_free(&f);
}

/* "@dns" lines (issue 35): a resolver's outcomes as one note; malformed ones skipped. */
static void test_parse_dns(void **state)
{
	char text[4096];
	struct dw_top_frame f;

	(void)state;
	snprintf(text, sizeof(text), "%s\n%s\n%s\n%s\n%s\n", HEADER, ROW(.name = "resolver"),
		 "@dns\tresolver\t13\t2\t7\t6",
		 "@dns\tresolver\t13\tmany\t7\t6",
		 "@dns\tresolver\t13\t2\t7");
	assert_int_equal(parse(text, &f), 0);
	assert_int_equal(f.n, 1);
	assert_int_equal(f.skipped, 2);
	assert_int_equal(f.nnotes, 1);
	assert_string_equal(f.notes[0], "resolver: DNS 13 queries  [2 timeouts, 7 SERVFAIL/REFUSED, 6 NXDOMAIN]");
	dw_top_frame_free(&f);
}

static void test_parse_well_formed(void **state)
{
	char text[4096];
	struct dw_top_frame f;
	const struct dw_top_row *r;

	(void)state;
	snprintf(text, sizeof(text), "%s\n%s\n%s\n%s\n%s\n%s\n", HEADER, ROW(.name = "a"),
		 ROW(.name = "b", .breaker = "half_open", .reason = "failure_rate", .forced = "1"),
		 ROW(.name = "c", .breaker = "open", .mux = "3", .burst = "1", .p50 = "-1.000"),
		 ROW(.name = "d", .breaker = "weird"),
		 "@service\tfrontend: 40/40 waiting\texhausted\t40\t40\t2.5");
	assert_int_equal(parse(text, &f), 0);
	assert_int_equal(f.n, 4);
	assert_int_equal(f.skipped, 0);
	assert_int_equal(f.open, 1);
	assert_int_equal(f.half_open, 1);
	assert_int_equal(f.burst, 1);
	assert_int_equal(find(&f, "b")->state, DW_TOP_HALF_OPEN);
	assert_true(find(&f, "b")->forced);
	assert_int_equal(find(&f, "c")->mux_conns, 3);
	assert_double_eq(find(&f, "c")->p50_ms, -1);
	assert_int_equal(find(&f, "d")->state, DW_TOP_OTHER);
	r = find(&f, "a");
	assert_int_equal(r->calls, 10);
	assert_double_eq(r->p50_ms, 1.5);
	assert_double_eq(r->p99_ms, 4);
	assert_int_equal(f.nnotes, 1);
	assert_string_equal(f.notes[0], "frontend: 40/40 waiting  [exhausted: pool exhausted in 2.5s]");
	dw_top_frame_free(&f);
}

/* "@caller" lines belong to the row before them, and stay with it when the rows are sorted. */
static void test_parse_callers(void **state)
{
	char text[4096];
	struct dw_top_frame f;
	const struct dw_top_row *r;
	struct dw_buf b = {};

	(void)state;
	snprintf(text, sizeof(text), "%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n", HEADER,
		 "@caller\torphan\t1\t0\t-1",
		 ROW(.name = "a"), "@caller\tpayments-api.service\t30\t1\t2.100",
		 "@caller\tcron\\x09x.service\t2\t0\t-1.000",
		 ROW(.name = "b", .breaker = "open"), "@caller\tbad\tnot-a-number\t0\t1",
		 "@caller\tdocker:0123456789ab\t7\t1\t0.500");
	assert_int_equal(parse(text, &f), 0);
	assert_int_equal(f.n, 2);
	assert_int_equal(f.skipped, 2);
	dw_top_sort(&f);
	r = find(&f, "a");
	assert_int_equal(r->ncallers, 2);
	assert_string_equal(f.callers[r->caller_first].name, "payments-api.service");
	assert_int_equal(f.callers[r->caller_first].calls, 30);
	assert_int_equal(f.callers[r->caller_first].inflight, 1);
	assert_double_eq(f.callers[r->caller_first + 1].p99_ms, -1);
	r = find(&f, "b");
	assert_int_equal(r->ncallers, 1);
	assert_string_equal(f.callers[r->caller_first].name, "docker:0123456789ab");
	dw_top_caller_text(&f.callers[r->caller_first], &b);
	assert_non_null(strstr(b.data, "<- docker:0123456789ab"));
	assert_non_null(strstr(b.data, "calls 7  inflight 1  p99 500us"));
	dw_buf_free(&b);
	dw_top_frame_free(&f);
}

/* An older daemon: 16 fields, nothing multiplexed. Under an 18-field header, 16 is malformed. */
static void test_parse_old_answer(void **state)
{
	char text[4096];
	struct dw_top_frame f;

	(void)state;
	snprintf(text, sizeof(text), "%s\n%s\n%s\n", HEADER_OLD, ROW(.name = "plain", .old = true),
		 ROW(.name = "other", .old = true, .burst = "1"));
	assert_int_equal(parse(text, &f), 0);
	assert_int_equal(f.n, 2);
	assert_int_equal(f.skipped, 0);
	assert_int_equal(find(&f, "plain")->mux_conns, 0);
	assert_false(find(&f, "other")->burst);
	assert_int_equal(f.burst, 0);
	dw_top_frame_free(&f);

	snprintf(text, sizeof(text), "%s\n%s\n%s\n", HEADER, ROW(.name = "old", .old = true),
		 ROW(.name = "new"));
	assert_int_equal(parse(text, &f), 0);
	assert_int_equal(f.n, 1);
	assert_int_equal(f.skipped, 1);
	assert_string_equal(f.rows[0].name, "new");
	dw_top_frame_free(&f);
}

/* A newer daemon's extra field: read the known ones; a header not top's is an error. */
static void test_parse_header(void **state)
{
	char text[4096];
	struct dw_top_frame f;

	(void)state;
	snprintf(text, sizeof(text), "%s\tfuture\n%s\tx\n", HEADER, ROW(.name = "a"));
	assert_int_equal(parse(text, &f), 0);
	assert_int_equal(f.n, 1);
	dw_top_frame_free(&f);
	/* the two optional names must both be there to be read */
	snprintf(text, sizeof(text), "%s\tmultiplexed_conns\tother\n%s\n", HEADER_OLD,
		 ROW(.name = "a"));
	assert_int_equal(parse(text, &f), 0);
	assert_int_equal(f.n, 1);
	assert_int_equal(f.rows[0].mux_conns, 0);
	dw_top_frame_free(&f);
	assert_int_equal(parse("unknown command\n", &f), -EPROTO);
	assert_int_equal(f.n, 0);
	assert_int_equal(parse("", &f), -EPROTO);
	assert_int_equal(parse("name\tdests\n", &f), -EPROTO);
}

/* Malformed lines are skipped and counted, the others kept. */
static void test_parse_malformed(void **state)
{
	char text[16384], big[400];
	const char *bad[] = {
		ROW(.name = ""),			/* no name */
		ROW(.name = "nan", .p50 = "nan"),	/* not a plain decimal */
		ROW(.name = "hex", .p50 = "0x10"),
		ROW(.name = "space", .p50 = " 1"),
		ROW(.name = "rate", .slow = "1.5000"),	/* a rate above 1 */
		ROW(.name = "neg", .calls = "-1"),	/* a negative count */
		ROW(.name = "big", .calls = "99999999999999999999999"),
		ROW(.name = "empty", .calls = ""),
		ROW(.name = "state", .breaker = "OPEN"),
		ROW(.name = "long", .reason = "a_very_long_reason_word"),
		ROW(.name = "forced", .forced = "2"),
		ROW(.name = "burst", .burst = "2"),
		ROW(.name = "mux", .mux = "-1"),
		"short\t1\t2",				/* fields missing */
		"",					/* an empty line */
	};
	struct dw_top_frame f;
	size_t off;

	(void)state;
	memset(big, 'x', 300);
	big[300] = 0;
	off = snprintf(text, sizeof(text), "%s\n%s\n", HEADER, ROW(.name = "ok"));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		off += snprintf(text + off, sizeof(text) - off, "%s\n", bad[i]);
	off += snprintf(text + off, sizeof(text) - off, "%s\n", ROW(.name = big));	/* too long */
	off += snprintf(text + off, sizeof(text) - off, "%s\textra\n", ROW(.name = "extra"));
	off += snprintf(text + off, sizeof(text) - off, "@service\tx\tok\t1\t2\tnot-a-number\n");
	off += snprintf(text + off, sizeof(text) - off, "%s", ROW(.name = "last"));	/* no newline */
	assert_int_equal(parse(text, &f), 0);
	assert_int_equal(f.n, 2);
	assert_string_equal(f.rows[0].name, "ok");
	assert_string_equal(f.rows[1].name, "last");
	assert_int_equal(f.skipped, sizeof(bad) / sizeof(bad[0]) + 3);
	assert_int_equal(f.nnotes, 0);
	dw_top_frame_free(&f);
}

/* dw_top_parse_row on its own; a NUL inside a line; names made safe to print. */
static void test_parse_row_and_names(void **state)
{
	char line[1024], text[2048];
	struct dw_top_row r;
	struct dw_top_frame f;
	size_t len;

	(void)state;
	snprintf(line, sizeof(line), "%s", ROW(.name = "a"));
	assert_int_equal(dw_top_parse_row(line, DW_TOP_NFIELDS_MUX, true, &r), 0);
	snprintf(line, sizeof(line), "%s", ROW(.name = "a"));
	assert_int_equal(dw_top_parse_row(line, DW_TOP_NFIELDS_MUX + 1, true, &r), -EINVAL);
	snprintf(line, sizeof(line), "%s", ROW(.name = "a", .old = true));
	assert_int_equal(dw_top_parse_row(line, DW_TOP_NFIELDS, false, &r), 0);
	assert_int_equal(r.mux_conns, 0);
	snprintf(line, sizeof(line), "%s", ROW(.name = "e\x1b[2J\x9b"));
	assert_int_equal(dw_top_parse_row(line, DW_TOP_NFIELDS_MUX, true, &r), 0);
	assert_string_equal(r.name, "e\\x1b[2J\\x9b");

	len = snprintf(text, sizeof(text), "%s\n%s\n%s\n", HEADER, ROW(.name = "nul"), ROW(.name = "b"));
	text[strlen(HEADER) + 2] = 0;	/* inside "nul" */
	assert_int_equal(dw_top_parse(text, len, &f), 0);
	assert_int_equal(f.n, 1);
	assert_int_equal(f.skipped, 1);
	dw_top_frame_free(&f);
}

/* ---- rates and order ---- */

static void test_rates(void **state)
{
	char text[4096];
	struct dw_top_frame prev, cur;

	(void)state;
	snprintf(text, sizeof(text), "%s\n%s\n%s\n", HEADER, ROW(.name = "a", .calls = "100"),
		 ROW(.name = "b", .calls = "500"));
	assert_int_equal(parse(text, &prev), 0);
	snprintf(text, sizeof(text), "%s\n%s\n%s\n%s\n", HEADER, ROW(.name = "b", .calls = "400"),
		 ROW(.name = "a", .calls = "150"), ROW(.name = "new", .calls = "7"));
	assert_int_equal(parse(text, &cur), 0);
	dw_top_rates(&cur, NULL, 1);
	assert_double_eq(find(&cur, "a")->calls_per_s, -1);
	dw_top_rates(&cur, &prev, 2);
	assert_double_eq(find(&cur, "a")->calls_per_s, 25);
	assert_double_eq(find(&cur, "b")->calls_per_s, -1);	/* went back: a restarted daemon */
	assert_double_eq(find(&cur, "new")->calls_per_s, -1);
	dw_top_frame_free(&prev);
	dw_top_frame_free(&cur);
}

static void test_sort_worst_first(void **state)
{
	static const char *const want[] = { "e-open", "g-forced", "d-half", "f-slower",
					     "c-slowish", "b-busy", "a-idle", "h-closed-forced",
					     "i-other" };
	char text[8192];
	struct dw_top_frame f;

	(void)state;
	snprintf(text, sizeof(text), "%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n", HEADER,
		 ROW(.name = "a-idle"), ROW(.name = "b-busy", .inflight = "3"),
		 ROW(.name = "c-slowish", .slow = "0.2000"),
		 ROW(.name = "d-half", .breaker = "half_open", .reason = "failure_rate"),
		 ROW(.name = "e-open", .breaker = "open", .reason = "concurrency"),
		 ROW(.name = "f-slower", .slow = "0.4000", .inflight = "1"),
		 ROW(.name = "g-forced", .breaker = "open", .reason = "forced", .forced = "1"),
		 ROW(.name = "h-closed-forced", .reason = "forced", .forced = "1"),
		 ROW(.name = "i-other", .breaker = "unknown"));
	assert_int_equal(parse(text, &f), 0);
	dw_top_sort(&f);
	assert_int_equal(f.n, 9);
	for (size_t i = 0; i < f.n; i++)
		assert_string_equal(f.rows[i].name, want[i]);
	assert_true(dw_top_compare(find(&f, "e-open"), find(&f, "a-idle")) < 0);
	assert_int_equal(dw_top_compare(find(&f, "a-idle"), find(&f, "a-idle")), 0);
	dw_top_frame_free(&f);
}

/* ---- layout ---- */

static void titles_at(const struct dw_top_frame *f, int width, char *out, size_t len)
{
	struct dw_top_layout lay;
	struct dw_buf b = {};

	dw_top_layout(f, width, &lay);
	dw_top_titles(&lay, &b);
	snprintf(out, len, "%s", b.data ? b.data : "");
	dw_buf_free(&b);
}

static void test_layout_widths(void **state)
{
	static const enum dw_top_col at80[] = {
		DW_TOP_COL_NAME, DW_TOP_COL_RATE, DW_TOP_COL_P50, DW_TOP_COL_P99, DW_TOP_COL_SLOW,
		DW_TOP_COL_INFLIGHT, DW_TOP_COL_OLDEST, DW_TOP_COL_BREAKER,
	};
	static const enum dw_top_col at120[] = {
		DW_TOP_COL_NAME, DW_TOP_COL_DESTS, DW_TOP_COL_RATE, DW_TOP_COL_P50,
		DW_TOP_COL_P99, DW_TOP_COL_SLOW, DW_TOP_COL_FAIL, DW_TOP_COL_INFLIGHT,
		DW_TOP_COL_OLDEST, DW_TOP_COL_BREAKER, DW_TOP_COL_REJECTED, DW_TOP_COL_CONNS,
		DW_TOP_COL_CALLS,
	};
	char text[4096], titles[256];
	struct dw_top_frame f;
	struct dw_top_layout lay;
	int sum;

	(void)state;
	snprintf(text, sizeof(text), "%s\n%s\n", HEADER, ROW(.name = "a"));
	assert_int_equal(parse(text, &f), 0);

	dw_top_layout(&f, 80, &lay);
	assert_int_equal(lay.n, 8);
	for (int i = 0; i < lay.n; i++)
		assert_int_equal(lay.col[i], at80[i]);
	sum = lay.n - 1;
	for (int i = 0; i < lay.n; i++)
		sum += lay.width[i];
	assert_int_equal(sum, 77);	/* each at its narrowest: the cells are short */
	titles_at(&f, 80, titles, sizeof(titles));
	assert_string_equal(titles, "DEPENDENCY       CALLS/S    P50    P99 SLOW% INFLIGHT OLDEST "
				    "BREAKER         ");

	dw_top_layout(&f, 120, &lay);
	assert_int_equal(lay.n, 13);
	for (int i = 0; i < lay.n; i++)
		assert_int_equal(lay.col[i], at120[i]);
	titles_at(&f, 120, titles, sizeof(titles));
	assert_non_null(strstr(titles, "REJECTED CONNS     CALLS"));
	assert_null(strstr(titles, "FAILED"));
	assert_null(strstr(titles, "MUX"));

	/* narrower never shows more; not even the name: a cut one */
	dw_top_layout(&f, 8, &lay);
	assert_int_equal(lay.n, 1);
	assert_int_equal(lay.width[0], 8);
	titles_at(&f, 8, titles, sizeof(titles));
	assert_string_equal(titles, "DEPENDE~");
	dw_top_layout(&f, 0, &lay);
	assert_int_equal(lay.n, 0);
	dw_top_frame_free(&f);
}

/* A long name takes the spare width; the breaker gets the rest. */
static void test_layout_grows_name(void **state)
{
	char text[4096];
	struct dw_top_frame f;
	struct dw_top_layout lay;
	struct dw_buf b = {};

	(void)state;
	snprintf(text, sizeof(text), "%s\n%s\n", HEADER,
		 ROW(.name = "a-rather-long-dependency-name", .breaker = "open", .reason = "slow_rate",
		     .forced = "1"));
	assert_int_equal(parse(text, &f), 0);
	dw_top_layout(&f, 200, &lay);
	assert_int_equal(lay.col[0], DW_TOP_COL_NAME);
	assert_int_equal(lay.width[0], 29);
	assert_int_equal(lay.n, DW_TOP_NCOLS);
	for (int i = 0; i < lay.n; i++)
		if (lay.col[i] == DW_TOP_COL_BREAKER)
			assert_int_equal(lay.width[i], strlen("open slow_rate forced"));
	/* at 80 the breaker is brief rather than cut */
	dw_top_layout(&f, 80, &lay);
	dw_top_row_text(&lay, &f.rows[0], &b);
	assert_int_equal(b.len, 80);
	assert_non_null(strstr(b.data, "open slow forced"));
	dw_buf_free(&b);
	dw_top_frame_free(&f);
}

/* ---- cells ---- */

static void test_cells(void **state)
{
	char text[4096], buf[DW_TOP_CELL_LEN];
	struct dw_top_frame f;
	struct dw_top_row *r;

	(void)state;
	snprintf(text, sizeof(text), "%s\n%s\n", HEADER,
		 ROW(.name = "h2", .p50 = "12.340", .mux = "3", .burst = "1", .inflight = "2",
		     .calls = "123456789"));
	assert_int_equal(parse(text, &f), 0);
	r = &f.rows[0];
	/* the burst mark on P50 only; brief: still 6 characters */
	assert_string_equal(dw_top_cell(r, DW_TOP_COL_P50, false, buf), "12.3ms*");
	assert_string_equal(dw_top_cell(r, DW_TOP_COL_P50, true, buf), "12ms*");
	assert_string_equal(dw_top_cell(r, DW_TOP_COL_P99, false, buf), "4.0ms");
	r->p50_ms = -1;
	assert_string_equal(dw_top_cell(r, DW_TOP_COL_P50, false, buf), "-");
	r->p50_ms = 0.5;
	assert_string_equal(dw_top_cell(r, DW_TOP_COL_P50, true, buf), "500us*");
	r->burst = false;
	assert_string_equal(dw_top_cell(r, DW_TOP_COL_P50, false, buf), "500us");
	assert_string_equal(dw_top_cell(r, DW_TOP_COL_CALLS, false, buf), "123M");
	assert_string_equal(dw_top_cell(r, DW_TOP_COL_MUX, false, buf), "3");
	assert_string_equal(dw_top_cell(r, DW_TOP_COL_INFLIGHT, false, buf), "2");
	r->max_inflight = 40;
	assert_string_equal(dw_top_cell(r, DW_TOP_COL_INFLIGHT, false, buf), "2/40");
	assert_string_equal(dw_top_cell(r, DW_TOP_COL_OLDEST, false, buf), "0us");
	r->inflight = 0;
	assert_string_equal(dw_top_cell(r, DW_TOP_COL_OLDEST, false, buf), "-");
	assert_string_equal(dw_top_cell(r, DW_TOP_COL_RATE, false, buf), "");
	r->calls_per_s = 12.34;
	assert_string_equal(dw_top_cell(r, DW_TOP_COL_RATE, false, buf), "12.3");
	r->calls_per_s = 2500000;
	assert_string_equal(dw_top_cell(r, DW_TOP_COL_RATE, false, buf), "2500k");
	r->slow_rate = 0.25;
	assert_string_equal(dw_top_cell(r, DW_TOP_COL_SLOW, false, buf), "25.0");
	assert_string_equal(dw_top_cell(r, DW_TOP_COL_BREAKER, false, buf), "closed");
	r->forced = true;
	assert_string_equal(dw_top_cell(r, DW_TOP_COL_BREAKER, false, buf), "closed forced");
	strcpy(r->breaker, "open");
	strcpy(r->reason, "failure_rate");
	r->state = DW_TOP_OPEN;
	assert_string_equal(dw_top_cell(r, DW_TOP_COL_BREAKER, false, buf), "open failure_rate forced");
	assert_string_equal(dw_top_cell(r, DW_TOP_COL_BREAKER, true, buf), "open fail forced");
	strcpy(r->reason, "forced");
	assert_string_equal(dw_top_cell(r, DW_TOP_COL_BREAKER, false, buf), "open forced");
	dw_top_frame_free(&f);
}

static void test_header_line(void **state)
{
	char text[4096];
	struct dw_top_frame f;
	struct tm when = { .tm_hour = 14, .tm_min = 3, .tm_sec = 27 };
	struct dw_buf b = {};

	(void)state;
	snprintf(text, sizeof(text), "%s\n%s\n%s\nbad\n", HEADER, ROW(.name = "a", .breaker = "open"),
		 ROW(.name = "b", .breaker = "half_open"));
	assert_int_equal(parse(text, &f), 0);
	dw_top_header(&f, &when, &b);
	assert_string_equal(b.data, "depwatch top  14:03:27  2 dependencies, 1 open, 1 half_open; "
				    "1 malformed line skipped");
	dw_buf_free(&b);
	dw_top_frame_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_field_names),
	    cmocka_unit_test(test_tsv_row_format),
	    cmocka_unit_test(test_tsv_round_trip),
	    cmocka_unit_test(test_parse_well_formed),
	    cmocka_unit_test(test_parse_ejected),
	    cmocka_unit_test(test_parse_dns),
	    cmocka_unit_test(test_parse_callers),
	    cmocka_unit_test(test_parse_old_answer),
	    cmocka_unit_test(test_parse_header),
	    cmocka_unit_test(test_parse_malformed),
	    cmocka_unit_test(test_parse_row_and_names),
	    cmocka_unit_test(test_rates),
	    cmocka_unit_test(test_sort_worst_first),
	    cmocka_unit_test(test_layout_widths),
	    cmocka_unit_test(test_layout_grows_name),
	    cmocka_unit_test(test_cells),
	    cmocka_unit_test(test_header_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
