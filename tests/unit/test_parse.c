// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "dwtest.h"

#include "logic/base/parse.h"

#define US 1000ULL
#define MS (1000ULL * US)
#define SEC (1000ULL * MS)
#define MIN (60ULL * SEC)

/* what the helpers return when a parser wrote its output and still failed */
#define CLOBBERED (-10000)
#define SENTINEL 0xdeadbeefcafef00dULL

/*
 * Each helper folds a parse into one value, so that each case is a single
 * assertion: the parsed value, or the negative errno if the output was
 * left alone, or CLOBBERED.
 */
static int64_t dur(const char *s)
{
	uint64_t v = SENTINEL;
	int rc = dw_parse_duration(s, &v);

	if (rc < 0)
		return v == SENTINEL ? rc : CLOBBERED;
	return rc == 0 && v <= INT64_MAX ? (int64_t)v : CLOBBERED;
}

/* for values above INT64_MAX */
static bool dur_is(const char *s, uint64_t want)
{
	uint64_t v = SENTINEL;

	return dw_parse_duration(s, &v) == 0 && v == want;
}

static double pct(const char *s)
{
	double v = 42.0;
	int rc = dw_parse_percent(s, &v);

	if (rc < 0)
		return v == 42.0 ? rc : CLOBBERED;
	return v;
}

static int64_t uint_in(const char *s, uint64_t min, uint64_t max)
{
	uint64_t v = SENTINEL;
	int rc = dw_parse_uint(s, min, max, &v);

	if (rc < 0)
		return v == SENTINEL ? rc : CLOBBERED;
	return rc == 0 && v <= INT64_MAX ? (int64_t)v : CLOBBERED;
}

/* bool has no spare value to use as a sentinel: try both */
static int boolean(const char *s)
{
	bool t = true, f = false;
	int rt = dw_parse_bool(s, &t), rf = dw_parse_bool(s, &f);

	if (rt != rf)
		return CLOBBERED;
	if (rt < 0)
		return t && !f ? rt : CLOBBERED;
	return t == f ? t : CLOBBERED;
}

static const char *fmt(uint64_t ns)
{
	static char buf[DW_DURATION_STRLEN];

	memset(buf, 'X', sizeof(buf));
	dw_format_duration(ns, buf, sizeof(buf));
	return buf;
}

static void test_duration_valid(void **state)
{
	(void)state;
	assert_int_equal(dur("250ms"), 250 * MS);
	assert_int_equal(dur("1s"), SEC);
	assert_int_equal(dur("1.5s"), 1500 * MS);
	assert_int_equal(dur("10us"), 10 * US);
	assert_int_equal(dur("2m"), 2 * MIN);
	assert_int_equal(dur("0s"), 0);
	assert_int_equal(dur("0us"), 0);
	assert_int_equal(dur("0.0m"), 0);
	assert_int_equal(dur("0.5ms"), 500 * US);
	assert_int_equal(dur("1.25m"), 75 * SEC);
	assert_int_equal(dur("0.1m"), 6 * SEC);
	assert_int_equal(dur("0.001us"), 1);
	assert_int_equal(dur("1.234567ms"), 1234567);
	assert_int_equal(dur("1.23456789s"), 1234567890);
	assert_int_equal(dur("007s"), 7 * SEC);
	assert_int_equal(dur("1.000000000s"), SEC);
	assert_int_equal(dur("1.00000000000000000000000000s"), SEC);
	assert_int_equal(dur("3600s"), 3600 * SEC);
	/* a minute is 6e10 ns: its 11th decimal is 0.6 ns, yet 5 of them are 3 ns */
	assert_int_equal(dur("0.00000000005m"), 3);
	assert_int_equal(dur("1.00000000005m"), MIN + 3);
	assert_int_equal(dur("0.00000000015m"), 9);
}

static void test_duration_limits(void **state)
{
	(void)state;
	assert_true(dur_is("18446744073709551.615us", UINT64_MAX));
	assert_true(dur_is("18446744073.709551615s", UINT64_MAX));
	assert_true(dur_is("307445734m", 307445734ULL * MIN));
	assert_int_equal(dur("18446744073709551.616us"), -ERANGE);
	assert_int_equal(dur("18446744074s"), -ERANGE);
	assert_int_equal(dur("307445735m"), -ERANGE);
	assert_int_equal(dur("99999999999999999999999s"), -ERANGE);
	assert_int_equal(dur("99999999999999999999999x"), -EINVAL);
}

static void test_duration_invalid(void **state)
{
	(void)state;
	assert_int_equal(dur(NULL), -EINVAL);
	assert_int_equal(dur(""), -EINVAL);
	assert_int_equal(dur("s"), -EINVAL);
	assert_int_equal(dur("ms"), -EINVAL);
	assert_int_equal(dur("10"), -EINVAL);
	assert_int_equal(dur("1.5"), -EINVAL);
	assert_int_equal(dur("-1s"), -EINVAL);
	assert_int_equal(dur("+1s"), -EINVAL);
	assert_int_equal(dur(" 1s"), -EINVAL);
	assert_int_equal(dur("1s "), -EINVAL);
	assert_int_equal(dur("1 s"), -EINVAL);
	assert_int_equal(dur("1h"), -EINVAL);
	assert_int_equal(dur("1ns"), -EINVAL);
	assert_int_equal(dur("1S"), -EINVAL);
	assert_int_equal(dur("1sec"), -EINVAL);
	assert_int_equal(dur("1s1"), -EINVAL);
	assert_int_equal(dur("1mss"), -EINVAL);
	assert_int_equal(dur("1.s"), -EINVAL);
	assert_int_equal(dur(".5s"), -EINVAL);
	assert_int_equal(dur("1..5s"), -EINVAL);
	assert_int_equal(dur("1.5.0s"), -EINVAL);
	assert_int_equal(dur("1e3ms"), -EINVAL);
	assert_int_equal(dur("0x10s"), -EINVAL);
	assert_int_equal(dur("1,5s"), -EINVAL);
	assert_int_equal(dur("0.0001us"), -EINVAL); /* finer than 1 ns */
	assert_int_equal(dur("1.0000000001s"), -EINVAL);
	assert_int_equal(dur("0.00000000001m"), -EINVAL);  /* 0.6 ns */
	assert_int_equal(dur("0.000000000005m"), -EINVAL); /* 0.3 ns */
}

static void test_percent(void **state)
{
	(void)state;
	assert_double_eq(pct("50%"), 0.5);
	assert_double_eq(pct("12.5%"), 0.125);
	assert_double_eq(pct("0%"), 0.0);
	assert_double_eq(pct("100%"), 1.0);
	assert_double_eq(pct("100.000%"), 1.0);
	assert_double_eq(pct("007%"), 0.07);
	assert_near(pct("33.3%"), 0.333, 1e-12);
	assert_near(pct("0.5%"), 0.005, 1e-12);
	assert_near(pct("99.99999%"), 0.9999999, 1e-12);
	assert_near(pct("1.23456789012345678%"), 0.0123456789012345678, 1e-12);
}

static void test_percent_invalid(void **state)
{
	(void)state;
	assert_double_eq(pct(NULL), -EINVAL);
	assert_double_eq(pct(""), -EINVAL);
	assert_double_eq(pct("%"), -EINVAL);
	assert_double_eq(pct("50"), -EINVAL);
	assert_double_eq(pct("0.5"), -EINVAL);
	assert_double_eq(pct("50 %"), -EINVAL);
	assert_double_eq(pct(" 50%"), -EINVAL);
	assert_double_eq(pct("50% "), -EINVAL);
	assert_double_eq(pct("50%%"), -EINVAL);
	assert_double_eq(pct("50%x"), -EINVAL);
	assert_double_eq(pct("-5%"), -EINVAL);
	assert_double_eq(pct("+5%"), -EINVAL);
	assert_double_eq(pct(".5%"), -EINVAL);
	assert_double_eq(pct("5.%"), -EINVAL);
	assert_double_eq(pct("1e1%"), -EINVAL);
	assert_double_eq(pct("nan%"), -EINVAL);
	assert_double_eq(pct("inf%"), -EINVAL);
	assert_double_eq(pct("0x10%"), -EINVAL);
	assert_double_eq(pct("101%"), -ERANGE);
	assert_double_eq(pct("100.1%"), -ERANGE);
	assert_double_eq(pct("100.0000000000000000001%"), -ERANGE);
	assert_double_eq(pct("99999999999999999999999%"), -ERANGE);
}

static void test_uint(void **state)
{
	(void)state;
	assert_int_equal(uint_in("0", 0, 10), 0);
	assert_int_equal(uint_in("10", 0, 10), 10);
	assert_int_equal(uint_in("6", 6, 10), 6);
	assert_int_equal(uint_in("007", 0, 10), 7);
	assert_int_equal(uint_in("4096", 1, 1 << 20), 4096);
	assert_int_equal(uint_in("11", 0, 10), -ERANGE);
	assert_int_equal(uint_in("5", 6, 10), -ERANGE);
	assert_int_equal(uint_in("18446744073709551616", 0, UINT64_MAX), -ERANGE);
	assert_int_equal(uint_in("99999999999999999999999", 0, UINT64_MAX), -ERANGE);
	assert_int_equal(uint_in(NULL, 0, 10), -EINVAL);
	assert_int_equal(uint_in("", 0, 10), -EINVAL);
	assert_int_equal(uint_in("-1", 0, 10), -EINVAL);
	assert_int_equal(uint_in("+1", 0, 10), -EINVAL);
	assert_int_equal(uint_in(" 1", 0, 10), -EINVAL);
	assert_int_equal(uint_in("1 ", 0, 10), -EINVAL);
	assert_int_equal(uint_in("0x10", 0, 100), -EINVAL);
	assert_int_equal(uint_in("1.0", 0, 10), -EINVAL);
	assert_int_equal(uint_in("1e3", 0, 10000), -EINVAL);
	assert_int_equal(uint_in("abc", 0, 10), -EINVAL);
}

static void test_uint_max(void **state)
{
	uint64_t v = 0;

	(void)state;
	assert_true(dw_parse_uint("18446744073709551615", 0, UINT64_MAX, &v) == 0 &&
		    v == UINT64_MAX);
}

static void test_bool(void **state)
{
	(void)state;
	assert_int_equal(boolean("yes"), 1);
	assert_int_equal(boolean("on"), 1);
	assert_int_equal(boolean("true"), 1);
	assert_int_equal(boolean("1"), 1);
	assert_int_equal(boolean("YES"), 1);
	assert_int_equal(boolean("True"), 1);
	assert_int_equal(boolean("no"), 0);
	assert_int_equal(boolean("off"), 0);
	assert_int_equal(boolean("false"), 0);
	assert_int_equal(boolean("0"), 0);
	assert_int_equal(boolean("OFF"), 0);
	assert_int_equal(boolean(NULL), -EINVAL);
	assert_int_equal(boolean(""), -EINVAL);
	assert_int_equal(boolean("y"), -EINVAL);
	assert_int_equal(boolean("2"), -EINVAL);
	assert_int_equal(boolean("yess"), -EINVAL);
	assert_int_equal(boolean(" yes"), -EINVAL);
	assert_int_equal(boolean("yes "), -EINVAL);
	assert_int_equal(boolean("enable"), -EINVAL);
	assert_int_equal(boolean("00"), -EINVAL);
}

static void test_format(void **state)
{
	(void)state;
	assert_string_equal(fmt(0), "0s");
	assert_string_equal(fmt(500 * MS), "500ms");
	assert_string_equal(fmt(SEC), "1s");
	assert_string_equal(fmt(10 * US), "10us");
	assert_string_equal(fmt(1500 * MS), "1.5s");
	assert_string_equal(fmt(2 * MIN), "2m");
	assert_string_equal(fmt(60 * SEC), "1m");
	assert_string_equal(fmt(61 * SEC), "61s");
	assert_string_equal(fmt(90 * SEC), "90s");
	assert_string_equal(fmt(150 * SEC), "2.5m");
	assert_string_equal(fmt(20 * SEC), "20s");
	assert_string_equal(fmt(100 * SEC), "100s");
	assert_string_equal(fmt(60 * MIN), "60m");
	assert_string_equal(fmt(100 * MS), "100ms");
	assert_string_equal(fmt(1500 * US), "1.5ms");
	assert_string_equal(fmt(1234567), "1.234567ms");
	assert_string_equal(fmt(1500), "1.5us");
	assert_string_equal(fmt(999), "0.999us");
	assert_string_equal(fmt(1), "0.001us");
	assert_string_equal(fmt(1000000000000000000ULL), "1000000000s");
	assert_string_equal(fmt(UINT64_MAX), "307445734.56182586025m");
}

static void test_format_truncates(void **state)
{
	char buf[8];

	(void)state;
	memset(buf, 'X', sizeof(buf));
	dw_format_duration(500 * MS, buf, 4);
	assert_string_equal(buf, "500");
	dw_format_duration(500 * MS, buf, 0);
	assert_string_equal(buf, "500"); /* len 0: nothing written */
}

static void round_trip(uint64_t ns)
{
	const char *s = fmt(ns);
	uint64_t back = SENTINEL;

	if (dw_parse_duration(s, &back) != 0 || back != ns)
		fail_msg("%llu -> \"%s\" -> %llu", (unsigned long long)ns, s,
			 (unsigned long long)back);
}

static void test_round_trip(void **state)
{
	static const uint64_t units[] = {1, US, MS, SEC, MIN};
	uint64_t seed = 3;
	unsigned i, k;

	(void)state;
	round_trip(0);
	round_trip(UINT64_MAX);
	for (i = 0; i < 5; i++)
		for (k = 1; k < 2000; k++)
			round_trip(k * units[i]);
	for (i = 0; i < 100000; i++)
		round_trip(dwt_rand(&seed) >> (dwt_rand(&seed) % 64));
}

/* and the other way: canonical text survives parse -> format */
static void test_canonical_text(void **state)
{
	static const char *const texts[] = {
	    "250ms", "1s", "1.5s", "10us", "2m", "0s", "90s", "2.5m", "1.5ms", "0.5us",
	};
	uint64_t ns;
	unsigned i;

	(void)state;
	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		ns = SENTINEL;
		assert_int_equal(dw_parse_duration(texts[i], &ns), 0);
		assert_string_equal(fmt(ns), texts[i]);
	}
}

/* One duration cell for status and top: three significant digits, each form to its rounding edge. */
static void test_format_ms_cell(void **state)
{
	static const struct {
		double ms;
		const char *want;
	} cases[] = {
		{ -1, "-" }, { -0.001, "-" }, { 0, "0us" }, { 0.85, "850us" }, { 0.9994, "999us" },
		{ 0.9996, "1.0ms" }, { 12.34, "12.3ms" }, { 99.94, "99.9ms" }, { 99.96, "100ms" },
		{ 450, "450ms" }, { 999.4, "999ms" }, { 999.6, "1.00s" }, { 1250, "1.25s" },
		{ 9994, "9.99s" }, { 9996, "10.0s" }, { 98100, "98.1s" }, { 99960, "100s" },
		{ 4125000, "4125s" }, { 99999400, "99999s" }, { 99999600, "28h" },
	};
	char buf[16];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		dw_format_ms_cell(cases[i].ms, buf, sizeof(buf));
		if (strcmp(buf, cases[i].want))
			fail_msg("%g ms: \"%s\", want \"%s\"", cases[i].ms, buf, cases[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_ms_cell),
	    cmocka_unit_test(test_duration_valid),   cmocka_unit_test(test_duration_limits),
	    cmocka_unit_test(test_duration_invalid), cmocka_unit_test(test_percent),
	    cmocka_unit_test(test_percent_invalid),  cmocka_unit_test(test_uint),
	    cmocka_unit_test(test_uint_max),	     cmocka_unit_test(test_bool),
	    cmocka_unit_test(test_format),	     cmocka_unit_test(test_format_truncates),
	    cmocka_unit_test(test_round_trip),	     cmocka_unit_test(test_canonical_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
