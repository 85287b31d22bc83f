/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef DW_PRIVS_H
#define DW_PRIVS_H

/*
 * Once everything is loaded and attached, the daemon keeps CAP_BPF (map
 * access, the reload iterator) and CAP_PERFMON (the iterators over socket
 * state) and drops every other capability, from the bounding set too.
 */
int dw_drop_privileges(void);

#endif /* DW_PRIVS_H */
