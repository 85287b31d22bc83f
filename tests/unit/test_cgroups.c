// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cgroup resolver on a tree of temporary directories (an inode number
 * there works as a cgroup id does on cgroupfs), and, as root with a cgroup v2
 * mount, on a real cgroup made for the test (skipped otherwise).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>

#include "dwtest.h"

#include "host/cgroups.h"

#define H1 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID "74c13223-5a00-11e9-b385-42010a80018d"

/* ---- helpers ---- */

static char tmp_root[64];

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

/* mkdir -p of rel under tmp_root; returns its inode number. */
static uint64_t mkdirs(const char *rel)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s%s", tmp_root, rel);
	for (char *p = path + strlen(tmp_root) + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		assert_true(!mkdir(path, 0755) || errno == EEXIST);
		*p = '/';
	}
	assert_true(!mkdir(path, 0755) || errno == EEXIST);
	assert_int_equal(stat(path, &st), 0);
	return st.st_ino;
}

static int remove_tree(const char *path)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	return system(cmd);
}

static int tree_setup(void **state)
{
	(void)state;
	snprintf(tmp_root, sizeof(tmp_root), "/tmp/dwtest-cgroups-XXXXXX");
	return mkdtemp(tmp_root) ? 0 : -1;
}

static int tree_teardown(void **state)
{
	(void)state;
	return remove_tree(tmp_root);
}

static void assert_name(struct dw_cgroups *c, uint64_t id, enum dw_cg_kind kind, const char *name)
{
	const struct dw_cgname *n = dw_cgroups_lookup(c, id);

	if (!n)
		fail_msg("id %llu: not resolved, want %s", (unsigned long long)id, name);
	if (n->kind != kind || strcmp(n->name, name))
		fail_msg("id %llu: %s \"%s\", want %s \"%s\"", (unsigned long long)id,
			 dw_cg_kind_name(n->kind), n->name, dw_cg_kind_name(kind), name);
}

static void assert_gone(struct dw_cgroups *c, uint64_t id)
{
	char want[64];

	snprintf(want, sizeof(want), "gone:%llu", (unsigned long long)id);
	assert_name(c, id, DW_CG_PATH, want);
}

/* ---- the mount ---- */

static void test_mount_first_cgroup2(void **state)
{
	char mounts[PATH_MAX], dir[PATH_MAX];

	(void)state;
	snprintf(mounts, sizeof(mounts), "%s/mounts", tmp_root);
	write_file(mounts, "proc /proc proc rw 0 0\n"
			   "cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n"
			   "cgroup2 /sys/fs/cgroup/my\\040cgroups\\134v2 cgroup2 rw 0 0\n"
			   "cgroup2 /second cgroup2 rw 0 0\n");
	assert_int_equal(dw_cgroup2_mount(mounts, dir, sizeof(dir)), 0);
	assert_string_equal(dir, "/sys/fs/cgroup/my cgroups\\v2");
}

static void test_mount_none(void **state)
{
	char mounts[PATH_MAX], dir[PATH_MAX];

	(void)state;
	snprintf(mounts, sizeof(mounts), "%s/mounts", tmp_root);
	write_file(mounts, "proc /proc proc rw 0 0\ncgroup /sys/fs/cgroup/cpu cgroup rw 0 0\n"
			   "cgroup2fake /x cgroup2fake rw 0 0\nshort\n\n");
	assert_int_equal(dw_cgroup2_mount(mounts, dir, sizeof(dir)), -ENOENT);
	write_file(mounts, "");
	assert_int_equal(dw_cgroup2_mount(mounts, dir, sizeof(dir)), -ENOENT);
	snprintf(mounts, sizeof(mounts), "%s/no-such-file", tmp_root);
	assert_int_equal(dw_cgroup2_mount(mounts, dir, sizeof(dir)), -ENOENT);
}

static void test_mount_too_long(void **state)
{
	char mounts[PATH_MAX], dir[8];

	(void)state;
	snprintf(mounts, sizeof(mounts), "%s/mounts", tmp_root);
	write_file(mounts, "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n");
	assert_int_equal(dw_cgroup2_mount(mounts, dir, sizeof(dir)), -ENAMETOOLONG);
}

/* This machine's own: wherever it is, a directory; none is fine too. */
static void test_mount_real(void **state)
{
	char dir[PATH_MAX];
	struct stat st;
	int err;

	(void)state;
	err = dw_cgroup2_mount(NULL, dir, sizeof(dir));
	if (err == -ENOENT)
		skip();
	assert_int_equal(err, 0);
	assert_int_equal(stat(dir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
}

/* ---- the walk, on a temporary tree ---- */

static void test_walk_names(void **state)
{
	char root[PATH_MAX];
	uint64_t ids[6];
	struct dw_cgroups *c;
	struct dw_cgroups_stats st;

	(void)state;
	ids[0] = mkdirs("/tree/system.slice/payments-api.service");
	ids[1] = mkdirs("/tree/system.slice/docker-" H1 ".scope");
	ids[2] = mkdirs("/tree/kubepods/burstable/pod" UID "/" H1);
	ids[3] = mkdirs("/tree/user.slice/user-1000.slice/session-3.scope");
	ids[4] = mkdirs("/tree/odd/place");
	ids[5] = mkdirs("/tree");
	snprintf(root, sizeof(root), "%s/tree", tmp_root);
	c = dw_cgroups_new(root, 0, DW_CGROUPS_NO_HANDLES);
	assert_non_null(c);
	assert_int_equal(dw_cgroups_resolve(c, ids, 6), 6);
	assert_name(c, ids[0], DW_CG_UNIT, "payments-api.service");
	assert_name(c, ids[1], DW_CG_CONTAINER, "docker:0123456789ab");
	assert_name(c, ids[2], DW_CG_POD, "pod:" UID "/0123456789ab");
	assert_string_equal(dw_cgroups_lookup(c, ids[2])->pod, UID);
	assert_name(c, ids[3], DW_CG_UNIT, "session-3 (user 1000)");
	assert_name(c, ids[4], DW_CG_PATH, "/odd/place");
	assert_name(c, ids[5], DW_CG_PATH, "/");
	dw_cgroups_stats(c, &st);
	assert_int_equal(st.walks, 1);
	assert_int_equal(st.incomplete, 0);
	assert_int_equal(st.names, 6);
	assert_int_equal(st.handles_on, 0);

	/* cached: no second walk */
	assert_int_equal(dw_cgroups_resolve(c, ids, 6), 0);
	dw_cgroups_stats(c, &st);
	assert_int_equal(st.walks, 1);
	dw_cgroups_free(c);
}

/* Several unknown ids in one call: one walk; repeats and id 0 are ignored. */
static void test_one_walk_per_call(void **state)
{
	uint64_t a = mkdirs("/w/a.service"), b = mkdirs("/w/b.service");
	uint64_t ids[] = { a, 0, b, a, 999999999999ULL, b, 999999999999ULL };
	char root[PATH_MAX];
	struct dw_cgroups *c;
	struct dw_cgroups_stats st;

	(void)state;
	snprintf(root, sizeof(root), "%s/w", tmp_root);
	c = dw_cgroups_new(root, 0, 0); /* not cgroupfs: handles are off by themselves */
	assert_non_null(c);
	dw_cgroups_stats(c, &st);
	assert_int_equal(st.handles_on, 0);
	assert_int_equal(dw_cgroups_resolve(c, ids, sizeof(ids) / sizeof(ids[0])), 3);
	assert_name(c, a, DW_CG_UNIT, "a.service");
	assert_name(c, b, DW_CG_UNIT, "b.service");
	assert_gone(c, 999999999999ULL);
	assert_null(dw_cgroups_lookup(c, 0));
	assert_null(dw_cgroups_lookup(c, 12345));
	dw_cgroups_stats(c, &st);
	assert_int_equal(st.walks, 1);
	assert_int_equal(st.gone, 1);
	/* gone is final: ids are not reused, so no walk for it again */
	assert_int_equal(dw_cgroups_resolve(c, ids, sizeof(ids) / sizeof(ids[0])), 0);
	dw_cgroups_stats(c, &st);
	assert_int_equal(st.walks, 1);
	dw_cgroups_free(c);
}

/*
 * A name outlives its directory until the id is asked about again; one
 * removed before it was seen is gone.
 */
static void test_removed(void **state)
{
	char root[PATH_MAX], path[PATH_MAX];
	uint64_t kept, lost;
	struct dw_cgroups *c;

	(void)state;
	kept = mkdirs("/r/kept.service");
	lost = mkdirs("/r/lost.service");
	snprintf(root, sizeof(root), "%s/r", tmp_root);
	c = dw_cgroups_new(root, 0, DW_CGROUPS_NO_HANDLES);
	assert_non_null(c);
	assert_int_equal(dw_cgroups_resolve(c, &kept, 1), 1);
	snprintf(path, sizeof(path), "%s/r/kept.service", tmp_root);
	assert_int_equal(rmdir(path), 0);
	snprintf(path, sizeof(path), "%s/r/lost.service", tmp_root);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(dw_cgroups_resolve(c, &lost, 1), 1);
	assert_name(c, kept, DW_CG_UNIT, "kept.service");
	assert_gone(c, lost);
	/* asked about again (its connections outlive it): its path is checked, and it is gone */
	assert_int_equal(dw_cgroups_resolve(c, &kept, 1), 1);
	assert_gone(c, kept);
	dw_cgroups_free(c);
}

/* A cgroup renamed after it was named is looked for again: its new name, not gone. */
static void test_renamed(void **state)
{
	char root[PATH_MAX], from[PATH_MAX], to[PATH_MAX];
	struct dw_cgroups_stats st;
	struct dw_cgroups *c;
	uint64_t id;

	(void)state;
	id = mkdirs("/n/old.service");
	snprintf(root, sizeof(root), "%s/n", tmp_root);
	c = dw_cgroups_new(root, 0, DW_CGROUPS_NO_HANDLES);
	assert_non_null(c);
	assert_int_equal(dw_cgroups_resolve(c, &id, 1), 1);
	assert_name(c, id, DW_CG_UNIT, "old.service");
	/* unchanged: one fstatat, no walk */
	assert_int_equal(dw_cgroups_resolve(c, &id, 1), 0);
	dw_cgroups_stats(c, &st);
	assert_int_equal(st.walks, 1);
	snprintf(from, sizeof(from), "%s/n/old.service", tmp_root);
	snprintf(to, sizeof(to), "%s/n/new.service", tmp_root);
	assert_int_equal(rename(from, to), 0);
	assert_int_equal(dw_cgroups_resolve(c, &id, 1), 1);
	assert_name(c, id, DW_CG_UNIT, "new.service");
	dw_cgroups_free(c);
}

/* Hundreds of new ids across a nested tree: one walk names them all; a file's inode is no cgroup. */
static void test_many_ids_one_walk(void **state)
{
	char rel[96], root[PATH_MAX], file[PATH_MAX];
	uint64_t ids[401];
	struct dw_cgroups *c;
	struct dw_cgroups_stats st;
	struct stat sb;

	(void)state;
	for (int i = 0; i < 400; i++) {
		snprintf(rel, sizeof(rel), "/many/s%d.slice/u%d.service", i % 20, i);
		ids[i] = mkdirs(rel);
	}
	snprintf(file, sizeof(file), "%s/many/s0.slice/u0.service/cgroup.procs", tmp_root);
	write_file(file, "");
	assert_int_equal(stat(file, &sb), 0);
	ids[400] = sb.st_ino;
	snprintf(root, sizeof(root), "%s/many", tmp_root);
	c = dw_cgroups_new(root, 0, DW_CGROUPS_NO_HANDLES);
	assert_non_null(c);
	assert_int_equal(dw_cgroups_resolve(c, ids, 401), 401);
	for (int i = 0; i < 400; i++) {
		snprintf(rel, sizeof(rel), "u%d.service", i);
		assert_name(c, ids[i], DW_CG_UNIT, rel);
	}
	assert_gone(c, ids[400]);
	dw_cgroups_stats(c, &st);
	assert_int_equal(st.walks, 1);
	assert_int_equal(st.names, 401);
	dw_cgroups_free(c);
}

/* Full cache: the ids of this call stay, the others wait; the least recently used go first. */
static void test_cache_bounded(void **state)
{
	char root[PATH_MAX], rel[64];
	uint64_t ids[6], named[4], unnamed[2];
	struct dw_cgroups *c;
	struct dw_cgroups_stats st;
	int nn = 0, nu = 0;

	(void)state;
	for (int i = 0; i < 6; i++) {
		snprintf(rel, sizeof(rel), "/b/u%d.service", i);
		ids[i] = mkdirs(rel);
	}
	snprintf(root, sizeof(root), "%s/b", tmp_root);
	c = dw_cgroups_new(root, 4, DW_CGROUPS_NO_HANDLES);
	assert_non_null(c);
	assert_int_equal(dw_cgroups_resolve(c, ids, 6), 4);
	dw_cgroups_stats(c, &st);
	assert_int_equal(st.names, 4);
	assert_int_equal(st.deferred, 2);
	assert_int_equal(st.evicted, 0);
	/* which 4 does not matter, only that 4 are; the other 2 wait */
	for (int i = 0; i < 6; i++) {
		if (dw_cgroups_lookup(c, ids[i]))
			named[nn++] = ids[i];
		else
			unnamed[nu++] = ids[i];
	}
	assert_int_equal(nn, 4);
	assert_int_equal(nu, 2);

	/* two of the named are used since: the other two make room */
	dw_cgroups_lookup(c, named[2]);
	dw_cgroups_lookup(c, named[3]);
	assert_int_equal(dw_cgroups_resolve(c, unnamed, 2), 2);
	dw_cgroups_stats(c, &st);
	assert_int_equal(st.names, 4);
	assert_int_equal(st.evicted, 2);
	assert_null(dw_cgroups_lookup(c, named[0]));
	assert_null(dw_cgroups_lookup(c, named[1]));
	assert_non_null(dw_cgroups_lookup(c, named[2]));
	assert_non_null(dw_cgroups_lookup(c, named[3]));
	assert_non_null(dw_cgroups_lookup(c, unnamed[0]));
	assert_non_null(dw_cgroups_lookup(c, unnamed[1]));
	dw_cgroups_free(c);
}

/* Many ids through a small cache: the index stays consistent through evictions. */
static void test_cache_churn(void **state)
{
	char root[PATH_MAX];
	struct dw_cgroups *c;
	uint64_t seed = 7, id;
	struct dw_cgroups_stats st;

	(void)state;
	mkdirs("/churn");
	snprintf(root, sizeof(root), "%s/churn", tmp_root);
	c = dw_cgroups_new(root, 16, DW_CGROUPS_NO_HANDLES);
	assert_non_null(c);
	for (int round = 0; round < 300; round++) {
		uint64_t ids[8];

		for (int i = 0; i < 8; i++)
			ids[i] = 1000000 + dwt_rand(&seed) % 64;
		assert_true(dw_cgroups_resolve(c, ids, 8) >= 0);
		for (int i = 0; i < 8; i++)
			assert_gone(c, ids[i]);
	}
	dw_cgroups_stats(c, &st);
	assert_true(st.names <= 16);
	assert_true(st.evicted > 0);
	/* every cached id is found by lookup exactly as its name says */
	for (id = 1000000; id < 1000064; id++) {
		const struct dw_cgname *n = dw_cgroups_lookup(c, id);
		char want[32];

		if (!n)
			continue;
		snprintf(want, sizeof(want), "gone:%llu", (unsigned long long)id);
		assert_string_equal(n->name, want);
	}
	dw_cgroups_free(c);
}

/* Too deep to see: gone for now, looked for again next time (and then found, if shallower). */
static void test_incomplete_walk_retries(void **state)
{
	char rel[512], root[PATH_MAX], from[PATH_MAX], to[PATH_MAX];
	struct dw_cgroups *c;
	struct dw_cgroups_stats st;
	uint64_t id;
	size_t n;

	(void)state;
	n = snprintf(rel, sizeof(rel), "/deep");
	for (int i = 0; i < DW_CGROUPS_MAX_DEPTH + 2; i++)
		n += snprintf(rel + n, sizeof(rel) - n, "/d");
	snprintf(rel + n, sizeof(rel) - n, "/x.service");
	id = mkdirs(rel);
	snprintf(root, sizeof(root), "%s/deep", tmp_root);
	c = dw_cgroups_new(root, 0, DW_CGROUPS_NO_HANDLES);
	assert_non_null(c);
	assert_int_equal(dw_cgroups_resolve(c, &id, 1), 1);
	assert_gone(c, id);
	dw_cgroups_stats(c, &st);
	assert_int_equal(st.incomplete, 1);
	assert_int_equal(st.gone, 0);

	/* move it up (same inode): the next call looks again and finds it */
	snprintf(from, sizeof(from), "%s%s", tmp_root, rel);
	snprintf(to, sizeof(to), "%s/deep/x.service", tmp_root);
	assert_int_equal(rename(from, to), 0);
	assert_int_equal(dw_cgroups_resolve(c, &id, 1), 1);
	assert_name(c, id, DW_CG_UNIT, "x.service");
	dw_cgroups_stats(c, &st);
	assert_int_equal(st.walks, 2);
	dw_cgroups_free(c);
}

static void test_new_bad_root(void **state)
{
	char root[PATH_MAX];

	(void)state;
	snprintf(root, sizeof(root), "%s/no-such-dir", tmp_root);
	errno = 0;
	assert_null(dw_cgroups_new(root, 0, 0));
	assert_int_equal(errno, ENOENT);
	dw_cgroups_free(NULL);
}

/* ---- a real cgroup (root, cgroup v2 mounted) ---- */

/* The cgroup id the kernel gives BPF: the kernfs id in the directory's file handle. */
static uint64_t kernel_cgroup_id(const char *path)
{
	struct {
		struct file_handle fh;
		uint64_t id;
	} h = { .fh = { .handle_bytes = sizeof(uint64_t) } };
	int mount_id;
	uint64_t id;

	assert_int_equal(name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, 0), 0);
	assert_int_equal(h.fh.handle_bytes, sizeof(uint64_t));
	memcpy(&id, h.fh.f_handle, sizeof(id));
	return id;
}

/* A child moved into cg tells what /proc/self/cgroup says of it ("0::/dwtest-..."). */
static void child_view(const char *cg, char *line, size_t len)
{
	char procs[PATH_MAX], pid[32];
	int to_child[2], from_child[2];
	pid_t child;
	ssize_t n;

	assert_int_equal(pipe(to_child), 0);
	assert_int_equal(pipe(from_child), 0);
	child = fork();
	assert_true(child >= 0);
	if (!child) {
		char go, buf[512] = "";
		FILE *f;

		if (read(to_child[0], &go, 1) != 1)
			_exit(1);
		f = fopen("/proc/self/cgroup", "re");
		while (f && fgets(buf, sizeof(buf), f) && strncmp(buf, "0::", 3))
			;
		if (write(from_child[1], buf, strlen(buf)) < 0)
			_exit(1);
		_exit(0);
	}
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
	snprintf(pid, sizeof(pid), "%d\n", (int)child);
	write_file(procs, pid);
	assert_int_equal(write(to_child[1], "g", 1), 1);
	close(from_child[1]);
	n = read(from_child[0], line, len - 1);
	line[n > 0 ? n : 0] = '\0';
	assert_int_equal(waitpid(child, NULL, 0), child);
	close(to_child[0]);
	close(to_child[1]);
	close(from_child[0]);
}

/* rmdir of a cgroup whose last task just exited can see it busy for a moment. */
static void rmdir_retry(const char *path)
{
	for (int i = 0; i < 200; i++) {
		if (!rmdir(path))
			return;
		assert_int_equal(errno, EBUSY);
		nanosleep(&(struct timespec){ 0, 5000000 }, NULL);
	}
	fail_msg("rmdir %s: still busy", path);
}

static void real_cgroup(unsigned flags)
{
	char mnt[256], slash[260], cg[512], line[512], want[600];
	struct dw_cgroups *c;
	struct dw_cgroups_stats st;
	struct stat sb;
	uint64_t id;

	if (geteuid() != 0 || dw_cgroup2_mount(NULL, mnt, sizeof(mnt)))
		skip();
	snprintf(cg, sizeof(cg), "%s/dwtest-%d-%u", mnt, (int)getpid(), flags);
	if (mkdir(cg, 0755))
		skip(); /* not writable here (a container): nothing to test */
	assert_int_equal(stat(cg, &sb), 0);
	id = kernel_cgroup_id(cg);
	assert_true(id == sb.st_ino);

	child_view(cg, line, sizeof(line));
	snprintf(want, sizeof(want), "0::/dwtest-%d-%u\n", (int)getpid(), flags);
	assert_string_equal(line, want);

	/* a '/' at the end of the root changes nothing */
	snprintf(slash, sizeof(slash), "%s/", mnt);
	c = dw_cgroups_new(slash, 0, flags);
	assert_non_null(c);
	assert_int_equal(dw_cgroups_resolve(c, &id, 1), 1);
	snprintf(want, sizeof(want), "/dwtest-%d-%u", (int)getpid(), flags);
	assert_name(c, id, DW_CG_PATH, want);
	dw_cgroups_stats(c, &st);
	if (flags & DW_CGROUPS_NO_HANDLES) {
		assert_int_equal(st.walks, 1);
	} else {
		assert_int_equal(st.handles, 1);
		assert_int_equal(st.walks, 0);
	}
	dw_cgroups_free(c);

	rmdir_retry(cg);
	c = dw_cgroups_new(mnt, 0, flags);
	assert_non_null(c);
	assert_int_equal(dw_cgroups_resolve(c, &id, 1), 1);
	assert_gone(c, id);
	dw_cgroups_stats(c, &st);
	assert_int_equal(st.gone, 1);
	assert_int_equal(st.incomplete, 0);
	dw_cgroups_free(c);
}

static void test_real_cgroup_walk(void **state)
{
	(void)state;
	real_cgroup(DW_CGROUPS_NO_HANDLES);
}

static void test_real_cgroup_handle(void **state)
{
	(void)state;
	real_cgroup(0);
}

/* Root without CAP_DAC_READ_SEARCH in its effective set; 0 when done. */
static int drop_dac_read_search(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return -1;
	data[0].effective &= ~(1u << CAP_DAC_READ_SEARCH);
	return syscall(SYS_capset, &hdr, data) ? -1 : 0;
}

/*
 * A daemon that dropped its capabilities: the handle fails with EPERM, is
 * turned off, and the same call walks instead. In a child, which exits with
 * the step that failed (0: all good).
 */
static int without_cap_child(const char *mnt, uint64_t id, const char *want)
{
	const struct dw_cgname *n;
	struct dw_cgroups_stats st;
	struct dw_cgroups *c;

	if (drop_dac_read_search())
		return 1;
	c = dw_cgroups_new(mnt, 0, 0);
	if (!c)
		return 2;
	dw_cgroups_stats(c, &st);
	if (!st.handles_on)
		return 3;
	if (dw_cgroups_resolve(c, &id, 1) != 1)
		return 4;
	n = dw_cgroups_lookup(c, id);
	if (!n || strcmp(n->name, want))
		return 5;
	dw_cgroups_stats(c, &st);
	if (st.handles_on || st.handles || st.walks != 1)
		return 6;
	dw_cgroups_free(c);
	return 0;
}

static void test_real_cgroup_handle_without_cap(void **state)
{
	char mnt[256], cg[512], want[600];
	struct stat sb;
	pid_t child;
	int status;

	(void)state;
	if (geteuid() != 0 || dw_cgroup2_mount(NULL, mnt, sizeof(mnt)))
		skip();
	snprintf(cg, sizeof(cg), "%s/dwtest-%d-nocap", mnt, (int)getpid());
	if (mkdir(cg, 0755))
		skip();
	assert_int_equal(stat(cg, &sb), 0);
	snprintf(want, sizeof(want), "/dwtest-%d-nocap", (int)getpid());
	child = fork();
	assert_true(child >= 0);
	if (!child)
		_exit(without_cap_child(mnt, sb.st_ino, want));
	assert_int_equal(waitpid(child, &status, 0), child);
	rmdir_retry(cg);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mount_first_cgroup2),
		cmocka_unit_test(test_mount_none),
		cmocka_unit_test(test_mount_too_long),
		cmocka_unit_test(test_mount_real),
		cmocka_unit_test(test_walk_names),
		cmocka_unit_test(test_one_walk_per_call),
		cmocka_unit_test(test_removed),
		cmocka_unit_test(test_renamed),
		cmocka_unit_test(test_many_ids_one_walk),
		cmocka_unit_test(test_cache_bounded),
		cmocka_unit_test(test_cache_churn),
		cmocka_unit_test(test_incomplete_walk_retries),
		cmocka_unit_test(test_new_bad_root),
		cmocka_unit_test(test_real_cgroup_walk),
		cmocka_unit_test(test_real_cgroup_handle),
		cmocka_unit_test(test_real_cgroup_handle_without_cap),
	};

	return cmocka_run_group_tests(tests, tree_setup, tree_teardown);
}
