// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "logic/view/control_wire.h"

const struct dw_verb_def dw_verbs[DW_NVERBS] = {
#define DW_VERB_DEF(id, w, root, a, handler) [DW_VERB_##id] = { .words = w, .root_only = root, .args = a },
	DW_VERBS(DW_VERB_DEF)
#undef DW_VERB_DEF
};

/* Whether line is verb's words, alone or followed by a space and arguments. */
static bool names(const struct dw_verb_def *v, const char *line, const char **args)
{
	size_t n = strlen(v->words);

	if (strncmp(line, v->words, n) || (line[n] && line[n] != ' '))
		return false;
	*args = line[n] ? line + n + 1 : NULL;
	if (*args ? v->args == DW_ARGS_NONE : v->args == DW_ARGS_REQUIRED)
		return false;
	return true;
}

int dw_verb_match(const char *line, const char **args)
{
	for (int i = 0; i < DW_NVERBS; i++)
		if (names(&dw_verbs[i], line, args))
			return i;
	*args = NULL;
	return -1;
}

int dw_verb_request(enum dw_verb verb, const char *args, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s%s%s", dw_verbs[verb].words, args ? " " : "",
			 args ? args : "");

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

size_t dw_answer_line(size_t len, char *buf)
{
	return snprintf(buf, DW_ANSWER_LINE_MAX, DW_ANSWER_LINE "%zu\n", len);
}

/* The length a line (without its end) gives, or -1 when it is no length line. */
static int64_t line_length(const char *s, size_t n)
{
	size_t head = sizeof(DW_ANSWER_LINE) - 1;
	uint64_t v = 0;

	if (n <= head || n > head + 18 || memcmp(s, DW_ANSWER_LINE, head))
		return -1;
	for (size_t i = head; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return (int64_t)v;
}

/* Whether n bytes with no line end yet could still become a length line: a cut one. */
static bool line_begun(const char *s, size_t n)
{
	size_t head = sizeof(DW_ANSWER_LINE) - 1;

	if (n >= DW_ANSWER_LINE_MAX)
		return false;
	if (memcmp(s, DW_ANSWER_LINE, n < head ? n : head))
		return false;
	for (size_t i = head; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

int dw_answer_parse(const char *data, size_t n, const char **body, size_t *len, size_t *want)
{
	const char *end;
	int64_t length;

	*body = NULL;
	*len = *want = 0;
	if (!n)
		return -EPIPE;	/* closed before the first byte */
	end = memchr(data, '\n', n < DW_ANSWER_LINE_MAX ? n : DW_ANSWER_LINE_MAX);
	if (!end)
		return line_begun(data, n) ? -EPIPE : -EPROTO;
	length = line_length(data, end - data);
	if (length < 0)
		return -EPROTO;
	*body = end + 1;
	*len = n - (end + 1 - data);
	*want = length;
	if (*len < *want)
		return -EPIPE;
	return *len > *want ? -EMSGSIZE : 0;
}
