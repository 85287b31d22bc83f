/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * depwatch.h is written for the BPF side, which gets __u32/__u64 and
 * __always_inline from vmlinux.h and bpf_helpers.h. User space gets them
 * here, so every user-space file sees the same definitions.
 */
#ifndef DW_TYPES_H
#define DW_TYPES_H

#include <linux/types.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#include "depwatch.h"

#endif /* DW_TYPES_H */
