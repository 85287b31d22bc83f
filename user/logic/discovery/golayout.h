/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * From a *tls.Conn to its socket's file descriptor, and which Go programs the
 * probes can read at all.
 *
 * The chain, each step a field offset of the Go version's structs:
 *   tls.Conn.conn          a net.Conn interface {itab, data}: data (+8) is the *net.TCPConn
 *   net.TCPConn -> conn.fd the embedded net.conn's *netFD
 *   net.netFD.pfd          an internal/poll.FD, inline
 *   poll.FD.Sysfd          the int file descriptor
 * The offsets come from the binary's DWARF when it has some (user/discovery/golang/godwarf.c) or else
 * from the table here: only rows checked against a binary built and read by the tests
 * (tests/unit/test_goprobe.c compares the table with the DWARF of the binary it builds).
 *
 * The probes read the register ABI (Go 1.17 on amd64): the receiver in RAX, the slice's
 * pointer and length in RBX and RCX, the goroutine (g) in R14; on return n in RAX.
 * Before 1.17 arguments are on the stack: those programs are not probed.
 */
#ifndef DW_GOLAYOUT_H
#define DW_GOLAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* Offsets in bytes; the interface's data word is 8 bytes after the field on 64-bit. */
struct dw_go_fdchain {
	int32_t conn_iface;	/* crypto/tls.Conn.conn */
	int32_t conn_fd;	/* net.conn.fd (net.TCPConn embeds net.conn at 0) */
	int32_t netfd_pfd;	/* net.netFD.pfd */
	int32_t pfd_sysfd;	/* internal/poll.FD.Sysfd */
};

#define DW_GO_IFACE_DATA 8

/* 0 with *c from the table for Go major.minor; -1 when the table has no row for it. */
int dw_go_layout_table(int major, int minor, struct dw_go_fdchain *c);

/*
 * Whether a program of this Go version and ELF machine can be probed at all (the register ABI
 * and an instruction set whose RETs are found): 0, or -1 with why[] saying why not.
 */
int dw_go_abi_ok(int major, int minor, uint16_t machine, char *why, size_t whylen);

/* Sanity of a chain however obtained: each offset inside a struct of plausible size (< 4096). */
int dw_go_fdchain_ok(const struct dw_go_fdchain *c);

#endif
