// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The RET finder (goret.h): Capstone's iterator over one function. */
#include "logic/discovery/goret.h"

#include <stdio.h>
#include "logic/discovery/x86dis.h"

int dw_go_find_rets(const uint8_t *code, size_t len, uint64_t addr, uint32_t *rets, unsigned *nret,
		    char *why, size_t whylen)
{
	const uint8_t *p = code;
	size_t left = len;
	uint64_t pc = addr;
	struct dis d;
	cs_insn *in;
	int rc = -1;

	*nret = 0;
	if (dis_open(&d, 0) < 0) {
		snprintf(why, whylen, "capstone: cannot open an x86-64 decoder");
		return -1;
	}
	in = d.in;
	/* The linker pads between functions with INT3; the size from .gopclntab includes the
	 * padding, which decodes too, so a stop before the end is a real decoding failure. */
	while (left > 0) {
		uint64_t at = pc;

		if (!cs_disasm_iter(d.h, &p, &left, &pc, in)) {
			snprintf(why, whylen, "capstone: no x86-64 instruction at +%llu of %zu bytes",
				 (unsigned long long)(at - addr), len);
			goto out;
		}
		if (in->id != X86_INS_RET)
			continue;
		if (*nret == DW_GO_MAX_RETS) {
			snprintf(why, whylen, "more than %d RET instructions", DW_GO_MAX_RETS);
			goto out;
		}
		rets[(*nret)++] = (uint32_t)(at - addr);
	}
	if (*nret == 0) {
		snprintf(why, whylen, "no RET instruction in %zu bytes", len);
		goto out;
	}
	rc = 0;
out:
	dis_close(&d);
	return rc;
}

/* The stack check's operands: CMPQ SP or R12 against 16(R14); LEAQ -n(SP) into R12. */
static int is_stack_cmp(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;

	return in->id == X86_INS_CMP && x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
	       (x->operands[0].reg == X86_REG_RSP || x->operands[0].reg == X86_REG_R12) &&
	       x->operands[1].type == X86_OP_MEM && x->operands[1].mem.base == X86_REG_R14 &&
	       x->operands[1].mem.index == X86_REG_INVALID && x->operands[1].mem.disp == 16;
}

static int is_r12_lea(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;

	return in->id == X86_INS_LEA && x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
	       x->operands[0].reg == X86_REG_R12 && x->operands[1].type == X86_OP_MEM &&
	       x->operands[1].mem.base == X86_REG_RSP && x->operands[1].mem.index == X86_REG_INVALID;
}

/* The stack check's JLS with an open decoder: *off its offset, *after the next instruction's. */
static int entry_branch(struct dis *d, const uint8_t *code, size_t len, uint64_t addr, uint32_t *off,
			uint32_t *after)
{
	const uint8_t *p = code;
	size_t left = len;
	uint64_t pc = addr;
	int cmp = 0;

	/* LEAQ (optional), CMPQ, JLS: three instructions at most */
	for (int i = 0; i < 3 && left > 0; i++) {
		uint64_t at = pc;

		if (!cs_disasm_iter(d->h, &p, &left, &pc, d->in))
			return -1;
		if (!cmp && i == 0 && is_r12_lea(d->in))
			continue;
		if (!cmp && is_stack_cmp(d->in)) {
			cmp = 1;
			continue;
		}
		if (!cmp || d->in->id != X86_INS_JBE)
			return -1;
		*off = (uint32_t)(at - addr);
		*after = (uint32_t)(pc - addr);
		return 0;
	}
	return -1;
}

int dw_go_find_entry_branch(const uint8_t *code, size_t len, uint64_t addr, uint32_t *off)
{
	struct dis d;
	uint32_t after;
	int rc;

	if (dis_open(&d, 1) < 0)
		return -1;
	rc = entry_branch(&d, code, len, addr, off, &after);
	dis_close(&d);
	return rc;
}

/*
 * Whether the code at offset at reaches a RET within 12 instructions with no jump before it (a call
 * is allowed: Go's return from a function with a defer calls runtime.deferreturn first).
 */
static int returns_at_once(csh h, cs_insn *in, const uint8_t *code, size_t len, uint64_t addr, uint64_t at)
{
	const uint8_t *p;
	size_t left;
	uint64_t pc;

	if (at >= len)
		return 0;
	p = code + at;
	left = len - at;
	pc = addr + at;
	for (int i = 0; i < 12 && left > 0; i++) {
		if (!cs_disasm_iter(h, &p, &left, &pc, in))
			return 0;
		if (in->id == X86_INS_RET)
			return 1;
		if (dis_is_branch(in) && in->id != X86_INS_CALL)
			return 0;
	}
	return 0;
}

int dw_go_find_slow_path(const uint8_t *code, size_t len, uint64_t addr, uint32_t *off)
{
	const uint8_t *p;
	size_t left;
	uint64_t pc, target, next;
	uint32_t jls, after;
	int rc = -1, fast_target, fast_next;
	struct dis d;

	if (dis_open(&d, 1) < 0)
		return -1;
	if (entry_branch(&d, code, len, addr, &jls, &after) < 0)
		goto out;
	/* the straight run after the JLS to the first conditional branch */
	p = code + after;
	left = len - after;
	pc = addr + after;
	for (int i = 0; i < 16 && left > 0; i++) {
		if (!cs_disasm_iter(d.h, &p, &left, &pc, d.in))
			goto out;
		if (!dis_is_branch(d.in)) {
			if (dis_writes(d.h, d.in, X86_REG_RAX))
				goto out;
			continue;
		}
		/* a conditional branch to a place inside the function, and nothing else */
		if (d.in->id == X86_INS_JMP || d.in->id == X86_INS_CALL || d.in->id == X86_INS_RET ||
		    d.in->detail->x86.op_count != 1 || d.in->detail->x86.operands[0].type != X86_OP_IMM)
			goto out;
		target = (uint64_t)d.in->detail->x86.operands[0].imm - addr;
		next = pc - addr;
		if (target >= len)
			goto out;
		fast_target = returns_at_once(d.h, d.in, code, len, addr, target);
		fast_next = returns_at_once(d.h, d.in, code, len, addr, next);
		if (fast_target == fast_next)
			goto out;
		*off = (uint32_t)(fast_target ? next : target);
		rc = 0;
		goto out;
	}
out:
	dis_close(&d);
	return rc;
}
