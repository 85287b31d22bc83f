/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where a Go function's return can be taken without probing its RETs (issue 46). A RET is
 * single-stepped under a uprobe (~19 us a hit on this VM, goret.h), and so is everything in a Go
 * epilogue (MOVQ off(SP), reg; ADDQ $n, SP). But a function with open-coded defers (Go 1.14+;
 * crypto/tls.(*Conn).Read's `defer c.in.Unlock()`, Write's two) ends each path past a defer the
 * same way: its results stored to their stack slots, each deferred closure called, the last
 * deferred first,
 *     MOVQ dslot(SP), DX; MOVQ 0(DX), AX; CALL AX     (MOVB $bits, deferBits(SP) between)
 * then the results loaded back (MOVQ result(SP), AX; ...) and RET. The closure every path past
 * all the defers calls first (F.func1 in Read, F.func2 in Write: a function of its own) begins
 * with the stack check's JLS, which the kernel emulates: a probe there sees F's frame 8 bytes
 * above its stack pointer, n in it at result, and each such exit passes it once. Its return
 * address, inside F, tells these calls from the runtime's (a panic's,
 * runtime.deferreturn's). Pure: bytes in, offsets out; Capstone decodes.
 */
#ifndef DW_GODEFER_H
#define DW_GODEFER_H

#include <stddef.h>
#include <stdint.h>

#include "logic/discovery/goret.h"

/* Instructions of one function decoded at most (crypto/tls.(*Conn).Write: ~500). */
#define DW_GO_DEFER_INSNS 4096
/* Closures one exit calls at most (Go open-codes up to 8 defers a function). */
#define DW_GO_DEFER_CHAIN 8

struct dw_go_defer {
	uint64_t closure;		/* the deferred closure's address (the defer site's LEAQ) */
	uint32_t result;		/* the first result's offset from SP in F's frame */
	unsigned nexits;		/* RETs whose path calls the closure */
	uint32_t keep[DW_GO_MAX_RETS];	/* the other RETs (offsets from F's start): probed as before */
	unsigned nkeep;
};

/*
 * 0 when F (code[0..len), loaded at addr) has such exits: the closure slot dslot that the exits
 * with the most closure calls call first (all the same), each exit calling it at most once, one
 * result slot on all that do, no jump landing inside an exit after its first closure call began,
 * and every store to dslot in F either nil or the address of a closure on the stack whose
 * function word the same block set to one function's address (LEAQ F.funcN(SB)): that address is
 * the closure, and the exits that do not call it (an early return before its defer) are kept.
 * -1 otherwise (no defer, another shape): F's RETs are probed as before.
 */
int dw_go_find_defer_exits(const uint8_t *code, size_t len, uint64_t addr, struct dw_go_defer *out);

/*
 * Where F keeps its first three register arguments (RAX, RBX, RCX: a method's receiver and a
 * slice: crypto/tls.(*Conn).Read's c and b) for its whole run, so that its return can read them
 * from the frame with no entry probe: in the straight run from its entry (past the stack check's
 * JLS, after the frame's one SUB from SP), the three stored unchanged to consecutive stack slots
 * (MOVQ AX, base(SP); MOVQ BX, base+8(SP); MOVQ CX, base+16(SP): Go's spill area), and no other
 * instruction of F writing over them (nor anything through BP, which could alias them). 0 with
 * *base; -1 otherwise.
 */
int dw_go_find_arg_spill(const uint8_t *code, size_t len, uint64_t addr, uint32_t *base);

#endif
