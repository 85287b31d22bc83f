/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The subcommands of the depwatch binary. */
#ifndef DW_COMMANDS_H
#define DW_COMMANDS_H

#include <stddef.h>

#define DW_DEFAULT_PIN_DIR "/sys/fs/bpf/depwatch"
#define DW_DEFAULT_RUN_DIR "/run/depwatch"

int dw_cmd_run(int argc, char **argv);
int dw_cmd_check(int argc, char **argv);

int dw_cmd_status(int argc, char **argv);
/* The live table of dependencies, worst first (top.c). */
int dw_cmd_top(int argc, char **argv);

/* Prints "depwatch: <message>" to stderr and returns -EINVAL. */
int dw_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* DW_COMMANDS_H */
