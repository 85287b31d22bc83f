/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Call outcomes on the user side (issue 33): which answers fail a call.
 * failure_status, per dependency, is a set of HTTP statuses written as
 * operators write them: classes (5xx) and single codes (429), or none.
 * The kernel reads each answer's status line (bpf/answer/http1.h, outcome.bpf.h)
 * and tests its bit in this set (struct dw_dep_cfg.fail_status).
 * Pure: text in, bits out, and back.
 */
#ifndef DW_OUTCOME_H
#define DW_OUTCOME_H

#include <stdbool.h>
#include <stdint.h>

#include "logic/base/jsonw.h"

#define DW_STATUS_SET_WORDS 8	/* bit (status - 100) for 100-599 */

struct dw_status_set {
	uint64_t bits[DW_STATUS_SET_WORDS];
};

/* The default: 5xx (4xx, 429 among them, is the caller's; a 429 is one to add by hand). */
#define DW_FAILURE_STATUS_DEFAULT "5xx"

/*
 * "5xx, 429" (commas or blanks between items; classes 1xx-5xx, codes
 * 100-599; "none" alone) into *set. 0, or -EINVAL with *set untouched.
 */
int dw_status_set_parse(const char *text, struct dw_status_set *set);

/* The set as a config writes it: whole classes as Nxx, then codes, ascending; "none" if empty. */
void dw_status_set_format(const struct dw_status_set *set, struct dw_buf *out);

bool dw_status_set_has(const struct dw_status_set *set, int status);

/*
 * Answers by what was read of them, as every output names them (JSON keys,
 * the class label of /metrics): bounded, a class or a kind, never a path.
 */
#define DW_ANSWER_KINDS(X)                                                                      \
	X(2xx, answers_2xx, "answers read with a 2xx status")                                  \
	X(3xx, answers_3xx, "answers read with a 3xx status")                                  \
	X(4xx, answers_4xx, "answers read with a 4xx status")                                  \
	X(5xx, answers_5xx, "answers read with a 5xx status")                                  \
	X(unknown, answers_unknown, "answers of HTTP/1 connections whose status was not read") \
	X(bad, answers_bad, "of those, a malformed status line")

enum dw_answer_kind {
#define DW_ANSWER_ENUM(name, field, help) DW_ANS_##name,
	DW_ANSWER_KINDS(DW_ANSWER_ENUM)
#undef DW_ANSWER_ENUM
	DW_ANS_N,
};

extern const char *const dw_answer_names[DW_ANS_N];

struct dw_dest_stats;

/* A row's answer counts, a[DW_ANS_N], from its summed counters (adds to a). */
void dw_answers_add(uint64_t *a, const struct dw_dest_stats *st);

/* ,"answers":{"2xx":N,...,"bad":N},"failed_status":N */
void dw_answers_json(struct dw_buf *out, const uint64_t *a, uint64_t failed_status);

#endif /* DW_OUTCOME_H */
