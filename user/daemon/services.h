/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Services, polled by the daemon after the dependencies: the collector's
 * figures handed to the services' logic (logic/services/services.h, which holds
 * what a service is and every rule about it), and its events raised as
 * alerts.
 */
#ifndef DW_SERVICES_H
#define DW_SERVICES_H

#include "logic/services/services.h"

struct dw_collector;
struct dw_deps;

/* After the dependencies' poll: read through logic/depset/depset.h's lookups. */
void dw_services_poll(struct dw_services *s, const struct dw_collector *c, const struct dw_deps *deps);

#endif /* DW_SERVICES_H */
