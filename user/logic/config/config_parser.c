// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What the config*.c files share: the key table, the parser's state and
 * its error messages.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "logic/config/config_parser.h"
#include "logic/base/parse.h"

#define FIELD(f) offsetof(struct dw_dep_settings, f)

/*
 * The per-dependency keys, in the order describe prints them. Declared
 * with NKEYS entries (config_parser.h): a different count does not compile.
 * KEY_SAMPLE and its kin there are places in this list: keep them in step.
 */
const struct key_def cfg_keys[] = {
	{ "slow_call", KIND_DURATION, FIELD(slow_call_ns), NS_PER_MS, NS_PER_H },
	{ "slow_rate", KIND_PERCENT, FIELD(slow_rate), 0, 0 },
	{ "failure_rate", KIND_PERCENT, FIELD(failure_rate), 0, 0 },
	{ "sample", KIND_UINT, FIELD(sample), 1, 10000 },
	{ "window", KIND_DURATION, FIELD(window_ns), NS_PER_S, NS_PER_H },
	/* the upper bound is sample's, checked once both are known */
	{ "min_calls", KIND_UINT, FIELD(min_calls), 1, 10000 },
	{ "open_for", KIND_DURATION, FIELD(open_for_ns), NS_PER_S, 24 * NS_PER_H },
	{ "half_open_calls", KIND_UINT, FIELD(half_open_calls), 1, 1000 },
	{ "max_inflight", KIND_UINT, FIELD(max_inflight), 0, 1000000 },
	{ "enforce", KIND_ENFORCE, FIELD(enforce_connect), 0, 0 },
	/* 0 (off), or 1 ms to 1 h */
	{ "abort_after", KIND_DURATION, FIELD(abort_after_ns), 0, NS_PER_H },
	{ "ignore", KIND_BOOL, FIELD(ignore), 0, 0 },
	{ "multiplexed", KIND_MULTIPLEXED, FIELD(judge_multiplexed), 0, 0 },
	{ "eject", KIND_SWITCH, FIELD(eject), 0, 0 },
	{ "max_ejected", KIND_PERCENT, FIELD(max_ejected), 0, 0 },
	{ "eject_for", KIND_DURATION, FIELD(eject_for_ns), NS_PER_S, 24 * NS_PER_H },
	{ "eject_probe_calls", KIND_UINT, FIELD(eject_probe_calls), 1, 1000 },
	{ "failure_status", KIND_STATUSES, FIELD(failure_status), 0, 0 },
	/* HTTP/2 answers' grpc-status (issue 33, h2answer.h) */
	{ "failure_grpc", KIND_GRPC_CODES, FIELD(failure_grpc), 0, 0 },
	/* DNS over UDP (issue 35): glibc's timeout:5 by default; 1 ms to 1 min */
	{ "dns_timeout", KIND_DURATION, FIELD(dns_timeout_ns), NS_PER_MS, 60 * NS_PER_S },
};

/* The syslog facilities; declared with NFACILITIES entries, as cfg_keys. */
const struct facility_def cfg_facilities[] = {
	{ "daemon", LOG_DAEMON }, { "user", LOG_USER },
	{ "local0", LOG_LOCAL0 }, { "local1", LOG_LOCAL1 },
	{ "local2", LOG_LOCAL2 }, { "local3", LOG_LOCAL3 },
	{ "local4", LOG_LOCAL4 }, { "local5", LOG_LOCAL5 },
	{ "local6", LOG_LOCAL6 }, { "local7", LOG_LOCAL7 },
};

/*
 * Records "SRC:LINE: message" unless an earlier error is already there.
 * While reading lines the first error stops the parse anyway; the checks
 * that need the whole file report everything and the earliest (by line,
 * then sub) wins, so the message does not depend on check order.
 */
int cfg_fail_at(struct parser *p, int line, int sub, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (p->err_line && (line > p->err_line || (line == p->err_line && sub >= p->err_sub)))
		return -EINVAL;
	p->err_line = line;
	p->err_sub = sub;
	if (!p->err || p->errlen == 0)
		return -EINVAL;
	n = snprintf(p->err, p->errlen, "%s:%d: ", p->src, line);
	if (n < 0 || (size_t)n >= p->errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(p->err + n, p->errlen - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* For the whole file rather than a line of it. */
int dw_config_error(const char *src, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!err || errlen == 0)
		return -EINVAL;
	n = snprintf(err, errlen, "%s: ", src);
	if (n < 0 || (size_t)n >= errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

char *cfg_trim(char *s)
{
	char *end;

	while (IS_SPACE(*s))
		s++;
	end = s + strlen(s);
	while (end > s && IS_SPACE(end[-1]))
		end--;
	*end = '\0';
	return s;
}

void cfg_section_name(const struct parser *p, char *buf, size_t len)
{
	if (p->sec == SEC_DEFAULTS)
		snprintf(buf, len, "[defaults]");
	else if (p->sec == SEC_SERVICE)
		snprintf(buf, len, "[service %s]", p->svcs[p->nsvcs - 1].svc.name);
	else
		snprintf(buf, len, "[dependency %s]", p->deps[p->ndeps - 1].dep.name);
}

bool cfg_valid_name(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > DW_DEP_NAME_MAX)
		return false;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '.' || s[i] == '-'))
			return false;
	return true;
}

/*
 * What is wrong with s (its first n bytes) as an enforce_cgroup path;
 * NULL if nothing. Text only: whether the directory exists, and is a
 * cgroup v2 one, is the daemon's business when it attaches.
 */
const char *cfg_cgroup_path_problem(const char *s, size_t n, size_t *at)
{
	size_t i, start;

	*at = 0;
	if (n == 0 || s[0] != '/')
		return "is not an absolute path (it must start with '/')";
	if (n > DW_CGROUP_PATH_MAX)
		return "is longer than 255 bytes";
	for (i = 0; i < n; i++) {
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
			*at = i + 1;
			return "has a control byte";
		}
	}
	for (start = 1; start <= n; start = i + 1) {
		for (i = start; i < n && s[i] != '/'; i++)
			;
		if (i - start == 2 && s[start] == '.' && s[start + 1] == '.')
			return "has a '..' component";
	}
	return NULL;
}

/* 0 if key is not set yet in the current section; line: where it was. */
int cfg_check_unset(struct parser *p, const char *key, int line)
{
	char sec[DW_DEP_NAME_MAX + 16];

	if (!line)
		return 0;
	cfg_section_name(p, sec, sizeof(sec));
	return fail(p, "duplicate key '%s' in %s (first set at line %d)", key, sec, line);
}

/*
 * syslog_facility, enforce_cgroup (config_lines.c) and dns_ports (config_dnsports.c): keys of
 * [defaults] alone, set at most once. Here, with the other checks the config*.c files share, so
 * that config_dnsports.c, which config_lines.c calls, never calls back into config_lines.c.
 */
int cfg_check_defaults_only(struct parser *p, const char *key, int line)
{
	if (p->sec != SEC_DEFAULTS)
		return fail(p, "%s belongs in [defaults], not in [dependency %s]", key,
			    p->deps[p->ndeps - 1].dep.name);
	return cfg_check_unset(p, key, line);
}

int cfg_fail_value(struct parser *p, const struct key_def *k, const char *val)
{
	char lo[DW_DURATION_STRLEN], hi[DW_DURATION_STRLEN], c[DW_CLIP_BUF];

	val = dw_clip(val, c);
	switch (k->kind) {
	case KIND_DURATION:
		dw_format_duration(k->min, lo, sizeof(lo));
		dw_format_duration(k->max, hi, sizeof(hi));
		if (!k->min)
			return fail(p, "%s: '%s' is not 0 (off) or a duration from 1ms to %s (units: us, ms, s, m)",
				    k->name, val, hi);
		return fail(p, "%s: '%s' is not a duration from %s to %s (units: us, ms, s, m)",
			    k->name, val, lo, hi);
	case KIND_PERCENT:
		return fail(p, "%s: '%s' is not a percentage from 0%% to 100%%", k->name, val);
	case KIND_UINT:
		return fail(p, "%s: '%s' is not a whole number from %llu to %llu", k->name, val,
			    (unsigned long long)k->min, (unsigned long long)k->max);
	case KIND_BOOL:
		return fail(p, "%s: '%s' is not yes or no (or on/off, true/false, 1/0)", k->name,
			    val);
	case KIND_SWITCH:
		return fail(p, "%s: '%s' is not on or off (or yes/no, true/false, 1/0)", k->name, val);
	case KIND_ENFORCE:
		return fail(p, "%s: '%s' is not off, connect or abort", k->name, val);
	case KIND_MULTIPLEXED:
		return fail(p, "%s: '%s' is not ignore or judge", k->name, val);
	case KIND_STATUSES:
		return fail(p, "%s: '%s' is not a list of HTTP statuses (classes 1xx-5xx, codes 100-599: \"5xx, 429\") or none",
			    k->name, val);
	case KIND_GRPC_CODES:
		return fail(p, "%s: '%s' is not a list of gRPC status names (unavailable, deadline_exceeded, ...) or none",
			    k->name, val);
	}
	return -EINVAL;
}

int cfg_parse_duration_key(struct parser *p, const struct key_def *k, const char *val,
			      uint64_t *ns)
{
	uint64_t u;

	if (dw_parse_duration(val, &u) || u < k->min || u > k->max)
		return cfg_fail_value(p, k, val);
	*ns = u;
	return 0;
}

int cfg_check_section_name(struct parser *p, const char *kind, const char *name)
{
	char c[DW_CLIP_BUF];

	if (!*name)
		return fail(p, "missing %s name: [%s NAME]", kind, kind);
	if (!cfg_valid_name(name))
		return fail(p, "invalid %s name '%s': use 1 to %d of A-Z a-z 0-9 _ . -", kind,
			    dw_clip(name, c), DW_DEP_NAME_MAX);
	return 0;
}

int cfg_grow(void *arrayp, size_t size, unsigned n, unsigned *cap, unsigned first)
{
	void *array, *bigger;
	unsigned want;

	if (n < *cap)
		return 0;
	want = *cap ? 2 * *cap : first;
	memcpy(&array, arrayp, sizeof(array));
	bigger = realloc(array, (size_t)want * size);
	if (!bigger)
		return -ENOMEM;
	memcpy(arrayp, &bigger, sizeof(bigger));
	*cap = want;
	return 0;
}
