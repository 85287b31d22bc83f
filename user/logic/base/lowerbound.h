/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one binary search of the logic: in n elements sorted by a key field,
 * the index of the first whose key is not below key (n when none is). A
 * macro that writes it for one element type, so the search over the
 * collector's windows (window.c, per histogram delta) stays a plain loop
 * with no call per step.
 */
#ifndef DW_LOWERBOUND_H
#define DW_LOWERBOUND_H

#define DW_LOWER_BOUND(name, type, field, key_type)					\
static unsigned name(const type *v, unsigned n, key_type key)			\
{											\
	unsigned lo = 0, hi = n, mid;							\
											\
	while (lo < hi) {								\
		mid = lo + (hi - lo) / 2;						\
		if (v[mid].field < key)							\
			lo = mid + 1;							\
		else									\
			hi = mid;							\
	}										\
	return lo;									\
}

#endif /* DW_LOWERBOUND_H */
