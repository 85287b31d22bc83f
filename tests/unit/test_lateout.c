// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Outcomes merged after their calls (user/logic/depset/lateout.c): a failing
 * HTTP/2 answer moves its call from completed to failed in its start slice
 * (fast or slow by slow_call), never below what the kernel counted; calls
 * the kernel failed already, untimed ones and desyncs are counted, not moved.
 */
#include "dwtest.h"

#include <stdlib.h>

#include "logic/outcome/h2answer.h"
#include "logic/judge/judge.h"
#include "logic/depset/lateout.h"
#include "logic/outcome/outcome.h"

#define MS 1000000ULL

static struct dw_hb_answer ans(int status, int grpc, uint64_t start, uint64_t end)
{
	return (struct dw_hb_answer){ .slot = 3, .stream = 1, .status = status, .grpc = grpc,
				      .timed = true, .start_ns = start, .end_ns = end };
}

static void test_moves_into_the_start_slice(void **state)
{
	struct dw_late l = { 0 };
	struct dw_status_set fs;
	uint32_t fg;
	uint64_t t0 = 1000ULL << DW_SLICE_SHIFT;
	struct dw_slice_counts acc = { .slice = 1000, .started = 5, .fast = 3, .slow = 1, .failed = 1 };
	struct dw_hb_answer a;
	char buf[32];

	(void)state;
	assert_int_equal(dw_status_set_parse(DW_FAILURE_STATUS_DEFAULT, &fs), 0);
	assert_int_equal(dw_grpc_set_parse(DW_FAILURE_GRPC_DEFAULT, &fg), 0);
	assert_false(dw_late_outcome(&l, buf, sizeof(buf)));
	dw_late_add(&l, &(struct dw_hb_answer){ .status = 200, .grpc = 14, .timed = true, .start_ns = t0,
						 .end_ns = t0 + MS }, &fs, fg, 500 * MS);
	dw_late_add(&l, &(struct dw_hb_answer){ .status = 503, .grpc = -1, .timed = true, .start_ns = t0 + 1,
						 .end_ns = t0 + 600 * MS }, &fs, fg, 500 * MS);
	a = ans(200, 5, t0, t0 + MS);	/* not_found: no failure */
	dw_late_add(&l, &a, &fs, fg, 500 * MS);
	a = ans(200, 0, t0, t0 + MS);
	dw_late_add(&l, &a, &fs, fg, 500 * MS);
	assert_int_equal(l.answers[0], 3);
	assert_int_equal(l.answers[3], 1);
	assert_int_equal(l.grpc[14], 1);
	assert_int_equal(l.grpc[5], 1);
	assert_int_equal(l.grpc[0], 1);
	assert_int_equal(l.moved_grpc, 1);
	assert_int_equal(l.moved_status, 1);
	assert_int_equal(l.moved_slow, 1);
	assert_true(dw_late_outcome(&l, buf, sizeof(buf)));
	assert_string_equal(buf, "http_503");
	dw_late_slice_apply(&l, 1000, &acc);
	assert_int_equal(acc.fast, 2);
	assert_int_equal(acc.slow, 0);
	assert_int_equal(acc.failed, 3);
	assert_int_equal(acc.started, 5);
	/* another slice: untouched; a slice read before its calls ended: never below 0 */
	acc = (struct dw_slice_counts){ .slice = 1001, .fast = 4 };
	dw_late_slice_apply(&l, 1001, &acc);
	assert_int_equal(acc.fast, 4);
	acc = (struct dw_slice_counts){ .slice = 1000 };
	dw_late_slice_apply(&l, 1000, &acc);
	assert_int_equal(acc.failed, 0);
	/* the newest failing answer names the outcome */
	a = ans(200, 4, t0, t0 + MS);
	dw_late_add(&l, &a, &fs, fg, 500 * MS);
	assert_true(dw_late_outcome(&l, buf, sizeof(buf)));
	assert_string_equal(buf, "grpc_deadline_exceeded");
}

static void test_not_moved(void **state)
{
	struct dw_late l = { 0 };
	struct dw_status_set fs;
	struct dw_hb_answer a;
	char buf[32];

	(void)state;
	assert_int_equal(dw_status_set_parse("5xx", &fs), 0);
	/* the kernel failed it already (a 5xx it read): counted, named, not moved */
	a = ans(500, -1, 1, 2);
	a.kfailed = true;
	dw_late_add(&l, &a, &fs, 0, 0);
	/* its start never seen */
	a = ans(502, -1, 0, 0);
	a.timed = false;
	dw_late_add(&l, &a, &fs, 0, 0);
	/* an unknown grpc-status number fails nothing, even with every code listed */
	a = ans(200, DW_GRPC_OTHER, 1, 2);
	dw_late_add(&l, &a, &fs, 0x1ffff, 0);
	/* a desync counts, nothing else */
	a = (struct dw_hb_answer){ .desync = true, .grpc = -1 };
	dw_late_add(&l, &a, &fs, 0x1ffff, 0);
	assert_int_equal(l.moved_status + l.moved_grpc, 0);
	assert_int_equal(l.untimed, 1);
	assert_int_equal(l.answers[3], 2);
	assert_int_equal(l.grpc[DW_GRPC_OTHER], 1);
	assert_int_equal(l.desync, 1);
	assert_true(dw_late_outcome(&l, buf, sizeof(buf)));
	assert_string_equal(buf, "http_502");
}

static void test_json(void **state)
{
	uint64_t g[DW_GRPC_N + 1] = { 0 };
	struct dw_buf b = { 0 };

	(void)state;
	g[14] = 7;
	g[DW_GRPC_N] = 1;
	dw_late_json(&b, g, 7, 2);
	assert_string_equal(b.data, ",\"grpc\":{\"unavailable\":7,\"other\":1},\"failed_grpc\":7,\"hpack_desync\":2");
	free(b.data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_moves_into_the_start_slice),
		cmocka_unit_test(test_not_moved),
		cmocka_unit_test(test_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
