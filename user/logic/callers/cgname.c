// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A cgroup's name from its path (see cgname.h and doc/callers.md). The path
 * is read one component at a time, from the root down, without copying it:
 * the outermost container wins (what the host's docker ps or crictl shows),
 * then a pod, then the systemd unit, then the path itself.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "logic/callers/cgname.h"

/* One path component: not NUL-terminated, never empty. */
struct comp {
	const char *s;
	size_t n;
};

static bool has_prefix(struct comp c, const char *p)
{
	size_t n = strlen(p);

	return c.n >= n && !memcmp(c.s, p, n);
}

static bool has_suffix(struct comp c, const char *sfx)
{
	size_t n = strlen(sfx);

	return c.n >= n && !memcmp(c.s + c.n - n, sfx, n);
}

static bool comp_is(struct comp c, const char *lit)
{
	return c.n == strlen(lit) && !memcmp(c.s, lit, c.n);
}

/* c without prefix p, when it has it. */
static struct comp cut_prefix(struct comp c, const char *p)
{
	size_t n = strlen(p);

	if (has_prefix(c, p)) {
		c.s += n;
		c.n -= n;
	}
	return c;
}

static struct comp cut_suffix(struct comp c, const char *sfx)
{
	if (has_suffix(c, sfx))
		c.n -= strlen(sfx);
	return c;
}

/* Container ids are 64 lowercase hex digits everywhere: anything else is not one. */
static bool is_id(struct comp c)
{
	if (c.n != 64)
		return false;
	for (size_t i = 0; i < c.n; i++)
		if (!((c.s[i] >= '0' && c.s[i] <= '9') || (c.s[i] >= 'a' && c.s[i] <= 'f')))
			return false;
	return true;
}

/*
 * How runtimes name a container's cgroup: "<prefix><id>.scope" under the
 * systemd cgroup driver, "<prefix><id>" under cgroupfs. The conmon monitors
 * keep their own names: they are not the workload.
 */
static const struct {
	const char *prefix, *runtime;
} runtimes[] = {
	{ "cri-containerd-", "containerd" },
	{ "crio-conmon-", "cri-o-conmon" },
	{ "crio-", "cri-o" },
	{ "libpod-conmon-", "podman-conmon" },
	{ "libpod-", "podman" },
	{ "docker-", "docker" },
	{ "nerdctl-", "containerd" },
};

/*
 * The runtime when c (under parent) is a container's cgroup, with its id;
 * "" for a bare id whose runtime the path does not say; NULL if it is not one.
 */
static const char *container_of(struct comp c, struct comp parent, struct comp *id)
{
	c = cut_suffix(c, ".scope");
	for (size_t i = 0; i < sizeof(runtimes) / sizeof(runtimes[0]); i++) {
		struct comp rest = cut_prefix(c, runtimes[i].prefix);

		if (rest.n < c.n && is_id(rest)) {
			*id = rest;
			return runtimes[i].runtime;
		}
	}
	if (!is_id(c))
		return NULL;
	*id = c;
	/* cgroupfs driver: docker's /docker/<id>; kubelet's /kubepods/.../pod<uid>/<id> */
	return comp_is(parent, "docker") ? "docker" : "";
}

/*
 * A pod UID into uid (DW_CG_POD_LEN): a UUID, or the 32 hex digits of a
 * static pod; the systemd driver writes its dashes as '_', put back here.
 */
static bool copy_uid(struct comp c, char *uid)
{
	if (c.n < 32 || c.n > DW_CG_POD_LEN - 1)
		return false;
	for (size_t i = 0; i < c.n; i++) {
		char ch = c.s[i];

		if (ch == '_' || ch == '-')
			ch = '-';
		else if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
			return false;
		uid[i] = ch;
	}
	uid[c.n] = '\0';
	return true;
}

/*
 * A pod's cgroup: "pod<uid>" (cgroupfs driver), or "kubepods-pod<uid>.slice",
 * "kubepods-burstable-pod<uid>.slice", "kubepods-besteffort-pod<uid>.slice".
 */
static bool pod_of(struct comp c, char *uid)
{
	if (has_prefix(c, "kubepods-") && has_suffix(c, ".slice")) {
		c = cut_suffix(cut_prefix(c, "kubepods-"), ".slice");
		c = cut_prefix(cut_prefix(c, "burstable-"), "besteffort-");
	}
	if (!has_prefix(c, "pod"))
		return false;
	return copy_uid(cut_prefix(c, "pod"), uid);
}

/* The uid in "<prefix><digits><suffix>" ("user-1000.slice", "user@1000.service"). */
static bool uid_of(struct comp c, const char *prefix, const char *suffix, struct comp *uid)
{
	if (!has_prefix(c, prefix) || !has_suffix(c, suffix))
		return false;
	c = cut_suffix(cut_prefix(c, prefix), suffix);
	if (c.n == 0 || c.n > 10)
		return false;
	for (size_t i = 0; i < c.n; i++)
		if (c.s[i] < '0' || c.s[i] > '9')
			return false;
	*uid = c;
	return true;
}

/* The unit types systemd gives a cgroup of their own. */
static bool is_unit(struct comp c)
{
	static const char *const types[] = { ".service", ".scope", ".slice",
					     ".socket",	 ".mount", ".swap" };

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (has_suffix(c, types[i]) && c.n > strlen(types[i]))
			return true;
	return false;
}

/* What the walk down the path has found so far. */
struct found {
	const char *runtime;	/* a container: its runtime ("" unknown) and id */
	struct comp id;
	char pod[DW_CG_POD_LEN];
	struct comp unit;	/* the unit that names the caller so far */
	bool unit_done;		/* unit is not a slice: what is below it is its own */
	bool not_systemd;	/* a component no unit explains: the path is the name */
	struct comp uid;	/* from user-N.slice or user@N.service */
	bool user_mgr;		/* unit is below a user@N.service: the user's own unit */
};

static void note_unit(struct found *f, struct comp c)
{
	if (f->unit_done || f->not_systemd)
		return;
	if (uid_of(c, "user-", ".slice", &f->uid)) {
		f->unit = c;
		return;
	}
	if (uid_of(c, "user@", ".service", &f->uid)) {
		/* the user's systemd: its units, not it, are the callers */
		f->unit = c;
		f->user_mgr = true;
		return;
	}
	if (!is_unit(c)) {
		f->not_systemd = true;
		return;
	}
	f->unit = c;
	f->unit_done = !has_suffix(c, ".slice");
}

/* The next non-empty component in [*p, end), advancing *p; false at the end. */
static bool next_comp(const char **p, const char *end, struct comp *c)
{
	while (*p < end && **p == '/')
		(*p)++;
	if (*p == end)
		return false;
	c->s = *p;
	while (*p < end && **p != '/')
		(*p)++;
	c->n = *p - c->s;
	return true;
}

static void walk(const char *path, size_t len, struct found *f)
{
	const char *p = path, *end = path + len;
	struct comp c, parent = { "", 0 };

	while (next_comp(&p, end, &c)) {
		const char *rt = container_of(c, parent, &f->id);

		if (rt) {
			f->runtime = rt;
			return;
		}
		parent = c;
		if (!f->pod[0] && pod_of(c, f->pod))
			continue;
		note_unit(f, c);
	}
}

/* Control bytes become '?': a name is shown on terminals and in logs. */
static void clean(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

/* out->name from a format; a name that does not fit ends with "...". */
__attribute__((format(printf, 2, 3))) static void set_name(struct dw_cgname *out,
							   const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out->name, sizeof(out->name), fmt, ap);
	va_end(ap);
	if (n < 0)
		out->name[0] = '\0';
	else if ((size_t)n >= sizeof(out->name))
		memcpy(out->name + sizeof(out->name) - 4, "...", 4);
	clean(out->name);
}

static void name_container(const struct found *f, struct dw_cgname *out)
{
	const char *rt = f->runtime[0] ? f->runtime : "container";

	if (!f->pod[0]) {
		out->kind = DW_CG_CONTAINER;
		set_name(out, "%s:%.*s", rt, DW_CG_SHORT_ID, f->id.s);
		return;
	}
	out->kind = DW_CG_POD;
	if (f->runtime[0])
		set_name(out, "pod:%s/%s:%.*s", f->pod, rt, DW_CG_SHORT_ID, f->id.s);
	else
		set_name(out, "pod:%s/%.*s", f->pod, DW_CG_SHORT_ID, f->id.s);
}

/* The pod's own cgroup, or one of its own below it that is no container. */
static void name_pod(const struct found *f, struct dw_cgname *out)
{
	out->kind = DW_CG_POD;
	set_name(out, "pod:%s", f->pod);
}

/* "payments-api.service"; "session-3 (user 1000)"; "app.service (user 1000)". */
static void name_unit(const struct found *f, struct dw_cgname *out)
{
	struct comp u = f->unit;

	out->kind = DW_CG_UNIT;
	if (f->uid.n && has_prefix(u, "session-") && has_suffix(u, ".scope")) {
		u = cut_suffix(u, ".scope");
		set_name(out, "%.*s (user %.*s)", (int)u.n, u.s, (int)f->uid.n, f->uid.s);
	} else if (f->user_mgr && !has_prefix(u, "user@")) {
		set_name(out, "%.*s (user %.*s)", (int)u.n, u.s, (int)f->uid.n, f->uid.s);
	} else {
		set_name(out, "%.*s", (int)u.n, u.s);
	}
}

static bool all_slashes(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] != '/')
			return false;
	return true;
}

/* The path itself; one too long keeps its end, the part that tells cgroups apart. */
static void name_path(const char *path, size_t len, struct dw_cgname *out)
{
	const size_t keep = sizeof(out->name) - 4;
	const char *slash = len && path[0] == '/' ? "" : "/";

	out->kind = DW_CG_PATH;
	if (all_slashes(path, len))
		set_name(out, "/");
	else if (len + strlen(slash) < sizeof(out->name))
		set_name(out, "%s%.*s", slash, (int)len, path);
	else
		set_name(out, "...%.*s", (int)keep, path + len - keep);
}

void dw_cgname_of_path(const char *path, struct dw_cgname *out)
{
	struct found f = { 0 };
	size_t len;

	if (!path)
		path = "";
	len = strnlen(path, DW_CG_PATH_MAX);
	memset(out, 0, sizeof(*out));
	walk(path, len, &f);
	snprintf(out->pod, sizeof(out->pod), "%s", f.pod);
	if (f.runtime)
		name_container(&f, out);
	else if (f.pod[0])
		name_pod(&f, out);
	else if (f.unit.n && !f.not_systemd)
		name_unit(&f, out);
	else
		name_path(path, len, out);
}

void dw_cgname_gone(uint64_t id, struct dw_cgname *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = DW_CG_PATH;
	set_name(out, "gone:%llu", (unsigned long long)id);
}

const char *dw_cg_kind_name(enum dw_cg_kind kind)
{
	static const char *const names[DW_CG_NKINDS] = {
		[DW_CG_UNIT] = "unit",
		[DW_CG_CONTAINER] = "container",
		[DW_CG_POD] = "pod",
		[DW_CG_PATH] = "path",
	};

	if ((unsigned)kind >= DW_CG_NKINDS)
		return "?";
	return names[kind];
}
