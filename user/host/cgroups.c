// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Cgroup ids to callers' names (see cgroups.h): the cgroup2 mount, a bounded
 * cache, and the two ways from an id to a path. No logging: errors are
 * returned, and the counters in dw_cgroups_stats say what happened.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include "host/cgroups.h"

/* The kernel's handle type for kernfs (include/linux/exportfs.h, not in uapi). */
#define FILEID_KERNFS 0xfe
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

struct entry {
	uint64_t id;			/* 0: free (no cgroup has id 0) */
	uint64_t used;			/* c->tick when last resolved or looked up */
	bool provisional;		/* gone by an incomplete walk, or moved: look again */
	char *path;			/* where it was found, relative to the root; NULL: gone */
	struct dw_cgname name;
};

struct dw_cgroups {
	char root[PATH_MAX];
	int root_fd;
	dev_t dev;			/* the walk stays on the mount it starts on */
	bool handles;
	struct entry *entries;		/* max of them */
	size_t max, n;
	uint32_t *index;		/* open addressing: entry + 1, 0 empty */
	size_t index_mask;
	uint64_t tick;
	struct dw_cgroups_stats st;
};

/* ---- the mount ---- */

/* Undoes the octal escapes /proc/self/mounts writes for space, tab, newline, '\'. */
static void unescape_mount(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

/* The mount point of a mounts line of type cgroup2, unescaped in place; NULL if not one. */
static char *cgroup2_dir(char *line)
{
	char *save, *dir, *type;

	if (!strtok_r(line, " \n", &save))
		return NULL;
	dir = strtok_r(NULL, " \n", &save);
	type = strtok_r(NULL, " \n", &save);
	if (!dir || !type || strcmp(type, "cgroup2"))
		return NULL;
	unescape_mount(dir);
	return dir;
}

int dw_cgroup2_mount(const char *mounts, char *dir, size_t len)
{
	FILE *f = fopen(mounts ? mounts : "/proc/self/mounts", "re");
	char *line = NULL, *found = NULL;
	size_t cap = 0;
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (!found && getline(&line, &cap, f) > 0)
		found = cgroup2_dir(line);
	if (found)
		err = snprintf(dir, len, "%s", found) < (int)len ? 0 : -ENAMETOOLONG;
	free(line);
	fclose(f);
	return err;
}

/* ---- the cache: entries, found by id through a linear-probing index ---- */

static size_t slot_of(const struct dw_cgroups *c, uint64_t id)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ULL) >> 17) & c->index_mask;
}

/* The index slot holding id, or the empty slot where it would go. */
static size_t probe(const struct dw_cgroups *c, uint64_t id)
{
	size_t s = slot_of(c, id);

	while (c->index[s] && c->entries[c->index[s] - 1].id != id)
		s = (s + 1) & c->index_mask;
	return s;
}

static struct entry *find(const struct dw_cgroups *c, uint64_t id)
{
	size_t s = probe(c, id);

	return c->index[s] ? &c->entries[c->index[s] - 1] : NULL;
}

/* Empties index slot s, moving back the entries after it that probing would no longer reach. */
static void index_remove(struct dw_cgroups *c, size_t s)
{
	size_t next = s;

	c->index[s] = 0;
	for (;;) {
		size_t home;

		next = (next + 1) & c->index_mask;
		if (!c->index[next])
			return;
		home = slot_of(c, c->entries[c->index[next] - 1].id);
		/* it stays when its home is cyclically in (s, next]: probing still reaches it */
		if (((next - home) & c->index_mask) < ((next - s) & c->index_mask))
			continue;
		c->index[s] = c->index[next];
		c->index[next] = 0;
		s = next;
	}
}

/* The least recently used entry, dropped; its place is returned for reuse. */
static struct entry *evict(struct dw_cgroups *c)
{
	struct entry *old = &c->entries[0];

	for (size_t i = 1; i < c->n; i++)
		if (c->entries[i].used < old->used)
			old = &c->entries[i];
	index_remove(c, probe(c, old->id));
	c->st.evicted++;
	return old;
}

/* A place for id (which is not cached), dropping the least recently used when full. */
static struct entry *insert(struct dw_cgroups *c, uint64_t id)
{
	struct entry *e = c->n < c->max ? &c->entries[c->n++] : evict(c);

	free(e->path);
	memset(e, 0, sizeof(*e));
	e->id = id;
	e->used = c->tick;
	c->index[probe(c, id)] = (uint32_t)(e - c->entries) + 1;
	return e;
}

static void remember(struct dw_cgroups *c, uint64_t id, const char *path)
{
	struct entry *e = find(c, id);

	if (!e)
		e = insert(c, id);
	e->provisional = false;
	e->used = c->tick;
	free(e->path);
	e->path = strdup(path);
	dw_cgname_of_path(path, &e->name);
}

static void remember_gone(struct dw_cgroups *c, uint64_t id, bool provisional)
{
	struct entry *e = find(c, id);

	if (!e)
		e = insert(c, id);
	e->provisional = provisional;
	e->used = c->tick;
	free(e->path);
	e->path = NULL;
	dw_cgname_gone(id, &e->name);
	c->st.gone += !provisional;
}

struct dw_cgroups *dw_cgroups_new(const char *root, size_t max_names, unsigned flags)
{
	struct dw_cgroups *c = calloc(1, sizeof(*c));
	size_t slots = 64;
	struct statfs fs;
	struct stat st;

	if (!c)
		return NULL;
	c->root_fd = -1;
	c->max = max_names ? max_names : DW_CGROUPS_CACHE_DEFAULT;
	if (c->max > UINT32_MAX / 4) {
		errno = EINVAL;
		goto err_free;
	}
	/* as readlink of a handle's descriptor will write it: no symlink, no '/' at the end */
	if (!realpath(root, c->root))
		goto err_free;
	while (slots < 2 * c->max)
		slots *= 2;
	c->index_mask = slots - 1;
	c->entries = calloc(c->max, sizeof(*c->entries));
	c->index = calloc(slots, sizeof(*c->index));
	if (!c->entries || !c->index)
		goto err_free;
	c->root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->root_fd < 0 || fstat(c->root_fd, &st))
		goto err_free;
	c->dev = st.st_dev;
	/* elsewhere a kernfs handle means nothing, and ESTALE would not mean gone */
	c->handles = !(flags & DW_CGROUPS_NO_HANDLES) && !fstatfs(c->root_fd, &fs) &&
		     fs.f_type == CGROUP2_SUPER_MAGIC;
	return c;

err_free:
	dw_cgroups_free(c);
	return NULL;
}

void dw_cgroups_free(struct dw_cgroups *c)
{
	int saved = errno;

	if (!c)
		return;
	if (c->root_fd >= 0)
		close(c->root_fd);
	for (size_t i = 0; c->entries && i < c->n; i++)
		free(c->entries[i].path);
	free(c->entries);
	free(c->index);
	free(c);
	errno = saved;
}

const struct dw_cgname *dw_cgroups_lookup(struct dw_cgroups *c, uint64_t id)
{
	struct entry *e = id ? find(c, id) : NULL;

	if (!e)
		return NULL;
	e->used = ++c->tick;
	return &e->name;
}

void dw_cgroups_stats(const struct dw_cgroups *c, struct dw_cgroups_stats *st)
{
	*st = c->st;
	st->names = c->n;
	st->handles_on = c->handles;
}

/* ---- by file handle ---- */

enum by_handle { FOUND, GONE, UNKNOWN };

/* The path of an open cgroup directory, relative to the root, into path (PATH_MAX). */
static enum by_handle path_of_fd(const struct dw_cgroups *c, int fd, char *path)
{
	static const char deleted[] = " (deleted)";
	char link[32], abs[PATH_MAX];
	size_t rootlen = strlen(c->root);
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, abs, sizeof(abs) - 1);
	if (n < 0 || n == sizeof(abs) - 1)
		return UNKNOWN;
	abs[n] = '\0';
	/* removed between the open and the readlink */
	if ((size_t)n >= sizeof(deleted) - 1 && !strcmp(abs + n - (sizeof(deleted) - 1), deleted))
		return GONE;
	/* "/" as the root: every path is under it, as it is */
	if (!strcmp(c->root, "/"))
		rootlen = 0;
	if (strncmp(abs, c->root, rootlen) || (abs[rootlen] != '/' && abs[rootlen] != '\0'))
		return UNKNOWN;	/* another mount of it, or another namespace: the walk will tell */
	snprintf(path, PATH_MAX, "%s", abs + rootlen);
	return FOUND;
}

/* The cgroup2 file handle is the 8-byte cgroup id itself. */
static enum by_handle by_handle(struct dw_cgroups *c, uint64_t id, char *path)
{
	struct {
		struct file_handle fh;
		uint64_t id;
	} h = { .fh = { .handle_bytes = sizeof(uint64_t), .handle_type = FILEID_KERNFS } };
	enum by_handle r;
	int fd;

	memcpy(h.fh.f_handle, &id, sizeof(id));
	fd = open_by_handle_at(c->root_fd, &h.fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ESTALE || errno == ENOENT)
			return GONE;
		/* no CAP_DAC_READ_SEARCH (any more), or not cgroupfs: walk from now on */
		if (errno == EPERM || errno == EOPNOTSUPP || errno == EINVAL || errno == EBADF)
			c->handles = false;
		return UNKNOWN;
	}
	r = path_of_fd(c, fd, path);
	close(fd);
	return r;
}

/* ---- by walking the tree ---- */

struct wanted {
	uint64_t id;
	bool found;
};

struct walk {
	struct dw_cgroups *c;
	struct wanted *want;		/* sorted by id */
	size_t nwant, nfound;
	char path[PATH_MAX];		/* relative to the root: "" or "/a/b" */
	size_t len;
	size_t dirs;
	bool incomplete;
};

static int cmp_wanted(const void *pa, const void *pb)
{
	const struct wanted *a = pa, *b = pb;

	return a->id < b->id ? -1 : a->id > b->id;
}

static void walk_found(struct walk *w, uint64_t ino)
{
	struct wanted key = { .id = ino }, *hit;

	hit = bsearch(&key, w->want, w->nwant, sizeof(*w->want), cmp_wanted);
	if (!hit || hit->found)
		return;
	hit->found = true;
	w->nfound++;
	remember(w->c, ino, w->path);
}

static void walk_dir(struct walk *w, int fd, unsigned depth);

/* One entry of a directory: a cgroup when it is a directory on the same mount. */
static void walk_entry(struct walk *w, int dfd, const char *name, unsigned depth)
{
	size_t len = w->len, n = strlen(name);
	struct stat st;
	int fd;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
		/* removed since readdir saw it: not one of ours any more */
		w->incomplete |= errno != ENOENT;
		return;
	}
	if (!S_ISDIR(st.st_mode) || st.st_dev != w->c->dev)
		return;
	if (len + 1 + n >= sizeof(w->path)) {
		w->incomplete = true;
		return;
	}
	w->path[len] = '/';
	memcpy(w->path + len + 1, name, n + 1);
	w->len = len + 1 + n;
	walk_found(w, st.st_ino);
	if (depth + 1 >= DW_CGROUPS_MAX_DEPTH || ++w->dirs > DW_CGROUPS_MAX_DIRS) {
		w->incomplete = true;
	} else if ((fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
		walk_dir(w, fd, depth + 1);
	} else {
		w->incomplete |= errno != ENOENT;
	}
	w->len = len;
	w->path[len] = '\0';
}

/* Takes fd (a directory) and closes it. */
static void walk_dir(struct walk *w, int fd, unsigned depth)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;

	if (!d) {
		close(fd);
		w->incomplete = true;
		return;
	}
	while (w->nfound < w->nwant && (de = readdir(d))) {
		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		walk_entry(w, dirfd(d), de->d_name, depth);
	}
	closedir(d);
}

/* One walk for all of want; what it does not find is gone (for now, if incomplete). */
static void walk_tree(struct dw_cgroups *c, struct wanted *want, size_t n)
{
	struct walk w = { .c = c, .want = want, .nwant = n };
	struct stat st;
	int fd;

	qsort(want, n, sizeof(*want), cmp_wanted);
	c->st.walks++;
	if (!fstat(c->root_fd, &st))
		walk_found(&w, st.st_ino);
	fd = openat(c->root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		w.incomplete = true;
	else if (w.nfound < n)
		walk_dir(&w, fd, 0);
	else
		close(fd);
	c->st.incomplete += w.incomplete;
	for (size_t i = 0; i < n; i++)
		if (!want[i].found)
			remember_gone(c, want[i].id, w.incomplete);
}

/* ---- resolving ---- */

/*
 * A cgroup removed since it was named is gone:<id> from then on (its
 * connections may outlive it): each cached id of ids whose path no longer
 * leads to it is looked for again (renamed: the walk finds its new path;
 * removed: the walk marks it gone). One fstatat per cached id.
 */
static void recheck(struct dw_cgroups *c, const uint64_t *ids, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct entry *e = ids[i] ? find(c, ids[i]) : NULL;
		struct stat st;

		if (!e || !e->path || e->provisional)
			continue;
		if (fstatat(c->root_fd, e->path[0] == '/' ? e->path + 1 : ".", &st, AT_SYMLINK_NOFOLLOW)) {
			/* cannot tell: keep the name */
			if (errno != ENOENT && errno != ENOTDIR)
				continue;
		} else if (st.st_ino == e->id && st.st_dev == c->dev) {
			continue;
		}
		e->provisional = true;
	}
}

/*
 * The ids of ids[] to look for, sorted, once each: the provisional ones, and
 * as many new ones as there is room for beside the cached ids in ids, which
 * are marked used now so that none of them is evicted for a new one.
 */
static size_t pending(struct dw_cgroups *c, const uint64_t *ids, size_t n, struct wanted *want)
{
	size_t ncand = 0, np = 0, touched = 0, room;

	for (size_t i = 0; i < n; i++) {
		struct entry *e = ids[i] ? find(c, ids[i]) : NULL;

		if (e && e->used != c->tick) {
			e->used = c->tick;
			touched++;
		}
		if (ids[i] && (!e || e->provisional))
			want[ncand++] = (struct wanted){ .id = ids[i] };
	}
	qsort(want, ncand, sizeof(*want), cmp_wanted);
	room = c->max - touched;
	for (size_t i = 0; i < ncand; i++) {
		if (i && want[i].id == want[i - 1].id)
			continue;
		if (!find(c, want[i].id)) {
			if (!room) {
				c->st.deferred++;
				continue;
			}
			room--;
		}
		want[np++] = want[i];
	}
	return np;
}

/* By handle where it works; what it cannot tell stays in want (compacted), for the walk. */
static size_t try_handles(struct dw_cgroups *c, struct wanted *want, size_t n)
{
	char path[PATH_MAX];
	size_t left = 0;

	for (size_t i = 0; i < n; i++) {
		enum by_handle r = c->handles ? by_handle(c, want[i].id, path) : UNKNOWN;

		if (r == FOUND) {
			remember(c, want[i].id, path);
			c->st.handles++;
		} else if (r == GONE) {
			remember_gone(c, want[i].id, false);
		} else {
			want[left++] = want[i];
		}
	}
	return left;
}

int dw_cgroups_resolve(struct dw_cgroups *c, const uint64_t *ids, size_t n)
{
	struct wanted *want;
	size_t np, left;

	if (!n)
		return 0;
	want = calloc(n, sizeof(*want));
	if (!want)
		return -ENOMEM;
	c->tick++;
	recheck(c, ids, n);
	np = pending(c, ids, n, want);
	left = try_handles(c, want, np);
	if (left)
		walk_tree(c, want, left);
	free(want);
	return (int)(np > INT_MAX ? INT_MAX : np);
}
