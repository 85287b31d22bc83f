// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* OpenSSL's inner read and write functions, found by decoding the wrappers (sslinner.h). */
#include "logic/discovery/sslinner.h"
#include "logic/discovery/x86dis.h"

static const x86_reg pass_regs[] = { X86_REG_RDI, X86_REG_RSI, X86_REG_RDX, X86_REG_RCX };

/*
 * The first call in a wrapper's code (code[0..len), loaded at addr): 0 with *target its destination
 * when it is a direct call reached by a straight run that writes none of the registers in pass and
 * neither returns, jumps nor traps before it (a conditional branch, to an error path, only when
 * allow_cond); -1 otherwise.
 */
static int first_call(struct dis *d, const uint8_t *code, size_t len, uint64_t addr, unsigned pass,
		      int allow_cond, uint64_t *target)
{
	const uint8_t *p = code;
	size_t left = len;
	uint64_t pc = addr;

	for (int i = 0; i < DW_SSL_WRAP_MAX && left > 0; i++) {
		const cs_x86 *x;

		if (!cs_disasm_iter(d->h, &p, &left, &pc, d->in))
			return -1;
		x = &d->in->detail->x86;
		if (d->in->id == X86_INS_CALL) {
			if (x->op_count != 1 || x->operands[0].type != X86_OP_IMM)
				return -1;
			*target = (uint64_t)x->operands[0].imm;
			return 0;
		}
		if (dis_is_branch(d->in)) {
			/* a conditional branch: a jump whose one operand is its target, and no JMP */
			if (!allow_cond || d->in->id == X86_INS_JMP || d->in->id == X86_INS_LJMP ||
			    d->in->id == X86_INS_RET ||
			    x->op_count != 1 || x->operands[0].type != X86_OP_IMM)
				return -1;
			if (!cs_insn_group(d->h, d->in, CS_GRP_JUMP) || cs_insn_group(d->h, d->in, CS_GRP_INT))
				return -1;
			continue;
		}
		for (unsigned r = 0; r < sizeof(pass_regs) / sizeof(pass_regs[0]); r++)
			if ((pass & (1u << r)) && dis_writes(d->h, d->in, pass_regs[r]))
				return -1;
	}
	return -1;
}

int dw_ssl_find_inner(const uint8_t *ex, size_t exlen, uint64_t exaddr, const uint8_t *plain, size_t plainlen,
		      uint64_t plainaddr, uint64_t *inner)
{
	const unsigned all = DW_SSL_PASS_RDI | DW_SSL_PASS_RSI | DW_SSL_PASS_RDX | DW_SSL_PASS_RCX;
	uint64_t a, b;
	struct dis d;
	int rc = -1;

	if (dis_open(&d, 1) < 0)
		return -1;
	if (first_call(&d, ex, exlen, exaddr, all, 0, &a) == 0 &&
	    first_call(&d, plain, plainlen, plainaddr, DW_SSL_PASS_RDI | DW_SSL_PASS_RSI, 1, &b) == 0 &&
	    a == b && a != exaddr && a != plainaddr) {
		*inner = a;
		rc = 0;
	}
	dis_close(&d);
	return rc;
}
