// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Go struct offsets from DWARF (godwarf.h): one walk over every unit's top-level types. */
#include "discovery/golang/godwarf.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdio.h>
#include <string.h>

/* The members wanted, by struct; the Go linker names types by their package path. */
enum { F_TLS_CONN, F_TCPCONN_CONN, F_CONN_FD, F_NETFD_PFD, F_FD_SYSFD, F_N };
static const struct {
	const char *type, *member;
} want[F_N] = {
	[F_TLS_CONN] = { "crypto/tls.Conn", "conn" },
	[F_TCPCONN_CONN] = { "net.TCPConn", "conn" },
	[F_CONN_FD] = { "net.conn", "fd" },
	[F_NETFD_PFD] = { "net.netFD", "pfd" },
	[F_FD_SYSFD] = { "internal/poll.FD", "Sysfd" },
};

/* The offset of member name in struct die, or -1. */
static long member_off(Dwarf_Die *st, const char *name)
{
	Dwarf_Die m;
	Dwarf_Attribute a;
	Dwarf_Word w;

	if (dwarf_child(st, &m) != 0)
		return -1;
	do {
		const char *n;

		if (dwarf_tag(&m) != DW_TAG_member || !(n = dwarf_diename(&m)) || strcmp(n, name))
			continue;
		/* Go writes the offset as a constant (DW_FORM_udata), not a location expression */
		if (!dwarf_attr(&m, DW_AT_data_member_location, &a) || dwarf_formudata(&a, &w) != 0)
			return -1;
		return (long)w;
	} while (dwarf_siblingof(&m, &m) == 0);
	return -1;
}

int dw_go_dwarf_fdchain(int fd, struct dw_go_fdchain *c, char *why, size_t whylen)
{
	long got[F_N];
	int nfound = 0;
	Dwarf *dw = dwarf_begin(fd, DWARF_C_READ);
	Dwarf_Off off = 0, next;
	size_t hsize;

	if (!dw) {
		snprintf(why, whylen, "no DWARF (%s)", dwarf_errmsg(-1));
		return -1;
	}
	for (int i = 0; i < F_N; i++)
		got[i] = -1;
	while (nfound < F_N && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, d;

		if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_child(&cu, &d) == 0) {
			do {
				const char *n;

				if (dwarf_tag(&d) != DW_TAG_structure_type || !(n = dwarf_diename(&d)))
					continue;
				for (int i = 0; i < F_N; i++)
					if (got[i] < 0 && !strcmp(n, want[i].type) &&
					    (got[i] = member_off(&d, want[i].member)) >= 0)
						nfound++;
			} while (nfound < F_N && dwarf_siblingof(&d, &d) == 0);
		}
		off = next;
	}
	dwarf_end(dw);
	for (int i = 0; i < F_N; i++)
		if (got[i] < 0) {
			snprintf(why, whylen, "DWARF has no %s.%s", want[i].type, want[i].member);
			return -1;
		}
	c->conn_iface = (int32_t)got[F_TLS_CONN];
	c->conn_fd = (int32_t)(got[F_TCPCONN_CONN] + got[F_CONN_FD]);
	c->netfd_pfd = (int32_t)got[F_NETFD_PFD];
	c->pfd_sysfd = (int32_t)got[F_FD_SYSFD];
	return dw_go_fdchain_ok(c) == 0 ? 0 : (snprintf(why, whylen, "DWARF offsets out of range"), -1);
}
