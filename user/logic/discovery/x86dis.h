/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One x86-64 decoder (Capstone, Debian's libcapstone) for the probe finders: Go's RETs and
 * entries (goret.c), OpenSSL's inner functions (sslinner.c). Pure: bytes in, facts out.
 */
#ifndef DW_X86DIS_H
#define DW_X86DIS_H

#include <capstone/capstone.h>

/* An x86-64 decoder and its one instruction's room (with operand details if asked). */
struct dis {
	csh h;
	cs_insn *in;
};

/* 0, or -1 when Capstone cannot open a decoder. */
int dis_open(struct dis *d, int detail);
void dis_close(struct dis *d);
/* Whether in (decoded with details) writes any part of reg (RAX, RBX, RCX, RDX, RSI, RDI or RSP; any other: as if written). */
int dis_writes(csh h, const cs_insn *in, x86_reg reg);
/* Whether in jumps, calls, returns or traps (decoded with details). */
int dis_is_branch(const cs_insn *in);

#endif
