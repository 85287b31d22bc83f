// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "logic/config/config.h"
#include "logic/config/config_parser.h"
#include "logic/base/parse.h"
#include "logic/config/match.h"
#include "logic/outcome/h2answer.h"

/*
 * The built-in config. dw_config_defaults() parses it, so these lines are
 * the only place the default values live; examples/depwatch.conf carries
 * the same text, and a unit test holds the two together.
 */
const char dw_default_config[] =
	"[defaults]\n"
	"slow_call = 1s          # a call slower than this is slow\n"
	"slow_rate = 50%         # open when at least this share of recent calls is slow\n"
	"failure_rate = 50%      # open when at least this share of recent calls failed\n"
	"sample = 20             # a decision looks at the newest this-many decided calls...\n"
	"window = 10s            # ...none of them started longer ago than this\n"
	"min_calls = 10          # fewer decided calls than this decide nothing\n"
	"open_for = 30s          # open -> half_open after this\n"
	"half_open_calls = 5     # calls judged in half_open before closing or reopening\n"
	"max_inflight = 0        # concurrency limit (bulkhead); 0 = none\n"
	"enforce = off           # off | connect | abort\n"
	"abort_after = 0         # abort a call's connection once it is this old; 0 = never\n"
	"ignore = no             # yes: trace but never judge\n"
	"multiplexed = ignore    # ignore | judge: burst timings (HTTP/2, pipelining) in slow_rate\n"
	"eject = off             # on: eject a destination slow or failing among healthy siblings\n"
	"max_ejected = 50%       # at most this share of the destinations with calls is out at once\n"
	"eject_for = 30s         # the first ejection's time; each next one twice as long, up to 8x\n"
	"eject_probe_calls = 5   # calls let through and judged before an ejected one is back\n"
	"failure_status = 5xx    # HTTP answers that fail their call: classes (5xx), codes (429), or none\n"
	"failure_grpc = " DW_FAILURE_GRPC_DEFAULT " # gRPC answers that fail their call, or none\n"
	"dns_timeout = 5s        # a DNS query unanswered this long failed (reason timeout)\n"
	"dns_ports = 53          # UDP ports read as DNS, for every dependency: 53, 5353, ...\n"
	"syslog_facility = daemon # alerts go to syslog: daemon, user, local0..local7\n";

/*
 * A key outside struct dw_dep_settings (off unused): its value is read
 * by hand, this gives cfg_fail_value() the name and range ([service]
 * keys are config_service.c's).
 */
static const struct key_def timeout_key = { "timeout", KIND_DURATION, 0, NS_PER_MS, NS_PER_H };

/* The keys of [defaults] and [dependency] besides cfg_keys[], and of [service]. */
static const char *const other_keys[] = { "match", "syslog_facility", "enforce_cgroup", "dns_ports", "timeout" };
static const char *const service_keys[] = { "listen", "pool", "deadline", "path" };

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- bytes and lines ---- */

/* Length of the valid UTF-8 sequence at s (n bytes left); 0 if there is none. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* overlong forms, UTF-16 surrogates, beyond U+10FFFF */
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

/*
 * A config is UTF-8 text: tabs, a CR before the newline, no other control
 * bytes. Anything else means someone pointed us at the wrong file, and
 * saying so beats a confusing syntax error about its first line.
 */
static int check_text(struct parser *p, const unsigned char *s, size_t n)
{
	size_t i = 0, len;

	while (i < n) {
		if (s[i] == '\0')
			return fail(p, "binary content (NUL byte at column %zu)", i + 1);
		if ((s[i] < 0x20 && s[i] != '\t' && !(s[i] == '\r' && i == n - 1)) || s[i] == 0x7f)
			return fail(p, "binary content (control byte 0x%02x at column %zu)", s[i],
				    i + 1);
		len = utf8_len(s + i, n - i);
		if (len == 0)
			return fail(p, "binary content (byte 0x%02x at column %zu is not UTF-8)",
				    s[i], i + 1);
		i += len;
	}
	return 0;
}

/* ---- values ---- */

static int find_key(const char *name)
{
	size_t k;

	for (k = 0; k < NKEYS; k++)
		if (strcmp(cfg_keys[k].name, name) == 0)
			return k;
	return -1;
}

static unsigned min3(unsigned a, unsigned b, unsigned c)
{
	unsigned m = a < b ? a : b;

	return m < c ? m : c;
}

/* Levenshtein distance; b is one of our key names, shorter than 32. */
static unsigned edit_distance(const char *a, const char *b)
{
	unsigned row[32], prev, tmp, i, j, lb = strlen(b);

	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; a[i - 1]; i++) {
		prev = row[0];
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			tmp = row[j];
			row[j] = min3(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] != b[j - 1]));
			prev = tmp;
		}
	}
	return row[lb];
}

static bool in_list(const char *name, const char *const *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(name, list[i]) == 0)
			return true;
	return false;
}

/*
 * The key of section sec within two typos of name, for "did you mean";
 * NULL if none.
 */
static const char *suggest_key(const char *name, enum section sec)
{
	const char *best = NULL, *cand;
	unsigned d, best_d = 3;
	size_t i, n;

	if (strlen(name) > 32)
		return NULL;
	n = sec == SEC_SERVICE ? ARRAY_SIZE(service_keys) : NKEYS + ARRAY_SIZE(other_keys);
	for (i = 0; i < n; i++) {
		if (sec == SEC_SERVICE)
			cand = service_keys[i];
		else
			cand = i < NKEYS ? cfg_keys[i].name : other_keys[i - NKEYS];
		d = edit_distance(name, cand);
		if (d < best_d) {
			best_d = d;
			best = cand;
		}
	}
	return best;
}

/* Where key belongs if it is a key, just not of this kind of section; NULL if not. */
static const char *home_of(const char *key, enum section sec)
{
	if (sec != SEC_SERVICE)
		return in_list(key, service_keys, ARRAY_SIZE(service_keys)) ? "a [service NAME]" : NULL;
	if (!strcmp(key, "match") || !strcmp(key, "timeout"))
		return "a [dependency NAME]";
	if (!strcmp(key, "syslog_facility") || !strcmp(key, "enforce_cgroup") || !strcmp(key, "dns_ports"))
		return "[defaults]";
	return find_key(key) >= 0 ? "[defaults] or a [dependency NAME]" : NULL;
}

static int fail_unknown_key(struct parser *p, const char *key)
{
	const char *hint = suggest_key(key, p->sec), *home = home_of(key, p->sec);
	char sec[DW_DEP_NAME_MAX + 16], c[DW_CLIP_BUF];

	cfg_section_name(p, sec, sizeof(sec));
	if (home)
		return fail(p, "%s belongs in %s, not in %s", key, home, sec);
	if (hint)
		return fail(p, "unknown key '%s' in %s (did you mean '%s'?)", dw_clip(key, c), sec,
			    hint);
	return fail(p, "unknown key '%s' in %s", dw_clip(key, c), sec);
}

/* val into k's field of s; -EINVAL for a bad or out-of-range value. */
static int parse_value(const struct key_def *k, const char *val, struct dw_dep_settings *s)
{
	void *field = (char *)s + k->off;
	uint64_t u;
	double d;
	bool b;

	switch (k->kind) {
	case KIND_DURATION:
		/* a key whose minimum is 0 is off at 0, and otherwise at least 1 ms */
		if (!k->min && !strcmp(val, "0")) {
			*(uint64_t *)field = 0;
			return 0;
		}
		if (dw_parse_duration(val, &u) || u < (k->min ? k->min : NS_PER_MS) || u > k->max)
			return -EINVAL;
		*(uint64_t *)field = u;
		return 0;
	case KIND_PERCENT:
		if (dw_parse_percent(val, &d))
			return -EINVAL;
		*(double *)field = d;
		return 0;
	case KIND_UINT:
		if (dw_parse_uint(val, k->min, k->max, &u))
			return -EINVAL;
		*(unsigned *)field = u;
		return 0;
	case KIND_BOOL:
	case KIND_SWITCH:
		if (dw_parse_bool(val, &b))
			return -EINVAL;
		*(bool *)field = b;
		return 0;
	case KIND_ENFORCE:
		/* abort is everything connect does, and more */
		if (strcasecmp(val, "off") && strcasecmp(val, "connect") && strcasecmp(val, "abort"))
			return -EINVAL;
		*(bool *)field = strcasecmp(val, "off") != 0;
		s->enforce_abort = strcasecmp(val, "abort") == 0;
		return 0;
	case KIND_MULTIPLEXED:
		if (strcasecmp(val, "ignore") && strcasecmp(val, "judge"))
			return -EINVAL;
		*(bool *)field = strcasecmp(val, "judge") == 0;
		return 0;
	case KIND_STATUSES:
		return dw_status_set_parse(val, field);
	case KIND_GRPC_CODES:
		return dw_grpc_set_parse(val, field);
	}
	return -EINVAL;
}

/* ---- sections and settings ---- */

static int begin_defaults(struct parser *p)
{
	if (p->defaults_line)
		return fail(p, "duplicate [defaults] section (the first is at line %d)",
			    p->defaults_line);
	p->defaults_line = p->line;
	p->sec = SEC_DEFAULTS;
	return 0;
}

/* Duplicate names are found once the whole file is read (config_resolve.c). */
static int begin_dep(struct parser *p, const char *name)
{
	struct pdep *d;
	int err;

	err = cfg_check_section_name(p, "dependency", name);
	if (!err)
		err = cfg_grow(&p->deps, sizeof(*p->deps), p->ndeps, &p->cap, 8);
	if (err)
		return err;
	d = &p->deps[p->ndeps++];
	memset(d, 0, sizeof(*d));
	snprintf(d->dep.name, sizeof(d->dep.name), "%s", name);
	d->dep.line = p->line;
	p->sec = SEC_DEP;
	return 0;
}

/* Whether s is word followed by the end or a blank. */
static bool starts_word(const char *s, const char *word)
{
	size_t n = strlen(word);

	return strncmp(s, word, n) == 0 && (s[n] == '\0' || IS_SPACE(s[n]));
}

/* s: a trimmed line starting with '['. */
static int parse_section(struct parser *p, char *s)
{
	char c[DW_CLIP_BUF], *close = strchr(s, ']'), *inner;

	if (!close)
		return fail(p, "unterminated section header '%s': missing ']'", dw_clip(s, c));
	if (close[1])
		return fail(p, "unexpected '%s' after the section header",
			    dw_clip(cfg_trim(close + 1), c));
	*close = '\0';
	inner = cfg_trim(s + 1);
	if (strcmp(inner, "defaults") == 0)
		return begin_defaults(p);
	if (starts_word(inner, "dependency"))
		return begin_dep(p, cfg_trim(inner + 10));
	if (starts_word(inner, "service"))
		return cfg_begin_service(p, cfg_trim(inner + 7));
	return fail(p, "unknown section '[%s]': expected [defaults], [dependency NAME] or [service NAME]",
		    dw_clip(inner, c));
}

static int add_match(struct parser *p, const char *val)
{
	struct pdep *d = &p->deps[p->ndeps - 1];
	struct dw_match m;
	char why[DW_CONFIG_MAX_LINE];
	int err;

	err = dw_match_parse(val, &m, why, sizeof(why));
	if (err == -EINVAL)
		return fail(p, "%s", why);
	if (err)
		return err;
	m.line = p->line;
	err = cfg_grow(&d->dep.matches, sizeof(m), d->dep.nmatches, &d->mcap, 4);
	if (err)
		return err;
	d->dep.matches[d->dep.nmatches++] = m;
	return 0;
}

static int set_facility(struct parser *p, const char *val)
{
	char c[DW_CLIP_BUF];
	size_t i;
	int err;

	err = cfg_check_defaults_only(p, "syslog_facility", p->facility_line);
	if (err)
		return err;
	for (i = 0; i < NFACILITIES; i++) {
		if (strcasecmp(val, cfg_facilities[i].name) == 0) {
			p->facility = cfg_facilities[i].value;
			p->facility_line = p->line;
			return 0;
		}
	}
	return fail(p, "syslog_facility: '%s' is not daemon, user or local0 to local7",
		    dw_clip(val, c));
}

static int set_cgroup(struct parser *p, const char *val)
{
	size_t n = strlen(val), at;
	const char *why;
	char c[DW_CLIP_BUF];
	int err;

	err = cfg_check_defaults_only(p, "enforce_cgroup", p->cgroup_line);
	if (err)
		return err;
	why = cfg_cgroup_path_problem(val, n, &at);
	if (why && at)	/* the byte itself stays out of the message */
		return fail(p, "enforce_cgroup: the path %s (0x%02x at byte %zu)", why,
			    (unsigned char)val[at - 1], at);
	if (why)
		return fail(p, "enforce_cgroup: '%s' %s", dw_clip(val, c), why);
	memcpy(p->cgroup, val, n + 1);
	p->cgroup_line = p->line;
	return 0;
}

static int set_timeout(struct parser *p, const char *val)
{
	struct pdep *d;
	int err;

	if (p->sec == SEC_DEFAULTS)
		return fail(p, "timeout belongs in a [dependency NAME], not in [defaults]: it is what callers wait for that one dependency, and has no default");
	d = &p->deps[p->ndeps - 1];
	err = cfg_check_unset(p, "timeout", d->timeout_line);
	if (!err)
		err = cfg_parse_duration_key(p, &timeout_key, val, &d->dep.timeout_ns);
	if (!err)
		d->timeout_line = p->line;
	return err;
}

static int set_key(struct parser *p, int k, const char *val)
{
	struct dw_dep_settings *s = &p->defaults;
	int *line = &p->key_line[k];
	char sec[DW_DEP_NAME_MAX + 16];

	if (p->sec == SEC_DEP) {
		s = &p->deps[p->ndeps - 1].dep.s;
		line = &p->deps[p->ndeps - 1].key_line[k];
	}
	if (*line) {
		cfg_section_name(p, sec, sizeof(sec));
		return fail(p, "duplicate key '%s' in %s (first set at line %d)", cfg_keys[k].name, sec,
			    *line);
	}
	if (parse_value(&cfg_keys[k], val, s))
		return cfg_fail_value(p, &cfg_keys[k], val);
	*line = p->line;
	return 0;
}

/* s: a trimmed, non-empty line that is not a section header. */
static int parse_setting(struct parser *p, char *s)
{
	char c[DW_CLIP_BUF], *eq = strchr(s, '='), *key, *val;
	int k, err;

	if (!eq)
		return fail(p, "expected 'key = value' or '[section]', not '%s'", dw_clip(s, c));
	*eq = '\0';
	key = cfg_trim(s);
	val = cfg_trim(eq + 1);
	if (!*key)
		return fail(p, "empty key before '='");
	if (!*val)
		return fail(p, "empty value for '%s'", dw_clip(key, c));
	if (p->sec == SEC_NONE)
		return fail(p, "'%s' is outside any section: start with [defaults], [dependency NAME] or [service NAME]",
			    dw_clip(key, c));
	if (p->sec == SEC_SERVICE) {
		err = cfg_set_service_key(p, key, val);
		return err == -ENOENT ? fail_unknown_key(p, key) : err;
	}
	if (strcmp(key, "match") == 0) {
		if (p->sec == SEC_DEFAULTS)
			return fail(p, "match is not allowed in [defaults]: put it in a [dependency NAME]");
		return add_match(p, val);
	}
	if (strcmp(key, "syslog_facility") == 0)
		return set_facility(p, val);
	if (strcmp(key, "enforce_cgroup") == 0)
		return set_cgroup(p, val);
	if (strcmp(key, "dns_ports") == 0)
		return cfg_set_dns_ports(p, val);
	if (strcmp(key, "timeout") == 0)
		return set_timeout(p, val);
	k = find_key(key);
	if (k < 0)
		return fail_unknown_key(p, key);
	return set_key(p, k, val);
}

static int parse_line(struct parser *p, const char *s, size_t n)
{
	char buf[DW_CONFIG_MAX_LINE + 1], *line, *hash;
	int err;

	err = check_text(p, (const unsigned char *)s, n);
	if (err)
		return err;
	if (n > DW_CONFIG_MAX_LINE)
		return fail(p, "line is longer than %d bytes", DW_CONFIG_MAX_LINE);
	memcpy(buf, s, n);
	buf[n] = '\0';
	hash = strchr(buf, '#');
	if (hash)
		*hash = '\0';
	line = cfg_trim(buf);
	if (!*line)
		return 0;
	if (*line == '[')
		return parse_section(p, line);
	return parse_setting(p, line);
}

static int parse_lines(struct parser *p, const char *text, size_t len)
{
	const char *nl;
	size_t pos = 0, n;
	int err;

	/* editors on some systems start UTF-8 files with a byte order mark */
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		pos = 3;
	while (pos < len) {
		p->line++;
		nl = memchr(text + pos, '\n', len - pos);
		n = nl ? (size_t)(nl - (text + pos)) : len - pos;
		err = parse_line(p, text + pos, n);
		if (err)
			return err;
		pos += n + 1;
	}
	return 0;
}

/* Hands the parsed dependencies and services over to out; p keeps nothing. */
static int build(struct parser *p, struct dw_config *out)
{
	struct dw_dep_config *deps = NULL;
	struct dw_service *svcs = NULL;
	unsigned i;

	if (p->ndeps) {
		deps = calloc(p->ndeps, sizeof(*deps));
		if (!deps)
			return -ENOMEM;
	}
	if (p->nsvcs) {
		svcs = calloc(p->nsvcs, sizeof(*svcs));
		if (!svcs) {
			free(deps);
			return -ENOMEM;
		}
	}
	for (i = 0; i < p->ndeps; i++) {
		deps[i] = p->deps[i].dep;
		p->deps[i].dep.matches = NULL;
	}
	for (i = 0; i < p->nsvcs; i++) {
		svcs[i] = p->svcs[i].svc;
		p->svcs[i].svc.path = NULL;
	}
	memset(out, 0, sizeof(*out));
	out->defaults = p->defaults;
	out->deps = deps;
	out->ndeps = p->ndeps;
	out->services = svcs;
	out->nservices = p->nsvcs;
	out->syslog_facility = p->facility;
	memcpy(out->enforce_cgroup, p->cgroup, sizeof(out->enforce_cgroup));
	memcpy(out->dns_ports, p->dns_ports, sizeof(out->dns_ports));
	out->ndns_ports = p->ndns_ports;
	snprintf(out->source, sizeof(out->source), "%s", p->src);
	return 0;
}

static void parser_free(struct parser *p)
{
	unsigned i;

	for (i = 0; i < p->ndeps; i++)
		free(p->deps[i].dep.matches);
	free(p->deps);
	for (i = 0; i < p->nsvcs; i++) {
		free(p->svcs[i].names);
		free(p->svcs[i].svc.path);
	}
	free(p->svcs);
}

static int parse_config(const char *src, const char *text, size_t len,
			const struct dw_config *base, struct dw_config *cfg, char *err,
			size_t errlen)
{
	struct parser p = { .src = src, .err = err, .errlen = errlen };
	int ret;

	ret = parse_lines(&p, text, len);
	if (!ret)
		ret = cfg_finish(&p, base);
	if (!ret)
		ret = build(&p, cfg);
	if (ret == -ENOMEM)
		dw_config_error(src, err, errlen, "out of memory");
	parser_free(&p);
	return ret;
}

/* ---- the public functions ---- */

void dw_config_defaults(struct dw_config *cfg)
{
	/* fixed text, no dependencies, nothing allocated: it cannot fail unless it is broken */
	if (parse_config("<built-in>", dw_default_config, strlen(dw_default_config), NULL, cfg,
			 NULL, 0))
		abort();
}

int dw_config_parse(const char *source_name, const char *text, size_t len,
		    struct dw_config *cfg, char *err, size_t errlen)
{
	struct dw_config base;

	if (err && errlen)
		err[0] = '\0';
	if (!source_name)
		source_name = "<config>";
	if (len > DW_CONFIG_MAX_BYTES)
		return dw_config_error(source_name, err, errlen, "file is larger than 1 MiB (%zu bytes)",
				 len);
	if (!text && len)
		return dw_config_error(source_name, err, errlen, "no text");
	dw_config_defaults(&base);
	return parse_config(source_name, text ? text : "", len, &base, cfg, err, errlen);
}

void dw_config_free(struct dw_config *cfg)
{
	unsigned i;

	for (i = 0; i < cfg->ndeps; i++)
		free(cfg->deps[i].matches);
	free(cfg->deps);
	for (i = 0; i < cfg->nservices; i++)
		free(cfg->services[i].path);
	free(cfg->services);
	memset(cfg, 0, sizeof(*cfg));
}
