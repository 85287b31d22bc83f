// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "dwtest.h"

#include "logic/depset/dest.h"

static struct dw_dest_key key_of(__u16 family, const char *addr, __u16 port)
{
	struct dw_dest_key key = { .family = family, .port = port };

	if (addr)
		assert_int_equal(inet_pton(family, addr, key.addr), 1);
	return key;
}

/* The kernel's sentinels, decoded in one place. */
static void test_kind_of_key(void **state)
{
	struct dw_dest_key zero = { 0 };
	struct dw_dest_key v4 = key_of(AF_INET, "10.0.0.1", 80);
	struct dw_dest_key v6 = key_of(AF_INET6, "::1", 443);
	struct dw_dest_key listener = key_of(DW_FAMILY_INBOUND, NULL, 8080);

	(void)state;
	assert_int_equal(dw_row_kind_of(&zero), DW_ROW_OVERFLOW);
	assert_int_equal(dw_row_kind_of(&v4), DW_ROW_OUTBOUND);
	assert_int_equal(dw_row_kind_of(&v6), DW_ROW_OUTBOUND);
	assert_int_equal(dw_row_kind_of(&listener), DW_ROW_LISTENER);
}

/* An all-zero key is the overflow row only in slot 0; elsewhere it is not published yet. */
static void test_key_published(void **state)
{
	struct dw_dest_key zero = { 0 };
	struct dw_dest_key v4 = key_of(AF_INET, "10.0.0.1", 80);
	struct dw_dest_key listener = key_of(DW_FAMILY_INBOUND, NULL, 8080);

	(void)state;
	assert_true(dw_dest_key_published(DW_SLOT_OVERFLOW, &zero));
	assert_false(dw_dest_key_published(7, &zero));
	assert_true(dw_dest_key_published(7, &v4));
	assert_true(dw_dest_key_published(7, &listener));
}

/* A zeroed row is the overflow row; setting the key sets the kind. */
static void test_set_key_and_predicates(void **state)
{
	struct dw_dest d;
	struct dw_dest_key v4 = key_of(AF_INET, "10.0.0.1", 80);
	struct dw_dest_key listener = key_of(DW_FAMILY_INBOUND, NULL, 8080);

	(void)state;
	memset(&d, 0, sizeof(d));
	assert_true(dw_dest_is_overflow(&d));
	dw_dest_set_key(&d, &v4);
	assert_true(dw_dest_is_outbound(&d));
	assert_false(dw_dest_is_listener(&d));
	assert_false(dw_dest_is_overflow(&d));
	assert_memory_equal(&d.key, &v4, sizeof(v4));
	dw_dest_set_key(&d, &listener);
	assert_true(dw_dest_is_listener(&d));
	assert_false(dw_dest_is_outbound(&d));
}

/* Shown: outbound rows in use; the overflow row once it counted something; listeners never. */
static void test_shown(void **state)
{
	struct dw_dest d;
	struct dw_dest_key v4 = key_of(AF_INET, "10.0.0.1", 80);
	struct dw_dest_key listener = key_of(DW_FAMILY_INBOUND, NULL, 8080);

	(void)state;
	memset(&d, 0, sizeof(d));
	assert_false(dw_dest_shown(&d));	/* not in use */
	d.used = true;
	assert_false(dw_dest_shown(&d));	/* an empty overflow row */
	d.sum.connect_attempts = 1;
	assert_true(dw_dest_shown(&d));
	d.sum.connect_attempts = 0;
	d.sum.calls_started = 1;
	assert_true(dw_dest_shown(&d));

	memset(&d, 0, sizeof(d));
	d.used = true;
	dw_dest_set_key(&d, &v4);
	assert_true(dw_dest_shown(&d));		/* even before any call */
	dw_dest_set_key(&d, &listener);
	d.sum.calls_started = 5;
	assert_false(dw_dest_shown(&d));
}

/* A listener row's call counters read as requests; connections never below 0. */
static void test_listener_fig(void **state)
{
	struct dw_dest_key listener = key_of(DW_FAMILY_INBOUND, NULL, 8080);
	struct dw_listener_fig f;
	struct dw_dest d;

	(void)state;
	memset(&d, 0, sizeof(d));
	dw_dest_set_key(&d, &listener);
	d.sum.calls_started = 10;
	d.sum.calls_completed = 6;
	d.sum.calls_failed = 1;
	d.sum.calls_dropped = 1;
	d.sum.conns_opened = 4;
	d.sum.conns_closed = 1;
	dw_listener_fig_of(&d, &f);
	assert_int_equal(f.requests, 6);
	assert_int_equal(f.failed, 1);
	assert_int_equal(f.dropped, 1);
	assert_int_equal(f.started, 10);
	assert_int_equal(f.inflight, 2);
	assert_int_equal(f.connections, 3);

	/* counters read per CPU at different moments: closed may pass opened */
	d.sum.conns_closed = 5;
	assert_int_equal(dw_dest_conns_open(&d), 0);
}

static void test_format(void **state)
{
	struct dw_dest_key zero = { 0 };
	struct dw_dest_key v4 = key_of(AF_INET, "127.0.0.1", 8080);
	struct dw_dest_key v6 = key_of(AF_INET6, "::1", 443);
	struct dw_dest_key listener = key_of(DW_FAMILY_INBOUND, NULL, 8080);
	char buf[64];

	(void)state;
	dw_dest_format(&zero, buf, sizeof(buf));
	assert_string_equal(buf, "overflow");
	dw_dest_format(&v4, buf, sizeof(buf));
	assert_string_equal(buf, "127.0.0.1:8080");
	dw_dest_format(&v6, buf, sizeof(buf));
	assert_string_equal(buf, "[::1]:443");
	dw_dest_format(&listener, buf, sizeof(buf));
	assert_string_equal(buf, "*:8080");
}

/* What an operator names (depwatch breaker eject): the key the kernel's rows carry. */
static void test_parse(void **state)
{
	struct dw_dest_key k, v4 = key_of(AF_INET, "10.0.0.2", 8080), v6 = key_of(AF_INET6, "2001:db8::1", 443);

	(void)state;
	assert_int_equal(dw_dest_parse("10.0.0.2:8080", &k), 0);
	assert_memory_equal(&k, &v4, sizeof(k));
	assert_int_equal(dw_dest_parse("[2001:db8::1]:443", &k), 0);
	assert_memory_equal(&k, &v6, sizeof(k));
	/* IPv4-mapped: folded, as the kernel folds its rows */
	assert_int_equal(dw_dest_parse("[::ffff:10.0.0.2]:8080", &k), 0);
	assert_memory_equal(&k, &v4, sizeof(k));
	assert_int_equal(dw_dest_parse("10.0.0.2", &k), -EINVAL);
	assert_int_equal(dw_dest_parse("10.0.0.2:0", &k), -EINVAL);
	assert_int_equal(dw_dest_parse("10.0.0.2:65536", &k), -EINVAL);
	assert_int_equal(dw_dest_parse("2001:db8::1:443", &k), -EINVAL);
	assert_int_equal(dw_dest_parse("[10.0.0.2]:80", &k), -EINVAL);
	assert_int_equal(dw_dest_parse(":80", &k), -EINVAL);
	assert_int_equal(dw_dest_parse("host.example:80", &k), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kind_of_key),
	    cmocka_unit_test(test_key_published),
	    cmocka_unit_test(test_set_key_and_predicates),
	    cmocka_unit_test(test_shown),
	    cmocka_unit_test(test_listener_fig),
	    cmocka_unit_test(test_format),
	    cmocka_unit_test(test_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
