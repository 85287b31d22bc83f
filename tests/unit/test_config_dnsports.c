// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* dns_ports (issue 35): a [defaults] key, a list of UDP ports; errors say file, line and what. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwtest.h"

#include "logic/config/config.h"
#include "logic/base/jsonw.h"

static char err[1024];

static int parse(const char *text, struct dw_config *cfg)
{
	return dw_config_parse("t.conf", text, strlen(text), cfg, err, sizeof(err));
}

static void expect_error(const char *text, int line, const char *phrase)
{
	struct dw_config cfg;
	char prefix[32];

	snprintf(prefix, sizeof(prefix), "t.conf:%d: ", line);
	if (parse(text, &cfg) != -EINVAL)
		fail_msg("no error for:\n%s", text);
	if (strncmp(err, prefix, strlen(prefix)) || !strstr(err, phrase))
		fail_msg("error '%s', want '%s...%s'", err, prefix, phrase);
}

static void test_default_is_53(void **state)
{
	struct dw_config cfg;

	(void)state;
	dw_config_defaults(&cfg);
	assert_int_equal(cfg.ndns_ports, 1);
	assert_int_equal(cfg.dns_ports[0], 53);
	dw_config_free(&cfg);
	assert_int_equal(parse("[dependency a]\nmatch = 10.0.0.1:53\n", &cfg), 0);
	assert_int_equal(cfg.ndns_ports, 1);
	assert_int_equal(cfg.dns_ports[0], 53);
	dw_config_free(&cfg);
}

static void test_list(void **state)
{
	struct dw_config cfg, again;
	struct dw_buf out = { 0 };
	char *text;

	(void)state;
	assert_int_equal(parse("[dependency a]\nmatch = 10.0.0.1\n[defaults]\ndns_ports = 5353 ,53,  65535 # r\n", &cfg), 0);
	assert_int_equal(cfg.ndns_ports, 3);
	assert_int_equal(cfg.dns_ports[0], 5353);
	assert_int_equal(cfg.dns_ports[1], 53);
	assert_int_equal(cfg.dns_ports[2], 65535);
	/* depwatch check shows it, and what it shows parses back to the same list */
	dw_config_describe(&cfg, &out);
	assert_non_null(strstr(out.data, "\ndns_ports = 5353, 53, 65535\n"));
	text = strndup(out.data, out.len);
	assert_int_equal(parse(text, &again), 0);
	assert_int_equal(again.ndns_ports, 3);
	assert_memory_equal(again.dns_ports, cfg.dns_ports, 3 * sizeof(cfg.dns_ports[0]));
	free(text);
	dw_buf_free(&out);
	dw_config_free(&again);
	dw_config_free(&cfg);
	/* 53 not listed: only the ports listed are DNS */
	assert_int_equal(parse("[defaults]\ndns_ports = 1\n", &cfg), 0);
	assert_int_equal(cfg.ndns_ports, 1);
	assert_int_equal(cfg.dns_ports[0], 1);
	dw_config_free(&cfg);
}

static void test_sixteen_at_most(void **state)
{
	char conf[256];
	int n = snprintf(conf, sizeof(conf), "[defaults]\ndns_ports = 1");
	struct dw_config cfg;

	(void)state;
	for (int p = 2; p <= DW_DNS_PORTS_MAX; p++)
		n += snprintf(conf + n, sizeof(conf) - n, ",%d", p);
	snprintf(conf + n, sizeof(conf) - n, "\n");
	assert_int_equal(parse(conf, &cfg), 0);
	assert_int_equal(cfg.ndns_ports, DW_DNS_PORTS_MAX);
	dw_config_free(&cfg);
	snprintf(conf + n, sizeof(conf) - n, ",999\n");
	expect_error(conf, 2, "dns_ports: more than 16 ports");
}

static void test_errors(void **state)
{
	(void)state;
	expect_error("[defaults]\ndns_ports = 0\n", 2, "dns_ports: '0' is not a port (1 to 65535)");
	expect_error("[defaults]\n\ndns_ports = 53, 65536\n", 3, "'65536' is not a port");
	expect_error("[defaults]\ndns_ports = 53 5353\n", 2, "'53 5353' is not a port");
	expect_error("[defaults]\ndns_ports = dns\n", 2, "'dns' is not a port");
	expect_error("[defaults]\ndns_ports = -53\n", 2, "'-53' is not a port");
	expect_error("[defaults]\ndns_ports = 53,,54\n", 2, "an empty item in '53,,54'");
	expect_error("[defaults]\ndns_ports = 53,\n", 2, "an empty item");
	expect_error("[defaults]\ndns_ports = ,53\n", 2, "an empty item");
	expect_error("[defaults]\ndns_ports = 53, 54, 53\n", 2, "port 53 is listed twice");
	expect_error("[defaults]\ndns_ports = 53\ndns_ports = 54\n", 3, "duplicate key 'dns_ports' in [defaults] (first set at line 2)");
	expect_error("[dependency a]\nmatch = 10.0.0.1\ndns_ports = 5353\n", 3,
		     "dns_ports belongs in [defaults], not in [dependency a]");
	expect_error("[service s]\nlisten = 80\ndns_ports = 5353\n", 3, "dns_ports");
	expect_error("[defaults]\ndns_port = 53\n", 2, "did you mean 'dns_ports'?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_is_53),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_sixteen_at_most),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
