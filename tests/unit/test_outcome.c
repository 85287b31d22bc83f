// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * failure_status (user/logic/outcome/outcome.h): the lists operators write, their
 * bits as the kernel tests them (bpf/answer/http1.h's dw_status_fails on the same
 * words), the text `depwatch check` prints back, and the config errors.
 */
#include "dwtest.h"

#include <errno.h>

#include "answer/http1.h"
#include "logic/outcome/outcome.h"
#include "logic/outcome/h2answer.h"
#include "logic/kernel/kplan.h"

static struct dw_status_set parsed(const char *text)
{
	struct dw_status_set s;

	assert_int_equal(dw_status_set_parse(text, &s), 0);
	return s;
}

static void expect_format(const char *text, const char *want)
{
	struct dw_status_set s = parsed(text);
	struct dw_buf b = { 0 };

	dw_status_set_format(&s, &b);
	assert_false(b.oom);
	assert_string_equal(b.data, want);
	dw_buf_free(&b);
}

static void test_lists(void **state)
{
	struct dw_status_set s = parsed("5xx, 429");

	(void)state;
	assert_true(dw_status_set_has(&s, 500));
	assert_true(dw_status_set_has(&s, 503));
	assert_true(dw_status_set_has(&s, 599));
	assert_true(dw_status_set_has(&s, 429));
	assert_false(dw_status_set_has(&s, 404));
	assert_false(dw_status_set_has(&s, 200));
	/* the kernel's test on the same words says the same */
	for (int c = 100; c <= 599; c++)
		assert_int_equal(dw_status_fails((const __u64 *)s.bits, c), dw_status_set_has(&s, c));
	s = parsed("none");
	for (int c = 100; c <= 599; c++)
		assert_false(dw_status_set_has(&s, c));
}

static void test_format(void **state)
{
	(void)state;
	expect_format("5xx", "5xx");
	expect_format("429 5XX", "5xx, 429");
	expect_format("503,502", "502, 503");
	expect_format("4xx, 404, 5xx", "4xx, 5xx");
	expect_format("none", "none");
}

static void test_bad(void **state)
{
	struct dw_status_set s = parsed("5xx");

	(void)state;
	assert_int_equal(dw_status_set_parse("", &s), -EINVAL);
	assert_int_equal(dw_status_set_parse(" , ", &s), -EINVAL);
	assert_int_equal(dw_status_set_parse("600", &s), -EINVAL);
	assert_int_equal(dw_status_set_parse("6xx", &s), -EINVAL);
	assert_int_equal(dw_status_set_parse("5x", &s), -EINVAL);
	assert_int_equal(dw_status_set_parse("50x", &s), -EINVAL);
	assert_int_equal(dw_status_set_parse("5xx none", &s), -EINVAL);
	assert_int_equal(dw_status_set_parse("unavailable", &s), -EINVAL);
	/* untouched on error */
	assert_true(dw_status_set_has(&s, 503));
}

static void test_config_key(void **state)
{
	struct dw_config cfg;
	char err[256];
	const char *text = "[defaults]\nfailure_status = 5xx, 429\n"
			   "[dependency api]\nmatch = 10.0.0.1:80\nfailure_status = 503\n"
			   "[dependency web]\nmatch = 10.0.0.2:80\n";
	const char *bad = "[dependency api]\nmatch = 10.0.0.1:80\nfailure_status = 5xx 6xx\n";

	(void)state;
	assert_int_equal(dw_config_parse("t.conf", text, strlen(text), &cfg, err, sizeof(err)), 0);
	assert_true(dw_status_set_has(&cfg.defaults.failure_status, 429));
	assert_true(dw_status_set_has(&cfg.deps[0].s.failure_status, 503));
	assert_false(dw_status_set_has(&cfg.deps[0].s.failure_status, 500));
	assert_true(dw_status_set_has(&cfg.deps[1].s.failure_status, 429));
	dw_config_free(&cfg);
	dw_config_defaults(&cfg);
	assert_true(dw_status_set_has(&cfg.defaults.failure_status, 500));
	assert_false(dw_status_set_has(&cfg.defaults.failure_status, 429));
	dw_config_free(&cfg);
	assert_int_equal(dw_config_parse("t.conf", bad, strlen(bad), &cfg, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t.conf:3: failure_status: '5xx 6xx' is not a list of HTTP statuses"));
}

/* failure_grpc: names as operators write them, the default list, and a bad name's file:line. */
static void test_config_grpc_key(void **state)
{
	struct dw_config cfg;
	char err[256];
	const char *text = "[dependency api]\nmatch = 10.0.0.1:80\nfailure_grpc = unavailable, NOT_FOUND\n"
			   "[dependency web]\nmatch = 10.0.0.2:80\n";
	const char *bad = "[defaults]\nslow_call = 1s\nfailure_grpc = unavailable, notfound\n";

	(void)state;
	assert_int_equal(dw_config_parse("t.conf", text, strlen(text), &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.deps[0].s.failure_grpc, 1U << 14 | 1U << 5);
	assert_int_equal(cfg.deps[1].s.failure_grpc,
			 1U << 14 | 1U << 4 | 1U << 8 | 1U << 13 | 1U << 2 | 1U << 15);
	dw_config_free(&cfg);
	assert_int_equal(dw_config_parse("t.conf", bad, strlen(bad), &cfg, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t.conf:3: failure_grpc: 'unavailable, notfound' is not a list of gRPC status names"));
}

/* What the kernel gets (struct dw_dep_cfg.fail_status): the same bits, tested the kernel's way. */
static void test_kernel_cfg(void **state)
{
	struct dw_config cfg;
	struct dw_dep_cfg k;

	(void)state;
	dw_config_defaults(&cfg);
	assert_int_equal(dw_status_set_parse("5xx, 429", &cfg.defaults.failure_status), 0);
	k = dw_kplan_dep_cfg_of(&cfg.defaults);
	assert_true(dw_status_fails(k.fail_status, 429));
	assert_true(dw_status_fails(k.fail_status, 503));
	assert_false(dw_status_fails(k.fail_status, 404));
	assert_false(dw_status_fails(k.fail_status, 200));
	dw_config_free(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lists), cmocka_unit_test(test_format),
		cmocka_unit_test(test_bad), cmocka_unit_test(test_config_key),
		cmocka_unit_test(test_config_grpc_key), cmocka_unit_test(test_kernel_cfg),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
