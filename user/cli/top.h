/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * depwatch top: a live table of the dependencies, worst first, built from
 * the daemon's "top tsv" answer. The pure part is logic/view/topview.h (parsing
 * the answer, rates, order) and logic/view/topview_layout.h (columns, the text
 * of each line); top.c asks the daemon and draws; its options are client.c's.
 */
#ifndef DW_TOP_H
#define DW_TOP_H

#include <stdint.h>
#include "logic/view/topview.h"

/*
 * Draws the table of the daemon at run_dir every interval_ns until q, or
 * prints one plain frame when stdin or stdout is not a terminal. Returns
 * the exit status.
 */
int dw_top_show(const char *run_dir, uint64_t interval_ns);

/* Width of the one frame printed when stdout is not a terminal. */
#define DW_TOP_PLAIN_WIDTH 120

#endif /* DW_TOP_H */
