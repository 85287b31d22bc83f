// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * dns_ports (issue 35): which UDP ports the DNS programs read (bpf/dns/dnscall.bpf.h)
 * and enforcement treats as a resolver's (bpf/enforce/enforce.bpf.c), one array map for
 * the host, indexed by port. Written at start before anything is attached and
 * again at each reload; a port a reload drops leaves its outstanding queries to
 * fail at their dns_timeout (their answers are no longer read).
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <bpf/bpf.h>

#include "dns/dnsports.h"
#include "kernel/loader.h"
#include "host/log.h"

static bool listed(const struct dw_config *cfg, unsigned port)
{
	for (unsigned i = 0; i < cfg->ndns_ports; i++)
		if (cfg->dns_ports[i] == port)
			return true;
	return false;
}

static int set_port(int fd, unsigned port, __u8 on)
{
	__u32 key = port;

	if (bpf_map_update_elem(fd, &key, &on, BPF_ANY)) {
		int err = -errno;

		dw_err("dns_ports: cannot turn port %u %s in the kernel: %s", port, on ? "on" : "off",
		       strerror(-err));
		return err;
	}
	return 0;
}

int dw_dns_ports_apply(struct dw_bpf *b, const struct dw_config *was, const struct dw_config *cfg)
{
	int fd = dw_bpf_map_fd(b, DW_MAP_DNS_PORTS), err = 0;

	if (fd < 0)
		return fd;
	for (unsigned i = 0; i < cfg->ndns_ports && !err; i++)
		err = set_port(fd, cfg->dns_ports[i], 1);
	for (unsigned i = 0; was && i < was->ndns_ports && !err; i++)
		if (!listed(cfg, was->dns_ports[i]))
			err = set_port(fd, was->dns_ports[i], 0);
	return err;
}
