// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The control socket's wire format (logic/view/control_wire.c): the verbs and the answer's length line. */
#include <errno.h>

#include "dwtest.h"

#include "logic/view/control_wire.h"

static void test_every_verb_matches_its_request(void **state)
{
	char req[64];
	const char *args;

	(void)state;
	for (int v = 0; v < DW_NVERBS; v++) {
		const char *with = dw_verbs[v].args == DW_ARGS_NONE ? NULL : "open x";

		assert_int_equal(dw_verb_request(v, with, req, sizeof(req)), 0);
		assert_int_equal(dw_verb_match(req, &args), v);
		if (with)
			assert_string_equal(args, with);
		else
			assert_null(args);
	}
}

/* The requests the daemon has always taken, and the ones it has always refused. */
static void test_requests(void **state)
{
	static const struct {
		const char *line;
		int verb;
		const char *args;
	} cases[] = {
		{ "status json", DW_VERB_STATUS_JSON, NULL },
		{ "status json 20", DW_VERB_STATUS_JSON, "20" },
		{ "status json ", DW_VERB_STATUS_JSON, "" },	/* then "not a number" */
		{ "status text", DW_VERB_STATUS_TEXT, NULL },
		{ "top tsv", DW_VERB_TOP_TSV, NULL },
		{ "breaker open payments", DW_VERB_BREAKER, "open payments" },
		{ "breaker ", DW_VERB_BREAKER, "" },		/* then "breaker takes ..." */
		{ "breaker", -1, NULL },
		{ "status text 5", -1, NULL },
		{ "top tsv x", -1, NULL },
		{ "status jsonx", -1, NULL },
		{ "status", -1, NULL },
		{ "", -1, NULL },
		{ "STATUS JSON", -1, NULL },
	};
	const char *args;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = dw_verb_match(cases[i].line, &args);

		if (got != cases[i].verb)
			fail_msg("'%s': verb %d, want %d", cases[i].line, got, cases[i].verb);
		if (cases[i].args)
			assert_string_equal(args, cases[i].args);
		else
			assert_null(args);
	}
	assert_true(dw_verbs[DW_VERB_BREAKER].root_only);
	assert_false(dw_verbs[DW_VERB_STATUS_JSON].root_only);
}

static void test_request_too_long(void **state)
{
	char req[16];

	(void)state;
	assert_int_equal(dw_verb_request(DW_VERB_BREAKER, "open payments", req, sizeof(req)),
			 -ENAMETOOLONG);
	assert_int_equal(dw_verb_request(DW_VERB_TOP_TSV, NULL, req, sizeof(req)), 0);
	assert_string_equal(req, "top tsv");
}

/* The line and the answer together, as the daemon sends them. */
static size_t framed(const char *answer, char *buf, size_t len)
{
	size_t n = dw_answer_line(strlen(answer), buf);

	assert_true(n + strlen(answer) < len);
	memcpy(buf + n, answer, strlen(answer));
	return n + strlen(answer);
}

static void test_whole_answer(void **state)
{
	char buf[128];
	size_t n = framed("{\"a\":1}\n", buf, sizeof(buf)), len, want;
	const char *body;

	(void)state;
	assert_memory_equal(buf, "depwatch-answer 8\n{", 19);
	assert_int_equal(dw_answer_parse(buf, n, &body, &len, &want), 0);
	assert_int_equal(len, 8);
	assert_int_equal(want, 8);
	assert_memory_equal(body, "{\"a\":1}\n", 8);
	n = framed("", buf, sizeof(buf));
	assert_int_equal(dw_answer_parse(buf, n, &body, &len, &want), 0);
	assert_int_equal(len, 0);
}

/* Every cut of a framed answer is told as one, with what arrived of how much. */
static void test_every_cut(void **state)
{
	char buf[128];
	size_t n = framed("error: unknown request\n", buf, sizeof(buf)), line = strchr(buf, '\n') + 1 - buf;
	size_t len, want;
	const char *body;

	(void)state;
	for (size_t cut = 0; cut < n; cut++) {
		assert_int_equal(dw_answer_parse(buf, cut, &body, &len, &want), -EPIPE);
		if (cut < line) {
			assert_int_equal(want, 0);
			assert_int_equal(len, 0);
			continue;
		}
		assert_int_equal(want, n - line);
		assert_int_equal(len, cut - line);
	}
}

static void test_not_an_answer(void **state)
{
	static const char *const bad[] = {
		"{\"dependencies\":[]}\n",		/* a daemon without the line */
		"error: unknown request\n",
		"depwatch-answer \n",			/* no length */
		"depwatch-answer 12x\nok\n",
		"depwatch-answer -3\nok\n",
		"depwatch-answer  3\nok\n",
		"depwatch-answer 1234567890123456789\n",	/* more digits than any answer */
		"depwatch-answer 00000000000000000000000000000000000003\nok\n",	/* no line end in time */
	};
	size_t len, want;
	const char *body;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (dw_answer_parse(bad[i], strlen(bad[i]), &body, &len, &want) != -EPROTO)
			fail_msg("'%s' taken as an answer", bad[i]);
	/* bytes of something else, no line end yet: not the start of a length line either */
	assert_int_equal(dw_answer_parse("{\"a\"", 4, &body, &len, &want), -EPROTO);
}

static void test_longer_than_said(void **state)
{
	static const char s[] = "depwatch-answer 2\nok\n";
	size_t len, want;
	const char *body;

	(void)state;
	assert_int_equal(dw_answer_parse(s, sizeof(s) - 1, &body, &len, &want), -EMSGSIZE);
	assert_int_equal(len, 3);
	assert_int_equal(want, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_verb_matches_its_request),
		cmocka_unit_test(test_requests),
		cmocka_unit_test(test_request_too_long),
		cmocka_unit_test(test_whole_answer),
		cmocka_unit_test(test_every_cut),
		cmocka_unit_test(test_not_an_answer),
		cmocka_unit_test(test_longer_than_said),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
