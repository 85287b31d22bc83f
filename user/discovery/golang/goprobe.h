/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The Go TLS probe points of one ELF file, for the discovery to call once per distinct
 * file (a process's /proc/PID/exe, opened through /proc/PID/root): the pure finder
 * (logic/discovery/goprobes.h) over the file mapped read-only, and the struct offsets from the
 * file's DWARF first, golayout.c's table second. doc/go.md.
 */
#ifndef DW_GOPROBE_H
#define DW_GOPROBE_H

#include <stddef.h>

#include "logic/discovery/goprobes.h"

/*
 * 0: *out is complete (entries, RETs, fd chain with its source, version): probe it.
 * -1: not probed; why[] is the one-line reason for `status` ("go1.16.15: Go 1.16 passes
 * arguments on the stack ...", "no crypto/tls.(*Conn).Write ...", "not a Go program ...").
 */
int dw_go_probe_points(const char *path, struct dw_go_probes *out, char *why, size_t whylen);

#endif
