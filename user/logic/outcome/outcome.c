// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <string.h>

#include "logic/outcome/outcome.h"
#include "depwatch.h"

static void set_bit(struct dw_status_set *s, int status)
{
	unsigned b = (unsigned)(status - 100);

	s->bits[b / 64] |= 1ULL << (b % 64);
}

bool dw_status_set_has(const struct dw_status_set *set, int status)
{
	unsigned b = (unsigned)(status - 100);

	if (status < 100 || status > 599)
		return false;
	return (set->bits[b / 64] >> (b % 64)) & 1;
}

static bool is_sep(char c)
{
	return c == ',' || c == ' ' || c == '\t';
}

/* One item, "5xx" or "503" (case-blind x), n bytes; 0 or -EINVAL. */
static int parse_item(const char *s, size_t n, struct dw_status_set *set)
{
	int code;

	if (n != 3 || s[0] < '1' || s[0] > '5')
		return -EINVAL;
	if ((s[1] == 'x' || s[1] == 'X') && (s[2] == 'x' || s[2] == 'X')) {
		for (int c = (s[0] - '0') * 100; c < (s[0] - '0') * 100 + 100; c++)
			set_bit(set, c);
		return 0;
	}
	if (s[1] < '0' || s[1] > '9' || s[2] < '0' || s[2] > '9')
		return -EINVAL;
	code = (s[0] - '0') * 100 + (s[1] - '0') * 10 + (s[2] - '0');
	set_bit(set, code);
	return 0;
}

int dw_status_set_parse(const char *text, struct dw_status_set *set)
{
	struct dw_status_set s = {};
	const char *p = text;
	unsigned items = 0;

	if (!strcmp(text, "none")) {
		*set = s;
		return 0;
	}
	while (*p) {
		const char *start;

		while (is_sep(*p))
			p++;
		if (!*p)
			break;
		start = p;
		while (*p && !is_sep(*p))
			p++;
		if (parse_item(start, (size_t)(p - start), &s))
			return -EINVAL;
		items++;
	}
	if (!items)
		return -EINVAL;
	*set = s;
	return 0;
}

static bool whole_class(const struct dw_status_set *set, int cls)
{
	for (int c = cls * 100; c < cls * 100 + 100; c++)
		if (!dw_status_set_has(set, c))
			return false;
	return true;
}

void dw_status_set_format(const struct dw_status_set *set, struct dw_buf *out)
{
	const char *sep = "";
	bool any = false;

	for (int cls = 1; cls <= 5; cls++) {
		if (!whole_class(set, cls))
			continue;
		dw_buf_printf(out, "%s%dxx", sep, cls);
		sep = ", ";
		any = true;
	}
	for (int c = 100; c <= 599; c++) {
		if (!dw_status_set_has(set, c) || whole_class(set, c / 100))
			continue;
		dw_buf_printf(out, "%s%d", sep, c);
		sep = ", ";
		any = true;
	}
	if (!any)
		dw_buf_printf(out, "none");
}

const char *const dw_answer_names[DW_ANS_N] = {
#define DW_ANSWER_NAME(name, field, help) #name,
	DW_ANSWER_KINDS(DW_ANSWER_NAME)
#undef DW_ANSWER_NAME
};

void dw_answers_add(uint64_t *a, const struct dw_dest_stats *st)
{
#define DW_ANSWER_ADD(name, field, help) a[DW_ANS_##name] += st->field;
	DW_ANSWER_KINDS(DW_ANSWER_ADD)
#undef DW_ANSWER_ADD
}

void dw_answers_json(struct dw_buf *out, const uint64_t *a, uint64_t failed_status)
{
	dw_buf_printf(out, ",\"answers\":{");
	for (int k = 0; k < DW_ANS_N; k++)
		dw_buf_printf(out, "%s\"%s\":%llu", k ? "," : "", dw_answer_names[k],
			      (unsigned long long)a[k]);
	dw_buf_printf(out, "},\"failed_status\":%llu", (unsigned long long)failed_status);
}
