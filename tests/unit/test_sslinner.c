// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * OpenSSL's inner read and write functions (user/logic/discovery/sslinner.h): on Debian's own
 * libssl.so.3 through the symbol reader (user/discovery/tls/elfsyms.c), against binutils'
 * objdump (the first call in SSL_read_ex and SSL_read, and the instruction it lands on); then
 * hand-made wrappers, each breaking one condition of the proof.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dwtest.h"

#include "discovery/tls/elfsyms.h"
#include "logic/discovery/sslinner.h"

#define LIBSSL "/usr/lib/x86_64-linux-gnu/libssl.so.3"

/* objdump's first `call` in [addr, addr+64) of path: its target, or 0. */
static uint64_t objdump_first_call(const char *path, uint64_t addr)
{
	char cmd[512], line[512], op[32];
	unsigned long long a, target = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "objdump -d --no-show-raw-insn --start-address=0x%llx --stop-address=0x%llx '%s'",
		 (unsigned long long)addr, (unsigned long long)addr + 64, path);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (!target && sscanf(line, " %llx: %31s %llx", &a, op, &target) == 3 && strcmp(op, "call") &&
		    strcmp(op, "callq"))
			target = 0;
	pclose(f);
	return target;
}

/* objdump's first mnemonic at addr of path. */
static void objdump_first_op(const char *path, uint64_t addr, char *op, size_t oplen)
{
	char cmd[512], line[512], o[32];
	unsigned long long a;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "objdump -d --no-show-raw-insn --start-address=0x%llx --stop-address=0x%llx '%s'",
		 (unsigned long long)addr, (unsigned long long)addr + 16, path);
	f = popen(cmd, "r");
	assert_non_null(f);
	op[0] = 0;
	while (fgets(line, sizeof(line), f))
		if (!op[0] && sscanf(line, " %llx: %31s", &a, o) == 2 && a == addr)
			snprintf(op, oplen, "%s", o);
	pclose(f);
}

static void test_debian_libssl_against_objdump(void **state)
{
	static const struct {
		enum dw_tls_fn plain, ex, inner;
	} ops[] = {
		{ DW_TLS_FN_READ, DW_TLS_FN_READ_EX, DW_TLS_FN_READ_INNER },
		{ DW_TLS_FN_WRITE, DW_TLS_FN_WRITE_EX, DW_TLS_FN_WRITE_INNER },
	};
	struct dw_tls_elf e;
	char err[200], op[32];

	(void)state;
	if (access(LIBSSL, R_OK)) {
		fprintf(stderr, "test_sslinner: no %s (libssl3): skipped\n", LIBSSL);
		skip();
	}
	assert_int_equal(dw_tls_elf_read(LIBSSL, &e, err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		uint64_t want = objdump_first_call(LIBSSL, e.vaddr[ops[i].ex]);

		assert_int_not_equal(want, 0);
		/* both forms call the same place, and it is where the probes go */
		assert_int_equal(objdump_first_call(LIBSSL, e.vaddr[ops[i].plain]), want);
		assert_int_equal(e.vaddr[ops[i].inner], want);
		/* in the file: the text segment's shift, as SSL_free's */
		assert_int_equal(e.offset[ops[i].inner] - e.vaddr[ops[i].inner],
				 e.offset[DW_TLS_FN_FREE] - e.vaddr[DW_TLS_FN_FREE]);
		/* the wrappers are not probed: one pair for both forms */
		assert_int_equal(e.offset[ops[i].plain], 0);
		assert_int_equal(e.offset[ops[i].ex], 0);
		/* what the probe lands on is an instruction the kernel emulates */
		objdump_first_op(LIBSSL, want, op, sizeof(op));
		assert_string_equal(op, "push");
	}
	/* the symbols still say what the library is */
	assert_int_equal(e.syms & DW_TLS_SYM_NEEDED, DW_TLS_SYM_NEEDED);
}

/* Wrappers at 0x1000 (ex) and 0x2000 (plain); calls go to 0x3000 unless said otherwise. */
#define EX 0x1000
#define PLAIN 0x2000
#define INNER 0x3000

/* call rel32 from the instruction at pc (5 bytes) to to */
static size_t put_call(uint8_t *b, uint64_t pc, uint64_t to)
{
	int32_t rel = (int32_t)(to - (pc + 5));

	b[0] = 0xe8;
	memcpy(b + 1, &rel, 4);
	return 5;
}

/* SSL_read_ex as OpenSSL 3.0 on Debian: sub $8,%rsp; call inner; (rest) */
static size_t ex_wrapper(uint8_t *b, const uint8_t *pre, size_t npre, uint64_t to)
{
	size_t n = 0;

	if (npre)
		memcpy(b, pre, npre);
	n += npre;
	b[n++] = 0x48, b[n++] = 0x83, b[n++] = 0xec, b[n++] = 0x08;	/* sub $0x8,%rsp */
	n += put_call(b + n, EX + n, to);
	b[n++] = 0x48, b[n++] = 0x83, b[n++] = 0xc4, b[n++] = 0x08;	/* add $0x8,%rsp */
	b[n++] = 0xc3;							/* ret */
	return n;
}

/* SSL_read as OpenSSL 3.0 on Debian: sub $0x18,%rsp; test %edx,%edx; js err; mov %rsp,%rcx; movslq %edx,%rdx; call inner */
static size_t plain_wrapper(uint8_t *b, uint64_t to)
{
	static const uint8_t head[] = { 0x48, 0x83, 0xec, 0x18, 0x85, 0xd2, 0x78, 0x10,
					0x48, 0x89, 0xe1, 0x48, 0x63, 0xd2 };
	size_t n = sizeof(head);

	memcpy(b, head, n);
	n += put_call(b + n, PLAIN + n, to);
	b[n++] = 0xc3;
	return n;
}

static int find(const uint8_t *ex, size_t nex, const uint8_t *plain, size_t nplain, uint64_t *inner)
{
	return dw_ssl_find_inner(ex, nex, EX, plain, nplain, PLAIN, inner);
}

static void test_the_shape_and_each_broken_condition(void **state)
{
	static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	static const uint8_t mov_rsi[] = { 0x48, 0x89, 0xfe };		/* mov %rdi,%rsi */
	static const uint8_t mov_ecx[] = { 0xb9, 0x01, 0x00, 0x00, 0x00 };	/* mov $1,%ecx */
	static const uint8_t je[] = { 0x74, 0x02 };			/* je +2 */
	static const uint8_t ret[] = { 0xc3 };
	static const uint8_t push_rbx[] = { 0x53 };
	uint8_t ex[64], plain[64];
	size_t nex, nplain;
	uint64_t inner = 0;

	(void)state;
	nplain = plain_wrapper(plain, INNER);
	nex = ex_wrapper(ex, NULL, 0, INNER);
	assert_int_equal(find(ex, nex, plain, nplain, &inner), 0);
	assert_int_equal(inner, INNER);
	/* an endbr64 first, and a push (no argument register) change nothing */
	nex = ex_wrapper(ex, endbr64, sizeof(endbr64), INNER);
	assert_int_equal(find(ex, nex, plain, nplain, &inner), 0);
	nex = ex_wrapper(ex, push_rbx, sizeof(push_rbx), INNER);
	assert_int_equal(find(ex, nex, plain, nplain, &inner), 0);
	/* the ex form writes an argument before its call: the buffer, the count's address */
	nex = ex_wrapper(ex, mov_rsi, sizeof(mov_rsi), INNER);
	assert_int_equal(find(ex, nex, plain, nplain, &inner), -1);
	nex = ex_wrapper(ex, mov_ecx, sizeof(mov_ecx), INNER);
	assert_int_equal(find(ex, nex, plain, nplain, &inner), -1);
	/* a conditional branch in the ex form: some calls might not reach it */
	nex = ex_wrapper(ex, je, sizeof(je), INNER);
	assert_int_equal(find(ex, nex, plain, nplain, &inner), -1);
	/* a return before any call (an API function that is itself the implementation's stub) */
	nex = ex_wrapper(ex, ret, sizeof(ret), INNER);
	assert_int_equal(find(ex, nex, plain, nplain, &inner), -1);
	/* the two forms call different places */
	nex = ex_wrapper(ex, NULL, 0, INNER);
	nplain = plain_wrapper(plain, INNER + 0x100);
	assert_int_equal(find(ex, nex, plain, nplain, &inner), -1);
	/* the plain form writes the buffer before its call */
	nplain = plain_wrapper(plain, INNER);
	{
		uint8_t p2[64];
		size_t n = 0;

		memcpy(p2, mov_rsi, sizeof(mov_rsi));
		n = sizeof(mov_rsi);
		memcpy(p2 + n, plain, nplain);
		/* its call's displacement is relative: rebuild it at its new place */
		put_call(p2 + n + 14, PLAIN + n + 14, INNER);
		assert_int_equal(find(ex, nex, p2, n + nplain, &inner), -1);
	}
	/* an indirect call: no target to probe */
	{
		static const uint8_t ind[] = { 0x48, 0x83, 0xec, 0x08, 0xff, 0xd0, 0xc3 };	/* call *%rax */

		assert_int_equal(find(ind, sizeof(ind), plain, nplain, &inner), -1);
	}
	/* no call within DW_SSL_WRAP_MAX instructions */
	{
		uint8_t nops[64];

		memset(nops, 0x90, sizeof(nops));
		assert_int_equal(find(nops, sizeof(nops), plain, nplain, &inner), -1);
	}
	/* bytes that are no x86-64 code, and none */
	{
		static const uint8_t bad[] = { 0x06, 0x07, 0x0f, 0x0b };

		assert_int_equal(find(bad, sizeof(bad), plain, nplain, &inner), -1);
		assert_int_equal(find(ex, 0, plain, nplain, &inner), -1);
	}
	/* a call to the wrapper itself is no inner function */
	nex = ex_wrapper(ex, NULL, 0, EX);
	nplain = plain_wrapper(plain, EX);
	assert_int_equal(find(ex, nex, plain, nplain, &inner), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_debian_libssl_against_objdump),
		cmocka_unit_test(test_the_shape_and_each_broken_condition),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
