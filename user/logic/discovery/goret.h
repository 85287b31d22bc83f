/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where a Go function returns: every RET instruction in its machine code, found
 * by decoding it with Capstone (Debian's libcapstone). A uretprobe would swap the
 * return address on the goroutine's stack, and Go copies stacks when they grow:
 * the copy keeps the trampoline's address and the program crashes (bcc#1320).
 * So the return is probed as plain uprobes at each RET instead. x86-64 only.
 * Pure: the bytes come from the caller; nothing else is read.
 */
#ifndef DW_GORET_H
#define DW_GORET_H

#include <stddef.h>
#include <stdint.h>

/* crypto/tls.(*Conn).Write has 8 RETs and Read 7 in Go 1.19 (objdump agrees, tests/unit/test_goprobe.c); room for more. */
#define DW_GO_MAX_RETS 32

/*
 * Decodes code[0..len), the function loaded at addr, to its end. 0 with rets[] holding the
 * byte offsets (from the function's start) of its RETs, *nret of them; -1 when an instruction
 * does not decode before the end (data, or not x86-64 code), when there are none, or more than
 * DW_GO_MAX_RETS: why[] says which.
 */
int dw_go_find_rets(const uint8_t *code, size_t len, uint64_t addr, uint32_t *rets, unsigned *nret,
		    char *why, size_t whylen);

/*
 * Where the entry's uprobe goes: a uprobe whose instruction the kernel cannot emulate is
 * single-stepped, a debug trap each hit, which a virtual machine's host may intercept (KVM
 * does, for every guest): 17.8-19.2 us a hit here against 4.9-6.5 us for an instruction it
 * emulates (a conditional branch, a jump, a call, a push; bench/RESULTS.md). A Go function that
 * may grow its stack starts with the stack check, CMPQ SP (or LEAQ -n(SP), R12; CMPQ R12),
 * 16(R14) then JLS to morestack: the JLS runs on every call, with no argument register written
 * before it (R12 is none of Go's), and the kernel emulates it. 0 with *off the JLS's byte offset
 * from the function's start; -1 (the entry is probed) for any other first instructions.
 */
int dw_go_find_entry_branch(const uint8_t *code, size_t len, uint64_t addr, uint32_t *off);

/*
 * Where handshakeContext's probe goes: every Read and Write calls it, and its inlined
 * handshakeComplete() test returns at once once the handshake is done, so only its other side,
 * the handshake itself, needs the probe. After the stack check (dw_go_find_entry_branch), the
 * straight run of instructions up to the first conditional branch must leave RAX (the *Conn)
 * unwritten; the side of that branch that reaches a RET within a few instructions, with no jump
 * (a call is allowed: runtime.deferreturn), is the fast return, and the other side's first
 * instruction is the probe's; where both sides or neither do, -1. 0 with
 * *off that offset from the function's start; -1 when the code is not of that shape.
 */
int dw_go_find_slow_path(const uint8_t *code, size_t len, uint64_t addr, uint32_t *off);

#endif
