// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The probe finders' decoder (x86dis.h). */
#include "logic/discovery/x86dis.h"

int dis_open(struct dis *d, int detail)
{
	d->in = NULL;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &d->h) != CS_ERR_OK)
		return -1;
	if (detail)
		cs_option(d->h, CS_OPT_DETAIL, CS_OPT_ON);
	d->in = cs_malloc(d->h);
	if (!d->in) {
		cs_close(&d->h);
		return -1;
	}
	return 0;
}

void dis_close(struct dis *d)
{
	cs_free(d->in, 1);
	cs_close(&d->h);
}

/* The parts of each 64-bit register Capstone may name as written. */
static const x86_reg parts[][5] = {
	{ X86_REG_RAX, X86_REG_EAX, X86_REG_AX, X86_REG_AL, X86_REG_AH },
	{ X86_REG_RBX, X86_REG_EBX, X86_REG_BX, X86_REG_BL, X86_REG_BH },
	{ X86_REG_RCX, X86_REG_ECX, X86_REG_CX, X86_REG_CL, X86_REG_CH },
	{ X86_REG_RDX, X86_REG_EDX, X86_REG_DX, X86_REG_DL, X86_REG_DH },
	{ X86_REG_RSI, X86_REG_ESI, X86_REG_SI, X86_REG_SIL, X86_REG_INVALID },
	{ X86_REG_RDI, X86_REG_EDI, X86_REG_DI, X86_REG_DIL, X86_REG_INVALID },
	{ X86_REG_RSP, X86_REG_ESP, X86_REG_SP, X86_REG_SPL, X86_REG_INVALID },
};

int dis_writes(csh h, const cs_insn *in, x86_reg reg)
{
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0;
	const x86_reg *p = NULL;

	for (unsigned i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (parts[i][0] == reg)
			p = parts[i];
	if (!p || cs_regs_access(h, in, rd, &nrd, wr, &nwr) != CS_ERR_OK)
		return 1;	/* not known: as if written */
	for (unsigned i = 0; i < nwr; i++)
		for (unsigned k = 0; k < 5; k++)
			if (p[k] != X86_REG_INVALID && wr[i] == p[k])
				return 1;
	return 0;
}

int dis_is_branch(const cs_insn *in)
{
	for (unsigned i = 0; i < in->detail->groups_count; i++) {
		uint8_t g = in->detail->groups[i];

		if (g == CS_GRP_JUMP || g == CS_GRP_CALL || g == CS_GRP_RET || g == CS_GRP_INT || g == CS_GRP_IRET)
			return 1;
	}
	return 0;
}
