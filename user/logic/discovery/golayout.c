// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The Go struct-offset table and the ABI gate (golayout.h). */
#include "logic/discovery/golayout.h"

#include <stdio.h>

#include "logic/discovery/goelf.h"

/*
 * Rows verified against a binary: Debian 12's golang-go 1.19 (1.19.8), by the DWARF of the
 * program tests/go/gotls built with it. The Go sources show the same layout from 1.17 to 1.22
 * (poll.FD's fdMutex is 16 bytes before Sysfd; every other field is first in its struct), but
 * a row is added only when a test has read a binary of that version.
 */
static const struct {
	int major, minor;
	struct dw_go_fdchain c;
} table[] = {
	{ 1, 19, { .conn_iface = 0, .conn_fd = 0, .netfd_pfd = 0, .pfd_sysfd = 16 } },
};

int dw_go_layout_table(int major, int minor, struct dw_go_fdchain *c)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].major == major && table[i].minor == minor) {
			*c = table[i].c;
			return 0;
		}
	return -1;
}

int dw_go_abi_ok(int major, int minor, uint16_t machine, char *why, size_t whylen)
{
	if (machine != DW_EM_X86_64) {
		snprintf(why, whylen, "ELF machine %u: only x86-64 Go programs are probed", machine);
		return -1;
	}
	if (major < 0) {
		snprintf(why, whylen, "Go version not a release's (a devel toolchain?): its layout is unknown");
		return -1;
	}
	if (major != 1) {
		snprintf(why, whylen, "Go %d.%d: no layout known for it", major, minor);
		return -1;
	}
	if (minor < 17) {
		snprintf(why, whylen, "Go %d.%d passes arguments on the stack (the register ABI is Go 1.17+)",
			 major, minor);
		return -1;
	}
	return 0;
}

int dw_go_fdchain_ok(const struct dw_go_fdchain *c)
{
	const int32_t v[] = { c->conn_iface, c->conn_fd, c->netfd_pfd, c->pfd_sysfd };

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (v[i] < 0 || v[i] >= 4096)
			return -1;
	return 0;
}
