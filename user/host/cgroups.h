/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * From a cgroup id, as the kernel side records it (bpf_get_current_cgroup_id),
 * to a caller's name: the cgroup v2 mount is found in /proc/self/mounts, the
 * id (the inode number of the cgroup's directory there) is found again in
 * that mount, and logic/cgname names its path. Names are cached: a cgroup id
 * is never reused while the machine is up (kernfs ids only grow on 64-bit
 * kernels), so a name, or gone:<id>, stays true for as long as it is kept.
 *
 * Two ways from an id to a path, and why both (doc/callers.md):
 * - the cgroup2 file handle: open_by_handle_at() with the id as the handle,
 *   one call per id, but it needs CAP_DAC_READ_SEARCH, which a daemon that
 *   dropped its capabilities no longer has;
 * - a walk of the mount comparing st_ino, with read access only: one walk
 *   finds every id asked for at once, and at most one walk is made per call
 *   to dw_cgroups_resolve, so once per poll.
 * The handle is tried first; the first EPERM turns it off for good.
 */
#ifndef DW_CGROUPS_H
#define DW_CGROUPS_H

#include <stddef.h>
#include <stdint.h>
#include "logic/callers/cgname.h"

/* Cached names by default: beyond it the least recently used are dropped. */
#define DW_CGROUPS_CACHE_DEFAULT 4096
/* A walk stops going deeper, or further, than this (and says it is incomplete). */
#define DW_CGROUPS_MAX_DEPTH 32
#define DW_CGROUPS_MAX_DIRS 200000

/* dw_cgroups_new flags */
#define DW_CGROUPS_NO_HANDLES 0x1	/* always walk: tests, or a tree that is not cgroupfs */

/*
 * The mount point of the first cgroup2 mount listed in mounts (a file in
 * /proc/self/mounts' format; NULL for that one) into dir (octal escapes such
 * as \040 undone). 0; -ENOENT when there is none ("no cgroup v2 mount");
 * -ENAMETOOLONG; -errno when mounts cannot be read.
 */
int dw_cgroup2_mount(const char *mounts, char *dir, size_t len);

struct dw_cgroups;

/*
 * A resolver for the cgroup tree mounted at root (from dw_cgroup2_mount, or
 * any directory tree in tests), keeping up to max_names names (0: the
 * default). NULL with errno set when root cannot be opened, or no memory.
 */
struct dw_cgroups *dw_cgroups_new(const char *root, size_t max_names, unsigned flags);
void dw_cgroups_free(struct dw_cgroups *c);

/*
 * Names the ids not cached yet (repeats allowed), with at most one walk of
 * the tree: an id found is named from its path, one not there is gone:<id>.
 * An id missed by an incomplete walk (a directory that could not be read, too
 * deep, too many) is gone:<id> for now and looked for again on the next call.
 * At most as many new ids as the cache has room for once the cached ids in
 * ids are kept: the others stay unnamed until a later call. Returns how many
 * ids were named or found gone by this call, or -ENOMEM.
 */
int dw_cgroups_resolve(struct dw_cgroups *c, const uint64_t *ids, size_t n);

/* The name of id, or NULL when it has not been resolved. Marks it as used. */
const struct dw_cgname *dw_cgroups_lookup(struct dw_cgroups *c, uint64_t id);

struct dw_cgroups_stats {
	size_t names;			/* cached now */
	unsigned long long walks;	/* walks of the tree */
	unsigned long long incomplete;	/* walks that could not see all of it */
	unsigned long long handles;	/* ids resolved by file handle */
	unsigned long long gone;	/* ids found gone */
	unsigned long long evicted;	/* names dropped for room */
	unsigned long long deferred;	/* ids left for a later call: no room */
	int handles_on;			/* the file handle is still tried */
};
void dw_cgroups_stats(const struct dw_cgroups *c, struct dw_cgroups_stats *st);

#endif /* DW_CGROUPS_H */
