// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "logic/base/parse.h"

/* A unit is mul * 10^exp ns: minutes are not a power of ten. */
struct dw_unit {
	const char *name;
	uint64_t ns;
	uint64_t mul;
	unsigned exp;
};

/* largest first: dw_format_duration() prefers them on a tie */
static const struct dw_unit units[] = {
    {"m", 60ULL * 1000 * 1000 * 1000, 6, 10},
    {"s", 1000ULL * 1000 * 1000, 1, 9},
    {"ms", 1000ULL * 1000, 1, 6},
    {"us", 1000ULL, 1, 3},
};

/*
 * Every unit has at most 11 factors of 2 and 10 of 5 (60e9 = 2^11 * 3 *
 * 5^10), so a fraction whose last non-zero digit is further out than this
 * cannot be a whole number of ns.
 */
#define FRAC_MAX_DIGITS 11

#define NUNITS (sizeof(units) / sizeof(units[0]))

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * Leading decimal digits of s into *v; the number of digits read.
 * *overflow is set rather than failing so that syntax errors after the
 * number still win over range errors.
 */
static size_t scan_uint(const char *s, uint64_t *v, bool *overflow)
{
	size_t i;
	unsigned d;

	*v = 0;
	*overflow = false;
	for (i = 0; is_digit(s[i]); i++) {
		d = s[i] - '0';
		if (*v > (UINT64_MAX - d) / 10)
			*overflow = true;
		else
			*v = *v * 10 + d;
	}
	return i;
}

static const struct dw_unit *find_unit(const char *name)
{
	size_t i;

	for (i = 0; i < NUNITS; i++)
		if (strcmp(units[i].name, name) == 0)
			return &units[i];
	return NULL;
}

static uint64_t pow10u(unsigned e)
{
	uint64_t p = 1;

	while (e--)
		p *= 10;
	return p;
}

/* The fraction digits frac[0..n) of one unit in ns; -EINVAL if not whole ns. */
static int frac_ns(const char *frac, size_t n, const struct dw_unit *u, uint64_t *ns)
{
	uint64_t f = 0, v, p;
	size_t i;

	while (n > 0 && frac[n - 1] == '0')
		n--;
	if (n > FRAC_MAX_DIGITS)
		return -EINVAL;
	for (i = 0; i < n; i++)
		f = f * 10 + (frac[i] - '0');
	/* f < 10^11 and mul <= 6: no overflow; the result is below one unit */
	v = f * u->mul;
	if (n <= u->exp) {
		*ns = v * pow10u(u->exp - n);
		return 0;
	}
	p = pow10u(n - u->exp);
	if (v % p)
		return -EINVAL;
	*ns = v / p;
	return 0;
}

int dw_parse_duration(const char *s, uint64_t *ns)
{
	const struct dw_unit *u;
	const char *frac = NULL;
	size_t nint, nfrac = 0;
	uint64_t whole, part;
	bool overflow;
	int err;

	if (!s)
		return -EINVAL;
	nint = scan_uint(s, &whole, &overflow);
	if (nint == 0)
		return -EINVAL;
	s += nint;
	if (*s == '.') {
		frac = ++s;
		while (is_digit(s[nfrac]))
			nfrac++;
		if (nfrac == 0)
			return -EINVAL;
		s += nfrac;
	}
	u = find_unit(s);
	if (!u)
		return -EINVAL;
	err = frac_ns(frac, nfrac, u, &part);
	if (err)
		return err;
	if (overflow || whole > (UINT64_MAX - part) / u->ns)
		return -ERANGE;
	*ns = whole * u->ns + part;
	return 0;
}

/* 100% with 13 decimals still fits a double's 53-bit mantissa exactly */
#define PCT_MAX_DECIMALS 13

int dw_parse_percent(const char *s, double *fraction)
{
	uint64_t whole, mant, scale = 100;
	bool overflow, dropped = false;
	size_t n, i;

	if (!s)
		return -EINVAL;
	n = scan_uint(s, &whole, &overflow);
	if (n == 0)
		return -EINVAL;
	s += n;
	if (overflow || whole > 100)
		overflow = true;
	mant = overflow ? 0 : whole;
	if (*s == '.') {
		s++;
		for (i = 0; is_digit(s[i]); i++) {
			if (i >= PCT_MAX_DECIMALS) {
				dropped |= s[i] != '0';
				continue;
			}
			mant = mant * 10 + (s[i] - '0');
			scale *= 10;
		}
		if (i == 0)
			return -EINVAL;
		s += i;
	}
	if (strcmp(s, "%") != 0)
		return -EINVAL;
	/* one division of exact integers: "12.5%" is exactly 0.125 */
	if (overflow || mant > scale || (mant == scale && dropped))
		return -ERANGE;
	*fraction = (double)mant / (double)scale;
	return 0;
}

int dw_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;
	bool overflow;
	size_t n;

	if (!s)
		return -EINVAL;
	n = scan_uint(s, &v, &overflow);
	if (n == 0 || s[n] != '\0')
		return -EINVAL;
	if (overflow || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int dw_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = {"yes", "on", "true", "1"};
	static const char *const no[] = {"no", "off", "false", "0"};
	size_t i;

	if (!s)
		return -EINVAL;
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * ns in one unit as "<whole>[.<digits>]<unit>" into buf; -1 when the value
 * has no exact decimal form in it (1/3 m), else the length.
 */
static int format_in(uint64_t ns, const struct dw_unit *u, char *buf, size_t len)
{
	char frac[24];
	uint64_t rem = ns % u->ns;
	size_t n = 0;

	/* long division; rem < unit <= 6e10, so rem * 10 cannot overflow */
	while (rem && n < sizeof(frac) - 1) {
		rem *= 10;
		frac[n++] = '0' + rem / u->ns;
		rem %= u->ns;
	}
	if (rem)
		return -1;
	frac[n] = '\0';
	return snprintf(buf, len, "%llu%s%s%s", (unsigned long long)(ns / u->ns), n ? "." : "",
			frac, u->name);
}

void dw_format_duration(uint64_t ns, char *buf, size_t len)
{
	char best[DW_DURATION_STRLEN], tmp[DW_DURATION_STRLEN];
	int best_len = -1, n;
	size_t i;

	if (len == 0)
		return;
	if (ns == 0) {
		snprintf(buf, len, "0s");
		return;
	}
	for (i = 0; i < NUNITS; i++) {
		/* below its smallest unit a value can only be a fraction of it */
		if (ns < units[i].ns && i < NUNITS - 1)
			continue;
		n = format_in(ns, &units[i], tmp, sizeof(tmp));
		if (n < 0 || (best_len >= 0 && n >= best_len))
			continue;
		memcpy(best, tmp, sizeof(best));
		best_len = n;
	}
	snprintf(buf, len, "%s", best);
}

/* Each form is used up to where it would round to the next one's first value. */
const char *dw_format_ms_cell(double ms, char *buf, size_t len)
{
	double s = ms / 1000;

	if (ms < 0)
		snprintf(buf, len, "-");
	else if (ms * 1000 < 999.5)
		snprintf(buf, len, "%.0fus", ms * 1000);
	else if (ms < 99.95)
		snprintf(buf, len, "%.1fms", ms);
	else if (ms < 999.5)
		snprintf(buf, len, "%.0fms", ms);
	else if (s < 9.995)
		snprintf(buf, len, "%.2fs", s);
	else if (s < 99.95)
		snprintf(buf, len, "%.1fs", s);
	else if (s < 99999.5)
		snprintf(buf, len, "%.0fs", s);
	else
		snprintf(buf, len, "%.0fh", s / 3600);
	return buf;
}

const char *dw_clip(const char *s, char *buf)
{
	size_t n = strlen(s);

	if (n <= DW_CLIP_MAX)
		return s;
	n = DW_CLIP_MAX;
	/* back up to the start of a UTF-8 sequence rather than split one */
	while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	memcpy(buf, s, n);
	memcpy(buf + n, "...", 4);
	return buf;
}
