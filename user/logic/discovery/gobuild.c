// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Go build info (gobuild.h): the blob found, its two strings read, the version parsed. */
#include "logic/discovery/gobuild.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC "\xff Go buildinf:"
#define MAGIC_LEN 14
#define HDR_LEN 32
#define FLAG_BIGENDIAN 1
#define FLAG_INLINE 2
/* modinfo is wrapped in these 16 bytes each side (cmd/go/internal/modload's infoStart/infoEnd) */
#define SENTINEL_LEN 16

/* An unsigned LEB128 varint at p[*i..n): the value, or -1 when cut short or too long. */
static int64_t uvarint(const uint8_t *p, uint64_t n, uint64_t *i)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 63 && *i < n; shift += 7) {
		uint8_t c = p[(*i)++];

		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v > INT64_MAX ? -1 : (int64_t)v;
	}
	return -1;
}

/* Copies up to the first tab or newline (or n bytes), NUL-terminated, cut to dstlen. */
static void copy_field(char *dst, size_t dstlen, const char *src, size_t n)
{
	size_t k = 0;

	while (k < n && src[k] != '\t' && src[k] != '\n' && k + 1 < dstlen) {
		/* a control byte would garble status output: keep it printable */
		dst[k] = (unsigned char)src[k] < 0x20 ? '?' : src[k];
		k++;
	}
	dst[k] = '\0';
}

/* modinfo: lines "path\t<pkg>" and "mod\t<module>\t<version>\t<sum>" between the sentinels. */
static void parse_modinfo(struct dw_go_build *b, const char *s, size_t n)
{
	if (n >= 2 * SENTINEL_LEN + 1 && s[n - SENTINEL_LEN - 1] == '\n') {
		s += SENTINEL_LEN;
		n -= 2 * SENTINEL_LEN;
	}
	for (size_t i = 0; i < n;) {
		const char *line = s + i;
		const char *nl = memchr(line, '\n', n - i);
		size_t ll = nl ? (size_t)(nl - line) : n - i;

		if (ll > 5 && !memcmp(line, "path\t", 5))
			copy_field(b->path, sizeof(b->path), line + 5, ll - 5);
		else if (ll > 4 && !memcmp(line, "mod\t", 4))
			copy_field(b->mod, sizeof(b->mod), line + 4, ll - 4);
		i += ll + 1;
	}
}

/* Go 1.13-1.17: a pointer to a Go string header {data, len}, both 8 bytes on 64-bit. */
static int read_gostring(const struct dw_elf *e, uint64_t hdr_va, const char **s, uint64_t *n)
{
	int64_t off = dw_elf_vaddr_to_off(e, hdr_va), data;

	if (off < 0 || !dw_in_bounds((uint64_t)off, 16, e->len))
		return -1;
	*n = dw_le64(e->buf + off + 8);
	if (*n == 0) {
		*s = "";
		return 0;
	}
	data = dw_elf_vaddr_to_off(e, dw_le64(e->buf + off));
	if (data < 0 || !dw_in_bounds((uint64_t)data, *n, e->len))
		return -1;
	*s = (const char *)e->buf + data;
	return 0;
}

static int64_t find_blob(const struct dw_elf *e)
{
	struct dw_elf_sect s;

	if (dw_elf_section(e, ".go.buildinfo", &s) == 0 && s.size >= HDR_LEN &&
	    !memcmp(e->buf + s.off, MAGIC, MAGIC_LEN))
		return (int64_t)s.off;
	/* No section headers (or a renamed section): the linker aligns the blob to 16 bytes. */
	for (uint64_t off = 0; off + HDR_LEN <= e->len; off += 16)
		if (e->buf[off] == 0xff && !memcmp(e->buf + off, MAGIC, MAGIC_LEN))
			return (int64_t)off;
	return -1;
}

int dw_go_buildinfo(const struct dw_elf *e, struct dw_go_build *b, char *why, size_t whylen)
{
	int64_t at = find_blob(e);
	const uint8_t *h;
	const char *vs, *ms;
	uint64_t vn, mn;

	memset(b, 0, sizeof(*b));
	b->major = b->minor = b->patch = -1;
	if (at < 0) {
		snprintf(why, whylen, "no Go build info (not a Go program, or built before Go 1.13)");
		return -1;
	}
	h = e->buf + at;
	if (h[14] != 8 || (h[15] & FLAG_BIGENDIAN)) {
		snprintf(why, whylen, "Go build info for %u-byte pointers%s: only 64-bit little-endian is read",
			 h[14], (h[15] & FLAG_BIGENDIAN) ? ", big-endian" : "");
		return -1;
	}
	if (h[15] & FLAG_INLINE) {
		uint64_t i = HDR_LEN, n = e->len - (uint64_t)at;
		int64_t l;

		b->inline_strings = 1;
		if ((l = uvarint(h, n, &i)) < 0 || !dw_in_bounds(i, (uint64_t)l, n))
			goto cut;
		vs = (const char *)h + i;
		vn = (uint64_t)l;
		i += vn;
		if ((l = uvarint(h, n, &i)) < 0 || !dw_in_bounds(i, (uint64_t)l, n))
			goto cut;
		ms = (const char *)h + i;
		mn = (uint64_t)l;
	} else if (read_gostring(e, dw_le64(h + 16), &vs, &vn) < 0 ||
		   read_gostring(e, dw_le64(h + 24), &ms, &mn) < 0) {
		goto cut;
	}
	copy_field(b->version, sizeof(b->version), vs, vn);
	parse_modinfo(b, ms, mn);
	dw_go_parse_version(b->version, &b->major, &b->minor, &b->patch);
	return 0;
cut:
	snprintf(why, whylen, "Go build info at file offset %lld is cut short or points outside the file",
		 (long long)at);
	return -1;
}

/* A decimal number of up to 4 digits at *p, advanced past it; -1 if none. */
static int small_num(const char **p)
{
	int v = 0, k = 0;

	while (**p >= '0' && **p <= '9' && k < 4) {
		v = v * 10 + (**p - '0');
		(*p)++;
		k++;
	}
	return k ? v : -1;
}

int dw_go_parse_version(const char *v, int *major, int *minor, int *patch)
{
	const char *p = v;
	int ma, mi, pa = 0;

	*major = *minor = *patch = -1;
	if (strncmp(p, "go", 2) != 0)
		return -1;
	p += 2;
	if ((ma = small_num(&p)) < 0 || *p++ != '.' || (mi = small_num(&p)) < 0)
		return -1;
	if (*p == '.') {
		p++;
		if ((pa = small_num(&p)) < 0)
			return -1;
	} else if (!strncmp(p, "rc", 2) || !strncmp(p, "beta", 4)) {
		/* a release candidate has its release's layout */
		while (*p && *p != ' ')
			p++;
	}
	/* Anything after it but a space and GOEXPERIMENT-like words ("go1.19.8 X:...") is not a release. */
	if (*p != '\0' && *p != ' ')
		return -1;
	*major = ma;
	*minor = mi;
	*patch = pa;
	return 0;
}
