/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Call outcomes on the user side (issue 33): which answers fail a call.
 * failure_status, per dependency, is a set of HTTP statuses written as
 * operators write them: classes (5xx) and single codes (429), or none.
 * The kernel reads each answer's status line (bpf/http1.h, outcome.bpf.h)
 * and tests its bit in this set (struct dw_dep_cfg.fail_status).
 * Pure: text in, bits out, and back.
 */
#ifndef DW_OUTCOME_H
#define DW_OUTCOME_H

#include <stdbool.h>
#include <stdint.h>

#include "jsonw.h"

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

#endif /* DW_OUTCOME_H */
