/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The TLS discovery's pure half (issue 32; user/discovery/tls/ does the I/O): what a
 * mapped ELF object is by its name and symbols, what that makes of a
 * process (traced, opaque and why, nothing of TLS), and the two bounded
 * tables: distinct files by (dev, inode), so that each gets its uprobes
 * once, and the processes seen.
 */
#ifndef DW_TLSFIND_H
#define DW_TLSFIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Symbols an object's .dynsym or .symtab holds, as bits (user/discovery/tls/elfsyms.c reads them). */
enum {
	DW_TLS_SYM_SSL_WRITE = 1u << 0,
	DW_TLS_SYM_SSL_WRITE_EX = 1u << 1,
	DW_TLS_SYM_SSL_READ = 1u << 2,
	DW_TLS_SYM_SSL_READ_EX = 1u << 3,
	DW_TLS_SYM_SSL_FREE = 1u << 4,
	DW_TLS_SYM_BORINGSSL = 1u << 5,	/* BORINGSSL_self_test, or any BORINGSSL_* symbol */
	DW_TLS_SYM_GNUTLS = 1u << 6,	/* gnutls_record_send */
	DW_TLS_SYM_RUSTLS = 1u << 7,	/* a symbol whose name holds "rustls" (Rust's mangling keeps it) */
	DW_TLS_SYM_NSS = 1u << 8,	/* PR_Write with SSL_ImportFD: NSS */
	DW_TLS_SYM_OTHER = 1u << 9,	/* mbedtls_ssl_write, wolfSSL_write */
	DW_TLS_SYM_ANY = 1u << 10,	/* the object has symbols at all (else: stripped) */
	/* from the object's read-only data, for those without symbols to tell */
	DW_TLS_SYM_OPENSSL_TEXT = 1u << 11,	/* "OpenSSL 1." or "OpenSSL 3." in .rodata: OpenSSL is inside */
	DW_TLS_SYM_GO_TLS = 1u << 12,	/* "crypto/tls.(*Conn).Write" in .gopclntab: Go's own TLS */
};
/* The two an object must export for its uprobes: without either nothing is attached. */
#define DW_TLS_SYM_NEEDED (DW_TLS_SYM_SSL_WRITE | DW_TLS_SYM_SSL_READ)

/* What an object is to the discovery. The order is how specific a process's reason is. */
enum dw_tls_kind {
	DW_TLS_KIND_NONE,	/* nothing of TLS */
	DW_TLS_KIND_OPENSSL,	/* exports SSL_write and SSL_read: uprobes attach */
	DW_TLS_KIND_BORINGSSL,	/* BoringSSL's API: the same symbols, uprobes attach */
	DW_TLS_KIND_STRIPPED,	/* named like a TLS library (libssl*, libboringssl*) without SSL_write/SSL_read */
	DW_TLS_KIND_STATIC,	/* OpenSSL linked into a program without its symbols (its version text shows) */
	DW_TLS_KIND_GNUTLS,	/* libgnutls: another API, not probed */
	DW_TLS_KIND_NSS,	/* libnss3/libssl3 (NSS): not probed */
	DW_TLS_KIND_OTHERLIB,	/* mbedTLS, wolfSSL: not probed */
	DW_TLS_KIND_GO,		/* a Go program using crypto/tls: no C library */
	DW_TLS_KIND_RUSTLS,	/* a program with rustls inside: no stable symbols */
	DW_TLS_KIND_JAVA,	/* libjvm: JSSE is Java code, no library to probe */
	DW_TLS_KIND_NKINDS,
};

/* From the object's path as the maps show it and the symbols it holds. */
enum dw_tls_kind dw_tls_classify(const char *path, unsigned syms);
/* Whether uprobes attach to objects of this kind. */
bool dw_tls_kind_attachable(enum dw_tls_kind k);
/* The kind's name in status ("openssl", "gnutls", ...). */
const char *dw_tls_kind_name(enum dw_tls_kind k);
/* Why a process with only this kind stays opaque; NULL for NONE and the attachable kinds. */
const char *dw_tls_kind_why(enum dw_tls_kind k);

/* --- distinct files, by (dev, inode) --- */

enum dw_tls_file_state {
	DW_TLS_FILE_UNREAD,	/* just added: its symbols are to be read */
	DW_TLS_FILE_PLAIN,	/* read: nothing to attach (its kind says whether it is TLS) */
	DW_TLS_FILE_ATTACHED,	/* every present symbol has its uprobes */
	DW_TLS_FILE_FAILED,	/* an attach failed: none are left on it (why says why) */
};

#define DW_TLS_FILES_MAX 4096	/* distinct executable files (most are no TLS: each is read once) */
#define DW_TLS_PATH_LEN 160

struct dw_tls_file {
	uint64_t dev, ino;	/* as /proc/PID/maps shows them; ino 0: a free entry */
	enum dw_tls_file_state state;
	enum dw_tls_kind kind;
	unsigned syms;		/* DW_TLS_SYM_* */
	unsigned probes;	/* uprobes attached on it */
	uint64_t seen_gen;	/* the discovery's full scan during which a process last mapped it */
	char path[DW_TLS_PATH_LEN];	/* as the first process that mapped it names it */
	char why[200];		/* FAILED: the attach's error */
};

struct dw_tls_files {
	struct dw_tls_file e[DW_TLS_FILES_MAX];	/* open addressing, linear probe */
	unsigned used;
	uint64_t full;		/* files not taken in because the table was full */
};

/* The file's entry, or NULL. */
struct dw_tls_file *dw_tls_files_find(struct dw_tls_files *t, uint64_t dev, uint64_t ino);
/*
 * The file's entry, added UNREAD if new (*added true). NULL when the table
 * is full (counted in t->full): such a file is never attached, its
 * processes are opaque ("bounded"). Keeps a quarter free so probes stay short.
 */
struct dw_tls_file *dw_tls_files_get(struct dw_tls_files *t, uint64_t dev, uint64_t ino,
				     const char *path, bool *added);

/*
 * A file found again under another path than it was read under: an inode
 * number the filesystem gave to a new file after the old one was deleted
 * (a rebuilt program). Unless uprobes hold it (ATTACHED: the kernel keeps a
 * reference, the number cannot be reused), it is to be read again (UNREAD,
 * the new path). A path cut to DW_TLS_PATH_LEN compares on what was kept.
 */
void dw_tls_file_recheck(struct dw_tls_file *f, const char *path);

/* --- processes --- */

#define DW_TLS_PROCS_MAX 1024	/* processes with TLS (traced or opaque) remembered for status */
#define DW_TLS_PROC_FILES 4	/* attached files remembered per process */

enum dw_tls_verdict {
	DW_TLS_NO_TLS,		/* no TLS library or sign of one */
	DW_TLS_TRACED,		/* maps at least one attached file */
	DW_TLS_OPAQUE,		/* TLS, but none of it is traced: reason says why */
};

struct dw_tls_proc {
	uint32_t pid;		/* 0: a free entry */
	uint64_t start;		/* its start time (/proc/PID/stat field 22): a reused pid is another */
	enum dw_tls_verdict verdict;
	enum dw_tls_kind kind;	/* OPAQUE: the kind the reason is about */
	bool bounded;		/* OPAQUE: a TLS library it maps found no room in the file table */
	bool failed;		/* OPAQUE: an attachable library whose attach failed */
	char comm[16];
	int nfiles;
	int files[DW_TLS_PROC_FILES];	/* indices into dw_tls_files.e of the attached files it maps */
};

struct dw_tls_procs {
	struct dw_tls_proc p[DW_TLS_PROCS_MAX];
	uint64_t full;		/* processes with TLS not remembered: the table was full */
};

/*
 * A process's verdict from its n mapped objects: their entries (NULL: not
 * taken in, the table was full) and paths. Traced if one is ATTACHED; else
 * opaque: "bounded" (a TLS-named object not taken in), a failed attach, or
 * the most specific kind (the enum's order); else no TLS. Fills everything
 * in *out but pid, start and comm.
 */
void dw_tls_judge(const struct dw_tls_files *t, struct dw_tls_file *const *objs,
		  const char *const *paths, size_t n, struct dw_tls_proc *out);
/* Why an opaque process is opaque, for status: "gnutls: ...", "bounded: ...". */
const char *dw_tls_proc_why(const struct dw_tls_proc *p);

/* Records p (by pid: a pid seen again is replaced); a process without TLS is forgotten. */
void dw_tls_procs_put(struct dw_tls_procs *t, const struct dw_tls_proc *p);
/* Forgets the processes alive() says are gone (alive: same pid and start). */
void dw_tls_procs_prune(struct dw_tls_procs *t, bool (*alive)(uint32_t pid, uint64_t start, void *arg),
			void *arg);

/* The host-wide figures status shows. */
struct dw_tls_counts {
	unsigned files_attached, files_failed, traced, opaque;
	unsigned opaque_by_kind[DW_TLS_KIND_NKINDS];
	unsigned opaque_bounded, opaque_failed;
};
void dw_tls_count(const struct dw_tls_files *f, const struct dw_tls_procs *p, struct dw_tls_counts *out);
/* How many remembered processes map file index i (traced ones). */
unsigned dw_tls_file_procs(const struct dw_tls_procs *p, int i);

#endif /* DW_TLSFIND_H */
