/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The *tls.Conn -> fd offsets (logic/discovery/golayout.h) from a Go binary's own DWARF, read
 * with elfutils' libdw: the member offsets of crypto/tls.Conn.conn, net.TCPConn.conn,
 * net.conn.fd, net.netFD.pfd and internal/poll.FD.Sysfd. A stripped binary
 * (-ldflags=-w) has none: the caller falls back to the table.
 */
#ifndef DW_GODWARF_H
#define DW_GODWARF_H

#include <stddef.h>

#include "logic/discovery/golayout.h"

/* 0 with *c, or -1 with why[] (no DWARF, or a struct or member missing). fd: the ELF file, read only. */
int dw_go_dwarf_fdchain(int fd, struct dw_go_fdchain *c, char *why, size_t whylen);

#endif
