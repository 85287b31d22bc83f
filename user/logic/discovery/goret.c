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
