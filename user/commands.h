/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The subcommands of the depwatch binary. */
#ifndef DW_COMMANDS_H
#define DW_COMMANDS_H

#include <stddef.h>

#define DW_DEFAULT_PIN_DIR "/sys/fs/bpf/depwatch"
#define DW_DEFAULT_RUN_DIR "/run/depwatch"

#define DW_DEFAULT_CONFIG "/etc/depwatch/depwatch.conf"

struct dw_config;

int dw_cmd_run(int argc, char **argv);
int dw_cmd_check(int argc, char **argv);

/* The config to read: the one given, else the default file if it exists, else NULL (embedded). */
const char *dw_config_path(const char *given);
/* Loads path, or the embedded default for NULL. 0, or -EINVAL with err set. */
int dw_config_read(const char *path, struct dw_config *cfg, char *err, size_t errlen);
int dw_cmd_status(int argc, char **argv);
/* The live table of dependencies, worst first (top.c). */
int dw_cmd_top(int argc, char **argv);

/* Prints "depwatch: <message>" to stderr and returns -EINVAL. */
int dw_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* DW_COMMANDS_H */
