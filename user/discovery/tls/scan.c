// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Reading processes' maps for the TLS discovery (tls.h): every executable
 * file mapping, each distinct file (dev, inode) read for its symbols once
 * and, if it exports OpenSSL's API, given its uprobes once; then the
 * process's verdict (logic/discovery/tlsfind.c) for status.
 */
#include <ctype.h>
#include <dirent.h>
#include <glob.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include "host/clock.h"
#include "host/log.h"
#include "logic/base/jsonw.h"
#include "discovery/golang/goattach.h"
#include "discovery/tls/elfsyms.h"
#include "discovery/tls/tls.h"

#define PROC_OBJS_MAX 512	/* distinct executable files one process maps, judged (more are rare) */

struct proc_objs {
	struct dw_tls_file *f[PROC_OBJS_MAX];
	const char *path[PROC_OBJS_MAX];
	uint64_t dev[PROC_OBJS_MAX], ino[PROC_OBJS_MAX];
	char paths[PROC_OBJS_MAX][DW_TLS_PATH_LEN];
	size_t n;
};

/*
 * A file's path for a log line, escaped (dw_escape_text): it is the name a
 * process mapped it by, any bytes but NUL, and the log goes to a terminal
 * or the journal. b is the caller's, freed by it.
 */
static const char *shown(struct dw_buf *b, const char *path)
{
	dw_escape_text(b, path, strlen(path));
	dw_buf_putc(b, '\0');
	return b->data && !b->oom ? b->data : "?";
}

/* Gives f its uprobes (f is ATTACHED or FAILED after), opening it as pid sees it. */
static void attach(struct dw_tls *t, struct dw_tls_file *f, const char *root, const struct dw_tls_elf *e)
{
	struct dw_buf p = { 0 };
	char why[200];
	int err;

	if (t->natt == DW_TLS_ATTACHED_MAX) {
		f->state = DW_TLS_FILE_FAILED;
		snprintf(f->why, sizeof(f->why), "more than %d TLS files (DW_TLS_ATTACHED_MAX)", DW_TLS_ATTACHED_MAX);
		return;
	}
	err = dw_tls_attach_file(t->obj, root, e, &t->att[t->natt].links, why, sizeof(why));
	if (err) {
		f->state = DW_TLS_FILE_FAILED;
		dw_warn("tls: cannot attach the uprobes to %s: %s; its processes stay opaque", shown(&p, f->path), why);
		dw_buf_free(&p);
		snprintf(f->why, sizeof(f->why), "%s", why);
		return;
	}
	f->state = DW_TLS_FILE_ATTACHED;
	f->probes = t->att[t->natt].links.n;
	t->att[t->natt++].file = (int)(f - t->files->e);
	dw_info("tls: %u uprobes on %s (%s, dev %u:%u inode %llu; reads at %s, writes at %s)", f->probes,
		shown(&p, f->path), dw_tls_kind_name(f->kind), major(f->dev), minor(f->dev), (unsigned long long)f->ino,
		e->offset[DW_TLS_FN_READ_INNER] ? "the inner function" : "the API", e->offset[DW_TLS_FN_WRITE_INNER] ? "the inner function" : "the API");
	dw_buf_free(&p);
}

/*
 * A Go program using crypto/tls: its own uprobes (user/discovery/golang/goattach.c), or FAILED with
 * the reason (a version before the register ABI, an unknown layout) for status. The call goes
 * one way, down: golang/ includes nothing of tls/, only the links both fill (tlslinks.h).
 */
static void attach_go(struct dw_tls *t, struct dw_tls_file *f, const char *root)
{
	struct dw_buf p = { 0 };
	char why[200];

	if (t->natt == DW_TLS_ATTACHED_MAX) {
		f->state = DW_TLS_FILE_FAILED;
		snprintf(f->why, sizeof(f->why), "more than %d TLS files (DW_TLS_ATTACHED_MAX)", DW_TLS_ATTACHED_MAX);
		return;
	}
	if (dw_go_attach_file(t->obj, root, &t->att[t->natt].links, why, sizeof(why))) {
		/* the process went while we read it (a short program): the next one to run it tries again */
		if (access(root, F_OK)) {
			f->state = DW_TLS_FILE_UNREAD;
			return;
		}
		f->state = DW_TLS_FILE_FAILED;
		dw_warn("tls: Go program %s not probed: %s; its connections stay TLS records", shown(&p, f->path), why);
		dw_buf_free(&p);
		snprintf(f->why, sizeof(f->why), "%s", why);
		return;
	}
	f->state = DW_TLS_FILE_ATTACHED;
	f->probes = t->att[t->natt].links.n;
	t->att[t->natt++].file = (int)(f - t->files->e);
	dw_info("tls: %u Go uprobes on %s (%s, dev %u:%u inode %llu)", f->probes, shown(&p, f->path), why,
		major(f->dev), minor(f->dev), (unsigned long long)f->ino);
	dw_buf_free(&p);
}

/* A file seen for the first time: its symbols, its kind, its uprobes if it takes them. */
static void read_file(struct dw_tls *t, struct dw_tls_file *f, uint32_t pid)
{
	char root[DW_TLS_PATH_LEN + 32], err[200];
	struct dw_tls_elf e;

	/* through the process's root: a container's own copy is opened in its own filesystem */
	snprintf(root, sizeof(root), "/proc/%u/root%s", pid, f->path);
	if (dw_tls_elf_read(root, &e, err, sizeof(err))) {
		/* not ELF or unreadable: judged by its name alone (a libssl is "stripped") */
		e = (struct dw_tls_elf){ 0 };
	}
	f->syms = e.syms;
	f->kind = dw_tls_classify(f->path, f->syms);
	f->state = DW_TLS_FILE_PLAIN;
	if (dw_tls_kind_attachable(f->kind))
		attach(t, f, root, &e);
	else if (f->kind == DW_TLS_KIND_GO)
		attach_go(t, f, root);
}

static bool seen(const struct proc_objs *o, uint64_t dev, uint64_t ino)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->dev[i] == dev && o->ino[i] == ino)
			return true;
	return false;
}

/* One line of /proc/PID/maps: an executable mapping of a file, as (dev, inode, path). */
static bool parse_line(char *line, uint64_t *dev, uint64_t *ino, char **path)
{
	unsigned maj, min;
	unsigned long long inode;
	char perms[8];
	const char *sp = strchr(line, ' ');
	int off = 0;
	size_t len;

	/* most lines are data or anonymous: told by the perms ("r-xp") and a path, before any sscanf */
	if (!sp || sp[3] != 'x' || !strchr(sp, '/'))
		return false;
	if (sscanf(line, "%*x-%*x %7s %*x %x:%x %llu %n", perms, &maj, &min, &inode, &off) < 4 || !off)
		return false;
	if (!strchr(perms, 'x') || !inode || line[off] != '/')
		return false;
	*path = line + off;
	len = strcspn(*path, "\n");
	(*path)[len] = 0;
	/* a file replaced since it was mapped: its path names another inode now */
	if (len > 10 && !strcmp(*path + len - 10, " (deleted)"))
		return false;
	*dev = makedev(maj, min);
	*ino = inode;
	return true;
}

static uint64_t start_time(uint32_t pid)
{
	char p[64], buf[1024], *s;
	unsigned long long start = 0;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%u/stat", pid);
	f = fopen(p, "re");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f) && (s = strrchr(buf, ')')))
		/* after the comm: state is field 3, starttime field 22 */
		sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
		       &start);
	fclose(f);
	return start;
}

static void comm_of(uint32_t pid, char *out, size_t len)
{
	char p[64];
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%u/comm", pid);
	out[0] = 0;
	f = fopen(p, "re");
	if (!f)
		return;
	if (fgets(out, (int)len, f))
		out[strcspn(out, "\n")] = 0;
	fclose(f);
}

void dw_tls_self_exe(struct dw_tls *t)
{
	struct stat st;

	if (stat("/proc/self/exe", &st))
		return;
	t->self_dev = st.st_dev;
	t->self_ino = st.st_ino;
}

/*
 * depwatch's own processes: the daemon, and any process running its
 * executable file (depwatch top, status, breaker: their HTTP library links
 * GnuTLS, their .rodata holds the very texts the discovery looks for).
 */
static bool is_own(const struct dw_tls *t, uint32_t pid)
{
	char path[64];
	struct stat st;

	if ((pid_t)pid == t->self)
		return true;
	if (!t->self_ino)
		return false;
	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	return !stat(path, &st) && st.st_dev == t->self_dev && st.st_ino == t->self_ino;
}

void dw_tls_scan_pid(struct dw_tls *t, uint32_t pid)
{
	static struct proc_objs o;	/* large; one scan at a time: the start's, then the discovery's thread */
	struct dw_tls_proc p = { .pid = pid };
	char path[64], *line = NULL;
	size_t cap = 0;
	FILE *maps;

	if (!t->on)
		return;
	if (is_own(t, pid)) {
		/* a pid that exec'd depwatch: whatever it was is gone from the table */
		dw_tls_procs_put(t->procs, &p);
		return;
	}
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	maps = fopen(path, "re");
	if (!maps) {
		/* gone already (a short program): nothing escaped; refused: it did */
		/* not a reason to detach nothing: one such process (PID 1 here) would keep every file */
		if (errno != ENOENT && errno != ESRCH)
			t->unreadable++;
		return;
	}
	t->scans++;
	o.n = 0;
	while (getline(&line, &cap, maps) > 0) {
		uint64_t dev, ino;
		char *name;
		bool added;

		if (!parse_line(line, &dev, &ino, &name) || seen(&o, dev, ino))
			continue;
		if (o.n == PROC_OBJS_MAX) {
			t->gen_partial = true;
			continue;
		}
		o.dev[o.n] = dev;
		o.ino[o.n] = ino;
		snprintf(o.paths[o.n], sizeof(o.paths[o.n]), "%s", name);
		o.path[o.n] = o.paths[o.n];
		o.f[o.n] = dw_tls_files_get(t->files, dev, ino, name, &added);
		if (o.f[o.n]) {
			dw_tls_file_recheck(o.f[o.n], name);
			o.f[o.n]->seen_gen = t->gen;
		}
		if (o.f[o.n] && o.f[o.n]->state == DW_TLS_FILE_UNREAD)
			read_file(t, o.f[o.n], pid);
		o.n++;
	}
	free(line);
	fclose(maps);
	dw_tls_judge(t->files, o.f, o.path, o.n, &p);
	p.pid = pid;
	if (p.verdict != DW_TLS_NO_TLS) {
		p.start = start_time(pid);
		comm_of(pid, p.comm, sizeof(p.comm));
	}
	dw_tls_procs_put(t->procs, &p);
}

static bool system_file(const char *path);

/*
 * After a full scan that read every process's maps: the uprobes come off
 * the files no process mapped during it or since (a program that ended, a
 * binary deleted and replaced by a deploy), but the host's own libssl's.
 * Else a host that runs many short-lived TLS programs (each build of a Go
 * service is a file of its own) keeps their uprobes, and their deleted
 * inodes, until the daemon stops, and the stop closes every link one after
 * the other (tls.c). A file seen again is read and attached again, at its
 * next process's start, or by the next full scan for a library dlopen()ed
 * more than 5 s after it. Not after the start's scan (nothing was attached
 * before it), nor after one that missed a process's objects.
 */
void dw_tls_detach_unmapped(struct dw_tls *t)
{
	if (!t->on || t->full_scans < 2 || t->gen_partial)
		return;
	for (unsigned i = 0; i < t->natt;) {
		struct dw_tls_file *f = &t->files->e[t->att[i].file];

		if (f->seen_gen == t->gen || system_file(f->path)) {
			i++;
			continue;
		}
		struct dw_buf p = { 0 };

		dw_info("tls: %u uprobes off %s: no process maps it (dev %u:%u inode %llu)", f->probes,
			shown(&p, f->path), major(f->dev), minor(f->dev), (unsigned long long)f->ino);
		dw_buf_free(&p);
		dw_tls_detach_file(&t->att[i].links);
		f->state = DW_TLS_FILE_UNREAD;
		f->probes = 0;
		t->detached++;
		t->att[i] = t->att[--t->natt];
	}
}

void dw_tls_scan_all(struct dw_tls *t)
{
	uint64_t t0 = dw_monotonic_ns();
	unsigned n = 0;
	struct dirent *de;
	DIR *d;

	if (!t->on)
		return;
	d = opendir("/proc");
	if (!d) {
		dw_warn("tls: cannot read /proc: %s", strerror(errno));
		return;
	}
	t->gen++;
	t->gen_partial = false;
	while ((de = readdir(d))) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);

		if (!isdigit((unsigned char)de->d_name[0]) || *end || !pid)
			continue;
		dw_tls_scan_pid(t, (uint32_t)pid);
		n++;
	}
	closedir(d);
	t->full_scans++;
	t->last_full_procs = n;
	t->last_full_ms = (double)(dw_monotonic_ns() - t0) / 1e6;
}

/*
 * The host's own OpenSSL, mapped by a process or not: its uprobes at
 * start, so that the first process to load it after the start is traced
 * from its first call (an exec's rescan comes milliseconds after the
 * program began; a short client can be done by then). Uprobes are on the
 * file: every later mapping of it has them.
 */
static const char *const system_libssl[] = {
	"/usr/lib/*/libssl.so.*", "/lib/*/libssl.so.*", "/usr/lib64/libssl.so.*", "/usr/lib/libssl.so.*",
};

static bool system_file(const char *path)
{
	for (size_t i = 0; i < sizeof(system_libssl) / sizeof(system_libssl[0]); i++)
		if (!fnmatch(system_libssl[i], path, FNM_PATHNAME))
			return true;
	return false;
}

void dw_tls_scan_system(struct dw_tls *t)
{
	if (!t->on)
		return;
	for (size_t i = 0; i < sizeof(system_libssl) / sizeof(system_libssl[0]); i++) {
		glob_t g;

		if (glob(system_libssl[i], 0, NULL, &g))
			continue;
		for (size_t j = 0; j < g.gl_pathc; j++) {
			struct dw_tls_file *f;
			struct stat st;
			bool added;

			if (stat(g.gl_pathv[j], &st) || !S_ISREG(st.st_mode))
				continue;
			f = dw_tls_files_get(t->files, st.st_dev, st.st_ino, g.gl_pathv[j], &added);
			if (f && f->state == DW_TLS_FILE_UNREAD)
				read_file(t, f, (uint32_t)t->self);
		}
		globfree(&g);
	}
}
