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

#include <stdbool.h>
#include "depwatch.h"

/*
 * What a kernel row is, decoded from its key: the ABI marks the overflow
 * and listener rows with sentinel family values, and user space reads them
 * here only (the collector keeps the kind in struct dw_dest, dest.h).
 * A zeroed row is the overflow row, as a zeroed key is.
 */
enum dw_row_kind {
	DW_ROW_OVERFLOW = 0,	/* slot 0: destinations that found no slot of their own */
	DW_ROW_OUTBOUND,	/* calls this host makes to one address:port */
	DW_ROW_LISTENER,	/* requests this host answers on one listening port (inbound) */
};

static inline enum dw_row_kind dw_row_kind_of(const struct dw_dest_key *key)
{
	if (key->family == DW_FAMILY_OVERFLOW)
		return DW_ROW_OVERFLOW;
	if (key->family == DW_FAMILY_INBOUND)
		return DW_ROW_LISTENER;
	return DW_ROW_OUTBOUND;
}

/*
 * Whether a kernel slot's key is there to read: a slot not yet published
 * (or a lost race's) has an all-zero key, as the overflow row has, and only
 * slot 0 is that row.
 */
static inline bool dw_dest_key_published(unsigned slot, const struct dw_dest_key *key)
{
	return slot == DW_SLOT_OVERFLOW || dw_row_kind_of(key) != DW_ROW_OVERFLOW;
}

#endif /* DW_TYPES_H */
