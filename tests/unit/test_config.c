// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "dwtest.h"

#include "logic/config/config.h"
#include "logic/base/dwtypes.h"
#include "logic/config/match.h"

#define MS 1000000ULL
#define SEC 1000000000ULL

static char err[1024];

static int parse(const char *text, struct dw_config *cfg)
{
	return dw_config_parse("t.conf", text, strlen(text), cfg, err, sizeof(err));
}

static void parse_ok(const char *text, struct dw_config *cfg)
{
	int ret = parse(text, cfg);

	if (ret)
		fail_msg("parse returned %d: %s\n--- text:\n%.2000s", ret, err, text);
}

/*
 * len bytes of text must fail with "t.conf:LINE: ...phrase...", one line,
 * and leave the output struct exactly as it was.
 */
static void expect_error_n(const char *text, size_t len, int line, const char *phrase)
{
	struct dw_config cfg, before;
	char prefix[32];
	int ret;

	memset(&cfg, 0x5a, sizeof(cfg));
	memcpy(&before, &cfg, sizeof(cfg));
	snprintf(prefix, sizeof(prefix), "t.conf:%d: ", line);
	ret = dw_config_parse("t.conf", text, len, &cfg, err, sizeof(err));
	if (ret != -EINVAL)
		fail_msg("returned %d, want -EINVAL (err '%s')\n--- text:\n%.*s", ret, err,
			 (int)len, text);
	if (strncmp(err, prefix, strlen(prefix)) != 0)
		fail_msg("error '%s' does not start with '%s'", err, prefix);
	if (!strstr(err, phrase))
		fail_msg("error '%s' does not say '%s'", err, phrase);
	if (strchr(err, '\n'))
		fail_msg("error '%s' is more than one line", err);
	if (memcmp(&cfg, &before, sizeof(cfg)) != 0)
		fail_msg("cfg changed by a failed parse of:\n%.*s", (int)len, text);
}

static void expect_error(const char *text, int line, const char *phrase)
{
	expect_error_n(text, strlen(text), line, phrase);
}

static void assert_documented_defaults(const struct dw_dep_settings *s)
{
	assert_int_equal(s->slow_call_ns, 1 * SEC);
	assert_double_eq(s->slow_rate, 0.5);
	assert_double_eq(s->failure_rate, 0.5);
	assert_int_equal(s->sample, 20);
	assert_int_equal(s->window_ns, 10 * SEC);
	assert_int_equal(s->min_calls, 10);
	assert_int_equal(s->open_for_ns, 30 * SEC);
	assert_int_equal(s->half_open_calls, 5);
	assert_int_equal(s->max_inflight, 0);
	assert_false(s->enforce_connect);
	assert_false(s->ignore);
	assert_false(s->judge_multiplexed);
	assert_false(s->eject);
	assert_double_eq(s->max_ejected, 0.5);
	assert_int_equal(s->eject_for_ns, 30 * SEC);
	assert_int_equal(s->eject_probe_calls, 5);
}

static void assert_settings_equal(const struct dw_dep_settings *a, const struct dw_dep_settings *b)
{
	assert_int_equal(a->slow_call_ns, b->slow_call_ns);
	assert_int_equal(a->window_ns, b->window_ns);
	assert_int_equal(a->open_for_ns, b->open_for_ns);
	assert_double_eq(a->slow_rate, b->slow_rate);
	assert_double_eq(a->failure_rate, b->failure_rate);
	assert_int_equal(a->sample, b->sample);
	assert_int_equal(a->min_calls, b->min_calls);
	assert_int_equal(a->half_open_calls, b->half_open_calls);
	assert_int_equal(a->max_inflight, b->max_inflight);
	assert_int_equal(a->enforce_connect, b->enforce_connect);
	assert_int_equal(a->ignore, b->ignore);
	assert_int_equal(a->judge_multiplexed, b->judge_multiplexed);
	assert_int_equal(a->eject, b->eject);
	assert_double_eq(a->max_ejected, b->max_ejected);
	assert_int_equal(a->eject_for_ns, b->eject_for_ns);
	assert_int_equal(a->eject_probe_calls, b->eject_probe_calls);
}

static void assert_match(const struct dw_match *m, int family, const char *addr, int prefix_len,
			 int port_lo, int port_hi)
{
	uint8_t want[16] = { 0 };

	assert_int_equal(inet_pton(family, addr, want), 1);
	assert_int_equal(m->family, family);
	assert_int_equal(m->prefix_len, prefix_len);
	assert_memory_equal(m->addr, want, 16);
	assert_int_equal(m->port_lo, port_lo);
	assert_int_equal(m->port_hi, port_hi);
}

static int lookup(const struct dw_config *cfg, int family, const char *addr, uint16_t port)
{
	uint8_t a[16] = { 0 };

	assert_int_equal(inet_pton(family, addr, a), 1);
	return dw_config_lookup(cfg, family, a, port);
}

static void test_embedded_default(void **state)
{
	struct dw_config cfg;

	(void)state;
	dw_config_defaults(&cfg);
	assert_documented_defaults(&cfg.defaults);
	assert_int_equal(cfg.ndeps, 0);
	assert_null(cfg.deps);
	assert_int_equal(cfg.nservices, 0);
	assert_null(cfg.services);
	assert_int_equal(cfg.syslog_facility, LOG_DAEMON);
	/* its default is "not set", so the built-in text does not name it */
	assert_string_equal(cfg.enforce_cgroup, "");
	assert_null(strstr(dw_default_config, "enforce_cgroup"));
	/* timeout has no default, and services are not defaults */
	assert_null(strstr(dw_default_config, "\ntimeout"));
	assert_null(strstr(dw_default_config, "[service"));
	/* the documented text, not just the values */
	assert_non_null(strstr(dw_default_config,
			       "[defaults]\nslow_call = 1s          # a call slower than this is slow\n"));
	assert_non_null(strstr(dw_default_config,
			       "ignore = no             # yes: trace but never judge\n"));
	assert_non_null(strstr(dw_default_config, "\nmultiplexed = ignore    # ignore | judge: "));
	dw_config_free(&cfg);
	parse_ok(dw_default_config, &cfg);
	assert_documented_defaults(&cfg.defaults);
	assert_string_equal(cfg.source, "t.conf");
	dw_config_free(&cfg);
}

/* examples/depwatch.conf, found from this file's path (the Makefile builds from the top) */
static void example_path(char *buf, size_t len)
{
	const char *tail = strstr(__FILE__, "tests/unit/test_config.c");

	assert_non_null(tail);
	snprintf(buf, len, "%.*sexamples/depwatch.conf", (int)(tail - __FILE__), __FILE__);
}

static void test_example_file(void **state)
{
	char path[4096], *text;
	struct dw_config cfg;
	FILE *f;
	long n;

	(void)state;
	example_path(path, sizeof(path));
	f = fopen(path, "r");
	if (!f)
		fail_msg("%s: %s (run from the top of the tree)", path, strerror(errno));
	text = calloc(1, DW_CONFIG_MAX_BYTES + 1);
	assert_non_null(text);
	n = fread(text, 1, DW_CONFIG_MAX_BYTES, f);
	fclose(f);
	assert_true(n > 0);
	/* the documented defaults are the built-in ones, byte for byte */
	if (!strstr(text, dw_default_config))
		fail_msg("%s does not hold dw_default_config verbatim", path);
	/* enforce_cgroup is documented, commented out, in [defaults] */
	if (!strstr(text, "local0..local7\n# enforce_cgroup = /sys/fs/cgroup/"))
		fail_msg("%s does not show enforce_cgroup after syslog_facility", path);
	if (dw_config_parse(path, text, n, &cfg, err, sizeof(err)))
		fail_msg("%s", err);
	free(text);
	assert_documented_defaults(&cfg.defaults);
	assert_int_equal(cfg.ndeps, 1);
	assert_string_equal(cfg.deps[0].name, "payments");
	assert_int_equal(cfg.deps[0].nmatches, 1);
	assert_match(&cfg.deps[0].matches[0], AF_INET, "10.0.3.0", 24, 443, 443);
	assert_int_equal(cfg.deps[0].s.slow_call_ns, 500 * MS);
	assert_int_equal(cfg.deps[0].s.max_inflight, 25);
	assert_int_equal(cfg.deps[0].s.sample, 20);
	assert_int_equal(cfg.deps[0].timeout_ns, 800 * MS);
	assert_string_equal(cfg.enforce_cgroup, "");
	/* the [service] example is commented out */
	assert_int_equal(cfg.nservices, 0);
	dw_config_free(&cfg);
}

/* The commented-out [service] example, with its '# ' taken off, is a valid config. */
static void test_example_service_block(void **state)
{
	char path[4096], *text, *block, *line, *end;
	struct dw_buf b = { 0 };
	struct dw_config cfg;
	FILE *f;
	long n;

	(void)state;
	example_path(path, sizeof(path));
	f = fopen(path, "r");
	assert_non_null(f);
	text = calloc(1, DW_CONFIG_MAX_BYTES + 1);
	assert_non_null(text);
	n = fread(text, 1, DW_CONFIG_MAX_BYTES, f);
	fclose(f);
	assert_true(n > 0);
	block = strstr(text, "\n# [service shop]\n");
	if (!block)
		fail_msg("%s has no commented-out [service shop] block", path);
	/* the file up to the block, then the block's lines uncommented up to a blank one */
	dw_buf_write(&b, text, block + 1 - text);
	for (line = block + 1; *line && *line != '\n'; line = end + 1) {
		end = strchrnul(line, '\n');
		assert_int_equal(strncmp(line, "# ", 2), 0);
		dw_buf_write(&b, line + 2, end - line - 2);
		dw_buf_putc(&b, '\n');
		if (!*end)
			break;
	}
	assert_false(b.oom);
	parse_ok(b.data, &cfg);
	assert_int_equal(cfg.nservices, 1);
	assert_string_equal(cfg.services[0].name, "shop");
	assert_int_equal(cfg.services[0].port_lo, 8080);
	assert_int_equal(cfg.services[0].port_hi, 8080);
	assert_int_equal(cfg.services[0].pool, 200);
	assert_int_equal(cfg.services[0].deadline_ns, 2 * SEC);
	assert_int_equal(cfg.services[0].npath, 1);
	assert_int_equal(cfg.services[0].path[0], 0);
	dw_config_free(&cfg);
	dw_buf_free(&b);
	free(text);
}

static const char full_conf[] =
	"# two dependencies\n"				/* 1 */
	"[defaults]\n"					/* 2 */
	"slow_call = 2s\n"				/* 3 */
	"slow_rate = 12.5%\n"				/* 4 */
	"failure_rate = 5%\n"				/* 5 */
	"sample = 100\n"				/* 6 */
	"window = 1m\n"					/* 7 */
	"min_calls = 50\n"				/* 8 */
	"open_for = 90s\n"				/* 9 */
	"half_open_calls = 3\n"				/* 10 */
	"max_inflight = 7\n"				/* 11 */
	"enforce = connect\n"				/* 12 */
	"ignore = no\n"					/* 13 */
	"syslog_facility = local3\n"			/* 14 */
	"\n"						/* 15 */
	"[dependency payments]\n"			/* 16 */
	"match = 10.0.3.0/24:443\n"			/* 17 */
	"match = [2001:db8::/32]:8000-8099\n"		/* 18 */
	"slow_call = 500ms\n"				/* 19 */
	"max_inflight = 25\n"				/* 20 */
	"\n"						/* 21 */
	"[dependency orders.v2]\n"			/* 22 */
	"match = 10.0.4.7\n"				/* 23 */
	"ignore = yes\n"				/* 24 */
	"enforce = off\n"				/* 25 */
	"min_calls = 1\n"				/* 26 */
	"sample = 1\n";					/* 27 */

static void test_full_file(void **state)
{
	const struct dw_dep_config *p, *o;
	struct dw_config cfg;

	(void)state;
	parse_ok(full_conf, &cfg);
	assert_int_equal(cfg.defaults.slow_call_ns, 2 * SEC);
	assert_double_eq(cfg.defaults.slow_rate, 0.125);
	assert_double_eq(cfg.defaults.failure_rate, 0.05);
	assert_int_equal(cfg.defaults.sample, 100);
	assert_int_equal(cfg.defaults.window_ns, 60 * SEC);
	assert_int_equal(cfg.defaults.min_calls, 50);
	assert_int_equal(cfg.defaults.open_for_ns, 90 * SEC);
	assert_int_equal(cfg.defaults.half_open_calls, 3);
	assert_int_equal(cfg.defaults.max_inflight, 7);
	assert_true(cfg.defaults.enforce_connect);
	assert_false(cfg.defaults.ignore);
	assert_int_equal(cfg.syslog_facility, LOG_LOCAL3);
	assert_int_equal(cfg.ndeps, 2);

	p = &cfg.deps[0];
	assert_string_equal(p->name, "payments");
	assert_int_equal(p->line, 16);
	assert_int_equal(p->nmatches, 2);
	assert_match(&p->matches[0], AF_INET, "10.0.3.0", 24, 443, 443);
	assert_int_equal(p->matches[0].line, 17);
	assert_match(&p->matches[1], AF_INET6, "2001:db8::", 32, 8000, 8099);
	assert_int_equal(p->matches[1].line, 18);
	assert_int_equal(p->s.slow_call_ns, 500 * MS);
	assert_int_equal(p->s.max_inflight, 25);
	/* everything else from [defaults] */
	assert_double_eq(p->s.slow_rate, 0.125);
	assert_double_eq(p->s.failure_rate, 0.05);
	assert_int_equal(p->s.sample, 100);
	assert_int_equal(p->s.window_ns, 60 * SEC);
	assert_int_equal(p->s.min_calls, 50);
	assert_int_equal(p->s.open_for_ns, 90 * SEC);
	assert_int_equal(p->s.half_open_calls, 3);
	assert_true(p->s.enforce_connect);
	assert_false(p->s.ignore);

	o = &cfg.deps[1];
	assert_string_equal(o->name, "orders.v2");
	assert_int_equal(o->nmatches, 1);
	assert_match(&o->matches[0], AF_INET, "10.0.4.7", 32, 0, 65535);
	assert_true(o->s.ignore);
	assert_false(o->s.enforce_connect);
	assert_int_equal(o->s.sample, 1);
	assert_int_equal(o->s.min_calls, 1);
	assert_int_equal(o->s.slow_call_ns, 2 * SEC);
	dw_config_free(&cfg);
	assert_null(cfg.deps);
	assert_int_equal(cfg.ndeps, 0);
	dw_config_free(&cfg);	/* twice is fine */
}

static void test_override_any_order(void **state)
{
	struct dw_config cfg;

	(void)state;
	parse_ok("[dependency early]\n"
		 "match = 10.0.0.0/8\n"
		 "window = 5s\n"
		 "[defaults]\n"
		 "window = 20s\n"
		 "slow_call = 3s\n"
		 "[dependency late]\n"
		 "match = 192.168.0.0/16\n"
		 "slow_call = 100ms\n",
		 &cfg);
	assert_int_equal(cfg.ndeps, 2);
	/* early's own window wins; its slow_call comes from the later [defaults] */
	assert_int_equal(cfg.deps[0].s.window_ns, 5 * SEC);
	assert_int_equal(cfg.deps[0].s.slow_call_ns, 3 * SEC);
	assert_int_equal(cfg.deps[1].s.window_ns, 20 * SEC);
	assert_int_equal(cfg.deps[1].s.slow_call_ns, 100 * MS);
	assert_int_equal(cfg.defaults.window_ns, 20 * SEC);
	/* unset everywhere: built-in */
	assert_int_equal(cfg.deps[0].s.open_for_ns, 30 * SEC);
	assert_int_equal(cfg.deps[1].s.sample, 20);
	dw_config_free(&cfg);
}

static void test_syntax_tolerance(void **state)
{
	struct dw_config cfg;

	(void)state;
	parse_ok("\xef\xbb\xbf# BOM, CRLF, tabs, comments everywhere\r\n"
		 "  [ defaults ]  # trailing comment\r\n"
		 "\tslow_call=250ms#no space before the comment\r\n"
		 "slow_rate\t =  10%   \r\n"
		 "   \r\n"
		 "[dependency\t db ]\n"
		 "match =10.9.0.0/16:5432   # postgres\n"
		 "ignore = TRUE\n"
		 "# caf\xc3\xa9 \xe2\x9c\x93: UTF-8 in comments is fine\n"
		 "enforce = Connect",	/* no newline at the end */
		 &cfg);
	assert_int_equal(cfg.defaults.slow_call_ns, 250 * MS);
	assert_double_eq(cfg.defaults.slow_rate, 0.1);
	assert_int_equal(cfg.ndeps, 1);
	assert_string_equal(cfg.deps[0].name, "db");
	assert_match(&cfg.deps[0].matches[0], AF_INET, "10.9.0.0", 16, 5432, 5432);
	assert_true(cfg.deps[0].s.ignore);
	assert_true(cfg.deps[0].s.enforce_connect);
	dw_config_free(&cfg);
}

static void test_empty_file(void **state)
{
	struct dw_config cfg;

	(void)state;
	parse_ok("", &cfg);
	assert_documented_defaults(&cfg.defaults);
	assert_int_equal(cfg.ndeps, 0);
	assert_int_equal(cfg.syslog_facility, LOG_DAEMON);
	dw_config_free(&cfg);
	assert_int_equal(dw_config_parse("t.conf", NULL, 0, &cfg, err, sizeof(err)), 0);
	assert_documented_defaults(&cfg.defaults);
	dw_config_free(&cfg);
	parse_ok("# nothing but comments\n\n   \n# [dependency x]\n", &cfg);
	assert_documented_defaults(&cfg.defaults);
	assert_int_equal(cfg.ndeps, 0);
	dw_config_free(&cfg);
	parse_ok("[defaults]\n", &cfg);
	assert_documented_defaults(&cfg.defaults);
	dw_config_free(&cfg);
}

struct form_case {
	const char *text, *addr;
	int family, prefix_len, port_lo, port_hi;
};

static void test_match_forms(void **state)
{
	static const struct form_case cases[] = {
		{ "10.0.3.7", "10.0.3.7", AF_INET, 32, 0, 65535 },
		{ "10.0.3.0/24:443", "10.0.3.0", AF_INET, 24, 443, 443 },
		{ "10.0.4.0/24:8000-8099", "10.0.4.0", AF_INET, 24, 8000, 8099 },
		{ "0.0.0.0/0:9", "0.0.0.0", AF_INET, 0, 9, 9 },
		{ "[2001:db8::/32]:443", "2001:db8::", AF_INET6, 32, 443, 443 },
		{ "[::1]", "::1", AF_INET6, 128, 0, 65535 },
		{ "[::1/128]:80-90", "::1", AF_INET6, 128, 80, 90 },
		{ "[::/0]:9", "::", AF_INET6, 0, 9, 9 },
		/* IPv4-mapped prefixes become IPv4, as the kernel side reports them */
		{ "[::ffff:172.16.0.0/108]:443", "172.16.0.0", AF_INET, 12, 443, 443 },
		{ "[::ffff:0:0/96]:7", "0.0.0.0", AF_INET, 0, 7, 7 },
		{ "[::ffff:10.0.0.1]:22", "10.0.0.1", AF_INET, 32, 22, 22 },
		/* shorter than /96 it holds more than mapped addresses: stays IPv6 */
		{ "[::/95]:7", "::", AF_INET6, 95, 7, 7 },
	};
	const struct form_case *c;
	struct dw_config cfg;
	char conf[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		c = &cases[i];
		snprintf(conf, sizeof(conf), "[dependency x]\n\nmatch = %s\n", c->text);
		parse_ok(conf, &cfg);
		assert_int_equal(cfg.deps[0].nmatches, 1);
		assert_match(&cfg.deps[0].matches[0], c->family, c->addr, c->prefix_len, c->port_lo,
			     c->port_hi);
		assert_int_equal(cfg.deps[0].matches[0].line, 3);
		dw_config_free(&cfg);
	}
}

static void test_match_format(void **state)
{
	static const char *const forms[] = {
		"10.0.3.0/24:443", "10.0.3.7/32", "0.0.0.0/0:1-65535",
		"[2001:db8::/32]:8000-8099", "[::1/128]", "[::/0]:9",
	};
	char conf[256], out[DW_MATCH_STRLEN];
	struct dw_config cfg;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		snprintf(conf, sizeof(conf), "[dependency x]\nmatch = %s\n", forms[i]);
		parse_ok(conf, &cfg);
		dw_match_format(&cfg.deps[0].matches[0], out, sizeof(out));
		assert_string_equal(out, forms[i]);
		dw_config_free(&cfg);
	}
	/* the longest there is still fits */
	parse_ok("[dependency x]\nmatch = [ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0/124]:65534-65535\n",
		 &cfg);
	dw_match_format(&cfg.deps[0].matches[0], out, sizeof(out));
	assert_string_equal(out, "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0/124]:65534-65535");
	dw_config_free(&cfg);
}

static const char lookup_conf[] =
	"[dependency net8]\n"			/* 0 */
	"match = 10.0.0.0/8\n"
	"[dependency net16]\n"			/* 1 */
	"match = 10.1.0.0/16\n"
	"[dependency host443]\n"		/* 2 */
	"match = 10.1.2.3:443\n"
	"[dependency range]\n"			/* 3 */
	"match = 10.1.0.0/16:8000-8099\n"
	"[dependency one_port]\n"		/* 4 */
	"match = 10.1.0.0/16:8050\n"
	"[dependency v6wide]\n"			/* 5 */
	"match = [2001:db8::/32]\n"
	"[dependency v6narrow]\n"		/* 6 */
	"match = [2001:db8:1::/48]:443\n"
	"[dependency mapped]\n"			/* 7 */
	"match = [::ffff:192.168.0.0/112]\n"
	"[dependency loop]\n"			/* 8 */
	"match = [::1]\n"
	"[dependency odd]\n"			/* 9: prefixes not on a byte boundary */
	"match = 172.16.0.0/12\n"
	"match = [2001:db8:8000::/33]\n";

static void test_lookup_v4(void **state)
{
	struct dw_config cfg;

	(void)state;
	parse_ok(lookup_conf, &cfg);
	assert_int_equal(lookup(&cfg, AF_INET, "10.200.0.1", 80), 0);
	assert_int_equal(lookup(&cfg, AF_INET, "10.1.9.9", 80), 1);
	assert_int_equal(lookup(&cfg, AF_INET, "10.1.2.3", 443), 2);
	assert_int_equal(lookup(&cfg, AF_INET, "10.1.2.3", 444), 1);
	/* same prefix: the narrower port range wins */
	assert_int_equal(lookup(&cfg, AF_INET, "10.1.2.3", 8000), 3);
	assert_int_equal(lookup(&cfg, AF_INET, "10.1.2.3", 8099), 3);
	assert_int_equal(lookup(&cfg, AF_INET, "10.1.2.3", 8050), 4);
	assert_int_equal(lookup(&cfg, AF_INET, "10.1.2.3", 8100), 1);
	/* a match without a port covers port 0 too */
	assert_int_equal(lookup(&cfg, AF_INET, "10.0.0.0", 0), 0);
	assert_int_equal(lookup(&cfg, AF_INET, "192.168.7.7", 1), 7);
	assert_int_equal(lookup(&cfg, AF_INET, "172.16.0.0", 1), 9);
	assert_int_equal(lookup(&cfg, AF_INET, "172.31.255.255", 1), 9);
	assert_int_equal(lookup(&cfg, AF_INET, "172.15.255.255", 1), -1);
	assert_int_equal(lookup(&cfg, AF_INET, "172.32.0.0", 1), -1);
	dw_config_free(&cfg);
}

static void test_lookup_v6_and_mapped(void **state)
{
	struct dw_config cfg;

	(void)state;
	parse_ok(lookup_conf, &cfg);
	assert_int_equal(lookup(&cfg, AF_INET6, "2001:db8:1234::1", 443), 5);
	assert_int_equal(lookup(&cfg, AF_INET6, "2001:db8:1::1", 443), 6);
	assert_int_equal(lookup(&cfg, AF_INET6, "2001:db8:1::1", 80), 5);
	assert_int_equal(lookup(&cfg, AF_INET6, "::1", 5), 8);
	assert_int_equal(lookup(&cfg, AF_INET6, "2001:db8:8000::1", 5), 9);
	assert_int_equal(lookup(&cfg, AF_INET6, "2001:db8:ffff::1", 5), 9);
	assert_int_equal(lookup(&cfg, AF_INET6, "2001:db8:7fff::1", 5), 5);
	/* a mapped address is looked up as IPv4, against IPv4 and mapped matches */
	assert_int_equal(lookup(&cfg, AF_INET6, "::ffff:10.1.2.3", 443), 2);
	assert_int_equal(lookup(&cfg, AF_INET6, "::ffff:192.168.1.1", 443), 7);
	assert_int_equal(lookup(&cfg, AF_INET, "192.168.1.1", 443), 7);
	/* not mapped: ::a01:203 is 10.1.2.3 only as IPv4-compatible, which we do not do */
	assert_int_equal(lookup(&cfg, AF_INET6, "::10.1.2.3", 443), -1);
	dw_config_free(&cfg);
}

static void test_lookup_no_match(void **state)
{
	uint8_t a[16] = { 10, 1, 2, 3 };
	struct dw_config cfg;

	(void)state;
	parse_ok(lookup_conf, &cfg);
	assert_int_equal(lookup(&cfg, AF_INET, "11.0.0.1", 443), -1);
	assert_int_equal(lookup(&cfg, AF_INET, "192.169.0.1", 443), -1);
	assert_int_equal(lookup(&cfg, AF_INET6, "2001:db9::1", 443), -1);
	assert_int_equal(lookup(&cfg, AF_INET6, "::2", 443), -1);
	/* IPv4 and IPv6 never cover each other */
	assert_int_equal(lookup(&cfg, AF_INET6, "a01:203::", 443), -1);
	assert_int_equal(dw_config_lookup(&cfg, AF_INET, a, 443), 2);
	assert_int_equal(dw_config_lookup(&cfg, 0, a, 443), -1);
	assert_int_equal(dw_config_lookup(&cfg, AF_INET, NULL, 443), -1);
	dw_config_free(&cfg);
	dw_config_defaults(&cfg);
	assert_int_equal(dw_config_lookup(&cfg, AF_INET, a, 443), -1);
	dw_config_free(&cfg);
}

static void test_err_no_equals(void **state)
{
	(void)state;
	expect_error("[defaults]\nslow_call 1s\n", 2, "expected 'key = value'");
	expect_error("\n\nwhatever\n", 3, "expected 'key = value'");
}

static void test_err_unterminated_section(void **state)
{
	(void)state;
	expect_error("# c\n[defaults\n", 2, "unterminated section header '[defaults'");
	/* a '#' starts a comment, also inside brackets */
	expect_error("[dependency a#b]\n", 1, "unterminated section header");
}

static void test_err_text_after_section(void **state)
{
	(void)state;
	expect_error("[defaults] x = 1\n", 1, "unexpected 'x = 1' after the section header");
}

static void test_err_empty_key(void **state)
{
	(void)state;
	expect_error("[defaults]\n  = 1s\n", 2, "empty key");
}

static void test_err_empty_value(void **state)
{
	(void)state;
	expect_error("[defaults]\nslow_call =   # forgot\n", 2, "empty value for 'slow_call'");
}

static void test_err_unknown_section(void **state)
{
	(void)state;
	expect_error("[defaults]\n[default]\n", 2, "unknown section '[default]'");
	expect_error("[Defaults]\n", 1, "unknown section '[Defaults]'");
	expect_error("[dependencyx]\n", 1, "unknown section '[dependencyx]'");
	expect_error("[]\n", 1, "unknown section '[]'");
}

static void test_err_unknown_key(void **state)
{
	(void)state;
	expect_error("[defaults]\n\n\n\n[dependency payments]\nmatch = 10.0.0.0/8\nslow_cal = 5s\n",
		     7, "unknown key 'slow_cal' in [dependency payments]");
	assert_non_null(strstr(err, "did you mean 'slow_call'?"));
	expect_error("[defaults]\ncolour = blue\n", 2, "unknown key 'colour' in [defaults]");
	assert_null(strstr(err, "did you mean"));
	/* keys are case-sensitive */
	expect_error("[defaults]\nSample = 5\n", 2, "unknown key 'Sample'");
}

static void test_err_key_outside_section(void **state)
{
	(void)state;
	expect_error("# header\nslow_call = 1s\n[defaults]\n", 2, "outside any section");
}

static void test_err_bad_duration(void **state)
{
	(void)state;
	expect_error("[defaults]\nslow_call = 5\n", 2,
		     "slow_call: '5' is not a duration from 1ms to 60m");
	expect_error("[defaults]\nwindow = 1h\n", 2, "window: '1h' is not a duration");
	expect_error("[defaults]\nopen_for = 5 s\n", 2, "open_for: '5 s' is not a duration");
	expect_error("[defaults]\nslow_call = -1s\n", 2, "not a duration");
}

static void test_err_bad_percentage(void **state)
{
	(void)state;
	expect_error("[defaults]\n\nslow_rate = 150%\n", 3,
		     "slow_rate: '150%' is not a percentage from 0% to 100%");
	expect_error("[defaults]\nfailure_rate = 0.5\n", 2,
		     "failure_rate: '0.5' is not a percentage");
	expect_error("[defaults]\nfailure_rate = 50 %\n", 2, "is not a percentage");
}

static void test_err_bad_number(void **state)
{
	(void)state;
	expect_error("[defaults]\nsample = twenty\n", 2,
		     "sample: 'twenty' is not a whole number from 1 to 10000");
	expect_error("[defaults]\nmax_inflight = -1\n", 2, "max_inflight: '-1' is not a whole number");
	expect_error("[defaults]\nhalf_open_calls = 5.0\n", 2, "is not a whole number");
	expect_error("[defaults]\nsample = 99999999999999999999999\n", 2, "is not a whole number");
}

/* multiplexed = ignore | judge, in [defaults] and per dependency, any case. */
static void test_multiplexed(void **state)
{
	struct dw_config cfg;

	(void)state;
	parse_ok("[defaults]\n"
		 "multiplexed = judge\n"
		 "[dependency grpc]\n"
		 "match = 10.1.0.0/16:443\n"
		 "multiplexed = ignore\n"
		 "[dependency web]\n"
		 "match = 10.2.0.0/16\n"
		 "[dependency h2]\n"
		 "match = 10.3.0.0/16\n"
		 "multiplexed = JUDGE\n",
		 &cfg);
	assert_true(cfg.defaults.judge_multiplexed);
	assert_int_equal(cfg.ndeps, 3);
	assert_false(cfg.deps[0].s.judge_multiplexed);
	/* unset: from [defaults] */
	assert_true(cfg.deps[1].s.judge_multiplexed);
	assert_true(cfg.deps[2].s.judge_multiplexed);
	dw_config_free(&cfg);

	parse_ok("[dependency a]\nmatch = 10.0.0.0/8\nmultiplexed = judge\n", &cfg);
	assert_false(cfg.defaults.judge_multiplexed);
	assert_true(cfg.deps[0].s.judge_multiplexed);
	dw_config_free(&cfg);
}

/* eject = on | off and its knobs, in [defaults] and per dependency; describe says on/off. */
static void test_eject_keys(void **state)
{
	struct dw_config cfg;
	struct dw_buf out = {};

	(void)state;
	parse_ok("[defaults]\n"
		 "eject_for = 10s\n"
		 "[dependency pay]\n"
		 "match = 10.1.0.0/16:443\n"
		 "eject = on\n"
		 "max_ejected = 34%\n"
		 "eject_probe_calls = 3\n"
		 "[dependency web]\n"
		 "match = 10.2.0.0/16\n",
		 &cfg);
	assert_false(cfg.defaults.eject);
	assert_int_equal(cfg.defaults.eject_for_ns, 10 * SEC);
	assert_true(cfg.deps[0].s.eject);
	assert_double_eq(cfg.deps[0].s.max_ejected, 0.34);
	assert_int_equal(cfg.deps[0].s.eject_probe_calls, 3);
	assert_int_equal(cfg.deps[0].s.eject_for_ns, 10 * SEC);
	assert_false(cfg.deps[1].s.eject);
	assert_double_eq(cfg.deps[1].s.max_ejected, 0.5);
	dw_config_describe(&cfg, &out);
	assert_non_null(strstr(strstr(out.data, "[dependency pay]"), "eject = on\nmax_ejected = 34%\n"
								      "eject_for = 10s\neject_probe_calls = 3\n"));
	assert_non_null(strstr(strstr(out.data, "[dependency web]"), "eject = off\n"));
	dw_buf_free(&out);
	dw_config_free(&cfg);
	expect_error("[defaults]\neject = maybe\n", 2, "eject: 'maybe' is not on or off");
	expect_error("[defaults]\neject_for = 500ms\n", 2, "eject_for: '500ms' is not a duration from 1s");
	expect_error("[defaults]\neject_probe_calls = 0\n", 2, "eject_probe_calls: '0' is not a whole number from 1");
	expect_error("[defaults]\nmax_ejected = 150%\n", 2, "max_ejected: '150%' is not a percentage");
}

static void test_err_bad_multiplexed(void **state)
{
	(void)state;
	expect_error("[defaults]\nmultiplexed = yes\n", 2,
		     "multiplexed: 'yes' is not ignore or judge");
	expect_error("[dependency a]\nmatch = 10.0.0.0/8\n\nmultiplexed = judged\n", 4,
		     "multiplexed: 'judged' is not ignore or judge");
	expect_error("[defaults]\nmultiplexed = judge\nmultiplexed = ignore\n", 3,
		     "duplicate key 'multiplexed' in [defaults] (first set at line 2)");
	expect_error("[defaults]\nmultiplexd = judge\n", 2,
		     "unknown key 'multiplexd' in [defaults] (did you mean 'multiplexed'?)");
	expect_error("[service s]\nlisten = 80\nmultiplexed = judge\n", 3,
		     "multiplexed belongs in [defaults] or a [dependency NAME], not in [service s]");
}

/* check's effective settings spell it out, and they parse back to the same value. */
static void test_describe_multiplexed(void **state)
{
	struct dw_config cfg, again;
	struct dw_buf out = { 0 };

	(void)state;
	parse_ok("[dependency h2]\nmatch = 10.3.0.0/16\nmultiplexed = judge\n"
		 "[dependency web]\nmatch = 10.2.0.0/16\n", &cfg);
	dw_config_describe(&cfg, &out);
	assert_false(out.oom);
	assert_non_null(strstr(out.data, "[defaults]\n"));
	assert_non_null(strstr(out.data, "ignore = no\nmultiplexed = ignore\n"));
	assert_non_null(strstr(out.data, "[dependency h2]"));
	assert_non_null(strstr(strstr(out.data, "[dependency h2]"), "multiplexed = judge\n"));
	assert_non_null(strstr(strstr(out.data, "[dependency web]"), "multiplexed = ignore\n"));
	parse_ok(out.data, &again);
	assert_false(again.defaults.judge_multiplexed);
	assert_true(again.deps[0].s.judge_multiplexed);
	assert_false(again.deps[1].s.judge_multiplexed);
	dw_config_free(&again);
	dw_config_free(&cfg);
	dw_buf_free(&out);
}

static void test_err_bad_enum_values(void **state)
{
	(void)state;
	expect_error("[defaults]\nenforce = yes\n", 2, "enforce: 'yes' is not off, connect or abort");
	expect_error("[defaults]\nignore = maybe\n", 2, "ignore: 'maybe' is not yes or no");
	expect_error("[defaults]\nsyslog_facility = local8\n", 2,
		     "syslog_facility: 'local8' is not daemon, user or local0 to local7");
}

struct range_case {
	const char *key, *good_lo, *good_hi, *bad_lo, *bad_hi;
};

/* Both ends of every range are accepted, one step past them refused. */
static void test_err_out_of_range(void **state)
{
	static const struct range_case cases[] = {
		{ "slow_call", "1ms", "60m", "999us", "60.001m" },
		{ "window", "1s", "60m", "999ms", "3601s" },
		{ "open_for", "1s", "1440m", "0.5s", "1440.1m" },
		{ "slow_rate", "0%", "100%", NULL, "100.01%" },
		{ "failure_rate", "0%", "100%", NULL, "101%" },
		{ "sample", "10", "10000", "0", "10001" },
		{ "half_open_calls", "1", "1000", "0", "1001" },
		{ "max_inflight", "0", "1000000", NULL, "1000001" },
		{ "min_calls", "1", "10", "0", "10001" },
	};
	const char *vals[4];
	struct dw_config cfg;
	char conf[256];
	size_t i, v;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		vals[0] = cases[i].good_lo;
		vals[1] = cases[i].good_hi;
		vals[2] = cases[i].bad_lo;
		vals[3] = cases[i].bad_hi;
		for (v = 0; v < 4; v++) {
			if (!vals[v])
				continue;
			snprintf(conf, sizeof(conf), "[defaults]\n%s = %s\n", cases[i].key,
				 vals[v]);
			if (v >= 2) {
				expect_error(conf, 2, cases[i].key);
				assert_non_null(strstr(err, "from"));
				continue;
			}
			parse_ok(conf, &cfg);
			dw_config_free(&cfg);
		}
	}
}

static void test_err_min_calls_above_sample(void **state)
{
	(void)state;
	expect_error("[defaults]\nmin_calls = 30\nsample = 29\n", 3,
		     "min_calls (30) is larger than sample (29)");
	/* the dependency's own sample against min_calls from [defaults] */
	expect_error("[dependency a]\nmatch = 10.0.0.0/8\nsample = 5\n", 3,
		     "min_calls (10) is larger than sample (5) in [dependency a]");
	/* and the dependency's min_calls against a [defaults] sample set later */
	expect_error("[dependency a]\nmatch = 10.0.0.0/8\nmin_calls = 15\n[defaults]\nsample = 12\n",
		     3, "min_calls (15) is larger than sample (12) in [dependency a]");
}

struct bad_case {
	const char *match, *phrase;
};

static void expect_bad_matches(const struct bad_case *cases, size_t n)
{
	char conf[256];
	size_t i;

	for (i = 0; i < n; i++) {
		snprintf(conf, sizeof(conf), "[dependency a]\n# c\nmatch = %s\n", cases[i].match);
		expect_error(conf, 3, cases[i].phrase);
	}
}

static void test_err_invalid_cidr(void **state)
{
	static const struct bad_case cases[] = {
		{ "10.0.0.256", "'10.0.0.256' is not an IPv4 address" },
		{ "10.0.0", "is not an IPv4 address" },
		{ "010.0.0.1", "is not an IPv4 address" },
		{ "db.example.com", "is not an IPv4 address" },
		{ "10.0.0.0/33", "prefix length '/33' is not 0 to 32" },
		{ "10.0.0.0/", "prefix length '/' is not 0 to 32" },
		{ "10.0.0.0/8x", "prefix length" },
		{ "2001:db8::/32", "IPv6 addresses go in brackets" },
		{ "[2001:db8::/129]", "prefix length '/129' is not 0 to 128" },
		{ "[10.0.0.1]", "is not an IPv6 address" },
		{ "[2001:db8::/32", "missing ']'" },
		{ "[::1]443", "unexpected '443' after ']'" },
		{ "[fe80::1%eth0]", "is not an IPv6 address" },
	};

	(void)state;
	expect_bad_matches(cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_err_bad_ports(void **state)
{
	static const struct bad_case cases[] = {
		{ "10.0.0.0/8:0", "bad port range" },
		{ "10.0.0.0/8:65536", "bad port range" },
		{ "10.0.0.0/8:", "bad port range" },
		{ "10.0.0.0/8:80-", "bad port range" },
		{ "10.0.0.0/8:http", "bad port range" },
		{ "10.0.0.0/8:1-2-3", "bad port range" },
		{ "[::1]:", "bad port range" },
		{ "10.0.0.0/8:90-80", "bad port range: 90 is above 80" },
	};

	(void)state;
	expect_bad_matches(cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_err_host_bits(void **state)
{
	static const struct bad_case cases[] = {
		{ "10.0.3.1/24:443", "host bits set (did you mean '10.0.3.0/24:443'?)" },
		{ "10.0.0.1/31", "host bits set (did you mean '10.0.0.0/31'?)" },
		{ "11.0.0.0/7", "host bits set (did you mean '10.0.0.0/7'?)" },
		{ "[2001:db8::1/64]", "host bits set (did you mean '[2001:db8::/64]'?)" },
		{ "[::ffff:10.0.0.1/120]", "host bits set" },
	};

	(void)state;
	expect_bad_matches(cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_err_duplicate_name(void **state)
{
	(void)state;
	expect_error("[dependency a]\nmatch = 10.0.0.0/8\n"
		     "[dependency b]\nmatch = 11.0.0.0/8\n"
		     "[dependency a]\nmatch = 12.0.0.0/8\n",
		     5, "duplicate dependency name 'a' (the first [dependency a] is at line 1)");
}

static void test_err_duplicate_defaults(void **state)
{
	(void)state;
	expect_error("[defaults]\nsample = 30\n[defaults]\n", 3,
		     "duplicate [defaults] section (the first is at line 1)");
}

static void test_err_duplicate_key(void **state)
{
	(void)state;
	expect_error("[defaults]\nsample = 30\nsample = 40\n", 3,
		     "duplicate key 'sample' in [defaults] (first set at line 2)");
	expect_error("[dependency a]\nmatch = 10.0.0.0/8\nignore = yes\nignore = no\n", 4,
		     "duplicate key 'ignore' in [dependency a]");
	expect_error("[defaults]\nsyslog_facility = user\nsyslog_facility = user\n", 3,
		     "duplicate key 'syslog_facility'");
}

static void test_err_dep_without_match(void **state)
{
	(void)state;
	expect_error("[dependency a]\nmatch = 10.0.0.0/8\n[dependency lonely]\nslow_call = 2s\n"
		     "[defaults]\n",
		     3, "[dependency lonely] has no match");
	expect_error("[dependency last]\n", 1, "[dependency last] has no match");
}

static void test_err_match_in_defaults(void **state)
{
	(void)state;
	expect_error("[defaults]\nmatch = 10.0.0.0/8\n", 2, "match is not allowed in [defaults]");
}

static void test_err_facility_in_dependency(void **state)
{
	(void)state;
	expect_error("[dependency a]\nmatch = 10.0.0.0/8\nsyslog_facility = user\n", 3,
		     "syslog_facility belongs in [defaults]");
}

static void test_err_bad_dependency_name(void **state)
{
	char conf[256], name[65];
	struct dw_config cfg;

	(void)state;
	expect_error("[dependency]\n", 1, "missing dependency name");
	expect_error("[dependency   ]\n", 1, "missing dependency name");
	expect_error("[dependency pay ments]\n", 1, "invalid dependency name 'pay ments'");
	expect_error("[dependency caf\xc3\xa9]\n", 1, "invalid dependency name");
	expect_error("[dependency a/b]\n", 1, "invalid dependency name 'a/b'");
	memset(name, 'n', 64);
	name[64] = '\0';
	snprintf(conf, sizeof(conf), "[dependency %s]\nmatch = 10.0.0.0/8\n", name);
	expect_error(conf, 1, "invalid dependency name");
	name[63] = '\0';
	snprintf(conf, sizeof(conf), "[dependency %s]\nmatch = 10.0.0.0/8\n", name);
	parse_ok(conf, &cfg);
	assert_string_equal(cfg.deps[0].name, name);
	dw_config_free(&cfg);
}

static void test_err_overlap_identical(void **state)
{
	(void)state;
	expect_error("[dependency a]\n"
		     "match = 10.0.0.0/8\n"
		     "[dependency b]\n"
		     "match = 10.0.0.0/8\n",
		     4, "match '10.0.0.0/8' overlaps 't.conf:2' with no more specific winner");
	assert_non_null(strstr(err, "[dependency a]"));
	/* v4-mapped spelling of the same prefix is the same prefix */
	expect_error("[dependency a]\nmatch = 10.0.0.0/8:80\n"
		     "[dependency b]\nmatch = [::ffff:10.0.0.0/104]:80\n",
		     4, "overlaps 't.conf:2' with no more specific winner");
}

static void test_err_overlap_partial(void **state)
{
	(void)state;
	expect_error("[dependency a]\n"
		     "match = 10.0.0.0/8:1-100\n"
		     "[dependency b]\n"
		     "match = 10.1.0.0/16:50-200\n",
		     4, "match '10.1.0.0/16:50-200' overlaps 't.conf:2' with no more specific winner");
	/* same prefix, ranges that cross */
	expect_error("[dependency a]\nmatch = [2001:db8::/32]:1-100\n"
		     "[dependency b]\nmatch = [2001:db8::/32]:100-200\n",
		     4, "no more specific winner");
	/* found past a run of same-prefix matches whose ports end early */
	expect_error("[dependency a]\nmatch = 10.0.0.0/8:1-100\nmatch = 10.0.0.0/8:200-300\n"
		     "[dependency b]\nmatch = 10.0.0.0/16:50-150\n",
		     5, "match '10.0.0.0/16:50-150' overlaps 't.conf:2'");
	/* longer prefix but more ports: each is more specific in one way */
	expect_error("[dependency a]\nmatch = 10.1.0.0/16\n"
		     "[dependency b]\nmatch = 10.0.0.0/8:443\n",
		     4, "match '10.0.0.0/8:443' overlaps 't.conf:2'");
}

static void test_err_overlap_same_dependency(void **state)
{
	(void)state;
	expect_error("[dependency a]\nmatch = 10.0.0.0/8:443\nmatch = 10.0.0.0/8:443\n", 3,
		     "overlaps 't.conf:2' with no more specific winner");
}

/* Several conflicts: the one whose later line comes first in the file. */
static void test_err_overlap_earliest(void **state)
{
	(void)state;
	expect_error("[dependency a]\n"
		     "match = 10.0.0.0/8:1-100\n"		/* 2 */
		     "match = 192.168.0.0/16\n"			/* 3 */
		     "[dependency b]\n"
		     "match = 10.9.0.0/16:50-200\n"		/* 5: vs 2 */
		     "match = 192.168.0.0/16\n"			/* 6: vs 3 */
		     "[dependency c]\n"
		     "match = 10.0.0.0/8:1-100\n",		/* 8: vs 2 */
		     5, "match '10.9.0.0/16:50-200' overlaps 't.conf:2'");
}

static void test_overlap_allowed(void **state)
{
	struct dw_config cfg;

	(void)state;
	parse_ok("[dependency a]\nmatch = 10.0.0.0/8\nmatch = 10.1.0.0/16\n"
		 "[dependency b]\nmatch = 10.1.0.0/16:443\nmatch = 10.1.0.0/16:80-90\n"
		 "[dependency c]\nmatch = 10.1.2.0/24:80-85\nmatch = 10.1.0.0/16:86\n"
		 "[dependency d]\nmatch = 10.1.0.0/16:1-65535\nmatch = 10.2.0.0/16:100-200\n"
		 "[dependency e]\nmatch = 10.2.0.0/16:201-300\nmatch = [::/0]\nmatch = 0.0.0.0/0\n",
		 &cfg);
	assert_int_equal(lookup(&cfg, AF_INET, "10.1.2.3", 85), 2);	/* /24:80-85 in /16:80-90 */
	assert_int_equal(lookup(&cfg, AF_INET, "10.1.9.9", 85), 1);	/* /16:80-90 */
	assert_int_equal(lookup(&cfg, AF_INET, "10.1.9.9", 86), 2);	/* /16:86 in /16:80-90 */
	assert_int_equal(lookup(&cfg, AF_INET, "10.1.9.9", 22), 3);	/* 1-65535 in all ports */
	assert_int_equal(lookup(&cfg, AF_INET, "10.1.9.9", 0), 0);
	assert_int_equal(lookup(&cfg, AF_INET, "10.2.0.1", 250), 4);
	assert_int_equal(lookup(&cfg, AF_INET, "10.2.0.1", 9), 0);	/* /8 beats /0 */
	assert_int_equal(lookup(&cfg, AF_INET, "11.2.0.1", 9), 4);
	dw_config_free(&cfg);
}

static void test_err_nul_byte(void **state)
{
	static const char text[] = "[defaults]\nsample = 3\0 0\n";

	(void)state;
	expect_error_n(text, sizeof(text) - 1, 2, "binary content (NUL byte at column 11)");
	/* a NUL byte does not end the text: what follows is still refused */
	expect_error_n("\0", 1, 1, "binary content");
}

static void test_err_binary_content(void **state)
{
	static const char elf[] = "\x7f" "ELF\x02\x01\x01\0\0\0";

	(void)state;
	expect_error_n(elf, sizeof(elf) - 1, 1, "binary content");
	expect_error("[defaults]\n# \xff\xfe\n", 2, "binary content (byte 0xff at column 3 is not UTF-8)");
	expect_error("# overlong \xc0\xaf\n", 1, "binary content");
	expect_error("# surrogate \xed\xa0\x80\n", 1, "binary content");
	expect_error("# cut short \xe2\x9c", 1, "binary content");
	expect_error("[defaults]\nsample = 3\x1b[31m\n", 2, "binary content (control byte 0x1b");
	expect_error("[defaults]\rsample = 3\n", 1, "binary content (control byte 0x0d");
}

static void test_err_long_line(void **state)
{
	size_t n = DW_CONFIG_MAX_LINE;
	struct dw_config cfg;
	char *text;

	(void)state;
	text = malloc(n + 64);
	assert_non_null(text);
	/* exactly 4096 bytes before the newline: fine */
	strcpy(text, "[defaults]\n#");
	memset(text + 12, 'x', n - 1);
	strcpy(text + 11 + n, "\n");
	parse_ok(text, &cfg);
	dw_config_free(&cfg);
	/* one more */
	memset(text + 12, 'x', n);
	strcpy(text + 12 + n, "\nsample = 1\n");
	expect_error(text, 2, "line is longer than 4096 bytes");
	free(text);
}

static void test_err_too_large(void **state)
{
	size_t n = DW_CONFIG_MAX_BYTES, i;
	struct dw_config cfg;
	char *text;

	(void)state;
	text = malloc(n + 2);
	assert_non_null(text);
	/* 1 MiB of comment lines parses... */
	for (i = 0; i < n; i += 64) {
		memset(text + i, '#', 63);
		text[i + 63] = '\n';
	}
	text[n] = '\0';
	if (dw_config_parse("t.conf", text, n, &cfg, err, sizeof(err)))
		fail_msg("%s", err);
	dw_config_free(&cfg);
	/* ...one byte more is refused before parsing: no line to blame */
	text[n] = '#';
	memset(&cfg, 0x5a, sizeof(cfg));
	assert_int_equal(dw_config_parse("t.conf", text, n + 1, &cfg, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.conf: file is larger than 1 MiB (1048577 bytes)");
	assert_int_equal(cfg.ndeps, 0x5a5a5a5a);
	free(text);
}

static void test_stops_at_first_error(void **state)
{
	(void)state;
	expect_error("[defaults]\nsample = 0\nslow_rate = 200%\n[nope]\n", 2, "sample: '0'");
}

static void test_cfg_untouched_on_error(void **state)
{
	struct dw_config cfg, before;

	(void)state;
	parse_ok(full_conf, &cfg);
	memcpy(&before, &cfg, sizeof(cfg));
	assert_int_equal(parse("[defaults]\nsample = 5\n[dependency x]\nmatch = 1.2.3.4\nbogus = 1\n",
			       &cfg),
			 -EINVAL);
	assert_memory_equal(&cfg, &before, sizeof(cfg));
	/* still the old, intact config */
	assert_string_equal(cfg.deps[0].name, "payments");
	assert_int_equal(cfg.deps[0].s.slow_call_ns, 500 * MS);
	assert_int_equal(lookup(&cfg, AF_INET, "10.0.3.9", 443), 0);
	/* errors found only after the whole file is read leave it alone too */
	assert_int_equal(parse("[dependency x]\nmatch = 1.2.3.4\n[dependency x]\nmatch = 1.2.3.5\n",
			       &cfg),
			 -EINVAL);
	assert_memory_equal(&cfg, &before, sizeof(cfg));
	dw_config_free(&cfg);
}

static void test_error_buffers(void **state)
{
	struct dw_config cfg;
	char small[12], value[600];
	size_t i;

	(void)state;
	assert_int_equal(dw_config_parse("t.conf", "[x]\n", 4, &cfg, NULL, 0), -EINVAL);
	assert_int_equal(dw_config_parse("t.conf", "[x]\n", 4, &cfg, small, sizeof(small)),
			 -EINVAL);
	assert_string_equal(small, "t.conf:1: u");
	/* a long value is cut in the message, not the message's end */
	memset(value, '9', sizeof(value));
	memcpy(value, "[defaults]\nsample = ", 20);
	value[sizeof(value) - 1] = '\0';
	expect_error(value, 2, "...' is not a whole number from 1 to 10000");
	assert_true(strlen(err) < 200);
	/* and cut between UTF-8 characters, never inside one */
	memcpy(value, "[defaults]\nsample = x", 21);	/* odd: the cut falls mid-character */
	for (i = 21; i + 2 < sizeof(value); i += 2)
		memcpy(value + i, "\xc3\xa9", 2);
	value[i] = '\0';
	expect_error(value, 2, "\xc3\xa9...' is not a whole number");
}

static void test_describe(void **state)
{
	const struct dw_match *m, *a;
	struct dw_config cfg, again;
	struct dw_buf out = { 0 };
	unsigned i, k;

	(void)state;
	parse_ok(full_conf, &cfg);
	dw_config_describe(&cfg, &out);
	assert_false(out.oom);
	assert_non_null(out.data);
	assert_non_null(strstr(out.data, "[defaults]\nslow_call = 2s\nslow_rate = 12.5%\n"));
	assert_non_null(strstr(out.data, "syslog_facility = local3\n"));
	assert_non_null(strstr(out.data, "[dependency payments]\t# line 16\n"
					 "match = 10.0.3.0/24:443\n"
					 "match = [2001:db8::/32]:8000-8099\n"
					 "slow_call = 500ms\n"));
	assert_non_null(strstr(out.data, "[dependency orders.v2]\t# line 22\n"
					 "match = 10.0.4.7/32\n"
					 "slow_call = 2s\n"));
	assert_non_null(strstr(out.data, "max_inflight = 25\n"));
	assert_non_null(strstr(out.data, "failure_rate = 5%\n"));
	assert_non_null(strstr(out.data, "enforce = connect\n"));
	/* it is a config itself, and the same one */
	parse_ok(out.data, &again);
	assert_settings_equal(&again.defaults, &cfg.defaults);
	assert_int_equal(again.syslog_facility, cfg.syslog_facility);
	assert_int_equal(again.ndeps, cfg.ndeps);
	for (i = 0; i < cfg.ndeps; i++) {
		assert_string_equal(again.deps[i].name, cfg.deps[i].name);
		assert_settings_equal(&again.deps[i].s, &cfg.deps[i].s);
		assert_int_equal(again.deps[i].nmatches, cfg.deps[i].nmatches);
		for (k = 0; k < cfg.deps[i].nmatches; k++) {
			m = &cfg.deps[i].matches[k];
			a = &again.deps[i].matches[k];
			assert_int_equal(a->family, m->family);
			assert_int_equal(a->prefix_len, m->prefix_len);
			assert_memory_equal(a->addr, m->addr, sizeof(m->addr));
			assert_int_equal(a->port_lo, m->port_lo);
			assert_int_equal(a->port_hi, m->port_hi);
		}
	}
	dw_config_free(&again);
	dw_config_free(&cfg);
	dw_buf_free(&out);
}

/* Thousands of matches (cloud provider ranges) must not take quadratic time. */
static void test_many_matches(void **state)
{
	struct dw_buf b = { 0 };
	struct dw_config cfg;
	unsigned i;

	(void)state;
	dw_buf_printf(&b, "[dependency wide]\nmatch = 10.0.0.0/8\n");
	/* 30000 lines of about 27 bytes: near the 1 MiB cap */
	for (i = 0; i < 30000; i++) {
		if (i % 1000 == 0)
			dw_buf_printf(&b, "[dependency d%u]\n", i / 1000);
		dw_buf_printf(&b, "match = 10.%u.%u.%u/32:443\n", i >> 16, (i >> 8) & 0xff,
			      i & 0xff);
	}
	assert_false(b.oom);
	parse_ok(b.data, &cfg);
	assert_int_equal(cfg.ndeps, 31);
	assert_int_equal(lookup(&cfg, AF_INET, "10.0.3.231", 443), 1 + 999 / 1000);
	assert_int_equal(lookup(&cfg, AF_INET, "10.0.117.47", 443), 1 + 29999 / 1000);
	assert_int_equal(lookup(&cfg, AF_INET, "10.0.117.47", 80), 0);
	assert_int_equal(lookup(&cfg, AF_INET, "10.0.117.48", 443), 0);
	dw_config_free(&cfg);
	/* the same again with one conflict at the very end */
	dw_buf_printf(&b, "[dependency late]\nmatch = 10.0.77.5:443\n");
	assert_int_equal(parse(b.data, &cfg), -EINVAL);
	assert_non_null(strstr(err, "match '10.0.77.5/32:443' overlaps 't.conf:"));
	assert_non_null(strstr(err, "no more specific winner"));
	dw_buf_free(&b);
}

/* ---- enforce_cgroup ---- */

static void test_enforce_cgroup(void **state)
{
	static const char *const good[] = {
		"/", "/sys/fs/cgroup", "/sys/fs/cgroup/app.slice/", "//sys//fs/cgroup",
		"/a/./b", "/a/..b/c../...", "/a/b c", "/caf\xc3\xa9.slice",
	};
	char conf[512], path[DW_CGROUP_PATH_MAX + 1];
	struct dw_config cfg;
	size_t i;

	(void)state;
	parse_ok("[defaults]\n"
		 "enforce_cgroup =  /sys/fs/cgroup/system.slice/app.service   # the app only\n",
		 &cfg);
	assert_string_equal(cfg.enforce_cgroup, "/sys/fs/cgroup/system.slice/app.service");
	dw_config_free(&cfg);
	/* [defaults] after the dependencies, as for every key */
	parse_ok("[dependency a]\nmatch = 10.0.0.0/8\n[defaults]\nenforce_cgroup = /x\n", &cfg);
	assert_string_equal(cfg.enforce_cgroup, "/x");
	dw_config_free(&cfg);
	/* not set: empty, the cgroup v2 root */
	parse_ok("[defaults]\nsample = 30\n[dependency a]\nmatch = 10.0.0.0/8\n", &cfg);
	assert_string_equal(cfg.enforce_cgroup, "");
	dw_config_free(&cfg);
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(conf, sizeof(conf), "[defaults]\nenforce_cgroup = %s\n", good[i]);
		parse_ok(conf, &cfg);
		assert_string_equal(cfg.enforce_cgroup, good[i]);
		dw_config_free(&cfg);
	}
	/* 255 bytes is the most */
	memset(path, 'c', DW_CGROUP_PATH_MAX);
	path[0] = '/';
	path[DW_CGROUP_PATH_MAX] = '\0';
	snprintf(conf, sizeof(conf), "[defaults]\nenforce_cgroup = %s\n", path);
	parse_ok(conf, &cfg);
	assert_int_equal(strlen(cfg.enforce_cgroup), 255);
	assert_string_equal(cfg.enforce_cgroup, path);
	dw_config_free(&cfg);
}

static void test_err_enforce_cgroup_relative(void **state)
{
	(void)state;
	expect_error("[defaults]\nenforce_cgroup = sys/fs/cgroup/app\n", 2,
		     "enforce_cgroup: 'sys/fs/cgroup/app' is not an absolute path");
	expect_error("[defaults]\n\nenforce_cgroup = ./app\n", 3, "is not an absolute path");
	expect_error("[defaults]\nenforce_cgroup = ~/app\n", 2, "is not an absolute path");
	expect_error("[defaults]\nenforce_cgroup = ..\n", 2, "is not an absolute path");
}

static void test_err_enforce_cgroup_dotdot(void **state)
{
	static const char *const bad[] = {
		"/sys/fs/cgroup/../../etc", "/..", "/sys/fs/cgroup/..", "/a/../", "//..//",
	};
	char conf[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(conf, sizeof(conf), "[defaults]\n# c\nenforce_cgroup = %s\n", bad[i]);
		expect_error(conf, 3, "' has a '..' component");
		assert_non_null(strstr(err, bad[i]));
	}
}

static void test_err_enforce_cgroup_too_long_or_control(void **state)
{
	char conf[512], path[DW_CGROUP_PATH_MAX + 2];

	(void)state;
	memset(path, 'c', DW_CGROUP_PATH_MAX + 1);
	path[0] = '/';
	path[DW_CGROUP_PATH_MAX + 1] = '\0';
	snprintf(conf, sizeof(conf), "[defaults]\nenforce_cgroup = %s\n", path);
	expect_error(conf, 2, "' is longer than 255 bytes");
	/* a tab is the one control byte a line may hold; a path may not */
	expect_error("[defaults]\nenforce_cgroup = /a\tb\n", 2,
		     "enforce_cgroup: the path has a control byte (0x09 at byte 3)");
	assert_null(strchr(err, '\t'));
}

static void test_err_enforce_cgroup_in_dependency(void **state)
{
	(void)state;
	expect_error("[defaults]\n[dependency a]\nmatch = 10.0.0.0/8\nenforce_cgroup = /x\n", 4,
		     "enforce_cgroup belongs in [defaults], not in [dependency a]");
}

static void test_err_enforce_cgroup_duplicate(void **state)
{
	(void)state;
	expect_error("[defaults]\nenforce_cgroup = /a\n\nenforce_cgroup = /a\n", 4,
		     "duplicate key 'enforce_cgroup' in [defaults] (first set at line 2)");
	/* a typo is pointed at it */
	expect_error("[defaults]\nenforce_cgrup = /a\n", 2,
		     "unknown key 'enforce_cgrup' in [defaults] (did you mean 'enforce_cgroup'?)");
}

static void test_describe_enforce_cgroup(void **state)
{
	struct dw_config cfg, again;
	struct dw_buf out = { 0 };

	(void)state;
	parse_ok("[defaults]\nenforce_cgroup = /sys/fs/cgroup/app.slice  # comment\n", &cfg);
	dw_config_describe(&cfg, &out);
	assert_false(out.oom);
	assert_non_null(strstr(out.data, "syslog_facility = daemon\n"
					 "enforce_cgroup = /sys/fs/cgroup/app.slice\n"));
	assert_null(strstr(out.data, "cgroup v2 root"));
	parse_ok(out.data, &again);
	assert_string_equal(again.enforce_cgroup, "/sys/fs/cgroup/app.slice");
	dw_config_free(&again);
	dw_config_free(&cfg);
	dw_buf_free(&out);

	/* unset: a comment saying what that means, which parses back to unset */
	memset(&out, 0, sizeof(out));
	dw_config_defaults(&cfg);
	dw_config_describe(&cfg, &out);
	assert_non_null(strstr(out.data, "\n# enforce_cgroup: the cgroup v2 root\n"));
	assert_null(strstr(out.data, "\nenforce_cgroup"));
	parse_ok(out.data, &again);
	assert_string_equal(again.enforce_cgroup, "");
	dw_config_free(&again);
	dw_buf_free(&out);

	/* one filled in by hand that a config cannot hold stays a comment */
	memset(&out, 0, sizeof(out));
	snprintf(cfg.enforce_cgroup, sizeof(cfg.enforce_cgroup), "/a\nsample = 1");
	dw_config_describe(&cfg, &out);
	assert_non_null(strstr(out.data, "\n# enforce_cgroup = /a\\x0asample\\x20\\x3d\\x201 (not one a config can name)\n"));
	parse_ok(out.data, &again);
	assert_string_equal(again.enforce_cgroup, "");
	assert_int_equal(again.defaults.sample, 20);
	dw_config_free(&again);
	dw_config_free(&cfg);
	dw_buf_free(&out);
}

/* ---- the kernel's limits ---- */

/* n dependencies with a /24 each, none overlapping; header of dependency i at line 2i+1. */
static void many_deps(struct dw_buf *b, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		dw_buf_printf(b, "[dependency d%u]\nmatch = 10.%u.%u.0/24\n", i, i >> 8, i & 0xff);
	assert_false(b->oom);
}

static void test_err_too_many_dependencies(void **state)
{
	struct dw_buf b = { 0 };
	struct dw_config cfg;
	char want[128];

	(void)state;
	assert_int_equal(DW_MAX_DEPS, 1024);	/* the message below spells it out */
	many_deps(&b, DW_MAX_DEPS - 1);
	parse_ok(b.data, &cfg);
	assert_int_equal(cfg.ndeps, DW_MAX_DEPS - 1);
	dw_config_free(&cfg);
	dw_buf_free(&b);

	/* one more: reported at its header */
	many_deps(&b, DW_MAX_DEPS);
	expect_error(b.data, 2 * (DW_MAX_DEPS - 1) + 1,
		     "[dependency d1023] is one too many: the kernel supports at most 1023 dependencies (this file has 1024)");
	dw_buf_free(&b);

	/* many more: still at the first over the limit */
	many_deps(&b, DW_MAX_DEPS + 40);
	snprintf(want, sizeof(want), "t.conf:%d: [dependency d1023] is one too many", 2 * 1023 + 1);
	expect_error(b.data, 2 * 1023 + 1, "at most 1023 dependencies (this file has 1064)");
	assert_int_equal(strncmp(err, want, strlen(want)), 0);
	dw_buf_free(&b);
}

static void test_err_match_rules_nested(void **state)
{
	struct dw_buf b = { 0 };
	struct dw_config cfg;
	unsigned len;

	(void)state;
	assert_int_equal(DW_MATCH_RULES, 8);	/* the messages below spell it out */
	/* 10.0.0.0/8, /9, ... /15: the /15 is covered by all 8, itself included */
	dw_buf_printf(&b, "[dependency a]\n");
	for (len = 8; len < 16; len++)
		dw_buf_printf(&b, "match = 10.0.0.0/%u\n", len);	/* lines 2..9 */
	assert_false(b.oom);
	parse_ok(b.data, &cfg);
	dw_config_free(&cfg);
	/* a ninth, in another dependency, and an unrelated prefix on the way */
	dw_buf_printf(&b, "[dependency b]\nmatch = 11.0.0.0/8\nmatch = 10.0.0.0/16:443\n");
	expect_error(b.data, 12,
		     "match '10.0.0.0/16:443' is covered by 9 matches; at most 8 can apply to one prefix");
	dw_buf_free(&b);
	/* the IPv4-mapped spelling covers as IPv4 */
	expect_error("[dependency a]\nmatch = 10.0.0.0/8\nmatch = 10.0.0.0/9\nmatch = 10.0.0.0/10\n"
		     "match = 10.0.0.0/11\nmatch = 10.0.0.0/12\nmatch = 10.0.0.0/13\n"
		     "match = 10.0.0.0/14\nmatch = [::ffff:10.0.0.0/111]\n"
		     "[dependency b]\nmatch = 10.0.0.0/24:80\n",
		     11, "match '10.0.0.0/24:80' is covered by 9 matches");
}

static void test_err_match_rules_same_prefix(void **state)
{
	struct dw_buf b = { 0 };
	struct dw_config cfg;
	unsigned i;

	(void)state;
	/* eight port ranges of one prefix are fine... */
	dw_buf_printf(&b, "[dependency a]\n");
	for (i = 1; i <= 8; i++)
		dw_buf_printf(&b, "match = [2001:db8::/32]:%u\n", 100 * i);	/* lines 2..9 */
	assert_false(b.oom);
	parse_ok(b.data, &cfg);
	dw_config_free(&cfg);
	/* ...a ninth puts all nine over: reported at the first of them */
	dw_buf_printf(&b, "[dependency b]\nmatch = [2001:db8::/32]:1-99\n");
	expect_error(b.data, 2,
		     "match '[2001:db8::/32]:100' is covered by 9 matches; at most 8 can apply to one prefix");
	dw_buf_free(&b);
	/* ports of the coverers do not matter: the kernel keeps them all */
	expect_error("[dependency a]\n"
		     "match = 10.0.0.0/8:1\nmatch = 10.0.0.0/8:2\nmatch = 10.0.0.0/8:3\n"
		     "match = 10.0.0.0/8:4\nmatch = 10.0.0.0/8:5\nmatch = 10.0.0.0/8:6\n"
		     "match = 10.0.0.0/8:7\n"
		     "[dependency b]\n"
		     "match = 10.1.0.0/16:1\n"		/* 10: 8, fine */
		     "match = 10.1.2.0/24:1\n",		/* 11: 9 */
		     11, "match '10.1.2.0/24:1' is covered by 9 matches");
}

/* Only what covers a prefix counts: not siblings, not the other family. */
static void test_match_rules_allowed(void **state)
{
	struct dw_buf b = { 0 };
	struct dw_config cfg;
	unsigned i;

	(void)state;
	dw_buf_printf(&b, "[dependency a]\n");
	for (i = 1; i <= 7; i++)
		dw_buf_printf(&b, "match = 10.0.0.0/8:%u\n", i);
	/* siblings under the same seven: 8 each; a child of one of them: 9 */
	dw_buf_printf(&b, "match = 10.1.0.0/16:1\nmatch = 10.2.0.0/16:2\nmatch = 10.3.0.0/16:3\n"
			  "match = 10.1.128.0/17:1\n");	/* line 12 */
	assert_false(b.oom);
	expect_error(b.data, 12, "match '10.1.128.0/17:1' is covered by 9 matches");
	dw_buf_free(&b);

	dw_buf_printf(&b, "[dependency a]\n");
	for (i = 1; i <= 7; i++)
		dw_buf_printf(&b, "match = 10.0.0.0/8:%u\n", i);
	dw_buf_printf(&b, "match = 10.1.0.0/16:1\nmatch = 10.2.0.0/16:2\nmatch = 10.3.0.0/16:3\n"
			  "match = 10.4.0.0/17:1\nmatch = 11.0.0.0/8\n");
	assert_false(b.oom);
	parse_ok(b.data, &cfg);
	assert_int_equal(cfg.deps[0].nmatches, 7 + 5);
	dw_config_free(&cfg);
	dw_buf_free(&b);

	/* IPv4 /0 covers no IPv6 prefix, however short */
	dw_buf_printf(&b, "[dependency a]\n");
	for (i = 1; i <= 8; i++)
		dw_buf_printf(&b, "match = 0.0.0.0/0:%u\n", 1000 + i);
	dw_buf_printf(&b, "match = [2001:db8::/32]:1001\nmatch = [2001:db8:1::/48]:1002\n");
	assert_false(b.oom);
	parse_ok(b.data, &cfg);
	assert_int_equal(cfg.deps[0].nmatches, 8 + 2);
	dw_config_free(&cfg);
	dw_buf_free(&b);
}

/* 30000 matches under one chain of prefixes: linear, and the first line over is reported. */
static void test_match_rules_many(void **state)
{
	struct dw_buf b = { 0 };
	struct dw_config cfg;
	unsigned i, len;

	(void)state;
	dw_buf_printf(&b, "[dependency wide]\n");
	for (len = 8; len < 15; len++)
		dw_buf_printf(&b, "match = 10.0.0.0/%u\n", len);	/* lines 2..8 */
	for (i = 0; i < 30000; i++) {
		if (i % 1000 == 0)
			dw_buf_printf(&b, "[dependency d%u]\n", i / 1000);
		dw_buf_printf(&b, "match = 10.%u.%u.%u:443\n", i >> 16, (i >> 8) & 0xff,
			      i & 0xff);
	}
	assert_false(b.oom);
	parse_ok(b.data, &cfg);
	dw_config_free(&cfg);
	/* one more cover at the end puts every /32 over; the first is at line 10 */
	dw_buf_printf(&b, "[dependency late]\nmatch = 10.0.0.0/15:443\n");
	expect_error(b.data, 10, "match '10.0.0.0/32:443' is covered by 9 matches");
	dw_buf_free(&b);
}


/* ---- timeouts and services ---- */

static void test_timeout(void **state)
{
	static const char *const good[] = { "1ms", "800ms", "1.5s", "60m" };
	static const char *const bad[] = { "999us", "60.001m", "0s", "1h", "800", "fast" };
	struct dw_config cfg;
	char conf[256];
	size_t i;

	(void)state;
	parse_ok("[dependency a]\nmatch = 10.0.0.0/8\ntimeout = 800ms\n"
		 "[dependency b]\nmatch = 11.0.0.0/8\n",
		 &cfg);
	assert_int_equal(cfg.deps[0].timeout_ns, 800 * MS);
	assert_int_equal(cfg.deps[1].timeout_ns, 0);	/* not set: unknown, not inherited */
	dw_config_free(&cfg);
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(conf, sizeof(conf), "[dependency a]\nmatch = 10.0.0.0/8\ntimeout = %s\n",
			 good[i]);
		parse_ok(conf, &cfg);
		dw_config_free(&cfg);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(conf, sizeof(conf), "[dependency a]\nmatch = 10.0.0.0/8\ntimeout = %s\n",
			 bad[i]);
		expect_error(conf, 3, "timeout: '");
		assert_non_null(strstr(err, "' is not a duration from 1ms to 60m"));
	}
}

static void test_err_timeout_misplaced(void **state)
{
	(void)state;
	expect_error("[defaults]\ntimeout = 1s\n", 2,
		     "timeout belongs in a [dependency NAME], not in [defaults]");
	expect_error("[service web]\nlisten = 80\ntimeout = 1s\n", 3,
		     "timeout belongs in a [dependency NAME], not in [service web]");
	expect_error("[dependency a]\nmatch = 10.0.0.0/8\ntimeout = 1s\ntimeout = 2s\n", 4,
		     "duplicate key 'timeout' in [dependency a] (first set at line 3)");
	expect_error("[dependency a]\nmatch = 10.0.0.0/8\ntimeuot = 1s\n", 3,
		     "unknown key 'timeuot' in [dependency a] (did you mean 'timeout'?)");
}

static const char svc_conf[] =
	"[service web]\n"				/* 1 */
	"listen = 8080\n"				/* 2 */
	"pool = 200\n"					/* 3 */
	"deadline = 2s\n"				/* 4 */
	"path = auth,cart ,\tpayments   # in order\n"	/* 5 */
	"\n"						/* 6 */
	"[dependency auth]\n"				/* 7 */
	"match = 10.0.1.0/24\n"				/* 8 */
	"timeout = 800ms\n"				/* 9 */
	"[defaults]\n"					/* 10 */
	"slow_call = 2s\n"				/* 11 */
	"[dependency payments]\n"			/* 12 */
	"match = 10.0.3.0/24:443\n"			/* 13 */
	"timeout = 400ms\n"				/* 14 */
	"[service batch]\n"				/* 15 */
	"listen = 9000-9099\n"				/* 16 */
	"[dependency cart]\n"				/* 17 */
	"match = 10.0.2.0/24\n"				/* 18 */
	"timeout = 400ms\n"				/* 19 */
	"[service worker]\n"				/* 20 */
	"listen = cgroup:/sys/fs/cgroup/worker.slice\n"	/* 21 */
	"path = cart\n";				/* 22 */

static void test_services(void **state)
{
	const struct dw_service *s;
	struct dw_config cfg;
	uint64_t sum;

	(void)state;
	parse_ok(svc_conf, &cfg);
	assert_int_equal(cfg.ndeps, 3);
	assert_int_equal(cfg.nservices, 3);

	s = &cfg.services[0];
	assert_string_equal(s->name, "web");
	assert_int_equal(s->line, 1);
	assert_int_equal(s->port_lo, 8080);
	assert_int_equal(s->port_hi, 8080);
	assert_string_equal(s->cgroup, "");
	assert_int_equal(s->pool, 200);
	assert_int_equal(s->deadline_ns, 2 * SEC);
	assert_int_equal(s->path_line, 5);
	assert_int_equal(s->npath, 3);
	/* indexes into cfg.deps, in the order the path names them */
	assert_int_equal(s->path[0], 0);
	assert_int_equal(s->path[1], 2);
	assert_int_equal(s->path[2], 1);
	assert_string_equal(cfg.deps[s->path[1]].name, "cart");
	assert_int_equal(dw_service_path_timeout(&cfg, s, &sum), 0);
	assert_int_equal(sum, 1600 * MS);

	s = &cfg.services[1];
	assert_string_equal(s->name, "batch");
	assert_int_equal(s->port_lo, 9000);
	assert_int_equal(s->port_hi, 9099);
	assert_int_equal(s->pool, 0);		/* not set: unknown */
	assert_int_equal(s->deadline_ns, 0);
	assert_int_equal(s->npath, 0);
	assert_null(s->path);
	assert_int_equal(s->path_line, 0);
	assert_int_equal(dw_service_path_timeout(&cfg, s, &sum), 0);
	assert_int_equal(sum, 0);

	s = &cfg.services[2];
	assert_string_equal(s->name, "worker");
	assert_int_equal(s->port_lo, 0);
	assert_int_equal(s->port_hi, 0);
	assert_string_equal(s->cgroup, "/sys/fs/cgroup/worker.slice");
	assert_int_equal(s->npath, 1);
	assert_int_equal(s->path[0], 2);
	/* the dependencies are as before */
	assert_int_equal(cfg.deps[0].s.slow_call_ns, 2 * SEC);
	assert_int_equal(cfg.deps[2].timeout_ns, 400 * MS);
	dw_config_free(&cfg);
	assert_null(cfg.services);
	assert_int_equal(cfg.nservices, 0);
	dw_config_free(&cfg);
}

static void test_service_listen_forms(void **state)
{
	struct dw_config cfg;

	(void)state;
	parse_ok("[service a]\nlisten = 1\n[service b]\nlisten = 65535\n"
		 "[service c]\nlisten = 2-65534\n"
		 "[service d]\nlisten = cgroup:  /\n"
		 "[service e]\nlisten = cgroup:/a/b c/caf\xc3\xa9.slice/\n",
		 &cfg);
	assert_int_equal(cfg.nservices, 5);
	assert_int_equal(cfg.services[0].port_lo, 1);
	assert_int_equal(cfg.services[1].port_hi, 65535);
	assert_int_equal(cfg.services[2].port_lo, 2);
	assert_int_equal(cfg.services[2].port_hi, 65534);
	assert_string_equal(cfg.services[3].cgroup, "/");
	assert_string_equal(cfg.services[4].cgroup, "/a/b c/caf\xc3\xa9.slice/");
	dw_config_free(&cfg);
	/* nested cgroups are fine: the deeper one is the more specific */
	parse_ok("[service a]\nlisten = cgroup:/app.slice\n"
		 "[service b]\nlisten = cgroup:/app.slice/b.service\n",
		 &cfg);
	dw_config_free(&cfg);
	/* a path without a deadline is not checked: its timeouts may be unknown */
	parse_ok("[service a]\nlisten = 80\npath = x, y\n"
		 "[dependency x]\nmatch = 10.0.0.0/8\ntimeout = 1s\n"
		 "[dependency y]\nmatch = 11.0.0.0/8\n",
		 &cfg);
	assert_int_equal(cfg.services[0].npath, 2);
	dw_config_free(&cfg);
	/* a deadline without a path: nothing to check either */
	parse_ok("[service a]\nlisten = 80\ndeadline = 1ms\n", &cfg);
	assert_int_equal(cfg.services[0].deadline_ns, 1 * MS);
	dw_config_free(&cfg);
}

/* web's path is auth + cart + payments, each with timeout T; its deadline is D. */
static void budget_conf(char *buf, size_t len, const char *t, const char *d)
{
	snprintf(buf, len,
		 "[dependency auth]\nmatch = 10.0.1.0/24\ntimeout = %s\n"	/* 1-3 */
		 "[dependency cart]\nmatch = 10.0.2.0/24\ntimeout = %s\n"	/* 4-6 */
		 "[dependency payments]\nmatch = 10.0.3.0/24\ntimeout = %s\n"	/* 7-9 */
		 "[service web]\nlisten = 8080\ndeadline = %s\n"		/* 10-12 */
		 "path = auth, cart, payments\n",				/* 13 */
		 t, t, t, d);
}

static void test_budget(void **state)
{
	struct dw_config cfg;
	char conf[512];
	uint64_t sum;

	(void)state;
	/* fits */
	budget_conf(conf, sizeof(conf), "600ms", "2s");
	parse_ok(conf, &cfg);
	assert_int_equal(dw_service_path_timeout(&cfg, &cfg.services[0], &sum), 0);
	assert_int_equal(sum, 1800 * MS);
	dw_config_free(&cfg);
	/* exactly the deadline is still within it */
	budget_conf(conf, sizeof(conf), "500ms", "1.5s");
	parse_ok(conf, &cfg);
	dw_config_free(&cfg);
	/* over: the sum and its parts against the deadline, at the path line */
	budget_conf(conf, sizeof(conf), "800ms", "2s");
	expect_error(conf, 13,
		     "service web: timeouts along its path add up to 2.4s (auth 800ms + cart 800ms + payments 800ms), more than its deadline 2s");
	assert_string_equal(err,
			    "t.conf:13: service web: timeouts along its path add up to 2.4s (auth 800ms + cart 800ms + payments 800ms), more than its deadline 2s");
	/* one nanosecond over is over */
	budget_conf(conf, sizeof(conf), "500ms", "1.499999999s");
	expect_error(conf, 13, "add up to 1.5s (auth 500ms + cart 500ms + payments 500ms), more than its deadline 1.499999999s");
	/* one dependency alone over the deadline */
	expect_error("[dependency db]\nmatch = 10.0.0.0/8\ntimeout = 3s\n"
		     "[service api]\nlisten = 80\npath = db\ndeadline = 1s\n",
		     6, "service api: timeouts along its path add up to 3s (db 3s), more than its deadline 1s");
}

static void test_err_budget_untimed(void **state)
{
	(void)state;
	expect_error("[dependency auth]\nmatch = 10.0.1.0/24\ntimeout = 100ms\n"
		     "[dependency cart]\nmatch = 10.0.2.0/24\n"
		     "[dependency pay]\nmatch = 10.0.3.0/24\n"
		     "[service web]\nlisten = 80\ndeadline = 2s\npath = auth, pay, cart\n",
		     11, "dependency pay on the path of service web has no timeout");
	assert_non_null(strstr(err, "set 'timeout = DURATION' in [dependency pay]"));
	assert_non_null(strstr(err, "the deadline 2s"));
}

/* enforce = abort and abort_after (issue 15). */
static void test_abort_keys(void **state)
{
	struct dw_config cfg, again;
	struct dw_buf b = { 0 };

	(void)state;
	parse_ok("[defaults]\nenforce = abort\nabort_after = 300ms\n"
		 "[dependency pay]\nmatch = 10.0.3.0/24\nenforce = connect\n"
		 "[dependency cart]\nmatch = 10.0.2.0/24\nabort_after = 0\n"
		 "[dependency auth]\nmatch = 10.0.1.0/24\nenforce = off\nabort_after = 1.5s\n",
		 &cfg);
	/* abort does everything connect does */
	assert_true(cfg.defaults.enforce_connect);
	assert_true(cfg.defaults.enforce_abort);
	assert_int_equal(cfg.defaults.abort_after_ns, 300 * MS);
	assert_true(cfg.deps[0].s.enforce_connect);
	assert_false(cfg.deps[0].s.enforce_abort);
	assert_int_equal(cfg.deps[0].s.abort_after_ns, 300 * MS);	/* inherited */
	assert_true(cfg.deps[1].s.enforce_abort);			/* inherited */
	assert_int_equal(cfg.deps[1].s.abort_after_ns, 0);
	assert_false(cfg.deps[2].s.enforce_connect);
	assert_false(cfg.deps[2].s.enforce_abort);
	assert_int_equal(cfg.deps[2].s.abort_after_ns, 1500 * MS);
	/* describe spells them out and parses back to the same */
	dw_config_describe(&cfg, &b);
	assert_non_null(strstr(b.data, "enforce = abort\nabort_after = 300ms\n"));
	assert_non_null(strstr(b.data, "enforce = connect\nabort_after = 300ms\n"));
	assert_non_null(strstr(b.data, "enforce = abort\nabort_after = 0\n"));
	assert_non_null(strstr(b.data, "enforce = off\nabort_after = 1.5s\n"));
	parse_ok(b.data, &again);
	assert_true(again.deps[1].s.enforce_abort);
	assert_int_equal(again.deps[2].s.abort_after_ns, 1500 * MS);
	dw_config_free(&again);
	dw_buf_free(&b);
	dw_config_free(&cfg);
	/* the built-in default: off, never */
	dw_config_defaults(&cfg);
	assert_false(cfg.defaults.enforce_abort);
	assert_int_equal(cfg.defaults.abort_after_ns, 0);
	dw_config_free(&cfg);
}

static void test_err_abort_keys(void **state)
{
	(void)state;
	expect_error("[defaults]\nenforce = kill\n", 2, "enforce: 'kill' is not off, connect or abort");
	expect_error("[defaults]\nabort_after = soon\n", 2,
		     "abort_after: 'soon' is not 0 (off) or a duration from 1ms to 60m");
	expect_error("[defaults]\nabort_after = 500us\n", 2, "abort_after: '500us' is not 0 (off)");
	expect_error("[defaults]\nabort_after = 2h\n", 2, "abort_after: '2h' is not 0 (off)");
	expect_error("[defaults]\nabort_after = -1s\n", 2, "abort_after: '-1s'");
	/* with ignore = yes: rejected, at the later line, wherever each came from */
	expect_error("[dependency stream]\nmatch = 10.0.0.0/8\nabort_after = 1s\nignore = yes\n", 4,
		     "abort_after = 1s with ignore = yes in [dependency stream]");
	expect_error("[dependency stream]\nmatch = 10.0.0.0/8\nignore = yes\nabort_after = 1s\n", 4,
		     "set abort_after = 0 there");
	expect_error("[defaults]\nabort_after = 2s\n[dependency stream]\nmatch = 10.0.0.0/8\nignore = yes\n",
		     5, "abort_after = 2s with ignore = yes in [dependency stream]");
	expect_error("[defaults]\nabort_after = 2s\nignore = yes\n", 3,
		     "abort_after = 2s with ignore = yes in [defaults]");
	/* an ignored dependency that turns abort_after off is fine */
	struct dw_config cfg;

	parse_ok("[defaults]\nabort_after = 2s\n[dependency stream]\nmatch = 10.0.0.0/8\nignore = yes\nabort_after = 0\n",
		 &cfg);
	dw_config_free(&cfg);
}

/* The budget takes min(timeout, abort_after) per hop, and says which it took. */
static void test_budget_abort_after(void **state)
{
	struct dw_config cfg;
	struct dw_buf b = { 0 };
	uint64_t sum;

	(void)state;
	/* pay's abort_after (300ms) is shorter than its timeout: 100 + 300 + 500 fits 1s */
	parse_ok("[dependency auth]\nmatch = 10.0.1.0/24\ntimeout = 100ms\n"
		 "[dependency pay]\nmatch = 10.0.3.0/24\ntimeout = 2s\nabort_after = 300ms\n"
		 "[dependency cart]\nmatch = 10.0.2.0/24\ntimeout = 500ms\nabort_after = 900ms\n"
		 "[service web]\nlisten = 80\ndeadline = 1s\npath = auth, pay, cart\n",
		 &cfg);
	assert_int_equal(dw_service_path_timeout(&cfg, &cfg.services[0], &sum), 0);
	assert_int_equal(sum, 900 * MS);
	dw_config_describe(&cfg, &b);
	assert_non_null(strstr(b.data, "# pay counts 300ms: its abort_after"));
	assert_null(strstr(b.data, "# cart counts"));
	assert_non_null(strstr(b.data, "# path timeouts 900ms of deadline 1s"));
	dw_buf_free(&b);
	dw_config_free(&cfg);
	/* abort_after alone bounds a hop that has no timeout */
	parse_ok("[dependency pay]\nmatch = 10.0.3.0/24\nabort_after = 300ms\n"
		 "[service web]\nlisten = 80\ndeadline = 1s\npath = pay\n",
		 &cfg);
	assert_int_equal(dw_service_path_timeout(&cfg, &cfg.services[0], &sum), 0);
	assert_int_equal(sum, 300 * MS);
	dw_config_free(&cfg);
	/* over: the message names the hop abort_after bounds */
	expect_error("[dependency auth]\nmatch = 10.0.1.0/24\ntimeout = 800ms\n"
		     "[dependency pay]\nmatch = 10.0.3.0/24\ntimeout = 2s\nabort_after = 700ms\n"
		     "[service web]\nlisten = 80\ndeadline = 1s\npath = auth, pay\n",
		     11, "add up to 1.5s (auth 800ms + pay 700ms (abort_after)), more than its deadline 1s");
}

/* A long path is cut in the message, never the deadline at its end. */
static void test_budget_long_path(void **state)
{
	struct dw_buf b = { 0 };
	unsigned i;

	(void)state;
	for (i = 0; i < 500; i++)
		dw_buf_printf(&b, "[dependency dep%u]\nmatch = 10.%u.%u.0/24\ntimeout = 1ms\n", i,
			      i >> 8, i & 0xff);
	dw_buf_printf(&b, "[service web]\nlisten = 80\ndeadline = 499ms\npath = dep0");
	for (i = 1; i < 500; i++)
		dw_buf_printf(&b, ", dep%u", i);
	dw_buf_printf(&b, "\n");
	assert_false(b.oom);
	expect_error(b.data, 1504, "service web: timeouts along its path add up to 500ms (dep0 1ms + dep1 1ms + ");
	assert_non_null(strstr(err, " more), more than its deadline 499ms"));
	assert_true(strlen(err) < 400);
	dw_buf_free(&b);
}

static void test_err_service_unknown_key(void **state)
{
	(void)state;
	expect_error("[service web]\nlisten = 80\ndeadlin = 2s\n", 3,
		     "unknown key 'deadlin' in [service web] (did you mean 'deadline'?)");
	expect_error("[service web]\nlisten = 80\ncolour = blue\n", 3,
		     "unknown key 'colour' in [service web]");
	assert_null(strstr(err, "did you mean"));
	/* keys of the other sections say where they belong */
	expect_error("[service web]\nlisten = 80\nslow_call = 1s\n", 3,
		     "slow_call belongs in [defaults] or a [dependency NAME], not in [service web]");
	expect_error("[service web]\nmatch = 10.0.0.0/8\n", 2,
		     "match belongs in a [dependency NAME], not in [service web]");
	expect_error("[service web]\nsyslog_facility = user\n", 2,
		     "syslog_facility belongs in [defaults], not in [service web]");
	expect_error("[dependency a]\nmatch = 10.0.0.0/8\ndeadline = 2s\n", 3,
		     "deadline belongs in a [service NAME], not in [dependency a]");
	expect_error("[defaults]\nlisten = 80\n", 2, "listen belongs in a [service NAME], not in [defaults]");
	expect_error("[defaults]\npath = a\n", 2, "path belongs in a [service NAME]");
}

static void test_err_service_header(void **state)
{
	(void)state;
	expect_error("[service]\n", 1, "missing service name: [service NAME]");
	expect_error("[service web app]\n", 1, "invalid service name 'web app'");
	expect_error("[serviceweb]\n", 1,
		     "unknown section '[serviceweb]': expected [defaults], [dependency NAME] or [service NAME]");
}

static void test_err_service_missing_listen(void **state)
{
	(void)state;
	expect_error("[service a]\nlisten = 80\n[service web]\npool = 5\n[dependency x]\nmatch = 10.0.0.0/8\n",
		     3, "[service web] has no listen: add 'listen = PORT'");
	expect_error("[service last]\n", 1, "[service last] has no listen");
	expect_error("[service web]\nlisten = 80\nlisten = 81\n", 3,
		     "duplicate key 'listen' in [service web] (first set at line 2)");
}

static void test_err_service_bad_listen(void **state)
{
	static const char *const bad_ports[] = {
		"0", "65536", "http", "80-", "-80", "1-2-3", "10.0.0.1:80", "80 81", "+80",
	};
	char conf[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad_ports) / sizeof(bad_ports[0]); i++) {
		snprintf(conf, sizeof(conf), "[service web]\n\nlisten = %s\n", bad_ports[i]);
		expect_error(conf, 3, "listen: '");
		assert_non_null(strstr(err, "' is not a port (1 to 65535), a range LOW-HIGH or cgroup:/PATH"));
		assert_non_null(strstr(err, bad_ports[i]));
	}
	expect_error("[service web]\nlisten = 90-80\n", 2, "listen: bad port range: 90 is above 80");
	expect_error("[service web]\nlisten = cgroup:app.slice\n", 2,
		     "listen: cgroup 'app.slice' is not an absolute path");
	expect_error("[service web]\nlisten = cgroup:\n", 2, "listen: cgroup '' is not an absolute path");
	expect_error("[service web]\nlisten = cgroup:/sys/fs/cgroup/../x\n", 2,
		     "listen: cgroup '/sys/fs/cgroup/../x' has a '..' component");
	expect_error("[service web]\nlisten = cgroup:/a\tb\n", 2,
		     "listen: the cgroup path has a control byte (0x09 at byte 3)");
}

static void test_err_service_bad_values(void **state)
{
	(void)state;
	expect_error("[service web]\nlisten = 80\npool = 0\n", 3,
		     "pool: '0' is not a whole number from 1 to 1000000");
	expect_error("[service web]\nlisten = 80\npool = 1000001\n", 3, "pool: '1000001'");
	expect_error("[service web]\nlisten = 80\npool = many\n", 3, "pool: 'many'");
	expect_error("[service web]\nlisten = 80\npool = 1\npool = 2\n", 4, "duplicate key 'pool'");
	expect_error("[service web]\nlisten = 80\ndeadline = 2\n", 3,
		     "deadline: '2' is not a duration from 1ms to 60m");
	expect_error("[service web]\nlisten = 80\ndeadline = 0s\n", 3, "deadline: '0s'");
	expect_error("[service web]\nlisten = 80\ndeadline = 1s\ndeadline = 1s\n", 4,
		     "duplicate key 'deadline' in [service web]");
	/* the ends of both ranges are fine */
	{
		struct dw_config cfg;

		parse_ok("[service a]\nlisten = 80\npool = 1\ndeadline = 1ms\n"
			 "[service b]\nlisten = 81\npool = 1000000\ndeadline = 60m\n",
			 &cfg);
		assert_int_equal(cfg.services[1].pool, 1000000);
		assert_int_equal(cfg.services[1].deadline_ns, 3600 * SEC);
		dw_config_free(&cfg);
	}
}

static void test_err_service_path(void **state)
{
	(void)state;
	expect_error("[dependency a]\nmatch = 10.0.0.0/8\n[service web]\nlisten = 80\npath = a, b\n",
		     5, "path: there is no [dependency b] (entry 2 of the path of service web)");
	expect_error("[dependency a]\nmatch = 10.0.0.0/8\ntimeout = 1s\n"
		     "[dependency b]\nmatch = 11.0.0.0/8\ntimeout = 1s\n"
		     "[service web]\nlisten = 80\ndeadline = 5s\npath = a, b, a\n",
		     10, "path: dependency a is on the path of service web twice (entries 1 and 3)");
	/* the first bad entry is the one reported */
	expect_error("[dependency a]\nmatch = 10.0.0.0/8\n[service web]\nlisten = 80\npath = a, x, a, y\n",
		     5, "there is no [dependency x]");
	/* names are case-sensitive, as section names are */
	expect_error("[dependency auth]\nmatch = 10.0.0.0/8\n[service web]\nlisten = 80\npath = Auth\n",
		     5, "there is no [dependency Auth]");
	expect_error("[service web]\nlisten = 80\npath = a,,b\n", 3,
		     "path: entry 2 is empty: separate dependency names with single commas");
	expect_error("[service web]\nlisten = 80\npath = a,\n", 3, "path: entry 2 is empty");
	expect_error("[service web]\nlisten = 80\npath = a b\n", 3,
		     "path: 'a b' is not a dependency name");
	expect_error("[service web]\nlisten = 80\npath = a\npath = a\n", 4,
		     "duplicate key 'path' in [service web] (first set at line 3)");
}

static void test_err_service_names(void **state)
{
	(void)state;
	expect_error("[service web]\nlisten = 80\n[service api]\nlisten = 81\n"
		     "[service web]\nlisten = 82\n",
		     5, "duplicate service name 'web' (the first [service web] is at line 1)");
	/* a service and a dependency may not share a name: reported at the later one */
	expect_error("[dependency cart]\nmatch = 10.0.0.0/8\n[service cart]\nlisten = 80\n", 3,
		     "[service cart] has the name of [dependency cart] (line 1): a service and a dependency may not share one");
	expect_error("[service cart]\nlisten = 80\n\n[dependency cart]\nmatch = 10.0.0.0/8\n", 4,
		     "[dependency cart] has the name of [service cart] (line 1)");
}

static void test_err_service_listen_overlap(void **state)
{
	struct dw_config cfg;

	(void)state;
	expect_error("[service a]\nlisten = 80\n[service b]\n\nlisten = 80\n", 5,
		     "listen '80' overlaps 't.conf:2' ('80' of [service a]): a port belongs to one service");
	expect_error("[service a]\nlisten = 8000-8099\n[service b]\nlisten = 8099-8100\n", 4,
		     "listen '8099-8100' overlaps 't.conf:2' ('8000-8099' of [service a])");
	expect_error("[service a]\nlisten = 8050\n[service b]\nlisten = 8000-8099\n", 4,
		     "listen '8000-8099' overlaps 't.conf:2' ('8050' of [service a])");
	/* the earliest conflict in the file */
	expect_error("[service a]\nlisten = 1-100\n"		/* 1-2 */
		     "[service b]\nlisten = 200\n"		/* 3-4 */
		     "[service c]\nlisten = 50\n"		/* 5-6: vs a */
		     "[service d]\nlisten = 200\n",		/* 7-8: vs b */
		     6, "listen '50' overlaps 't.conf:2' ('1-100' of [service a])");
	/* the same cgroup, however spelt */
	expect_error("[service a]\nlisten = cgroup:/sys/fs/cgroup/app.slice\n"
		     "[service b]\nlisten = cgroup://sys/./fs/cgroup/app.slice/\n",
		     4, "listen: cgroup '//sys/./fs/cgroup/app.slice/' is the cgroup of [service a] too ('t.conf:2')");
	expect_error("[service a]\nlisten = cgroup:/\n[service b]\nlisten = 80\n"
		     "[service c]\nlisten = cgroup://\n",
		     6, "is the cgroup of [service a] too");
	/* adjacent ranges, and a port next to a cgroup, are fine */
	parse_ok("[service a]\nlisten = 1-100\n[service b]\nlisten = 101-65535\n"
		 "[service c]\nlisten = cgroup:/x\n",
		 &cfg);
	dw_config_free(&cfg);
}

/* Thousands of services, one port each: the checks stay fast, the overlap is found at the end. */
static void test_many_services(void **state)
{
	struct dw_buf b = { 0 };
	struct dw_config cfg;
	unsigned i;

	(void)state;
	for (i = 0; i < 30000; i++)
		dw_buf_printf(&b, "[service s%u]\nlisten = %u\n", i, 30000 - i);
	assert_false(b.oom);
	parse_ok(b.data, &cfg);
	assert_int_equal(cfg.nservices, 30000);
	dw_config_free(&cfg);
	dw_buf_printf(&b, "[service late]\nlisten = 1-65535\n");
	expect_error(b.data, 60002, "listen '1-65535' overlaps 't.conf:60000' ('1' of [service s29999])");
	dw_buf_free(&b);
}

static void test_describe_services(void **state)
{
	struct dw_config cfg, again;
	struct dw_buf out = { 0 };
	const struct dw_service *s, *a;
	unsigned i, k;

	(void)state;
	parse_ok(svc_conf, &cfg);
	dw_config_describe(&cfg, &out);
	assert_false(out.oom);
	assert_non_null(strstr(out.data, ": 3 dependencies, 3 services; destinations"));
	assert_non_null(strstr(out.data, "[dependency auth]\t# line 7\n"));
	assert_non_null(strstr(out.data, "eject_probe_calls = 5\nfailure_status = 5xx\nfailure_grpc = unknown, deadline_exceeded, resource_exhausted, internal, unavailable, data_loss\ndns_timeout = 5s\ntimeout = 800ms\n"));
	assert_non_null(strstr(out.data, "\n[service web]\t# line 1\n"
					 "listen = 8080\n"
					 "pool = 200\n"
					 "deadline = 2s\n"
					 "path = auth, cart, payments\n"
					 "# path timeouts 1.6s of deadline 2s\n"));
	assert_non_null(strstr(out.data, "\n[service batch]\t# line 15\n"
					 "listen = 9000-9099\n"
					 "# pool: not set\n"
					 "# deadline: not set, so the path is not checked\n"
					 "# path: not set\n"));
	assert_non_null(strstr(out.data, "\n[service worker]\t# line 20\n"
					 "listen = cgroup:/sys/fs/cgroup/worker.slice\n"
					 "# pool: not set\n"
					 "# deadline: not set, so the path is not checked\n"
					 "path = cart\n"));
	/* it parses back to the same services */
	parse_ok(out.data, &again);
	assert_int_equal(again.ndeps, cfg.ndeps);
	for (i = 0; i < cfg.ndeps; i++)
		assert_int_equal(again.deps[i].timeout_ns, cfg.deps[i].timeout_ns);
	assert_int_equal(again.nservices, cfg.nservices);
	for (i = 0; i < cfg.nservices; i++) {
		s = &cfg.services[i];
		a = &again.services[i];
		assert_string_equal(a->name, s->name);
		assert_int_equal(a->port_lo, s->port_lo);
		assert_int_equal(a->port_hi, s->port_hi);
		assert_string_equal(a->cgroup, s->cgroup);
		assert_int_equal(a->pool, s->pool);
		assert_int_equal(a->deadline_ns, s->deadline_ns);
		assert_int_equal(a->npath, s->npath);
		for (k = 0; k < s->npath; k++)
			assert_int_equal(a->path[k], s->path[k]);
	}
	dw_config_free(&again);
	dw_buf_free(&out);

	/* a budget exactly at its deadline says so */
	memset(&out, 0, sizeof(out));
	cfg.deps[0].timeout_ns = 1200 * MS;
	dw_config_describe(&cfg, &out);
	assert_non_null(strstr(out.data, "# path timeouts 2s of deadline 2s\n"));
	parse_ok(out.data, &again);
	dw_config_free(&again);
	dw_buf_free(&out);

	/* without services the header is as it was */
	memset(&out, 0, sizeof(out));
	dw_config_free(&cfg);
	parse_ok(full_conf, &cfg);
	dw_config_describe(&cfg, &out);
	assert_non_null(strstr(out.data, ": 2 dependencies; destinations no match covers"));
	assert_null(strstr(out.data, "\ntimeout"));
	assert_null(strstr(out.data, "[service"));
	dw_config_free(&cfg);
	dw_buf_free(&out);
}

/* Configs filled in by hand: the sum says what it cannot add up. */
static void test_service_path_timeout_by_hand(void **state)
{
	struct dw_dep_config deps[2] = { { .name = "a", .timeout_ns = 5 * MS }, { .name = "b" } };
	unsigned path[3] = { 0, 1, 0 };
	struct dw_service svc = { .name = "s", .port_lo = 80, .port_hi = 80, .deadline_ns = SEC,
				  .path = path, .npath = 3, .line = 1 };
	struct dw_config cfg = { .deps = deps, .ndeps = 2, .services = &svc, .nservices = 1 };
	struct dw_buf out = { 0 };
	uint64_t sum;

	(void)state;
	assert_int_equal(dw_service_path_timeout(&cfg, &svc, &sum), -ENODATA);
	assert_int_equal(sum, 10 * MS);
	dw_config_describe(&cfg, &out);
	assert_non_null(strstr(out.data, "path = a, b, a\n# path timeouts unknown"));
	dw_buf_free(&out);
	path[1] = 7;
	assert_int_equal(dw_service_path_timeout(&cfg, &svc, &sum), -EINVAL);
	memset(&out, 0, sizeof(out));
	dw_config_describe(&cfg, &out);
	assert_non_null(strstr(out.data, "# path: 3 dependencies this config does not have\n"));
	assert_null(strstr(out.data, "\npath ="));
	dw_buf_free(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_embedded_default),
		cmocka_unit_test(test_example_file),
		cmocka_unit_test(test_full_file),
		cmocka_unit_test(test_override_any_order),
		cmocka_unit_test(test_syntax_tolerance),
		cmocka_unit_test(test_empty_file),
		cmocka_unit_test(test_match_forms),
		cmocka_unit_test(test_match_format),
		cmocka_unit_test(test_lookup_v4),
		cmocka_unit_test(test_lookup_v6_and_mapped),
		cmocka_unit_test(test_lookup_no_match),
		cmocka_unit_test(test_err_no_equals),
		cmocka_unit_test(test_err_unterminated_section),
		cmocka_unit_test(test_err_text_after_section),
		cmocka_unit_test(test_err_empty_key),
		cmocka_unit_test(test_err_empty_value),
		cmocka_unit_test(test_err_unknown_section),
		cmocka_unit_test(test_err_unknown_key),
		cmocka_unit_test(test_err_key_outside_section),
		cmocka_unit_test(test_err_bad_duration),
		cmocka_unit_test(test_err_bad_percentage),
		cmocka_unit_test(test_err_bad_number),
		cmocka_unit_test(test_err_bad_enum_values),
		cmocka_unit_test(test_err_out_of_range),
		cmocka_unit_test(test_err_min_calls_above_sample),
		cmocka_unit_test(test_err_invalid_cidr),
		cmocka_unit_test(test_err_bad_ports),
		cmocka_unit_test(test_err_host_bits),
		cmocka_unit_test(test_err_duplicate_name),
		cmocka_unit_test(test_err_duplicate_defaults),
		cmocka_unit_test(test_err_duplicate_key),
		cmocka_unit_test(test_err_dep_without_match),
		cmocka_unit_test(test_err_match_in_defaults),
		cmocka_unit_test(test_err_facility_in_dependency),
		cmocka_unit_test(test_err_bad_dependency_name),
		cmocka_unit_test(test_err_overlap_identical),
		cmocka_unit_test(test_err_overlap_partial),
		cmocka_unit_test(test_err_overlap_same_dependency),
		cmocka_unit_test(test_err_overlap_earliest),
		cmocka_unit_test(test_overlap_allowed),
		cmocka_unit_test(test_err_nul_byte),
		cmocka_unit_test(test_err_binary_content),
		cmocka_unit_test(test_err_long_line),
		cmocka_unit_test(test_err_too_large),
		cmocka_unit_test(test_stops_at_first_error),
		cmocka_unit_test(test_cfg_untouched_on_error),
		cmocka_unit_test(test_error_buffers),
		cmocka_unit_test(test_describe),
		cmocka_unit_test(test_multiplexed),
		cmocka_unit_test(test_eject_keys),
		cmocka_unit_test(test_err_bad_multiplexed),
		cmocka_unit_test(test_describe_multiplexed),
		cmocka_unit_test(test_many_matches),
		cmocka_unit_test(test_enforce_cgroup),
		cmocka_unit_test(test_err_enforce_cgroup_relative),
		cmocka_unit_test(test_err_enforce_cgroup_dotdot),
		cmocka_unit_test(test_err_enforce_cgroup_too_long_or_control),
		cmocka_unit_test(test_err_enforce_cgroup_in_dependency),
		cmocka_unit_test(test_err_enforce_cgroup_duplicate),
		cmocka_unit_test(test_describe_enforce_cgroup),
		cmocka_unit_test(test_err_too_many_dependencies),
		cmocka_unit_test(test_err_match_rules_nested),
		cmocka_unit_test(test_err_match_rules_same_prefix),
		cmocka_unit_test(test_match_rules_allowed),
		cmocka_unit_test(test_match_rules_many),
		cmocka_unit_test(test_example_service_block),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_err_timeout_misplaced),
		cmocka_unit_test(test_services),
		cmocka_unit_test(test_service_listen_forms),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_abort_keys),
		cmocka_unit_test(test_err_abort_keys),
		cmocka_unit_test(test_budget_abort_after),
		cmocka_unit_test(test_err_budget_untimed),
		cmocka_unit_test(test_budget_long_path),
		cmocka_unit_test(test_err_service_unknown_key),
		cmocka_unit_test(test_err_service_header),
		cmocka_unit_test(test_err_service_missing_listen),
		cmocka_unit_test(test_err_service_bad_listen),
		cmocka_unit_test(test_err_service_bad_values),
		cmocka_unit_test(test_err_service_path),
		cmocka_unit_test(test_err_service_names),
		cmocka_unit_test(test_err_service_listen_overlap),
		cmocka_unit_test(test_many_services),
		cmocka_unit_test(test_describe_services),
		cmocka_unit_test(test_service_path_timeout_by_hand),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
