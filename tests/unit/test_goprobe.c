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

/* objdump's prologue stores of RAX, RBX and RCX to the stack (their offsets, -1 if none) in its first 16 lines. */
static void objdump_spills(const char *path, uint64_t addr, long *ax, long *bx, long *cx)
{
	char line[1024], op[32], arg[256];
	int lines = 0;
	FILE *f;

	*ax = *bx = *cx = -1;
	f = objdump(path, addr, 128);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, d;
		char r[8];

		if (sscanf(line, " %llx: %31s %255s", &a, op, arg) != 3 || lines++ >= 16 || strcmp(op, "mov"))
			continue;
		if (sscanf(arg, "%%%3[a-z],0x%llx(%%rsp)", r, &d) != 2)
			continue;
		if (!strcmp(r, "rax") && *ax < 0)
			*ax = (long)d;
		else if (!strcmp(r, "rbx") && *bx < 0)
			*bx = (long)d;
		else if (!strcmp(r, "rcx") && *cx < 0)
			*cx = (long)d;
	}
	pclose(f);
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
	/* Read keeps c and b where its prologue stores them: its return alone is probed */
	{
		long ax, bx, cx;

		objdump_spills(bin(truth), p.read.vaddr, &ax, &bx, &cx);
		assert_true(ax > 0);
		assert_int_equal(bx, ax + 8);
		assert_int_equal(cx, ax + 16);
		assert_int_equal(p.read.defer_spill, ax);
	}
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
