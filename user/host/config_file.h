/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The config file on disk: which one, whether it can be trusted, reading
 * it. Parsing is logic/config/config.h's, on the text read here.
 */
#ifndef DW_CONFIG_FILE_H
#define DW_CONFIG_FILE_H

#include <stddef.h>

#define DW_DEFAULT_CONFIG "/etc/depwatch/depwatch.conf"

struct dw_config;

/* The config to read: the one given, else the default file if it exists, else NULL (embedded). */
const char *dw_config_path(const char *given);

/*
 * Reads path (a regular file of at most DW_CONFIG_MAX_BYTES) and parses it
 * with path as the source name. I/O errors are "PATH: <strerror>", "PATH:
 * is a directory", ... and return a negative errno; parse errors are
 * dw_config_parse's.
 */
int dw_config_load(const char *path, struct dw_config *cfg, char *err, size_t errlen);

/*
 * What `run`, a reload and `check` read: the embedded default for NULL,
 * else path once it is trusted (root's, not group- or world-writable) and
 * loaded. 0; -EPERM for an untrusted file, -EINVAL otherwise, err set.
 */
int dw_config_read(const char *path, struct dw_config *cfg, char *err, size_t errlen);

#endif /* DW_CONFIG_FILE_H */
