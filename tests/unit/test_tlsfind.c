// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The TLS discovery's pure half (logic/discovery/tlsfind.c): kinds, verdicts, the file and process tables. */
#include "dwtest.h"

#include <stdlib.h>
#include "logic/discovery/tlsfind.h"

#define OPENSSL_SYMS (DW_TLS_SYM_NEEDED | DW_TLS_SYM_SSL_WRITE_EX | DW_TLS_SYM_SSL_READ_EX | DW_TLS_SYM_ANY)

static void test_classify(void **state)
{
	(void)state;
	assert_int_equal(dw_tls_classify("/usr/lib/x86_64-linux-gnu/libssl.so.3", OPENSSL_SYMS), DW_TLS_KIND_OPENSSL);
	assert_int_equal(dw_tls_classify("/opt/x/libssl.so.1.1", DW_TLS_SYM_NEEDED), DW_TLS_KIND_OPENSSL);
	/* a program that links OpenSSL in and exports it: probed whatever its name */
	assert_int_equal(dw_tls_classify("/usr/sbin/nginx-static", DW_TLS_SYM_NEEDED | DW_TLS_SYM_ANY),
			 DW_TLS_KIND_OPENSSL);
	assert_int_equal(dw_tls_classify("/x/libssl.so", DW_TLS_SYM_NEEDED | DW_TLS_SYM_BORINGSSL),
			 DW_TLS_KIND_BORINGSSL);
	/* half the API is not enough */
	assert_int_equal(dw_tls_classify("/x/libssl.so.3", DW_TLS_SYM_SSL_WRITE), DW_TLS_KIND_STRIPPED);
	assert_int_equal(dw_tls_classify("/x/libssl.so.3", 0), DW_TLS_KIND_STRIPPED);
	assert_int_equal(dw_tls_classify("/usr/lib/libgnutls.so.30", DW_TLS_SYM_ANY), DW_TLS_KIND_GNUTLS);
	assert_int_equal(dw_tls_classify("/usr/lib/libfoo.so", DW_TLS_SYM_GNUTLS), DW_TLS_KIND_GNUTLS);
	/* NSS's libssl3.so exports SSL_* of its own: it is no OpenSSL */
	assert_int_equal(dw_tls_classify("/usr/lib/libssl3.so", DW_TLS_SYM_NSS), DW_TLS_KIND_NSS);
	assert_int_equal(dw_tls_classify("/usr/lib/libssl3.so", 0), DW_TLS_KIND_NSS);
	assert_int_equal(dw_tls_classify("/usr/lib/libmbedtls.so.14", 0), DW_TLS_KIND_OTHERLIB);
	assert_int_equal(dw_tls_classify("/jdk/lib/server/libjvm.so", DW_TLS_SYM_ANY), DW_TLS_KIND_JAVA);
	assert_int_equal(dw_tls_classify("/usr/bin/svc", DW_TLS_SYM_RUSTLS | DW_TLS_SYM_ANY), DW_TLS_KIND_RUSTLS);
	assert_int_equal(dw_tls_classify("/usr/lib/libc.so.6", DW_TLS_SYM_ANY), DW_TLS_KIND_NONE);
	/* no symbols to tell: what the read-only data says */
	assert_int_equal(dw_tls_classify("/usr/local/bin/proxy", DW_TLS_SYM_OPENSSL_TEXT), DW_TLS_KIND_STATIC);
	assert_int_equal(dw_tls_classify("/usr/lib/libcrypto.so.3", DW_TLS_SYM_OPENSSL_TEXT | DW_TLS_SYM_ANY),
			 DW_TLS_KIND_NONE);
	/* a program that exports the API has its version text too: it is probed */
	assert_int_equal(dw_tls_classify("/usr/local/bin/proxy", DW_TLS_SYM_OPENSSL_TEXT | DW_TLS_SYM_NEEDED),
			 DW_TLS_KIND_OPENSSL);
	assert_int_equal(dw_tls_classify("/usr/local/bin/gosvc", DW_TLS_SYM_GO_TLS), DW_TLS_KIND_GO);
	assert_int_equal(dw_tls_classify("libsslx", 0), DW_TLS_KIND_STRIPPED);
	assert_true(dw_tls_kind_attachable(DW_TLS_KIND_OPENSSL));
	assert_true(dw_tls_kind_attachable(DW_TLS_KIND_BORINGSSL));
	assert_false(dw_tls_kind_attachable(DW_TLS_KIND_GNUTLS));
	for (int k = 0; k < DW_TLS_KIND_NKINDS; k++) {
		assert_non_null(dw_tls_kind_name(k));
		/* every kind that is TLS but not probed says why */
		assert_int_equal(dw_tls_kind_why(k) != NULL, k != DW_TLS_KIND_NONE && !dw_tls_kind_attachable(k));
	}
}

static void test_files_dedupe_by_dev_inode(void **state)
{
	struct dw_tls_files *t = calloc(1, sizeof(*t));
	struct dw_tls_file *a, *b, *c;
	bool added;

	(void)state;
	a = dw_tls_files_get(t, 0xfd01, 42, "/usr/lib/libssl.so.3", &added);
	assert_non_null(a);
	assert_true(added);
	assert_int_equal(a->state, DW_TLS_FILE_UNREAD);
	/* the same file under another name (a container's view of the same inode): one entry */
	b = dw_tls_files_get(t, 0xfd01, 42, "/proc/7/root/usr/lib/libssl.so.3", &added);
	assert_ptr_equal(a, b);
	assert_false(added);
	assert_string_equal(b->path, "/usr/lib/libssl.so.3");
	/* a container's own copy: same inode number on another device is another file */
	c = dw_tls_files_get(t, 0x2b, 42, "/usr/lib/libssl.so.3", &added);
	assert_true(added);
	assert_ptr_not_equal(a, c);
	assert_int_equal(t->used, 2);
	assert_ptr_equal(dw_tls_files_find(t, 0x2b, 42), c);
	assert_null(dw_tls_files_find(t, 0x2b, 43));
	/* inode 0 (no file) is never taken */
	assert_null(dw_tls_files_get(t, 1, 0, "x", &added));
	free(t);
}

static void test_reused_inode_is_read_again(void **state)
{
	struct dw_tls_files *t = calloc(1, sizeof(*t));
	struct dw_tls_file *f;
	bool added;
	char longp[300];

	(void)state;
	f = dw_tls_files_get(t, 1, 7, "/tmp/build/old-tool", &added);
	f->state = DW_TLS_FILE_PLAIN;
	f->kind = DW_TLS_KIND_RUSTLS;
	/* the same path: the file known */
	dw_tls_file_recheck(f, "/tmp/build/old-tool");
	assert_int_equal(f->state, DW_TLS_FILE_PLAIN);
	/* the inode number given to another file: read it again */
	dw_tls_file_recheck(f, "/tmp/dwtest-1/depwatch");
	assert_int_equal(f->state, DW_TLS_FILE_UNREAD);
	assert_int_equal(f->kind, DW_TLS_KIND_NONE);
	assert_string_equal(f->path, "/tmp/dwtest-1/depwatch");
	/* uprobes pin the inode: never reused while attached, never read again */
	f->state = DW_TLS_FILE_ATTACHED;
	dw_tls_file_recheck(f, "/other/view/libssl.so.3");
	assert_int_equal(f->state, DW_TLS_FILE_ATTACHED);
	/* a long path, kept cut, is the same path */
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = 0;
	f->state = DW_TLS_FILE_PLAIN;
	dw_tls_file_recheck(f, longp);
	f->state = DW_TLS_FILE_PLAIN;
	dw_tls_file_recheck(f, longp);
	assert_int_equal(f->state, DW_TLS_FILE_PLAIN);
	free(t);
}

static void test_files_bounded(void **state)
{
	struct dw_tls_files *t = calloc(1, sizeof(*t));
	unsigned taken = 0;
	bool added;

	(void)state;
	for (uint64_t i = 1; i <= DW_TLS_FILES_MAX; i++)
		taken += dw_tls_files_get(t, 1, i, "/x", &added) != NULL;
	assert_int_equal(taken, DW_TLS_FILES_MAX / 4 * 3);
	assert_int_equal(t->full, DW_TLS_FILES_MAX - taken);
	/* those in stay found, by a probe that terminates */
	for (uint64_t i = 1; i <= taken; i++)
		assert_non_null(dw_tls_files_find(t, 1, i));
	assert_null(dw_tls_files_find(t, 1, DW_TLS_FILES_MAX));
	free(t);
}

static struct dw_tls_file *file(struct dw_tls_files *t, uint64_t ino, const char *path, unsigned syms,
				enum dw_tls_file_state st)
{
	bool added;
	struct dw_tls_file *f = dw_tls_files_get(t, 1, ino, path, &added);

	f->syms = syms;
	f->kind = dw_tls_classify(path, syms);
	f->state = st;
	return f;
}

static void test_judge(void **state)
{
	struct dw_tls_files *t = calloc(1, sizeof(*t));
	struct dw_tls_file *libc = file(t, 1, "/lib/libc.so.6", DW_TLS_SYM_ANY, DW_TLS_FILE_PLAIN);
	struct dw_tls_file *ssl = file(t, 2, "/lib/libssl.so.3", OPENSSL_SYMS, DW_TLS_FILE_ATTACHED);
	struct dw_tls_file *gnutls = file(t, 3, "/lib/libgnutls.so.30", DW_TLS_SYM_ANY, DW_TLS_FILE_PLAIN);
	struct dw_tls_file *jvm = file(t, 4, "/jdk/libjvm.so", DW_TLS_SYM_ANY, DW_TLS_FILE_PLAIN);
	struct dw_tls_file *bad = file(t, 5, "/opt/libssl.so.3", OPENSSL_SYMS, DW_TLS_FILE_FAILED);
	struct dw_tls_proc p;

	(void)state;
	{
		struct dw_tls_file *o[] = { libc };
		const char *paths[] = { libc->path };

		dw_tls_judge(t, o, paths, 1, &p);
		assert_int_equal(p.verdict, DW_TLS_NO_TLS);
		assert_null(dw_tls_proc_why(&p));
	}
	{
		/* traced wins over an opaque library beside it */
		struct dw_tls_file *o[] = { libc, gnutls, ssl };
		const char *paths[] = { libc->path, gnutls->path, ssl->path };

		dw_tls_judge(t, o, paths, 3, &p);
		assert_int_equal(p.verdict, DW_TLS_TRACED);
		assert_int_equal(p.nfiles, 1);
		assert_ptr_equal(&t->e[p.files[0]], ssl);
	}
	{
		struct dw_tls_file *o[] = { libc, gnutls };
		const char *paths[] = { libc->path, gnutls->path };

		dw_tls_judge(t, o, paths, 2, &p);
		assert_int_equal(p.verdict, DW_TLS_OPAQUE);
		assert_int_equal(p.kind, DW_TLS_KIND_GNUTLS);
		assert_non_null(strstr(dw_tls_proc_why(&p), "GnuTLS"));
	}
	{
		/* the more specific reason: a JVM that maps GnuTLS too is Java */
		struct dw_tls_file *o[] = { gnutls, jvm };
		const char *paths[] = { gnutls->path, jvm->path };

		dw_tls_judge(t, o, paths, 2, &p);
		assert_int_equal(p.kind, DW_TLS_KIND_JAVA);
	}
	{
		struct dw_tls_file *o[] = { libc, bad };
		const char *paths[] = { libc->path, bad->path };

		dw_tls_judge(t, o, paths, 2, &p);
		assert_int_equal(p.verdict, DW_TLS_OPAQUE);
		assert_true(p.failed);
		assert_non_null(strstr(dw_tls_proc_why(&p), "attach failed"));
	}
	{
		/* not taken in: a libssl is opaque "bounded", a library of another name no TLS */
		struct dw_tls_file *o[] = { libc, NULL };
		const char *paths[] = { libc->path, "/lib/libz.so.1" };

		dw_tls_judge(t, o, paths, 2, &p);
		assert_int_equal(p.verdict, DW_TLS_NO_TLS);
		paths[1] = "/lib/libssl.so.3";
		dw_tls_judge(t, o, paths, 2, &p);
		assert_int_equal(p.verdict, DW_TLS_OPAQUE);
		assert_true(p.bounded);
		assert_non_null(strstr(dw_tls_proc_why(&p), "bounded"));
	}
	free(t);
}

static bool odd_alive(uint32_t pid, uint64_t start, void *arg)
{
	(void)start;
	(void)arg;
	return pid % 2;
}

static void test_procs_table_and_counts(void **state)
{
	struct dw_tls_files *f = calloc(1, sizeof(*f));
	struct dw_tls_procs *t = calloc(1, sizeof(*t));
	struct dw_tls_file *ssl = file(f, 2, "/lib/libssl.so.3", OPENSSL_SYMS, DW_TLS_FILE_ATTACHED);
	struct dw_tls_proc p = { .verdict = DW_TLS_TRACED, .nfiles = 1, .files = { (int)(ssl - f->e) } };
	struct dw_tls_counts c;

	(void)state;
	for (uint32_t pid = 1; pid <= 10; pid++) {
		p.pid = pid;
		dw_tls_procs_put(t, &p);
	}
	/* pid 10 seen again without TLS (it exec'd something else): forgotten */
	p = (struct dw_tls_proc){ .pid = 10, .verdict = DW_TLS_NO_TLS };
	dw_tls_procs_put(t, &p);
	p = (struct dw_tls_proc){ .pid = 11, .verdict = DW_TLS_OPAQUE, .kind = DW_TLS_KIND_GNUTLS };
	dw_tls_procs_put(t, &p);
	dw_tls_count(f, t, &c);
	assert_int_equal(c.files_attached, 1);
	assert_int_equal(c.traced, 9);
	assert_int_equal(c.opaque, 1);
	assert_int_equal(c.opaque_by_kind[DW_TLS_KIND_GNUTLS], 1);
	/* one file, shared by nine processes */
	assert_int_equal(dw_tls_file_procs(t, (int)(ssl - f->e)), 9);
	dw_tls_procs_prune(t, odd_alive, NULL);
	dw_tls_count(f, t, &c);
	assert_int_equal(c.traced, 5);
	assert_int_equal(c.opaque, 1);
	/* bounded: a full table counts what it could not keep */
	p = (struct dw_tls_proc){ .verdict = DW_TLS_OPAQUE, .kind = DW_TLS_KIND_JAVA };
	for (uint32_t pid = 101; pid < 101 + DW_TLS_PROCS_MAX; pid += 2) {
		p.pid = pid;
		dw_tls_procs_put(t, &p);
	}
	assert_int_equal(t->full, 0);
	for (uint32_t pid = 5001; pid < 5001 + DW_TLS_PROCS_MAX; pid++) {
		p.pid = pid;
		dw_tls_procs_put(t, &p);
	}
	assert_int_equal(t->full, DW_TLS_PROCS_MAX - (DW_TLS_PROCS_MAX - 6 - DW_TLS_PROCS_MAX / 2));
	free(f);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_files_dedupe_by_dev_inode),
		cmocka_unit_test(test_reused_inode_is_read_again),
		cmocka_unit_test(test_files_bounded),
		cmocka_unit_test(test_judge),
		cmocka_unit_test(test_procs_table_and_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
