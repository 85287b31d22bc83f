// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The TLS discovery's pure half (tlsfind.h): kinds, verdicts, the file and process tables. */
#include <string.h>
#include "logic/discovery/tlsfind.h"

static const struct {
	const char *name;
	const char *why;	/* why a process with only this stays opaque */
} kinds[DW_TLS_KIND_NKINDS] = {
	[DW_TLS_KIND_NONE] = { "none", NULL },
	[DW_TLS_KIND_OPENSSL] = { "openssl", NULL },
	[DW_TLS_KIND_BORINGSSL] = { "boringssl", NULL },
	[DW_TLS_KIND_STRIPPED] = { "stripped", "a TLS library without SSL_write/SSL_read in its symbols (stripped)" },
	[DW_TLS_KIND_STATIC] = { "static", "OpenSSL linked into the program without its symbols (static, stripped)" },
	[DW_TLS_KIND_GNUTLS] = { "gnutls", "GnuTLS: another API than OpenSSL's, not probed" },
	[DW_TLS_KIND_NSS] = { "nss", "NSS: another API than OpenSSL's, not probed" },
	[DW_TLS_KIND_OTHERLIB] = { "otherlib", "mbedTLS or wolfSSL: an unknown library to depwatch, not probed" },
	[DW_TLS_KIND_GO] = { "go", "Go's crypto/tls: no C library to probe" },
	[DW_TLS_KIND_RUSTLS] = { "rustls", "rustls inside the program: no stable symbols to probe" },
	[DW_TLS_KIND_JAVA] = { "java", "Java: TLS is JSSE's Java code in the JVM, no library to probe" },
};

/* The file name without its directories, for the name patterns. */
static const char *base(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

enum dw_tls_kind dw_tls_classify(const char *path, unsigned syms)
{
	const char *b = base(path);

	/* the API first: whatever the name, an object that exports it is probed */
	if ((syms & DW_TLS_SYM_NEEDED) == DW_TLS_SYM_NEEDED && !(syms & DW_TLS_SYM_NSS))
		return syms & DW_TLS_SYM_BORINGSSL ? DW_TLS_KIND_BORINGSSL : DW_TLS_KIND_OPENSSL;
	if (starts(b, "libgnutls") || (syms & DW_TLS_SYM_GNUTLS))
		return DW_TLS_KIND_GNUTLS;
	/* NSS's own libssl3.so is no OpenSSL: tell it before the libssl name */
	if (starts(b, "libnss3") || starts(b, "libssl3.") || (syms & DW_TLS_SYM_NSS))
		return DW_TLS_KIND_NSS;
	if (starts(b, "libmbedtls") || starts(b, "libwolfssl") || (syms & DW_TLS_SYM_OTHER))
		return DW_TLS_KIND_OTHERLIB;
	if (starts(b, "libssl") || starts(b, "libboringssl"))
		return DW_TLS_KIND_STRIPPED;
	if (starts(b, "libjvm.so"))
		return DW_TLS_KIND_JAVA;
	if (syms & DW_TLS_SYM_RUSTLS)
		return DW_TLS_KIND_RUSTLS;
	if (syms & DW_TLS_SYM_GO_TLS)
		return DW_TLS_KIND_GO;
	/* libcrypto holds the version text too, and alone it is no TLS (hashes, ssh) */
	if ((syms & DW_TLS_SYM_OPENSSL_TEXT) && !starts(b, "libcrypto"))
		return DW_TLS_KIND_STATIC;
	return DW_TLS_KIND_NONE;
}

bool dw_tls_kind_attachable(enum dw_tls_kind k)
{
	return k == DW_TLS_KIND_OPENSSL || k == DW_TLS_KIND_BORINGSSL;
}

const char *dw_tls_kind_name(enum dw_tls_kind k)
{
	return k < DW_TLS_KIND_NKINDS ? kinds[k].name : "?";
}

const char *dw_tls_kind_why(enum dw_tls_kind k)
{
	return k < DW_TLS_KIND_NKINDS ? kinds[k].why : NULL;
}

static size_t slot_of(uint64_t dev, uint64_t ino)
{
	uint64_t h = (dev * 0x9e3779b97f4a7c15ULL) ^ (ino * 0xc2b2ae3d27d4eb4fULL);

	return (size_t)((h ^ (h >> 29)) % DW_TLS_FILES_MAX);
}

struct dw_tls_file *dw_tls_files_find(struct dw_tls_files *t, uint64_t dev, uint64_t ino)
{
	if (!ino)
		return NULL;
	for (size_t i = slot_of(dev, ino), n = 0; n < DW_TLS_FILES_MAX; i = (i + 1) % DW_TLS_FILES_MAX, n++) {
		struct dw_tls_file *f = &t->e[i];

		if (!f->ino)
			return NULL;
		if (f->dev == dev && f->ino == ino)
			return f;
	}
	return NULL;
}

struct dw_tls_file *dw_tls_files_get(struct dw_tls_files *t, uint64_t dev, uint64_t ino,
				     const char *path, bool *added)
{
	struct dw_tls_file *f = dw_tls_files_find(t, dev, ino);

	*added = false;
	if (f || !ino)
		return f;
	if (t->used >= DW_TLS_FILES_MAX / 4 * 3) {
		t->full++;
		return NULL;
	}
	for (size_t i = slot_of(dev, ino);; i = (i + 1) % DW_TLS_FILES_MAX)
		if (!t->e[i].ino) {
			f = &t->e[i];
			break;
		}
	memset(f, 0, sizeof(*f));
	f->dev = dev;
	f->ino = ino;
	f->state = DW_TLS_FILE_UNREAD;
	/* a path longer than the room is cut; it is only shown */
	strncpy(f->path, path, sizeof(f->path) - 1);
	t->used++;
	*added = true;
	return f;
}

void dw_tls_file_recheck(struct dw_tls_file *f, const char *path)
{
	if (f->state == DW_TLS_FILE_ATTACHED || f->state == DW_TLS_FILE_UNREAD ||
	    !strncmp(f->path, path, sizeof(f->path) - 1))
		return;
	f->state = DW_TLS_FILE_UNREAD;
	f->syms = 0;
	f->kind = DW_TLS_KIND_NONE;
	f->why[0] = 0;
	memset(f->path, 0, sizeof(f->path));
	strncpy(f->path, path, sizeof(f->path) - 1);
}

void dw_tls_judge(const struct dw_tls_files *t, struct dw_tls_file *const *objs,
		  const char *const *paths, size_t n, struct dw_tls_proc *out)
{
	out->verdict = DW_TLS_NO_TLS;
	out->kind = DW_TLS_KIND_NONE;
	out->bounded = out->failed = false;
	out->nfiles = 0;
	for (size_t i = 0; i < n; i++) {
		const struct dw_tls_file *f = objs[i];

		if (!f) {
			/* not read (the table was full): only a name that says TLS counts */
			if (dw_tls_classify(paths[i], 0) != DW_TLS_KIND_NONE)
				out->bounded = true;
			continue;
		}
		if (f->state == DW_TLS_FILE_ATTACHED) {
			out->verdict = DW_TLS_TRACED;
			if (out->nfiles < DW_TLS_PROC_FILES)
				out->files[out->nfiles++] = (int)(f - t->e);
			continue;
		}
		if (f->state == DW_TLS_FILE_FAILED)
			out->failed = true;
		else if (f->kind > out->kind && !dw_tls_kind_attachable(f->kind))
			out->kind = f->kind;
	}
	if (out->verdict == DW_TLS_TRACED) {
		out->kind = DW_TLS_KIND_NONE;
		out->bounded = out->failed = false;
		return;
	}
	if (out->kind != DW_TLS_KIND_NONE || out->failed || out->bounded)
		out->verdict = DW_TLS_OPAQUE;
}

const char *dw_tls_proc_why(const struct dw_tls_proc *p)
{
	if (p->verdict != DW_TLS_OPAQUE)
		return NULL;
	if (p->bounded)
		return "bounded: a TLS library it maps found the file table full (DW_TLS_FILES_MAX)";
	if (p->failed)
		return "attach failed: its TLS library's uprobes could not be attached (status tls.files says why)";
	return dw_tls_kind_why(p->kind);
}

void dw_tls_procs_put(struct dw_tls_procs *t, const struct dw_tls_proc *p)
{
	struct dw_tls_proc *free_e = NULL;

	for (size_t i = 0; i < DW_TLS_PROCS_MAX; i++) {
		if (t->p[i].pid == p->pid) {
			if (p->verdict == DW_TLS_NO_TLS)
				t->p[i].pid = 0;
			else
				t->p[i] = *p;
			return;
		}
		if (!t->p[i].pid && !free_e)
			free_e = &t->p[i];
	}
	if (p->verdict == DW_TLS_NO_TLS)
		return;
	if (!free_e) {
		t->full++;
		return;
	}
	*free_e = *p;
}

void dw_tls_procs_prune(struct dw_tls_procs *t, bool (*alive)(uint32_t pid, uint64_t start, void *arg),
			void *arg)
{
	for (size_t i = 0; i < DW_TLS_PROCS_MAX; i++)
		if (t->p[i].pid && !alive(t->p[i].pid, t->p[i].start, arg))
			t->p[i].pid = 0;
}

void dw_tls_count(const struct dw_tls_files *f, const struct dw_tls_procs *p, struct dw_tls_counts *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < DW_TLS_FILES_MAX; i++) {
		if (!f->e[i].ino)
			continue;
		out->files_attached += f->e[i].state == DW_TLS_FILE_ATTACHED;
		out->files_failed += f->e[i].state == DW_TLS_FILE_FAILED;
	}
	for (size_t i = 0; i < DW_TLS_PROCS_MAX; i++) {
		const struct dw_tls_proc *q = &p->p[i];

		if (!q->pid)
			continue;
		if (q->verdict == DW_TLS_TRACED) {
			out->traced++;
			continue;
		}
		out->opaque++;
		if (q->bounded)
			out->opaque_bounded++;
		else if (q->failed)
			out->opaque_failed++;
		else
			out->opaque_by_kind[q->kind]++;
	}
}

unsigned dw_tls_file_procs(const struct dw_tls_procs *p, int i)
{
	unsigned n = 0;

	for (size_t k = 0; k < DW_TLS_PROCS_MAX; k++)
		for (int j = 0; p->p[k].pid && j < p->p[k].nfiles; j++)
			n += p->p[k].files[j] == i;
	return n;
}
