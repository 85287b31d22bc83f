/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Who a cgroup is, from its path under the cgroup v2 mount: a systemd unit,
 * a container (docker, containerd, cri-o, podman), a Kubernetes pod's
 * container, or failing all of these the path itself. Pure: the path comes
 * from user/host/cgroups.c, which finds it from the id the kernel side records.
 * The rules, with examples, are in doc/callers.md.
 */
#ifndef DW_CGNAME_H
#define DW_CGNAME_H

#include <stdint.h>

/* The "kind" of a caller in status --json: the order of the words below. */
enum dw_cg_kind {
	DW_CG_UNIT,		/* a systemd unit: "payments-api.service" */
	DW_CG_CONTAINER,	/* a container outside Kubernetes: "docker:0123456789ab" */
	DW_CG_POD,		/* in a Kubernetes pod: "pod:<uid>/containerd:0123456789ab" */
	DW_CG_PATH,		/* none of these: the path, or "gone:<id>" */
	DW_CG_NKINDS
};

/* Longest name written, with its NUL; a longer one is cut and marked "...". */
#define DW_CG_NAME_LEN 128
/* A pod UID: a 36-byte UUID (or a static pod's 32 hex digits) and its NUL. */
#define DW_CG_POD_LEN 37
/* Paths longer than this are not names: only their last DW_CG_NAME_LEN bytes matter. */
#define DW_CG_PATH_MAX 4096
/* How much of a container id is shown, as docker ps does. */
#define DW_CG_SHORT_ID 12

struct dw_cgname {
	enum dw_cg_kind kind;
	/* NUL-terminated, no control bytes (each became '?'); still escape it when printing */
	char name[DW_CG_NAME_LEN];
	/* the pod UID with dashes, "" when the cgroup is in no pod */
	char pod[DW_CG_POD_LEN];
};

/*
 * The name of the cgroup at path, relative to the cgroup v2 mount root
 * ("/system.slice/payments-api.service"; a missing leading '/' is the same
 * path). NULL or "" is the root, "/". Always fills out.
 */
void dw_cgname_of_path(const char *path, struct dw_cgname *out);

/* "gone:<id>", of kind path: a cgroup id that is no longer in the mount. */
void dw_cgname_gone(uint64_t id, struct dw_cgname *out);

/* "unit", "container", "pod", "path"; "?" for anything else. */
const char *dw_cg_kind_name(enum dw_cg_kind kind);

#endif /* DW_CGNAME_H */
