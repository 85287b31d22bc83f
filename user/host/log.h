/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The daemon's own log: stderr, one line per event, "depwatch: " first. */
#ifndef DW_LOG_H
#define DW_LOG_H

#include <stdbool.h>

extern bool dw_verbose;

void dw_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define dw_err(...) dw_log(3, __VA_ARGS__)
#define dw_warn(...) dw_log(4, __VA_ARGS__)
#define dw_notice(...) dw_log(5, __VA_ARGS__)
#define dw_info(...) dw_log(6, __VA_ARGS__)
#define dw_debug(...) dw_log(7, __VA_ARGS__)

#endif /* DW_LOG_H */
