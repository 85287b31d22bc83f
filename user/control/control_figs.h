/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What status and /metrics say of the control socket's clients; control.c
 * counts them (dw_clients_figs), the renderers read them without the rest
 * of the socket's code.
 */
#ifndef DW_CONTROL_FIGS_H
#define DW_CONTROL_FIGS_H

#include <stdint.h>

struct dw_control_figs {
	unsigned clients;		/* slots in use now */
	uint64_t refused;		/* since the daemon started */
};

#endif /* DW_CONTROL_FIGS_H */
