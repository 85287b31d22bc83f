/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * depwatch top: a live table of the dependencies, worst first, built from
 * the daemon's "top tsv" answer. The pure part (parsing the answer, rates,
 * order, columns, the text of each line) is logic/topview.h; top.c asks
 * the daemon and draws.
 */
#ifndef DW_TOP_H
#define DW_TOP_H

#include "logic/topview.h"

/* Width of the one frame printed when stdout is not a terminal. */
#define DW_TOP_PLAIN_WIDTH 120

#endif /* DW_TOP_H */
