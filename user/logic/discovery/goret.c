// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The RET finder (goret.h): Capstone's iterator over one function. */
#include "logic/discovery/goret.h"

#include <capstone/capstone.h>
#include <stdio.h>

int dw_go_find_rets(const uint8_t *code, size_t len, uint64_t addr, uint32_t *rets, unsigned *nret,
		    char *why, size_t whylen)
{
	const uint8_t *p = code;
	size_t left = len;
	uint64_t pc = addr;
	csh h;
	cs_insn *in;
	int rc = -1;

	*nret = 0;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK) {
		snprintf(why, whylen, "capstone: cannot open an x86-64 decoder");
		return -1;
	}
	in = cs_malloc(h);
	if (!in) {
		snprintf(why, whylen, "capstone: out of memory");
		goto out;
	}
	/* The linker pads between functions with INT3; the size from .gopclntab includes the
	 * padding, which decodes too, so a stop before the end is a real decoding failure. */
	while (left > 0) {
		uint64_t at = pc;

		if (!cs_disasm_iter(h, &p, &left, &pc, in)) {
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
	if (in)
		cs_free(in, 1);
	cs_close(&h);
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

int dw_go_find_entry_branch(const uint8_t *code, size_t len, uint64_t addr, uint32_t *off)
{
	const uint8_t *p = code;
	size_t left = len;
	uint64_t pc = addr;
	int rc = -1, cmp = 0;
	csh h;
	cs_insn *in;

	if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK)
		return -1;
	cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
	in = cs_malloc(h);
	/* LEAQ (optional), CMPQ, JLS: three instructions at most */
	for (int i = 0; in && i < 3 && left > 0; i++) {
		uint64_t at = pc;

		if (!cs_disasm_iter(h, &p, &left, &pc, in))
			break;
		if (!cmp && i == 0 && is_r12_lea(in))
			continue;
		if (!cmp && is_stack_cmp(in)) {
			cmp = 1;
			continue;
		}
		if (cmp && in->id == X86_INS_JBE) {
			*off = (uint32_t)(at - addr);
			rc = 0;
		}
		break;
	}
	if (in)
		cs_free(in, 1);
	cs_close(&h);
	return rc;
}
