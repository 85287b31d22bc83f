// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The Go probe finders' decoding on hand-made machine code (user/logic/discovery/goret.h,
 * godefer.h): the stack check's branch, handshakeContext's slow path, the exits past a defer and
 * where a function keeps its arguments, each condition broken in turn. On real Go programs, against
 * objdump: tests/unit/test_goprobe.c.
 */
#include <string.h>

#include "dwtest.h"

#include "logic/discovery/godefer.h"
#include "logic/discovery/goret.h"

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

/* Where a function keeps RAX, RBX, RCX (dw_go_find_arg_spill) in hand-made prologues. */
static void test_arg_spill(void **st)
{
	/* cmp rsp,[r14+0x10]; jbe +0x20; sub rsp,0x68; mov [rsp+0x80],rcx; mov [rsp+0x78],rbx; mov [rsp+0x70],rax; ret */
	static const uint8_t good[] = { 0x49, 0x3b, 0x66, 0x10, 0x76, 0x20, 0x48, 0x83, 0xec, 0x68,
					0x48, 0x89, 0x8c, 0x24, 0x80, 0x00, 0x00, 0x00, 0x48, 0x89, 0x5c, 0x24, 0x78,
					0x48, 0x89, 0x44, 0x24, 0x70, 0xc3 };
	uint8_t c[64];
	uint32_t base = 0;

	(void)st;
	assert_int_equal(dw_go_find_arg_spill(good, sizeof(good), 0x1000, &base), 0);
	assert_int_equal(base, 0x70);
	/* RBX written before its store (mov rbx,rax in place of the sub): and no SUB */
	memcpy(c, good, sizeof(good));
	memcpy(c + 6, (const uint8_t[]){ 0x48, 0x89, 0xc3, 0x90 }, 4);
	assert_int_equal(dw_go_find_arg_spill(c, sizeof(good), 0x1000, &base), -1);
	/* the slots not consecutive (rbx at 0x88) */
	memcpy(c, good, sizeof(good));
	c[22] = 0x88;
	assert_int_equal(dw_go_find_arg_spill(c, sizeof(good), 0x1000, &base), -1);
	/* a later store over RBX's slot (mov [rsp+0x78],rdx before the ret) */
	memcpy(c, good, sizeof(good));
	memcpy(c + sizeof(good) - 1, (const uint8_t[]){ 0x48, 0x89, 0x54, 0x24, 0x78, 0xc3 }, 6);
	assert_int_equal(dw_go_find_arg_spill(c, sizeof(good) + 5, 0x1000, &base), -1);
	/* a store through RBP, which may alias the slots (mov [rbp+0x10],rdx) */
	memcpy(c + sizeof(good) - 1, (const uint8_t[]){ 0x48, 0x89, 0x55, 0x10, 0xc3 }, 5);
	assert_int_equal(dw_go_find_arg_spill(c, sizeof(good) + 4, 0x1000, &base), -1);
	/* a second SUB from SP (the stores' offsets would be of another SP) */
	memcpy(c, good, 10);
	memcpy(c + 10, (const uint8_t[]){ 0x48, 0x83, 0xec, 0x08 }, 4);
	memcpy(c + 14, good + 10, sizeof(good) - 10);
	assert_int_equal(dw_go_find_arg_spill(c, sizeof(good) + 4, 0x1000, &base), -1);
	/* a branch before the stores */
	memcpy(c, good, 10);
	memcpy(c + 10, (const uint8_t[]){ 0x74, 0x00 }, 2);
	memcpy(c + 12, good + 10, sizeof(good) - 10);
	assert_int_equal(dw_go_find_arg_spill(c, sizeof(good) + 2, 0x1000, &base), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_entry_branch),
		cmocka_unit_test(test_slow_path),
		cmocka_unit_test(test_defer_exits),
		cmocka_unit_test(test_arg_spill),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
