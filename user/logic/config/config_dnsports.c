// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * dns_ports (issue 35): the UDP ports whose datagrams are read as DNS
 * queries and answers. A key of [defaults] alone: the kernel's dns_ports
 * map is one for the whole host (every dependency, every namespace), so a
 * per-dependency value would say something the kernel cannot do.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "logic/config/config_parser.h"
#include "logic/base/parse.h"

int cfg_set_dns_ports(struct parser *p, const char *val)
{
	char buf[DW_CONFIG_MAX_LINE + 1], c[DW_CLIP_BUF], *item, *next;
	uint16_t ports[DW_DNS_PORTS_MAX];
	unsigned n = 0, i;
	uint64_t port;
	int err;

	if (p->sec != SEC_DEFAULTS)
		return fail(p, "dns_ports belongs in [defaults], not in [dependency %s]: which UDP ports are DNS is one setting for the whole host",
			    p->deps[p->ndeps - 1].dep.name);
	err = cfg_check_defaults_only(p, "dns_ports", p->dns_ports_line);
	if (err)
		return err;
	snprintf(buf, sizeof(buf), "%s", val);
	/* split by hand: strtok would take "53,,5353" and "53," without a word */
	for (item = buf; item; item = next) {
		next = strchr(item, ',');
		if (next)
			*next++ = '\0';
		item = cfg_trim(item);
		if (!*item)
			return fail(p, "dns_ports: an empty item in '%s' (ports are separated by ',')",
				    dw_clip(val, c));
		if (dw_parse_uint(item, 1, 65535, &port))
			return fail(p, "dns_ports: '%s' is not a port (1 to 65535)", dw_clip(item, c));
		for (i = 0; i < n; i++)
			if (ports[i] == port)
				return fail(p, "dns_ports: port %u is listed twice", (unsigned)port);
		if (n == DW_DNS_PORTS_MAX)
			return fail(p, "dns_ports: more than %d ports", DW_DNS_PORTS_MAX);
		ports[n++] = (uint16_t)port;
	}
	memcpy(p->dns_ports, ports, n * sizeof(ports[0]));
	p->ndns_ports = n;
	p->dns_ports_line = p->line;
	return 0;
}
