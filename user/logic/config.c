// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "config.h"
#include "dwtypes.h"
#include "parse.h"

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
	"syslog_facility = daemon # alerts go to syslog: daemon, user, local0..local7\n";

#define NS_PER_MS 1000000ULL
#define NS_PER_S 1000000000ULL
#define NS_PER_H (3600 * NS_PER_S)

#define IS_SPACE(c) ((c) == ' ' || (c) == '\t' || (c) == '\r')

enum key_kind { KIND_DURATION, KIND_PERCENT, KIND_UINT, KIND_BOOL, KIND_ENFORCE, KIND_MULTIPLEXED };

struct key_def {
	const char *name;
	enum key_kind kind;
	size_t off;		/* of the field in struct dw_dep_settings */
	uint64_t min, max;	/* KIND_DURATION and KIND_UINT */
};

#define FIELD(f) offsetof(struct dw_dep_settings, f)

/* The per-dependency keys, in the order describe prints them. */
static const struct key_def keys[] = {
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
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))
#define KEY_SAMPLE 3
#define KEY_MIN_CALLS 5
#define KEY_ABORT_AFTER 10
#define KEY_IGNORE 11

/*
 * Keys outside struct dw_dep_settings (off unused): their values are read
 * by hand, these give fail_value() the name and range.
 */
static const struct key_def timeout_key = { "timeout", KIND_DURATION, 0, NS_PER_MS, NS_PER_H };
static const struct key_def pool_key = { "pool", KIND_UINT, 0, 1, 1000000 };
static const struct key_def deadline_key = { "deadline", KIND_DURATION, 0, NS_PER_MS, NS_PER_H };

/* The keys of [defaults] and [dependency] besides keys[], and of [service]. */
static const char *const other_keys[] = { "match", "syslog_facility", "enforce_cgroup", "timeout" };
static const char *const service_keys[] = { "listen", "pool", "deadline", "path" };

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

struct facility_def {
	const char *name;
	int value;
};

static const struct facility_def facilities[] = {
	{ "daemon", LOG_DAEMON }, { "user", LOG_USER },
	{ "local0", LOG_LOCAL0 }, { "local1", LOG_LOCAL1 },
	{ "local2", LOG_LOCAL2 }, { "local3", LOG_LOCAL3 },
	{ "local4", LOG_LOCAL4 }, { "local5", LOG_LOCAL5 },
	{ "local6", LOG_LOCAL6 }, { "local7", LOG_LOCAL7 },
};

#define NFACILITIES (sizeof(facilities) / sizeof(facilities[0]))

enum section { SEC_NONE, SEC_DEFAULTS, SEC_DEP, SEC_SERVICE };

/* A [dependency] section as read: dep.s holds only the keys it set. */
struct pdep {
	struct dw_dep_config dep;
	int key_line[NKEYS];	/* line that set each key; 0: inherited from [defaults] */
	int timeout_line;
	unsigned mcap;
};

/*
 * A [service] section as read. Its path is names until the whole file is
 * read (the dependencies may come later): svc.npath of them, each ending
 * in a NUL, one after the other in names; svc.path is set at the end.
 */
struct psvc {
	struct dw_service svc;
	int listen_line, pool_line, deadline_line;
	char *names;
};

struct parser {
	const char *src;
	char *err;
	size_t errlen;
	int err_line, err_sub;	/* of the message in err; 0: none yet */
	int line;
	enum section sec;
	int defaults_line;
	struct dw_dep_settings defaults;
	int key_line[NKEYS];	/* of [defaults] */
	int facility, facility_line;
	char cgroup[DW_CGROUP_PATH_MAX + 1];
	int cgroup_line;
	struct pdep *deps;
	unsigned ndeps, cap;
	struct psvc *svcs;
	unsigned nsvcs, svc_cap;
};

/*
 * Echoed user text is cut to CLIP_MAX bytes: a 4 KiB value would otherwise
 * push the useful part of the message out of err.
 */
#define CLIP_MAX 80
#define CLIP_BUF (CLIP_MAX + 4)

static const char *clip(const char *s, char *buf)
{
	size_t n = strlen(s);

	if (n <= CLIP_MAX)
		return s;
	n = CLIP_MAX;
	/* back up to the start of a UTF-8 sequence rather than split one */
	while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	memcpy(buf, s, n);
	memcpy(buf + n, "...", 4);
	return buf;
}

/*
 * Records "SRC:LINE: message" unless an earlier error is already there.
 * While reading lines the first error stops the parse anyway; the checks
 * that need the whole file report everything and the earliest (by line,
 * then sub) wins, so the message does not depend on check order.
 */
static int __attribute__((format(printf, 4, 5)))
fail_at(struct parser *p, int line, int sub, const char *fmt, ...)
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

#define fail(p, ...) fail_at(p, (p)->line, 0, __VA_ARGS__)

/* For the whole file rather than a line of it. */
static int __attribute__((format(printf, 4, 5)))
fail_file(const char *src, char *err, size_t errlen, const char *fmt, ...)
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

static char *trim(char *s)
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

static void section_name(const struct parser *p, char *buf, size_t len)
{
	if (p->sec == SEC_DEFAULTS)
		snprintf(buf, len, "[defaults]");
	else if (p->sec == SEC_SERVICE)
		snprintf(buf, len, "[service %s]", p->svcs[p->nsvcs - 1].svc.name);
	else
		snprintf(buf, len, "[dependency %s]", p->deps[p->ndeps - 1].dep.name);
}

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
		if (strcmp(keys[k].name, name) == 0)
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
			cand = i < NKEYS ? keys[i].name : other_keys[i - NKEYS];
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
	if (!strcmp(key, "syslog_facility") || !strcmp(key, "enforce_cgroup"))
		return "[defaults]";
	return find_key(key) >= 0 ? "[defaults] or a [dependency NAME]" : NULL;
}

static int fail_unknown_key(struct parser *p, const char *key)
{
	const char *hint = suggest_key(key, p->sec), *home = home_of(key, p->sec);
	char sec[DW_DEP_NAME_MAX + 16], c[CLIP_BUF];

	section_name(p, sec, sizeof(sec));
	if (home)
		return fail(p, "%s belongs in %s, not in %s", key, home, sec);
	if (hint)
		return fail(p, "unknown key '%s' in %s (did you mean '%s'?)", clip(key, c), sec,
			    hint);
	return fail(p, "unknown key '%s' in %s", clip(key, c), sec);
}

static int fail_value(struct parser *p, const struct key_def *k, const char *val)
{
	char lo[DW_DURATION_STRLEN], hi[DW_DURATION_STRLEN], c[CLIP_BUF];

	val = clip(val, c);
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
	case KIND_ENFORCE:
		return fail(p, "%s: '%s' is not off, connect or abort", k->name, val);
	case KIND_MULTIPLEXED:
		return fail(p, "%s: '%s' is not ignore or judge", k->name, val);
	}
	return -EINVAL;
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
	}
	return -EINVAL;
}

static size_t kind_size(enum key_kind kind)
{
	switch (kind) {
	case KIND_DURATION:
		return sizeof(uint64_t);
	case KIND_PERCENT:
		return sizeof(double);
	case KIND_UINT:
		return sizeof(unsigned);
	case KIND_BOOL:
	case KIND_ENFORCE:
	case KIND_MULTIPLEXED:
		return sizeof(bool);
	}
	return 0;
}

static void copy_key(const struct key_def *k, struct dw_dep_settings *dst,
		     const struct dw_dep_settings *src)
{
	memcpy((char *)dst + k->off, (const char *)src + k->off, kind_size(k->kind));
	if (k->kind == KIND_ENFORCE)
		dst->enforce_abort = src->enforce_abort;
}

/* ---- matches ---- */

static unsigned max_bits(int family)
{
	return family == AF_INET ? 32 : 128;
}

/* Zeroes the bits of a after the first len. */
static void mask_prefix(uint8_t *a, unsigned len)
{
	unsigned i;

	for (i = 0; i < 16; i++) {
		if (len >= 8 * (i + 1))
			continue;
		a[i] &= len > 8 * i ? (uint8_t)(0xff << (8 - (len - 8 * i))) : 0;
	}
}

/* Whether the first prefix_len bits of a are m's. */
static bool prefix_covers(const struct dw_match *m, const uint8_t *a)
{
	unsigned full = m->prefix_len / 8, rest = m->prefix_len % 8;
	uint8_t mask;

	if (memcmp(m->addr, a, full))
		return false;
	if (rest == 0)
		return true;
	mask = 0xff << (8 - rest);
	return ((m->addr[full] ^ a[full]) & mask) == 0;
}

static bool is_v4_mapped(const uint8_t *a)
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(a, pfx, sizeof(pfx)) == 0;
}

/* The kernel side counts ::ffff:a.b.c.d as IPv4, so matches have to as well. */
static void normalise_mapped(struct dw_match *m)
{
	if (m->family != AF_INET6 || m->prefix_len < 96 || !is_v4_mapped(m->addr))
		return;
	m->family = AF_INET;
	m->prefix_len -= 96;
	memmove(m->addr, m->addr + 12, 4);
	memset(m->addr + 4, 0, 12);
}

void dw_match_format(const struct dw_match *m, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN], ports[16] = "";

	if (len == 0)
		return;
	if ((m->family != AF_INET && m->family != AF_INET6) ||
	    !inet_ntop(m->family, m->addr, a, sizeof(a))) {
		snprintf(buf, len, "?");
		return;
	}
	if (m->port_lo == m->port_hi)
		snprintf(ports, sizeof(ports), ":%u", m->port_lo);
	else if (m->port_lo != 0 || m->port_hi != 65535)
		snprintf(ports, sizeof(ports), ":%u-%u", m->port_lo, m->port_hi);
	if (m->family == AF_INET)
		snprintf(buf, len, "%s/%u%s", a, m->prefix_len, ports);
	else
		snprintf(buf, len, "[%s/%u]%s", a, m->prefix_len, ports);
}

/* "PORT" or "LOW-HIGH" into m; s NULL: all ports. */
static int parse_ports(struct parser *p, const char *text, char *s, struct dw_match *m)
{
	char c[CLIP_BUF], *dash;
	uint64_t lo, hi;

	m->port_lo = 0;
	m->port_hi = 65535;
	if (!s)
		return 0;
	dash = strchr(s, '-');
	if (dash)
		*dash = '\0';
	if (dw_parse_uint(s, 1, 65535, &lo) || (dash && dw_parse_uint(dash + 1, 1, 65535, &hi)))
		return fail(p, "match '%s': bad port range: ports are 1 to 65535, as PORT or LOW-HIGH",
			    clip(text, c));
	if (!dash)
		hi = lo;
	if (lo > hi)
		return fail(p, "match '%s': bad port range: %llu is above %llu", clip(text, c),
			    (unsigned long long)lo, (unsigned long long)hi);
	m->port_lo = lo;
	m->port_hi = hi;
	return 0;
}

/* "ADDR[/LEN]" of family into m. */
static int parse_prefix(struct parser *p, const char *text, char *s, int family,
			struct dw_match *m)
{
	char c[CLIP_BUF], c2[CLIP_BUF], *slash = strchr(s, '/');
	uint64_t len = max_bits(family);

	if (slash) {
		*slash = '\0';
		if (dw_parse_uint(slash + 1, 0, max_bits(family), &len))
			return fail(p, "match '%s': prefix length '/%s' is not 0 to %u",
				    clip(text, c), clip(slash + 1, c2), max_bits(family));
	}
	memset(m->addr, 0, sizeof(m->addr));
	if (inet_pton(family, s, m->addr) != 1) {
		if (family == AF_INET)
			return fail(p, "match '%s': '%s' is not an IPv4 address (IPv6 goes in brackets: [2001:db8::/32]:443)",
				    clip(text, c), clip(s, c2));
		return fail(p, "match '%s': '%s' is not an IPv6 address", clip(text, c),
			    clip(s, c2));
	}
	m->family = family;
	m->prefix_len = len;
	return 0;
}

/* Bits past the prefix mean a typo more often than not: refuse them. */
static int check_host_bits(struct parser *p, const char *text, const struct dw_match *m)
{
	char c[CLIP_BUF], net[DW_MATCH_STRLEN];
	struct dw_match masked = *m;

	mask_prefix(masked.addr, m->prefix_len);
	if (memcmp(masked.addr, m->addr, sizeof(m->addr)) == 0)
		return 0;
	dw_match_format(&masked, net, sizeof(net));
	return fail(p, "match '%s': host bits set (did you mean '%s'?)", clip(text, c), net);
}

/* CIDR[:PORT[-PORT]], IPv6 as [CIDR][:PORT[-PORT]]. */
static int parse_match(struct parser *p, const char *text, struct dw_match *m)
{
	char buf[DW_CONFIG_MAX_LINE + 1], c[CLIP_BUF], c2[CLIP_BUF];
	char *addr = buf, *ports, *close;
	int family = AF_INET, err;

	memset(m, 0, sizeof(*m));
	snprintf(buf, sizeof(buf), "%s", text);
	if (buf[0] == '[') {
		family = AF_INET6;
		addr = buf + 1;
		close = strchr(addr, ']');
		if (!close)
			return fail(p, "match '%s': missing ']' after the IPv6 address",
				    clip(text, c));
		*close = '\0';
		ports = close + 1;
		if (*ports && *ports != ':')
			return fail(p, "match '%s': unexpected '%s' after ']'", clip(text, c),
				    clip(ports, c2));
	} else {
		ports = strchr(buf, ':');
		if (ports && strchr(ports + 1, ':'))
			return fail(p, "match '%s': IPv6 addresses go in brackets, as in [2001:db8::/32]:443",
				    clip(text, c));
	}
	if (ports && *ports == ':')
		*ports++ = '\0';
	else
		ports = NULL;
	err = parse_prefix(p, text, addr, family, m);
	if (!err)
		err = parse_ports(p, text, ports, m);
	if (!err)
		err = check_host_bits(p, text, m);
	if (err)
		return err;
	normalise_mapped(m);
	m->line = p->line;
	return 0;
}

/* ---- sections and settings ---- */

static bool valid_name(const char *s)
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

static int begin_defaults(struct parser *p)
{
	if (p->defaults_line)
		return fail(p, "duplicate [defaults] section (the first is at line %d)",
			    p->defaults_line);
	p->defaults_line = p->line;
	p->sec = SEC_DEFAULTS;
	return 0;
}

/* Duplicate names are found once the whole file is read (check_names). */
static int begin_dep(struct parser *p, const char *name)
{
	struct pdep *d;
	char c[CLIP_BUF];
	unsigned cap;

	if (!*name)
		return fail(p, "missing dependency name: [dependency NAME]");
	if (!valid_name(name))
		return fail(p, "invalid dependency name '%s': use 1 to %d of A-Z a-z 0-9 _ . -",
			    clip(name, c), DW_DEP_NAME_MAX);
	if (p->ndeps == p->cap) {
		cap = p->cap ? 2 * p->cap : 8;
		d = realloc(p->deps, cap * sizeof(*d));
		if (!d)
			return -ENOMEM;
		p->deps = d;
		p->cap = cap;
	}
	d = &p->deps[p->ndeps++];
	memset(d, 0, sizeof(*d));
	snprintf(d->dep.name, sizeof(d->dep.name), "%s", name);
	d->dep.line = p->line;
	p->sec = SEC_DEP;
	return 0;
}

/* Duplicate names, and names dependencies have too, are found at the end. */
static int begin_service(struct parser *p, const char *name)
{
	struct psvc *s;
	char c[CLIP_BUF];
	unsigned cap;

	if (!*name)
		return fail(p, "missing service name: [service NAME]");
	if (!valid_name(name))
		return fail(p, "invalid service name '%s': use 1 to %d of A-Z a-z 0-9 _ . -",
			    clip(name, c), DW_DEP_NAME_MAX);
	if (p->nsvcs == p->svc_cap) {
		cap = p->svc_cap ? 2 * p->svc_cap : 4;
		s = realloc(p->svcs, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		p->svcs = s;
		p->svc_cap = cap;
	}
	s = &p->svcs[p->nsvcs++];
	memset(s, 0, sizeof(*s));
	snprintf(s->svc.name, sizeof(s->svc.name), "%s", name);
	s->svc.line = p->line;
	p->sec = SEC_SERVICE;
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
	char c[CLIP_BUF], *close = strchr(s, ']'), *inner;

	if (!close)
		return fail(p, "unterminated section header '%s': missing ']'", clip(s, c));
	if (close[1])
		return fail(p, "unexpected '%s' after the section header",
			    clip(trim(close + 1), c));
	*close = '\0';
	inner = trim(s + 1);
	if (strcmp(inner, "defaults") == 0)
		return begin_defaults(p);
	if (starts_word(inner, "dependency"))
		return begin_dep(p, trim(inner + 10));
	if (starts_word(inner, "service"))
		return begin_service(p, trim(inner + 7));
	return fail(p, "unknown section '[%s]': expected [defaults], [dependency NAME] or [service NAME]",
		    clip(inner, c));
}

static int add_match(struct parser *p, const char *val)
{
	struct pdep *d = &p->deps[p->ndeps - 1];
	struct dw_match m, *ms;
	unsigned cap;
	int err;

	err = parse_match(p, val, &m);
	if (err)
		return err;
	if (d->dep.nmatches == d->mcap) {
		cap = d->mcap ? 2 * d->mcap : 4;
		ms = realloc(d->dep.matches, cap * sizeof(*ms));
		if (!ms)
			return -ENOMEM;
		d->dep.matches = ms;
		d->mcap = cap;
	}
	d->dep.matches[d->dep.nmatches++] = m;
	return 0;
}

static int set_facility(struct parser *p, const char *val)
{
	char c[CLIP_BUF];
	size_t i;

	if (p->sec != SEC_DEFAULTS)
		return fail(p, "syslog_facility belongs in [defaults], not in [dependency %s]",
			    p->deps[p->ndeps - 1].dep.name);
	if (p->facility_line)
		return fail(p, "duplicate key 'syslog_facility' in [defaults] (first set at line %d)",
			    p->facility_line);
	for (i = 0; i < NFACILITIES; i++) {
		if (strcasecmp(val, facilities[i].name) == 0) {
			p->facility = facilities[i].value;
			p->facility_line = p->line;
			return 0;
		}
	}
	return fail(p, "syslog_facility: '%s' is not daemon, user or local0 to local7",
		    clip(val, c));
}

/*
 * What is wrong with s (its first n bytes) as an enforce_cgroup path;
 * NULL if nothing. Text only: whether the directory exists, and is a
 * cgroup v2 one, is the daemon's business when it attaches.
 */
static const char *cgroup_path_problem(const char *s, size_t n, size_t *at)
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

static int set_cgroup(struct parser *p, const char *val)
{
	size_t n = strlen(val), at;
	const char *why;
	char c[CLIP_BUF];

	if (p->sec != SEC_DEFAULTS)
		return fail(p, "enforce_cgroup belongs in [defaults], not in [dependency %s]",
			    p->deps[p->ndeps - 1].dep.name);
	if (p->cgroup_line)
		return fail(p, "duplicate key 'enforce_cgroup' in [defaults] (first set at line %d)",
			    p->cgroup_line);
	why = cgroup_path_problem(val, n, &at);
	if (why && at)	/* the byte itself stays out of the message */
		return fail(p, "enforce_cgroup: the path %s (0x%02x at byte %zu)", why,
			    (unsigned char)val[at - 1], at);
	if (why)
		return fail(p, "enforce_cgroup: '%s' %s", clip(val, c), why);
	memcpy(p->cgroup, val, n + 1);
	p->cgroup_line = p->line;
	return 0;
}

/* 0 if key is not set yet in the current section; line: where it was. */
static int check_unset(struct parser *p, const char *key, int line)
{
	char sec[DW_DEP_NAME_MAX + 16];

	if (!line)
		return 0;
	section_name(p, sec, sizeof(sec));
	return fail(p, "duplicate key '%s' in %s (first set at line %d)", key, sec, line);
}

static int parse_duration_key(struct parser *p, const struct key_def *k, const char *val,
			      uint64_t *ns)
{
	uint64_t u;

	if (dw_parse_duration(val, &u) || u < k->min || u > k->max)
		return fail_value(p, k, val);
	*ns = u;
	return 0;
}

static int set_timeout(struct parser *p, const char *val)
{
	struct pdep *d;
	int err;

	if (p->sec == SEC_DEFAULTS)
		return fail(p, "timeout belongs in a [dependency NAME], not in [defaults]: it is what callers wait for that one dependency, and has no default");
	d = &p->deps[p->ndeps - 1];
	err = check_unset(p, "timeout", d->timeout_line);
	if (!err)
		err = parse_duration_key(p, &timeout_key, val, &d->dep.timeout_ns);
	if (!err)
		d->timeout_line = p->line;
	return err;
}

/* PORT, LOW-HIGH or cgroup:/PATH. */
static int set_listen(struct parser *p, struct psvc *s, char *val)
{
	char c[CLIP_BUF], *dash, *path;
	uint64_t lo, hi;
	const char *why;
	size_t n, at;
	int err;

	err = check_unset(p, "listen", s->listen_line);
	if (err)
		return err;
	if (strncmp(val, "cgroup:", 7) == 0) {
		path = trim(val + 7);
		n = strlen(path);
		why = cgroup_path_problem(path, n, &at);
		if (why && at)	/* the byte itself stays out of the message */
			return fail(p, "listen: the cgroup path %s (0x%02x at byte %zu)", why,
				    (unsigned char)path[at - 1], at);
		if (why)
			return fail(p, "listen: cgroup '%s' %s", clip(path, c), why);
		memcpy(s->svc.cgroup, path, n + 1);
		s->listen_line = p->line;
		return 0;
	}
	dash = strchr(val, '-');
	if (dash)
		*dash = '\0';
	if (dw_parse_uint(val, 1, 65535, &lo) || (dash && dw_parse_uint(dash + 1, 1, 65535, &hi))) {
		if (dash)
			*dash = '-';
		return fail(p, "listen: '%s' is not a port (1 to 65535), a range LOW-HIGH or cgroup:/PATH",
			    clip(val, c));
	}
	if (!dash)
		hi = lo;
	if (lo > hi)
		return fail(p, "listen: bad port range: %llu is above %llu", (unsigned long long)lo,
			    (unsigned long long)hi);
	s->svc.port_lo = lo;
	s->svc.port_hi = hi;
	s->listen_line = p->line;
	return 0;
}

/*
 * Dependency names separated by commas, kept as names: whether each is a
 * dependency, and only once on the path, is known at the end.
 */
static int set_path(struct parser *p, struct psvc *s, char *val)
{
	char c[CLIP_BUF], *names, *out, *tok, *next;
	unsigned n = 0;
	size_t len;
	int err;

	err = check_unset(p, "path", s->svc.path_line);
	if (err)
		return err;
	names = malloc(strlen(val) + 1);
	if (!names)
		return -ENOMEM;
	out = names;
	for (tok = val; tok; tok = next) {
		next = strchr(tok, ',');
		if (next)
			*next++ = '\0';
		tok = trim(tok);
		n++;
		if (!*tok) {
			free(names);
			return fail(p, "path: entry %u is empty: separate dependency names with single commas, as in 'auth, cart, payments'",
				    n);
		}
		if (!valid_name(tok)) {
			free(names);
			return fail(p, "path: '%s' is not a dependency name (1 to %d of A-Z a-z 0-9 _ . -)",
				    clip(tok, c), DW_DEP_NAME_MAX);
		}
		len = strlen(tok) + 1;
		memcpy(out, tok, len);
		out += len;
	}
	s->names = names;
	s->svc.npath = n;
	s->svc.path_line = p->line;
	return 0;
}

static int set_service_key(struct parser *p, const char *key, char *val)
{
	struct psvc *s = &p->svcs[p->nsvcs - 1];
	uint64_t u;
	int err;

	if (strcmp(key, "listen") == 0)
		return set_listen(p, s, val);
	if (strcmp(key, "path") == 0)
		return set_path(p, s, val);
	if (strcmp(key, "pool") == 0) {
		err = check_unset(p, key, s->pool_line);
		if (err)
			return err;
		if (dw_parse_uint(val, pool_key.min, pool_key.max, &u))
			return fail_value(p, &pool_key, val);
		s->svc.pool = u;
		s->pool_line = p->line;
		return 0;
	}
	if (strcmp(key, "deadline") == 0) {
		err = check_unset(p, key, s->deadline_line);
		if (!err)
			err = parse_duration_key(p, &deadline_key, val, &s->svc.deadline_ns);
		if (!err)
			s->deadline_line = p->line;
		return err;
	}
	return fail_unknown_key(p, key);
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
		section_name(p, sec, sizeof(sec));
		return fail(p, "duplicate key '%s' in %s (first set at line %d)", keys[k].name, sec,
			    *line);
	}
	if (parse_value(&keys[k], val, s))
		return fail_value(p, &keys[k], val);
	*line = p->line;
	return 0;
}

/* s: a trimmed, non-empty line that is not a section header. */
static int parse_setting(struct parser *p, char *s)
{
	char c[CLIP_BUF], *eq = strchr(s, '='), *key, *val;
	int k;

	if (!eq)
		return fail(p, "expected 'key = value' or '[section]', not '%s'", clip(s, c));
	*eq = '\0';
	key = trim(s);
	val = trim(eq + 1);
	if (!*key)
		return fail(p, "empty key before '='");
	if (!*val)
		return fail(p, "empty value for '%s'", clip(key, c));
	if (p->sec == SEC_NONE)
		return fail(p, "'%s' is outside any section: start with [defaults], [dependency NAME] or [service NAME]",
			    clip(key, c));
	if (p->sec == SEC_SERVICE)
		return set_service_key(p, key, val);
	if (strcmp(key, "match") == 0) {
		if (p->sec == SEC_DEFAULTS)
			return fail(p, "match is not allowed in [defaults]: put it in a [dependency NAME]");
		return add_match(p, val);
	}
	if (strcmp(key, "syslog_facility") == 0)
		return set_facility(p, val);
	if (strcmp(key, "enforce_cgroup") == 0)
		return set_cgroup(p, val);
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
	line = trim(buf);
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

/* ---- checks that need the whole file ---- */

/* The line a min_calls/sample conflict is reported at: the later of the two set. */
static void check_min_calls(struct parser *p, const struct dw_dep_settings *s,
			    const int *key_line, const char *where)
{
	int line = key_line[KEY_MIN_CALLS];

	if (key_line[KEY_SAMPLE] > line)
		line = key_line[KEY_SAMPLE];
	if (line == 0 || s->min_calls <= s->sample)
		return;
	fail_at(p, line, 0, "min_calls (%u) is larger than sample (%u)%s", s->min_calls, s->sample,
		where);
}

/*
 * abort_after cuts calls; ignore = yes says this dependency's calls are
 * long-polls or streams that are slow by design. Both at once is an error,
 * reported at the later of the two lines (or the section when both come
 * from [defaults]).
 */
static void check_abort_after(struct parser *p, const struct dw_dep_settings *s,
			      const int *key_line, int section_line, const char *where)
{
	char t[DW_DURATION_STRLEN];
	int line = key_line[KEY_ABORT_AFTER];

	if (!s->ignore || !s->abort_after_ns)
		return;
	if (key_line[KEY_IGNORE] > line)
		line = key_line[KEY_IGNORE];
	dw_format_duration(s->abort_after_ns, t, sizeof(t));
	fail_at(p, line ? line : section_line, 0,
		"abort_after = %s with ignore = yes%s: an ignored dependency's calls are long by design (long-poll, streaming), aborting them would cut them; set abort_after = 0 there",
		t, where);
}

static int cmp_pdep_name(const void *a, const void *b)
{
	const struct pdep *x = *(const struct pdep *const *)a, *y = *(const struct pdep *const *)b;
	int c = strcmp(x->dep.name, y->dep.name);

	if (c)
		return c;
	return x->dep.line - y->dep.line;
}

/*
 * The dependencies by name (and line), for duplicates and for looking
 * names up; NULL with none. Sorted rather than compared pairwise: a 1 MiB
 * file can hold 30000 sections.
 */
static int sort_deps(struct parser *p, struct pdep ***sorted)
{
	struct pdep **v;
	unsigned i;

	*sorted = NULL;
	if (p->ndeps == 0)
		return 0;
	v = malloc(p->ndeps * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < p->ndeps; i++)
		v[i] = &p->deps[i];
	qsort(v, p->ndeps, sizeof(*v), cmp_pdep_name);
	*sorted = v;
	return 0;
}

static void check_names(struct parser *p, struct pdep *const *v)
{
	unsigned i;

	for (i = 1; i < p->ndeps; i++)
		if (strcmp(v[i - 1]->dep.name, v[i]->dep.name) == 0)
			fail_at(p, v[i]->dep.line, 0,
				"duplicate dependency name '%s' (the first [dependency %s] is at line %d)",
				v[i]->dep.name, v[i]->dep.name, v[i - 1]->dep.line);
}

static int cmp_name_pdep(const void *key, const void *elem)
{
	return strcmp(key, (*(struct pdep *const *)elem)->dep.name);
}

/* The dependency called name; NULL if there is none. */
static struct pdep *find_dep(struct parser *p, struct pdep *const *sorted, const char *name)
{
	struct pdep *const *d;

	if (!sorted)
		return NULL;
	d = bsearch(name, sorted, p->ndeps, sizeof(*sorted), cmp_name_pdep);
	return d ? *d : NULL;
}

struct mref {
	const struct dw_match *m;
	const char *dep;
	unsigned group_end;	/* index after the last mref with the same prefix */
};

static int cmp_mref(const void *a, const void *b)
{
	const struct dw_match *x = ((const struct mref *)a)->m, *y = ((const struct mref *)b)->m;
	int c;

	if (x->family != y->family)
		return x->family - y->family;
	c = memcmp(x->addr, y->addr, sizeof(x->addr));
	if (c)
		return c;
	if (x->prefix_len != y->prefix_len)
		return x->prefix_len - y->prefix_len;
	if (x->port_lo != y->port_lo)
		return x->port_lo - y->port_lo;
	return y->port_hi - x->port_hi;	/* wider first */
}

static bool same_prefix(const struct dw_match *x, const struct dw_match *y)
{
	return x->family == y->family && x->prefix_len == y->prefix_len &&
	       memcmp(x->addr, y->addr, sizeof(x->addr)) == 0;
}

/* Whether x's ports are all y's. */
static bool ports_within(const struct dw_match *x, const struct dw_match *y)
{
	return x->port_lo >= y->port_lo && x->port_hi <= y->port_hi;
}

static bool ports_meet(const struct dw_match *x, const struct dw_match *y)
{
	return x->port_lo <= y->port_hi && y->port_lo <= x->port_hi;
}

/*
 * a's prefix covers b's and their ports intersect: fine if b is strictly
 * more specific (or a is, for equal prefixes), since that one wins lookups.
 */
static bool has_winner(const struct dw_match *a, const struct dw_match *b)
{
	if (b->prefix_len > a->prefix_len)
		return ports_within(b, a);
	if (a->port_lo == b->port_lo && a->port_hi == b->port_hi)
		return false;
	return ports_within(b, a) || ports_within(a, b);
}

static void report_overlap(struct parser *p, const struct mref *x, const struct mref *y)
{
	char later[DW_MATCH_STRLEN], earlier[DW_MATCH_STRLEN];

	if (x->m->line < y->m->line) {
		const struct mref *t = x;

		x = y;
		y = t;
	}
	dw_match_format(x->m, later, sizeof(later));
	dw_match_format(y->m, earlier, sizeof(earlier));
	fail_at(p, x->m->line, y->m->line,
		"match '%s' overlaps '%s:%d' with no more specific winner ('%s' of [dependency %s])",
		later, p->src, y->m->line, earlier, y->dep);
}

/*
 * In (family, address, prefix length) order, the matches a prefix covers
 * follow it as one run, so each match is only compared with what it
 * covers. Equal prefixes are further sorted by port, and a run of them
 * is left as soon as the ports have passed.
 */
static void scan_overlaps(struct parser *p, const struct mref *r, unsigned n)
{
	const struct dw_match *a, *b;
	unsigned i, j;

	for (i = 0; i < n; i++) {
		a = r[i].m;
		for (j = i + 1; j < n; j++) {
			b = r[j].m;
			if (b->family != a->family || !prefix_covers(a, b->addr))
				break;
			if (b->prefix_len == a->prefix_len && b->port_lo > a->port_hi) {
				j = r[i].group_end - 1;
				continue;
			}
			if (ports_meet(a, b) && !has_winner(a, b))
				report_overlap(p, &r[i], &r[j]);
		}
	}
}

/*
 * The kernel's match trie keeps, for each configured prefix, every rule
 * covering it (the same family and a shorter or equal prefix holding it,
 * whatever the ports), in at most DW_MATCH_RULES slots.
 *
 * In the sorted order a prefix comes after every prefix covering it, and
 * a prefix that does not cover the current one covers nothing later
 * either. So a stack of the distinct prefixes covering the current one,
 * each with the number of matches at or above it, is all it takes:
 * O(n * depth), the depth being at most 129 distinct prefix lengths.
 */
static void scan_rule_limits(struct parser *p, const struct mref *r, unsigned n)
{
	struct {
		const struct dw_match *m;
		unsigned total;		/* matches with this prefix or one covering it */
	} stack[129];
	char text[DW_MATCH_STRLEN];
	const struct dw_match *a;
	unsigned i, j, depth = 0, total;

	for (i = 0; i < n; i = r[i].group_end) {
		a = r[i].m;
		while (depth && (stack[depth - 1].m->family != a->family ||
				 stack[depth - 1].m->prefix_len >= a->prefix_len ||
				 !prefix_covers(stack[depth - 1].m, a->addr)))
			depth--;
		total = (depth ? stack[depth - 1].total : 0) + (r[i].group_end - i);
		stack[depth].m = a;
		stack[depth++].total = total;
		if (total <= DW_MATCH_RULES)
			continue;
		/* every match of the prefix is over; the earliest line is reported */
		for (j = i; j < r[i].group_end; j++) {
			dw_match_format(r[j].m, text, sizeof(text));
			fail_at(p, r[j].m->line, 0,
				"match '%s' is covered by %u matches; at most %d can apply to one prefix",
				text, total, DW_MATCH_RULES);
		}
	}
}

static int check_matches(struct parser *p)
{
	unsigned n = 0, i, k;
	struct mref *r;

	for (i = 0; i < p->ndeps; i++)
		n += p->deps[i].dep.nmatches;
	if (n == 0)
		return 0;
	r = malloc(n * sizeof(*r));
	if (!r)
		return -ENOMEM;
	n = 0;
	for (i = 0; i < p->ndeps; i++) {
		for (k = 0; k < p->deps[i].dep.nmatches; k++) {
			r[n].m = &p->deps[i].dep.matches[k];
			r[n++].dep = p->deps[i].dep.name;
		}
	}
	qsort(r, n, sizeof(*r), cmp_mref);
	r[n - 1].group_end = n;
	for (i = n - 1; i-- > 0;)
		r[i].group_end = same_prefix(r[i].m, r[i + 1].m) ? r[i + 1].group_end : i + 1;
	scan_overlaps(p, r, n);
	scan_rule_limits(p, r, n);
	free(r);
	return 0;
}

/* ---- services ---- */

/*
 * What one call to d can take at most: its timeout, or abort_after where
 * that is shorter (or the only one set); *which names the one taken. 0:
 * neither is set.
 */
static uint64_t hop_budget(const struct dw_dep_config *d, const char **which)
{
	uint64_t a = d->s.abort_after_ns;

	*which = "timeout";
	if (a && (!d->timeout_ns || a < d->timeout_ns)) {
		*which = "abort_after";
		return a;
	}
	return d->timeout_ns;
}

/*
 * "d1 800ms + d2 800ms" for the message of a path over its deadline; cut
 * short ("... + 12 more") where it would push the deadline out of err.
 */
static void path_parts(const struct parser *p, const struct dw_service *s, char *buf, size_t len)
{
	char t[DW_DURATION_STRLEN], part[DW_DEP_NAME_MAX + DW_DURATION_STRLEN + 24];
	const struct dw_dep_config *d;
	size_t n = 0, room = sizeof(" + 4294967295 more");
	const char *which;
	unsigned k;
	int w;

	buf[0] = '\0';
	for (k = 0; k < s->npath; k++) {
		d = &p->deps[s->path[k]].dep;
		dw_format_duration(hop_budget(d, &which), t, sizeof(t));
		w = snprintf(part, sizeof(part), "%s%s %s%s", k ? " + " : "", d->name, t,
			     strcmp(which, "timeout") ? " (abort_after)" : "");
		if (w < 0 || n + w + (k + 1 < s->npath ? room : 0) >= len) {
			snprintf(buf + n, len - n, " + %u more", s->npath - k);
			return;
		}
		memcpy(buf + n, part, w + 1);
		n += w;
	}
}

/* The sum of the timeouts along s's path against its deadline. */
static void check_budget(struct parser *p, const struct dw_service *s)
{
	char sum[DW_DURATION_STRLEN], dl[DW_DURATION_STRLEN], parts[256];
	const struct dw_dep_config *d;
	uint64_t total = 0, t;
	const char *which;
	unsigned k;

	if (!s->deadline_ns || !s->npath)
		return;
	dw_format_duration(s->deadline_ns, dl, sizeof(dl));
	for (k = 0; k < s->npath; k++) {
		d = &p->deps[s->path[k]].dep;
		t = hop_budget(d, &which);
		if (!t) {
			fail_at(p, s->path_line, k + 1,
				"dependency %s on the path of service %s has no timeout: set 'timeout = DURATION' in [dependency %s] (or abort_after) so the path can be held to the deadline %s",
				d->name, s->name, d->name, dl);
			return;
		}
		total += t;	/* a line holds < 2100 names of 1 h at most: no overflow */
	}
	if (total <= s->deadline_ns)
		return;
	dw_format_duration(total, sum, sizeof(sum));
	path_parts(p, s, parts, sizeof(parts));
	fail_at(p, s->path_line, 0,
		"service %s: timeouts along its path add up to %s (%s), more than its deadline %s",
		s->name, sum, parts, dl);
}

/*
 * The names of s's path into dependency indexes. seen[i] is the number
 * (from 1) of the service whose path last held dependency i, at entry
 * at[i], so that a name twice on one path is found in one pass.
 */
static int resolve_path(struct parser *p, struct psvc *s, unsigned num, struct pdep *const *sorted,
			unsigned *seen, unsigned *at)
{
	const char *name = s->names;
	struct pdep *d;
	unsigned k, i;
	bool ok = true;

	if (!s->svc.npath)
		return 0;
	s->svc.path = malloc(s->svc.npath * sizeof(*s->svc.path));
	if (!s->svc.path)
		return -ENOMEM;
	for (k = 0; k < s->svc.npath; k++, name += strlen(name) + 1) {
		d = find_dep(p, sorted, name);
		if (!d) {
			fail_at(p, s->svc.path_line, k + 1,
				"path: there is no [dependency %s] (entry %u of the path of service %s)",
				name, k + 1, s->svc.name);
			ok = false;
			continue;
		}
		i = d - p->deps;
		if (seen[i] == num) {
			fail_at(p, s->svc.path_line, k + 1,
				"path: dependency %s is on the path of service %s twice (entries %u and %u)",
				name, s->svc.name, at[i] + 1, k + 1);
			ok = false;
			continue;
		}
		seen[i] = num;
		at[i] = k;
		s->svc.path[k] = i;
	}
	if (ok)
		check_budget(p, &s->svc);
	return 0;
}

/* A service and a dependency of one name: reported at the later header. */
static void check_name_clash(struct parser *p, const struct psvc *s, struct pdep *const *sorted)
{
	const struct pdep *d = find_dep(p, sorted, s->svc.name);

	if (!d)
		return;
	if (s->svc.line > d->dep.line)
		fail_at(p, s->svc.line, 0,
			"[service %s] has the name of [dependency %s] (line %d): a service and a dependency may not share one",
			s->svc.name, d->dep.name, d->dep.line);
	else
		fail_at(p, d->dep.line, 0,
			"[dependency %s] has the name of [service %s] (line %d): a service and a dependency may not share one",
			d->dep.name, s->svc.name, s->svc.line);
}

static int cmp_psvc_name(const void *a, const void *b)
{
	const struct psvc *x = *(const struct psvc *const *)a, *y = *(const struct psvc *const *)b;
	int c = strcmp(x->svc.name, y->svc.name);

	if (c)
		return c;
	return x->svc.line - y->svc.line;
}

/* The cgroup path a written one names: no '//', no '.' components, no trailing '/'. */
static void normalise_cgroup(const char *in, char *out)
{
	size_t n = 0, len;
	const char *end;

	while (*in) {
		while (*in == '/')
			in++;
		end = strchrnul(in, '/');
		len = end - in;
		if (len && !(len == 1 && in[0] == '.')) {
			out[n++] = '/';
			memcpy(out + n, in, len);
			n += len;
		}
		in = end;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
}

static int cmp_psvc_cgroup(const void *a, const void *b)
{
	const struct psvc *x = *(const struct psvc *const *)a, *y = *(const struct psvc *const *)b;
	char nx[DW_CGROUP_PATH_MAX + 1], ny[DW_CGROUP_PATH_MAX + 1];
	int c;

	normalise_cgroup(x->svc.cgroup, nx);
	normalise_cgroup(y->svc.cgroup, ny);
	c = strcmp(nx, ny);
	if (c)
		return c;
	return x->listen_line - y->listen_line;
}

/* Duplicate service names, and two services on one cgroup: sorted, as for dependencies. */
static int check_service_names(struct parser *p)
{
	char a[DW_CGROUP_PATH_MAX + 1], b[DW_CGROUP_PATH_MAX + 1], c[CLIP_BUF];
	struct psvc **v;
	unsigned i, n = 0;

	if (p->nsvcs < 2)
		return 0;
	v = malloc(p->nsvcs * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < p->nsvcs; i++)
		v[i] = &p->svcs[i];
	qsort(v, p->nsvcs, sizeof(*v), cmp_psvc_name);
	for (i = 1; i < p->nsvcs; i++)
		if (strcmp(v[i - 1]->svc.name, v[i]->svc.name) == 0)
			fail_at(p, v[i]->svc.line, 0,
				"duplicate service name '%s' (the first [service %s] is at line %d)",
				v[i]->svc.name, v[i]->svc.name, v[i - 1]->svc.line);
	for (i = 0; i < p->nsvcs; i++)
		if (p->svcs[i].svc.cgroup[0])
			v[n++] = &p->svcs[i];
	qsort(v, n, sizeof(*v), cmp_psvc_cgroup);
	for (i = 1; i < n; i++) {
		normalise_cgroup(v[i - 1]->svc.cgroup, a);
		normalise_cgroup(v[i]->svc.cgroup, b);
		if (strcmp(a, b) == 0)
			fail_at(p, v[i]->listen_line, 0,
				"listen: cgroup '%s' is the cgroup of [service %s] too ('%s:%d')",
				clip(v[i]->svc.cgroup, c), v[i - 1]->svc.name, p->src,
				v[i - 1]->listen_line);
	}
	free(v);
	return 0;
}

static void format_ports(const struct dw_service *s, char *buf, size_t len)
{
	if (s->port_lo == s->port_hi)
		snprintf(buf, len, "%u", s->port_lo);
	else
		snprintf(buf, len, "%u-%u", s->port_lo, s->port_hi);
}

/*
 * Two services on one port. In file order, each port range is checked
 * against those before it, port by port in a table of owners, stopping at
 * the first overlap: until then no port is owned twice, so the whole scan
 * visits at most 65535 ports plus one range.
 */
static int check_ports(struct parser *p)
{
	char x[16], y[16];
	const struct psvc *s, *o;
	unsigned i, port, *owner;

	if (p->nsvcs < 2)
		return 0;
	owner = calloc(65536, sizeof(*owner));	/* service number from 1; 0: free */
	if (!owner)
		return -ENOMEM;
	for (i = 0; i < p->nsvcs; i++) {
		s = &p->svcs[i];
		if (!s->svc.port_lo)
			continue;
		for (port = s->svc.port_lo; port <= s->svc.port_hi && !owner[port]; port++)
			;
		if (port <= s->svc.port_hi) {
			o = &p->svcs[owner[port] - 1];
			format_ports(&s->svc, x, sizeof(x));
			format_ports(&o->svc, y, sizeof(y));
			fail_at(p, s->listen_line, 0,
				"listen '%s' overlaps '%s:%d' ('%s' of [service %s]): a port belongs to one service",
				x, p->src, o->listen_line, y, o->svc.name);
			break;
		}
		for (port = s->svc.port_lo; port <= s->svc.port_hi; port++)
			owner[port] = i + 1;
	}
	free(owner);
	return 0;
}

static int check_services(struct parser *p, struct pdep *const *sorted)
{
	unsigned *seen, *at, i;
	struct psvc *s;
	int err = 0;

	if (!p->nsvcs)
		return 0;
	seen = calloc(p->ndeps + 1, sizeof(*seen));
	at = calloc(p->ndeps + 1, sizeof(*at));
	if (!seen || !at) {
		free(seen);
		free(at);
		return -ENOMEM;
	}
	for (i = 0; i < p->nsvcs && !err; i++) {
		s = &p->svcs[i];
		if (!s->listen_line)
			fail_at(p, s->svc.line, 0,
				"[service %s] has no listen: add 'listen = PORT', 'listen = LOW-HIGH' or 'listen = cgroup:/PATH'",
				s->svc.name);
		check_name_clash(p, s, sorted);
		err = resolve_path(p, s, i + 1, sorted, seen, at);
	}
	free(seen);
	free(at);
	if (!err)
		err = check_service_names(p);
	if (!err)
		err = check_ports(p);
	return err;
}

/* [defaults] with the section's own keys on top, then the section's own checks. */
static void resolve_dep(struct parser *p, struct pdep *d)
{
	char where[DW_DEP_NAME_MAX + 32];
	size_t k;

	for (k = 0; k < NKEYS; k++)
		if (!d->key_line[k])
			copy_key(&keys[k], &d->dep.s, &p->defaults);
	if (d->dep.nmatches == 0)
		fail_at(p, d->dep.line, 0, "[dependency %s] has no match: add 'match = CIDR[:PORT[-PORT]]'",
			d->dep.name);
	snprintf(where, sizeof(where), " in [dependency %s]", d->dep.name);
	check_min_calls(p, &d->dep.s, d->key_line, where);
	check_abort_after(p, &d->dep.s, d->key_line, d->dep.line, where);
}

/* Keys [defaults] did not set come from base; base NULL: every key must be set. */
static void resolve_defaults(struct parser *p, const struct dw_config *base)
{
	size_t k;

	for (k = 0; k < NKEYS; k++) {
		if (p->key_line[k])
			continue;
		if (!base) {
			fail_at(p, 1, 0, "the built-in config does not set '%s'", keys[k].name);
			continue;
		}
		copy_key(&keys[k], &p->defaults, &base->defaults);
	}
	if (!p->facility_line && base)
		p->facility = base->syslog_facility;
	else if (!p->facility_line)
		fail_at(p, 1, 0, "the built-in config does not set 'syslog_facility'");
	/* not in the built-in config: unset there means the cgroup v2 root */
	if (!p->cgroup_line && base)
		memcpy(p->cgroup, base->enforce_cgroup, sizeof(p->cgroup));
	check_min_calls(p, &p->defaults, p->key_line, "");
	check_abort_after(p, &p->defaults, p->key_line, p->defaults_line ? p->defaults_line : 1,
			  " in [defaults]");
}

/* Dependency ids are 1..DW_MAX_DEPS-1 in the kernel; 0 is "no match covers it". */
static void check_dep_count(struct parser *p)
{
	const struct pdep *d;

	if (p->ndeps < DW_MAX_DEPS)
		return;
	d = &p->deps[DW_MAX_DEPS - 1];
	fail_at(p, d->dep.line, 0,
		"[dependency %s] is one too many: the kernel supports at most %d dependencies (this file has %u)",
		d->dep.name, DW_MAX_DEPS - 1, p->ndeps);
}

static int finish(struct parser *p, const struct dw_config *base)
{
	struct pdep **sorted;
	unsigned i;
	int err;

	resolve_defaults(p, base);
	for (i = 0; i < p->ndeps; i++)
		resolve_dep(p, &p->deps[i]);
	check_dep_count(p);
	err = sort_deps(p, &sorted);
	if (err)
		return err;
	check_names(p, sorted);
	err = check_matches(p);
	if (!err)
		err = check_services(p, sorted);
	free(sorted);
	if (err)
		return err;
	return p->err_line ? -EINVAL : 0;
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
		ret = finish(&p, base);
	if (!ret)
		ret = build(&p, cfg);
	if (ret == -ENOMEM)
		fail_file(src, err, errlen, "out of memory");
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
		return fail_file(source_name, err, errlen, "file is larger than 1 MiB (%zu bytes)",
				 len);
	if (!text && len)
		return fail_file(source_name, err, errlen, "no text");
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

int dw_service_path_timeout(const struct dw_config *cfg, const struct dw_service *svc,
			    uint64_t *sum_ns)
{
	const char *which;
	uint64_t t, sum = 0;
	unsigned k;
	int ret = 0;

	for (k = 0; k < svc->npath; k++) {
		if (svc->path[k] >= cfg->ndeps) {
			ret = -EINVAL;
			continue;
		}
		t = hop_budget(&cfg->deps[svc->path[k]], &which);
		if (!t && !ret)
			ret = -ENODATA;
		sum = sum + t < sum ? UINT64_MAX : sum + t;	/* a hand-made config */
	}
	*sum_ns = sum;
	return ret;
}

/* True if m is more specific than best (or there is no best yet). */
static bool more_specific(const struct dw_match *m, const struct dw_match *best)
{
	if (!best || m->prefix_len != best->prefix_len)
		return !best || m->prefix_len > best->prefix_len;
	return m->port_hi - m->port_lo < best->port_hi - best->port_lo;
}

int dw_config_lookup(const struct dw_config *cfg, int family, const uint8_t *addr, uint16_t port)
{
	const struct dw_match *m, *best = NULL;
	uint8_t a[16] = { 0 };
	unsigned i, k;
	int idx = -1;

	if (!cfg || !addr)
		return -1;
	if (family == AF_INET6 && is_v4_mapped(addr)) {
		family = AF_INET;
		memcpy(a, addr + 12, 4);
	} else if (family == AF_INET || family == AF_INET6) {
		memcpy(a, addr, family == AF_INET ? 4 : 16);
	} else {
		return -1;
	}
	for (i = 0; i < cfg->ndeps; i++) {
		for (k = 0; k < cfg->deps[i].nmatches; k++) {
			m = &cfg->deps[i].matches[k];
			if (m->family != family || port < m->port_lo || port > m->port_hi ||
			    !prefix_covers(m, a) || !more_specific(m, best))
				continue;
			best = m;
			idx = i;
		}
	}
	return idx;
}

static void describe_value(struct dw_buf *out, const struct key_def *k,
			   const struct dw_dep_settings *s)
{
	const void *field = (const char *)s + k->off;
	char d[DW_DURATION_STRLEN];

	switch (k->kind) {
	case KIND_DURATION:
		dw_format_duration(*(const uint64_t *)field, d, sizeof(d));
		dw_buf_printf(out, "%s", *(const uint64_t *)field || k->min ? d : "0");
		return;
	case KIND_PERCENT:
		/* %.15g: 0.07 * 100 is 7.000000000000001, and must read "7%" */
		dw_buf_printf(out, "%.15g%%", *(const double *)field * 100);
		return;
	case KIND_UINT:
		dw_buf_printf(out, "%u", *(const unsigned *)field);
		return;
	case KIND_BOOL:
		dw_buf_printf(out, "%s", *(const bool *)field ? "yes" : "no");
		return;
	case KIND_ENFORCE:
		dw_buf_printf(out, "%s", s->enforce_abort ? "abort" : *(const bool *)field ? "connect" : "off");
		return;
	case KIND_MULTIPLEXED:
		dw_buf_printf(out, "%s", *(const bool *)field ? "judge" : "ignore");
		return;
	}
}

static void describe_settings(struct dw_buf *out, const struct dw_dep_settings *s)
{
	size_t k;

	for (k = 0; k < NKEYS; k++) {
		dw_buf_printf(out, "%s = ", keys[k].name);
		describe_value(out, &keys[k], s);
		dw_buf_putc(out, '\n');
	}
}

static const char *facility_name(int value)
{
	size_t i;

	for (i = 0; i < NFACILITIES; i++)
		if (facilities[i].value == value)
			return facilities[i].name;
	return NULL;
}

static void describe_cgroup(struct dw_buf *out, const char *path)
{
	size_t n = strnlen(path, DW_CGROUP_PATH_MAX + 1), at;

	if (n == 0) {
		dw_buf_printf(out, "# enforce_cgroup: the cgroup v2 root\n");
		return;
	}
	/* a parsed config always passes; one filled in by hand may not */
	if (cgroup_path_problem(path, n, &at) || memchr(path, '#', n)) {
		dw_buf_printf(out, "# enforce_cgroup = ");
		dw_escape_text(out, path, n);
		dw_buf_printf(out, " (not one a config can name)\n");
		return;
	}
	dw_buf_printf(out, "enforce_cgroup = %.*s\n", (int)n, path);
}

static void describe_listen(struct dw_buf *out, const struct dw_service *s)
{
	size_t n = strnlen(s->cgroup, DW_CGROUP_PATH_MAX + 1), at;

	if (n == 0 && s->port_lo && s->port_lo <= s->port_hi) {
		if (s->port_lo == s->port_hi)
			dw_buf_printf(out, "listen = %u\n", s->port_lo);
		else
			dw_buf_printf(out, "listen = %u-%u\n", s->port_lo, s->port_hi);
		return;
	}
	/* a parsed config always has one of the two; one filled in by hand may not */
	if (n == 0 || cgroup_path_problem(s->cgroup, n, &at) || memchr(s->cgroup, '#', n)) {
		dw_buf_printf(out, "# listen = ");
		dw_escape_text(out, s->cgroup, n);
		dw_buf_printf(out, " ports %u-%u (not one a config can name)\n", s->port_lo,
			      s->port_hi);
		return;
	}
	dw_buf_printf(out, "listen = cgroup:%.*s\n", (int)n, s->cgroup);
}

static void describe_service(struct dw_buf *out, const struct dw_config *cfg,
			     const struct dw_service *s)
{
	char sum[DW_DURATION_STRLEN], dl[DW_DURATION_STRLEN];
	uint64_t total;
	unsigned k;
	int ret;

	dw_buf_printf(out, "\n[service %s]\t# line %d\n", s->name, s->line);
	describe_listen(out, s);
	if (s->pool)
		dw_buf_printf(out, "pool = %u\n", s->pool);
	else
		dw_buf_printf(out, "# pool: not set\n");
	dw_format_duration(s->deadline_ns, dl, sizeof(dl));
	if (s->deadline_ns)
		dw_buf_printf(out, "deadline = %s\n", dl);
	else
		dw_buf_printf(out, "# deadline: not set, so the path is not checked\n");
	if (!s->npath) {
		dw_buf_printf(out, "# path: not set\n");
		return;
	}
	ret = dw_service_path_timeout(cfg, s, &total);
	if (ret == -EINVAL) {
		dw_buf_printf(out, "# path: %u dependencies this config does not have\n", s->npath);
		return;
	}
	dw_buf_printf(out, "path = ");
	for (k = 0; k < s->npath; k++)
		dw_buf_printf(out, "%s%s", k ? ", " : "", cfg->deps[s->path[k]].name);
	dw_buf_putc(out, '\n');
	/* a hop held by abort_after (shorter than its timeout, or the only one) says so */
	for (k = 0; k < s->npath; k++) {
		const char *which;
		char a[DW_DURATION_STRLEN];
		uint64_t t = hop_budget(&cfg->deps[s->path[k]], &which);

		dw_format_duration(t, a, sizeof(a));
		if (t && strcmp(which, "timeout"))
			dw_buf_printf(out, "# %s counts %s: its abort_after, shorter than its timeout or the only one\n",
				      cfg->deps[s->path[k]].name, a);
	}
	if (!s->deadline_ns)
		return;
	dw_format_duration(total, sum, sizeof(sum));
	if (ret)
		dw_buf_printf(out, "# path timeouts unknown: not every dependency on it has one\n");
	else
		dw_buf_printf(out, "# path timeouts %s of deadline %s\n", sum, dl);
}

void dw_config_describe(const struct dw_config *cfg, struct dw_buf *out)
{
	const struct dw_dep_config *d;
	const char *fac = facility_name(cfg->syslog_facility);
	char m[DW_MATCH_STRLEN], t[DW_DURATION_STRLEN];
	unsigned i, k;

	/* the source name may hold anything; escaped, it cannot break the comment */
	dw_buf_printf(out, "# ");
	dw_escape_text(out, cfg->source, sizeof(cfg->source));
	dw_buf_printf(out, ": %u %s", cfg->ndeps, cfg->ndeps == 1 ? "dependency" : "dependencies");
	if (cfg->nservices)
		dw_buf_printf(out, ", %u %s", cfg->nservices,
			      cfg->nservices == 1 ? "service" : "services");
	dw_buf_printf(out, "; destinations no match covers get [defaults]\n");
	dw_buf_printf(out, "[defaults]\n");
	describe_settings(out, &cfg->defaults);
	if (fac)
		dw_buf_printf(out, "syslog_facility = %s\n", fac);
	else
		dw_buf_printf(out, "# syslog_facility = %d (not one a config can name)\n",
			      cfg->syslog_facility);
	describe_cgroup(out, cfg->enforce_cgroup);
	for (i = 0; i < cfg->ndeps; i++) {
		d = &cfg->deps[i];
		dw_buf_printf(out, "\n[dependency %s]\t# line %d\n", d->name, d->line);
		for (k = 0; k < d->nmatches; k++) {
			dw_match_format(&d->matches[k], m, sizeof(m));
			dw_buf_printf(out, "match = %s\n", m);
		}
		describe_settings(out, &d->s);
		if (d->timeout_ns) {
			dw_format_duration(d->timeout_ns, t, sizeof(t));
			dw_buf_printf(out, "timeout = %s\n", t);
		}
	}
	for (i = 0; i < cfg->nservices; i++)
		describe_service(out, cfg, &cfg->services[i]);
}

/* ---- the one function that does I/O ---- */

static int io_fail(const char *path, int e, char *err, size_t errlen)
{
	char buf[128];

	fail_file(path, err, errlen, "%s", strerror_r(e, buf, sizeof(buf)));
	return -e;
}

/* Why fstat() rules the file out, before any of it is read. */
static int refuse(const char *path, const struct stat *st, char *err, size_t errlen)
{
	if (S_ISDIR(st->st_mode)) {
		fail_file(path, err, errlen, "is a directory");
		return -EISDIR;
	}
	if (!S_ISREG(st->st_mode))
		return fail_file(path, err, errlen, "is not a regular file");
	fail_file(path, err, errlen, "file is larger than 1 MiB (%lld bytes)",
		  (long long)st->st_size);
	return -EFBIG;
}

/*
 * path into *text (malloc'd, *len bytes). Only a regular file: a FIFO or a
 * device could block or never end. Reads up to one byte past the cap
 * rather than trusting st_size, which /proc files report as 0 and which a
 * file being written can outgrow.
 */
static int read_config_file(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
	size_t n = 0, cap = DW_CONFIG_MAX_BYTES + 1;
	struct stat st;
	char *buf;
	ssize_t r = 0;
	int fd, e;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return io_fail(path, errno, err, errlen);
	if (fstat(fd, &st)) {
		e = errno;
		close(fd);
		return io_fail(path, e, err, errlen);
	}
	if (!S_ISREG(st.st_mode) || st.st_size > DW_CONFIG_MAX_BYTES) {
		close(fd);
		return refuse(path, &st, err, errlen);
	}
	buf = malloc(cap);
	if (!buf) {
		close(fd);
		return io_fail(path, ENOMEM, err, errlen);
	}
	while (n < cap) {
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += r;
	}
	e = r < 0 ? errno : 0;
	close(fd);
	if (e) {
		free(buf);
		return io_fail(path, e, err, errlen);
	}
	if (n > DW_CONFIG_MAX_BYTES) {
		free(buf);
		fail_file(path, err, errlen, "file is larger than 1 MiB");
		return -EFBIG;
	}
	*text = buf;
	*len = n;
	return 0;
}

int dw_config_load(const char *path, struct dw_config *cfg, char *err, size_t errlen)
{
	char *text = NULL;	/* set on success only; gcc -O3 cannot tell */
	size_t len = 0;
	int ret;

	if (err && errlen)
		err[0] = '\0';
	ret = read_config_file(path, &text, &len, err, errlen);
	if (ret)
		return ret;
	ret = dw_config_parse(path, text, len, cfg, err, errlen);
	free(text);
	return ret;
}
