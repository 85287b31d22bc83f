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

#endif
