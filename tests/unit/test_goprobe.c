// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The Go probe finder on real Go programs, built by the Makefile with Debian's
 * golang-go from tests/go/ (plain, stripped -s -w, -trimpath, both, PIE), checked against
 * tools that read them independently: `go tool nm -size` (the .symtab the
 * unstripped build keeps) for each function's address and size, binutils' objdump
 * for the RETs, readelf's .text header for the file offsets, and the binary's own
 * DWARF for the table's struct offsets. Then the reasons a file is not probed, the
 * version parser, a Go 1.16-format table made here, and hostile bytes.
 * Without `go` the tests on built programs skip, saying so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dwtest.h"

#include "discovery/golang/goprobe.h"
#include "logic/discovery/goelf.h"
#include "logic/discovery/gopcln.h"

static const char *bin(const char *name)
{
	static char p[4][512];
	static int k;
	char *b = p[k++ % 4];

	snprintf(b, sizeof(p[0]), "%s/%s", DW_GOBIN_DIR, name);
	return b;
}

static int have_bins(void)
{
	if (access(bin("gotls"), R_OK) == 0 && access(bin("goplain"), R_OK) == 0)
		return 1;
	fprintf(stderr, "test_goprobe: %s not built (no `go`: scripts/deps.sh installs golang-go): skipped\n",
		bin("gotls"));
	return 0;
}

/* `go tool nm -size` of an unstripped build: the symbol's address and size. */
static void nm_sym(const char *path, const char *sym, uint64_t *addr, uint64_t *size)
{
	char cmd[1024], line[1024];
	FILE *f;

	*addr = *size = 0;
	snprintf(cmd, sizeof(cmd), "go tool nm -size '%s'", path);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, s;
		char t, name[512];

		if (sscanf(line, "%llx %llu %c %511s", &a, &s, &t, name) == 4 && !strcmp(name, sym)) {
			*addr = a;
			*size = s;
		}
	}
	pclose(f);
	if (!*addr)
		fail_msg("go tool nm: no %s in %s", sym, path);
}

/* objdump's disassembly of [addr, addr+size) of path, to read line by line (pclose it). */
static FILE *objdump(const char *path, uint64_t addr, uint64_t size)
{
	char cmd[1024];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "objdump -d --no-show-raw-insn --start-address=0x%llx --stop-address=0x%llx '%s'",
		 (unsigned long long)addr, (unsigned long long)(addr + size), path);
	f = popen(cmd, "r");
	assert_non_null(f);
	return f;
}

/*
 * objdump's view of [addr, addr+size): its RETs, as offsets from addr (the count returned), and in
 * *branch the offset of the first conditional branch among its first three instructions (-1: none).
 */
static unsigned objdump_insns(const char *path, uint64_t addr, uint64_t size, uint64_t *rets, long *branch)
{
	char line[1024];
	unsigned n = 0;
	int seen = 0;
	FILE *f;

	f = objdump(path, addr, size);
	*branch = -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char op[32];

		if (sscanf(line, " %llx: %31s", &a, op) != 2)
			continue;
		if (*branch < 0 && seen++ < 3 && op[0] == 'j' && strcmp(op, "jmp"))
			*branch = (long)(a - addr);
		if ((!strcmp(op, "ret") || !strcmp(op, "retq")) && n < DW_GO_MAX_RETS)
			rets[n++] = a - addr;
	}
	pclose(f);
	return n;
}

/*
 * objdump's handshakeContext: the second conditional branch (the first is the stack check's) must
 * be a `je` whose target returns within a few lines with no jump (runtime.deferreturn's call
 * first); the offset of the instruction after it.
 */
static uint64_t objdump_slow_path(const char *path, uint64_t addr, uint64_t size)
{
	char line[1024], op[32];
	unsigned long long a, target = 0, after = 0, prev_je = 0;
	int branches = 0, to_ret = -1;
	FILE *f;

	f = objdump(path, addr, size);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, " %llx: %31s", &a, op) != 2)
			continue;
		if (prev_je && !after)
			after = a;
		if (to_ret >= 0 && to_ret < 12) {
			if (!strcmp(op, "ret") || !strcmp(op, "retq"))
				to_ret = 100;
			else if (op[0] == 'j')
				to_ret = 200;
			else
				to_ret++;
		}
		if (a == target && target)
			to_ret = 0;
		if (op[0] == 'j' && strcmp(op, "jmp") && ++branches == 2) {
			assert_string_equal(op, "je");
			assert_int_equal(sscanf(strchr(line, 'j') + 2, " %llx", &target), 1);
			prev_je = a;
		}
	}
	pclose(f);
	assert_true(after > 0);
	assert_int_equal(to_ret, 100);	/* the je's target is the fast return */
	return after - addr;
}

/* readelf's .text: vaddr - addr + offset is where the code is in the file. */
static uint64_t text_off(const char *path, uint64_t vaddr)
{
	char cmd[1024], line[1024];
	unsigned long long a = 0, o = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf -SW '%s'", path);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *t = strstr(line, " .text ");

		if (t && sscanf(t, " .text PROGBITS %llx %llx", &a, &o) == 2)
			break;
	}
	pclose(f);
	assert_true(a != 0);
	return vaddr - a + o;
}

/*
 * objdump's view of F's exits: for each RET (offsets from addr, in order), how many indirect calls
 * (`call *%reg`: the deferred closures) run since the last jump, direct call or RET before it, and
 * for the last exit with the most of them, the slot the epilogue loads RAX from after them. The
 * exits with the most are those past all the defers; the count returned.
 */
static unsigned objdump_exits(const char *path, uint64_t addr, uint64_t size, uint64_t *rets, int *calls,
			      long *result)
{
	char line[1024], op[32], arg[256];
	unsigned n = 0;
	int since = 0;
	long slot = -1;
	FILE *f;

	f = objdump(path, addr, size);
	*result = -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, d;

		arg[0] = 0;
		if (sscanf(line, " %llx: %31s %255s", &a, op, arg) < 2)
			continue;
		if (!strcmp(op, "call") && arg[0] == '*') {
			since++;
			slot = -1;
		} else if (!strcmp(op, "mov") && since && slot < 0 && sscanf(arg, "0x%llx(%%rsp),%%rax", &d) == 1) {
			slot = (long)d;
		} else if (!strcmp(op, "ret") || !strcmp(op, "retq")) {
			if (n < DW_GO_MAX_RETS) {
				rets[n] = a - addr;
				calls[n++] = since;
			}
			if (since && slot >= 0)
				*result = slot;
			since = 0;
		} else if (op[0] == 'j' || !strcmp(op, "call")) {
			since = 0;
		}
	}
	pclose(f);
	return n;
}

/*
 * The exits past F's defers (godefer.h) against objdump: those with the most closure calls are
 * taken at the closure's stack check (objdump's jbe in `closure`, by go tool nm's address), the
 * others keep their RETs, and n is read where the epilogue loads RAX from.
 */
static void check_defer(const struct dw_go_func *f, const char *truth, const char *path, const char *closure)
{
	uint64_t rets[DW_GO_MAX_RETS], crets[DW_GO_MAX_RETS], ca, cs;
	int calls[DW_GO_MAX_RETS], most = 0;
	unsigned n, kept = 0, taken = 0;
	long result, branch;

	n = objdump_exits(truth, f->vaddr, f->size, rets, calls, &result);
	for (unsigned i = 0; i < n; i++)
		if (calls[i] > most)
			most = calls[i];
	assert_true(most >= 1);
	for (unsigned i = 0; i < n; i++) {
		if (calls[i] == most) {
			taken++;
			continue;
		}
		assert_true(kept < f->nkeep);
		assert_int_equal(f->keep_off[kept++], f->off + rets[i]);
	}
	assert_int_equal(f->nkeep, kept);
	assert_int_equal(f->defer_exits, taken);
	assert_true(taken >= 4);
	assert_int_equal(f->defer_result, result);
	nm_sym(truth, closure, &ca, &cs);
	assert_int_not_equal(objdump_insns(truth, ca, cs, crets, &branch), 0);
	assert_true(branch > 0);
	assert_int_equal(f->defer_off, text_off(path, ca) + (uint64_t)branch);
	assert_int_equal(f->defer_lo, (int64_t)f->vaddr - (int64_t)(ca + (uint64_t)branch));
}

static void check_func(const struct dw_go_func *f, const char *truth, const char *sym, const char *path)
{
	uint64_t a, s, rets[DW_GO_MAX_RETS];
	long branch;
	unsigned n;

	nm_sym(truth, sym, &a, &s);
	assert_int_equal(f->vaddr, a);
	/* nm's size is the code's; the table's runs to the next function (INT3 padding between) */
	assert_true(f->size >= s && f->size < s + 32);
	assert_int_equal(f->off, text_off(path, a));
	n = objdump_insns(truth, a, s, rets, &branch);
	assert_true(n >= 1);
	assert_int_equal(f->nret, n);
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(f->ret_off[i], f->off + rets[i]);
	/* the entry's probe: the stack check's JLS (objdump's jbe), which the kernel emulates */
	assert_true(branch > 0);
	assert_int_equal(f->probe_off, f->off + (uint64_t)branch);
}

/* The stack check's branch in hand-made prologues; anything else leaves the entry probed. */
static void test_entry_branch(void **st)
{
	static const uint8_t small[] = { 0x49, 0x3b, 0x66, 0x10, 0x76, 0x10, 0x55 };	/* cmp rsp,16(r14); jbe */
	static const uint8_t large[] = { 0x4c, 0x8d, 0x64, 0x24, 0x98, 0x4d, 0x3b, 0x66, 0x10,
					 0x0f, 0x86, 0x64, 0x07, 0x00, 0x00 };	/* lea r12,-0x68(rsp); cmp r12,16(r14); jbe */
	static const uint8_t sub[] = { 0x48, 0x83, 0xec, 0x18, 0x76, 0x10 };		/* sub rsp,0x18; jbe */
	static const uint8_t other_disp[] = { 0x49, 0x3b, 0x66, 0x18, 0x76, 0x10 };	/* cmp rsp,24(r14) */
	static const uint8_t no_branch[] = { 0x49, 0x3b, 0x66, 0x10, 0x48, 0x89, 0xc3 };	/* cmp; mov rbx,rax */
	static const uint8_t mov_first[] = { 0x48, 0x89, 0xc3, 0x49, 0x3b, 0x66, 0x10, 0x76, 0x10 };
	uint32_t off = 0;

	(void)st;
	assert_int_equal(dw_go_find_entry_branch(small, sizeof(small), 0x1000, &off), 0);
	assert_int_equal(off, 4);
	assert_int_equal(dw_go_find_entry_branch(large, sizeof(large), 0x1000, &off), 0);
	assert_int_equal(off, 9);
	assert_int_equal(dw_go_find_entry_branch(sub, sizeof(sub), 0x1000, &off), -1);
	assert_int_equal(dw_go_find_entry_branch(other_disp, sizeof(other_disp), 0x1000, &off), -1);
	assert_int_equal(dw_go_find_entry_branch(no_branch, sizeof(no_branch), 0x1000, &off), -1);
	assert_int_equal(dw_go_find_entry_branch(mov_first, sizeof(mov_first), 0x1000, &off), -1);
	assert_int_equal(dw_go_find_entry_branch(small, 3, 0x1000, &off), -1);	/* cut inside the cmp */
}

/* handshakeContext's slow path in hand-made code: which side of the first test returns at once. */
static void test_slow_path(void **st)
{
	/*
	 * cmp rsp,16(r14); jbe (to the end); mov edx,[rax+0x20]; cmp edx,1; je fast; slow: mov [rsp],rax;
	 * test edx,edx; jne (back to slow); fast: call; xor eax,eax; ret; int3 padding
	 */
	static const uint8_t je_fast[] = { 0x49, 0x3b, 0x66, 0x10, 0x76, 0x14, 0x8b, 0x50, 0x20, 0x83, 0xfa, 0x01,
					   0x74, 0x08, 0x48, 0x89, 0x04, 0x24, 0x85, 0xd2, 0x75, 0xf8, 0xe8, 0x00,
					   0x00, 0x00, 0x00, 0x31, 0xc0, 0xc3, 0xcc, 0xcc };
	/* the same with jne: the fall-through returns at once, the target is the slow path */
	static const uint8_t jne_fast[] = { 0x49, 0x3b, 0x66, 0x10, 0x76, 0x14, 0x8b, 0x50, 0x20, 0x83, 0xfa, 0x01,
					    0x75, 0x03, 0x31, 0xc0, 0xc3, 0x48, 0x89, 0x04, 0x24, 0x85, 0xd2, 0x75,
					    0xf8, 0xc3, 0xcc, 0xcc };
	/* both sides return at once: which is the handshake cannot be told */
	static const uint8_t both_fast[] = { 0x49, 0x3b, 0x66, 0x10, 0x76, 0x10, 0x8b, 0x50, 0x20, 0x83, 0xfa, 0x01,
					     0x74, 0x05, 0x48, 0x89, 0x04, 0x24, 0x90, 0x31, 0xc0, 0xc3,
					     0xcc, 0xcc, 0xcc, 0xcc };
	/* RAX written before the test (mov eax,[rax+0x20]): the *Conn is gone */
	static const uint8_t rax_written[] = { 0x49, 0x3b, 0x66, 0x10, 0x76, 0x10, 0x8b, 0x40, 0x20, 0x83, 0xf8,
					       0x01, 0x74, 0x05, 0x48, 0x89, 0x04, 0x24, 0x90, 0x31, 0xc0, 0xc3 };
	/* no stack check */
	static const uint8_t no_check[] = { 0x8b, 0x50, 0x20, 0x83, 0xfa, 0x01, 0x74, 0x01, 0x90, 0xc3 };
	uint32_t off = 0;

	(void)st;
	assert_int_equal(dw_go_find_slow_path(je_fast, sizeof(je_fast), 0x1000, &off), 0);
	assert_int_equal(off, 14);	/* after the je: mov [rsp],rax */
	assert_int_equal(dw_go_find_slow_path(jne_fast, sizeof(jne_fast), 0x1000, &off), 0);
	assert_int_equal(off, 17);	/* the jne's target: mov [rsp],rax */
	assert_int_equal(dw_go_find_slow_path(both_fast, sizeof(both_fast), 0x1000, &off), -1);
	assert_int_equal(dw_go_find_slow_path(rax_written, sizeof(rax_written), 0x1000, &off), -1);
	assert_int_equal(dw_go_find_slow_path(no_check, sizeof(no_check), 0x1000, &off), -1);
}

/*
 * The deferred exits in hand-made code: at 0x1000, a defer site (the closure at 0x2000 stored on
 * the stack, its address into slot 0x58), n stored at 0x20, the closure called, n loaded back, RET;
 * then each condition broken in turn.
 */
static void test_defer_exits(void **st)
{
	static const uint8_t site[] = {
		0x48, 0x8d, 0x3d, 0xf9, 0x0f, 0x00, 0x00,	/* lea rdi,[rip+0xff9]: 0x2000 */
		0x48, 0x89, 0x7c, 0x24, 0x48,			/* mov [rsp+0x48],rdi: its function word */
		0x48, 0x8d, 0x7c, 0x24, 0x48,			/* lea rdi,[rsp+0x48] */
		0x48, 0x89, 0x7c, 0x24, 0x58,			/* mov [rsp+0x58],rdi: the defer's slot */
	};
	static const uint8_t exit_[] = {
		0x48, 0x89, 0x4c, 0x24, 0x20,			/* mov [rsp+0x20],rcx: n */
		0x48, 0x8b, 0x54, 0x24, 0x58,			/* mov rdx,[rsp+0x58] */
		0x48, 0x8b, 0x02,				/* mov rax,[rdx] */
		0xff, 0xd0,					/* call rax */
		0x48, 0x8b, 0x44, 0x24, 0x20,			/* mov rax,[rsp+0x20] */
		0x48, 0x83, 0xc4, 0x68,				/* add rsp,0x68 */
		0xc3,						/* ret */
	};
	uint8_t code[128];
	size_t n;
	struct dw_go_defer d;

	(void)st;
	memcpy(code, site, sizeof(site));
	memcpy(code + sizeof(site), exit_, sizeof(exit_));
	n = sizeof(site) + sizeof(exit_);
	assert_int_equal(dw_go_find_defer_exits(code, n, 0x1000, &d), 0);
	assert_int_equal(d.closure, 0x2000);
	assert_int_equal(d.result, 0x20);
	assert_int_equal(d.nexits, 1);
	assert_int_equal(d.nkeep, 0);
	/* an early RET before the defer (xor eax,eax; ret) is kept */
	{
		uint8_t c2[128] = { 0x31, 0xc0, 0xc3 };

		memcpy(c2 + 3, code, n);
		/* the LEA's displacement is relative to its end: 3 bytes later, 3 less */
		c2[3 + 3] = 0xf6;
		assert_int_equal(dw_go_find_defer_exits(c2, n + 3, 0x1000, &d), 0);
		assert_int_equal(d.closure, 0x2000);
		assert_int_equal(d.nkeep, 1);
		assert_int_equal(d.keep[0], 2);
	}
	/* a jump landing on the closure's load (after its slot's): that path's closure is not known */
	code[n] = 0xeb;
	code[n + 1] = (uint8_t)(int8_t)((int)(sizeof(site) + 10) - (int)(n + 2));	/* jmp to mov rax,[rdx] */
	assert_int_equal(dw_go_find_defer_exits(code, n + 2, 0x1000, &d), -1);
	/* the slot stored from a register that holds no stack closure (mov rdi,rsi for the lea) */
	memcpy(code + 12, (const uint8_t[]){ 0x48, 0x89, 0xf7, 0x90, 0x90 }, 5);
	assert_int_equal(dw_go_find_defer_exits(code, n, 0x1000, &d), -1);
	memcpy(code, site, sizeof(site));
	/* a second site storing another closure (0x3000) into the same slot, after the RET */
	{
		uint8_t c3[160];
		size_t m = n;

		memcpy(c3, code, n);
		memcpy(c3 + m, site, sizeof(site));
		/* lea rdi,[rip+d]: 0x1000 + m + 7 + d = 0x3000 */
		{
			int32_t rel = (int32_t)(0x3000 - (0x1000 + m + 7));

			memcpy(c3 + m + 3, &rel, 4);
		}
		m += sizeof(site);
		c3[m++] = 0xc3;
		assert_int_equal(dw_go_find_defer_exits(c3, m, 0x1000, &d), -1);
		/* the same closure again is fine */
		{
			int32_t rel = (int32_t)(0x2000 - (0x1000 + n + 7));

			memcpy(c3 + n + 3, &rel, 4);
		}
		assert_int_equal(dw_go_find_defer_exits(c3, m, 0x1000, &d), 0);
		assert_int_equal(d.nkeep, 1);
	}
	/* a direct call (runtime.deferreturn) where the closure's was: no deferred exit */
	memcpy(code + sizeof(site) + 5, (const uint8_t[]){ 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xe8,
							    0x00, 0x00, 0x00, 0x00 }, 13);
	memmove(code + sizeof(site) + 5 + 10, code + sizeof(site) + 5 + 13, n - (sizeof(site) + 5 + 13));
	assert_int_equal(dw_go_find_defer_exits(code, n - 3, 0x1000, &d), -1);
	/* RAX not loaded back after the call (the result is not in the frame) */
	memcpy(code, site, sizeof(site));
	memcpy(code + sizeof(site), exit_, sizeof(exit_));
	code[sizeof(site) + 15 + 2] = 0x5c;	/* mov rbx,[rsp+0x20] */
	assert_int_equal(dw_go_find_defer_exits(code, n, 0x1000, &d), -1);
	/* nothing at all, and bytes that are no code */
	assert_int_equal(dw_go_find_defer_exits(code, 0, 0x1000, &d), -1);
	assert_int_equal(dw_go_find_defer_exits((const uint8_t[]){ 0x06, 0x07 }, 2, 0x1000, &d), -1);
}

static void probe_ok(const char *name, const char *truth, int stripped, int trimpath)
{
	struct dw_go_probes p;
	struct dw_go_fdchain t;
	char why[256] = "";
	const char *path = bin(name);

	if (dw_go_probe_points(path, &p, why, sizeof(why)) != 0)
		fail_msg("%s: not probed: %s", path, why);
	assert_string_equal(p.build.version, "go1.19.8");
	assert_int_equal(p.build.major, 1);
	assert_int_equal(p.build.minor, 19);
	assert_true(p.build.inline_strings);
	assert_string_equal(p.build.path, "command-line-arguments");
	assert_int_equal(p.pcln_magic, DW_PCLN_GO118);
	assert_int_equal(p.has_symtab, !stripped);
	check_func(&p.write, bin(truth), DW_GO_WRITE_SYM, path);
	check_func(&p.read, bin(truth), DW_GO_READ_SYM, path);
	/* Go 1.19: Write's `defer c.out.Unlock()` is its second closure, Read's `defer c.in.Unlock()` its one */
	check_defer(&p.write, bin(truth), path, DW_GO_WRITE_SYM ".func2");
	check_defer(&p.read, bin(truth), path, DW_GO_READ_SYM ".func1");
	/* handshakeContext's probe (the thread mark before the ClientHello): where the handshake runs,
	 * the instruction after the inlined handshakeComplete()'s `je` to the return, as objdump has it */
	{
		uint64_t a, sz;

		nm_sym(bin(truth), DW_GO_SHAKE_SYM, &a, &sz);
		assert_int_equal(p.shake_off, text_off(path, a) + objdump_slow_path(bin(truth), a, sz));
	}
	assert_true(p.shake_off > 0);
	assert_true(p.shake_off < p.write.off || p.shake_off >= p.write.off + p.write.size);
	assert_true(p.shake_off < p.read.off || p.shake_off >= p.read.off + p.read.size);
	/* with DWARF (-w absent) the offsets are the binary's own, and the table agrees with them */
	assert_int_equal(p.fd_source, stripped ? DW_GO_FD_TABLE : DW_GO_FD_DWARF);
	assert_int_equal(dw_go_layout_table(1, 19, &t), 0);
	assert_memory_equal(&p.fd, &t, sizeof(t));
	(void)trimpath;
	printf("  %s: %s, Write at file offset 0x%llx (%llu bytes, %u RETs, %u past its defers), Read at 0x%llx "
	       "(%llu bytes, %u RETs, %u past its defer), fd from %s\n",
	       name, p.build.version, (unsigned long long)p.write.off, (unsigned long long)p.write.size, p.write.nret,
	       p.write.defer_exits, (unsigned long long)p.read.off, (unsigned long long)p.read.size, p.read.nret,
	       p.read.defer_exits,
	       p.fd_source == DW_GO_FD_DWARF ? "DWARF" : "the table");
}

static void test_plain(void **st)
{
	(void)st;
	if (!have_bins())
		skip();
	probe_ok("gotls", "gotls", 0, 0);
}

static void test_stripped(void **st)
{
	(void)st;
	if (!have_bins())
		skip();
	/* same build but the symbols: the code and its addresses are the unstripped one's */
	probe_ok("gotls-stripped", "gotls", 1, 0);
}

static void test_trimpath(void **st)
{
	(void)st;
	if (!have_bins())
		skip();
	probe_ok("gotls-trimpath", "gotls-trimpath", 0, 1);
	probe_ok("gotls-stripped-trimpath", "gotls-trimpath", 1, 1);
}

static void test_pie(void **st)
{
	(void)st;
	if (!have_bins())
		skip();
	/* the table is in .data.rel.ro.gopclntab there */
	probe_ok("gotls-pie", "gotls-pie", 0, 0);
	probe_ok("gotls-pie-stripped", "gotls-pie", 1, 0);
}

/* A copy of a stripped build with its section headers cut off (as sstrip does): found by the scans. */
static void test_no_section_headers(void **st)
{
	FILE *f;
	uint8_t *buf;
	long len;
	struct dw_go_probes p, q;
	char why[256];

	(void)st;
	if (!have_bins())
		skip();
	f = fopen(bin("gotls-stripped"), "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = malloc((size_t)len);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	assert_int_equal(dw_go_probes_image(buf, (size_t)len, &q, why, sizeof(why)), 0);
	/* e_shoff, e_shnum, e_shstrndx zeroed */
	memset(buf + 40, 0, 8);
	memset(buf + 60, 0, 4);
	if (dw_go_probes_image(buf, (size_t)len, &p, why, sizeof(why)) != 0)
		fail_msg("without section headers: %s", why);
	assert_string_equal(p.build.version, q.build.version);
	assert_int_equal(p.write.off, q.write.off);
	assert_int_equal(p.write.nret, q.write.nret);
	assert_int_equal(p.read.off, q.read.off);
	assert_int_equal(p.shake_off, q.shake_off);
	assert_memory_equal(p.read.ret_off, q.read.ret_off, sizeof(p.read.ret_off));
	free(buf);
}

static void test_dwarf_matches_table(void **st)
{
	struct dw_go_probes p;
	char why[256];

	(void)st;
	if (!have_bins())
		skip();
	assert_int_equal(dw_go_probe_points(bin("gotls"), &p, why, sizeof(why)), 0);
	assert_int_equal(p.fd_source, DW_GO_FD_DWARF);
	assert_int_equal(p.fd.conn_iface, 0);
	assert_int_equal(p.fd.conn_fd, 0);
	assert_int_equal(p.fd.netfd_pfd, 0);
	assert_int_equal(p.fd.pfd_sysfd, 16);
}

static void test_not_probed(void **st)
{
	struct dw_go_probes p;
	char why[256];

	(void)st;
	assert_int_equal(dw_go_probe_points("/nonexistent/x", &p, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "No such file"));
	assert_int_equal(dw_go_probe_points("/etc/passwd", &p, why, sizeof(why)), -1);
	assert_string_equal(why, "not an ELF file");
	/* a C program: ELF, no Go build info */
	assert_int_equal(dw_go_probe_points("/bin/sh", &p, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "no Go build info"));
	if (!have_bins())
		skip();
	assert_int_equal(dw_go_probe_points(bin("goplain"), &p, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "no crypto/tls.(*Conn).Write"));
	assert_string_equal(p.build.version, "go1.19.8");
}

static void test_abi_gate(void **st)
{
	char why[200];

	(void)st;
	assert_int_equal(dw_go_abi_ok(1, 17, DW_EM_X86_64, why, sizeof(why)), 0);
	assert_int_equal(dw_go_abi_ok(1, 16, DW_EM_X86_64, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "register ABI is Go 1.17+"));
	assert_int_equal(dw_go_abi_ok(1, 19, DW_EM_AARCH64, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "only x86-64"));
	assert_int_equal(dw_go_abi_ok(-1, -1, DW_EM_X86_64, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "devel"));
}

static void test_versions(void **st)
{
	int a, b, c;

	(void)st;
	assert_int_equal(dw_go_parse_version("go1.19.8", &a, &b, &c), 0);
	assert_true(a == 1 && b == 19 && c == 8);
	assert_int_equal(dw_go_parse_version("go1.20", &a, &b, &c), 0);
	assert_true(a == 1 && b == 20 && c == 0);
	assert_int_equal(dw_go_parse_version("go1.21rc2", &a, &b, &c), 0);
	assert_true(a == 1 && b == 21);
	assert_int_equal(dw_go_parse_version("go1.22.1 X:loopvar", &a, &b, &c), 0);
	assert_true(b == 22 && c == 1);
	assert_int_equal(dw_go_parse_version("devel go1.23-abcdef Tue", &a, &b, &c), -1);
	assert_int_equal(a, -1);
	assert_int_equal(dw_go_parse_version("go1.", &a, &b, &c), -1);
	assert_int_equal(dw_go_parse_version("go1.19.8x", &a, &b, &c), -1);
	assert_int_equal(dw_go_parse_version("", &a, &b, &c), -1);
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/*
 * A Go 1.16-1.17 table made here (no such toolchain on Debian 12): header of 7 words, the
 * function table of {entry, funcoff} 8-byte pairs with absolute entries, _func {entry, nameoff}.
 */
static void test_pcln_go116(void **st)
{
	uint8_t t[512];
	struct dw_go_pcln p;
	uint64_t e, s;
	const char *n;
	char why[200];
	const uint64_t funcname = 64, functab = 128;

	(void)st;
	memset(t, 0, sizeof(t));
	put64(t, 0xfffffffa);
	t[6] = 1;
	t[7] = 8;
	put64(t + 8, 2);		/* nfunc */
	put64(t + 8 + 2 * 8, funcname);
	put64(t + 8 + 6 * 8, functab);
	memcpy(t + funcname, "main.a\0main.b", 14);
	/* entries 0x401000, 0x401040, end 0x401100; _funcs after the table */
	put64(t + functab, 0x401000);
	put64(t + functab + 8, 64);
	put64(t + functab + 16, 0x401040);
	put64(t + functab + 24, 80);
	put64(t + functab + 32, 0x401100);
	put64(t + functab + 64, 0x401000);
	t[functab + 64 + 8] = 0;		/* nameoff "main.a" */
	put64(t + functab + 80, 0x401040);
	t[functab + 80 + 8] = 7;		/* "main.b" */
	assert_int_equal(dw_go_pcln_parse(&p, t, sizeof(t), why, sizeof(why)), 0);
	assert_int_equal(p.nfunc, 2);
	assert_int_equal(dw_go_pcln_func(&p, 1, &e, &s, &n), 0);
	assert_string_equal(n, "main.b");
	assert_int_equal(e, 0x401040);
	assert_int_equal(s, 0xc0);
	assert_int_equal(dw_go_pcln_find(&p, "main.a", &e, &s), 0);
	assert_int_equal(e, 0x401000);
	assert_int_equal(s, 0x40);
	assert_int_equal(dw_go_pcln_find(&p, "main.c", &e, &s), -1);
	/* a function count that would run past the table is refused, not read */
	put64(t + 8, 1000);
	assert_int_equal(dw_go_pcln_parse(&p, t, sizeof(t), why, sizeof(why)), -1);
	/* Go 1.2-1.15 */
	put64(t, 0xfffffffb);
	assert_int_equal(dw_go_pcln_parse(&p, t, sizeof(t), why, sizeof(why)), -1);
	assert_non_null(strstr(why, "Go 1.2-1.15"));
}

/* Every prefix of a real binary and a few thousand corrupted copies: an answer, never a bad read. */
static void test_hostile(void **st)
{
	FILE *f;
	uint8_t *buf;
	long len;
	struct dw_go_probes p;
	char why[256];
	uint64_t rs = 42;

	(void)st;
	if (!have_bins())
		skip();
	f = fopen(bin("gotls-stripped"), "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = malloc((size_t)len);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	assert_int_equal(dw_go_probes_image(buf, (size_t)len, &p, why, sizeof(why)), 0);
	for (long cut = 0; cut < len; cut += len / 40 + 1)
		(void)dw_go_probes_image(buf, (size_t)cut, &p, why, sizeof(why));
	for (int i = 0; i < 200; i++) {
		uint8_t *c = malloc((size_t)len);

		memcpy(c, buf, (size_t)len);
		for (int k = 0; k < 64; k++) {
			uint64_t at = dwt_rand(&rs) % (uint64_t)len;
			/* aim half the flips at the headers, where the offsets are */
			if (k % 2)
				at %= 4096;
			c[at] = (uint8_t)dwt_rand(&rs);
		}
		(void)dw_go_probes_image(c, (size_t)len, &p, why, sizeof(why));
		free(c);
	}
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_entry_branch),
		cmocka_unit_test(test_slow_path),
		cmocka_unit_test(test_defer_exits),
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_stripped),
		cmocka_unit_test(test_trimpath),
		cmocka_unit_test(test_pie),
		cmocka_unit_test(test_no_section_headers),
		cmocka_unit_test(test_dwarf_matches_table),
		cmocka_unit_test(test_not_probed),
		cmocka_unit_test(test_abi_gate),
		cmocka_unit_test(test_versions),
		cmocka_unit_test(test_pcln_go116),
		cmocka_unit_test(test_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
