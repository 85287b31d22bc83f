/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* dns_ports (issue 35): the config's resolver ports into the kernel's dns_ports map. */
#ifndef DW_DNSPORTS_H
#define DW_DNSPORTS_H

#include "kernel/bpfstate.h"
#include "logic/config/config.h"

/*
 * Turns on cfg's dns_ports, then off those of was (NULL at start) that cfg
 * does not list: a port both list is never off in between. 0 or a
 * negative errno (logged).
 */
int dw_dns_ports_apply(struct dw_bpf *b, const struct dw_config *was, const struct dw_config *cfg);

#endif /* DW_DNSPORTS_H */
