// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A Go function's deferred exits (godefer.h), decoded with Capstone. */
#include "logic/discovery/godefer.h"

#include <stdlib.h>
#include <string.h>

#include "logic/discovery/x86dis.h"

/* One function decoded once: each instruction's offset, and which offsets a jump targets. */
struct fn {
	const uint8_t *code;
	size_t len;
	uint64_t addr;
	uint32_t *off;		/* off[i]: instruction i's offset; off[n] = len */
	unsigned n;
	uint8_t *target;	/* target[o]: a jump inside F lands at offset o */
};

/* Instruction i of f into d->in (details on). */
static int insn(struct dis *d, const struct fn *f, unsigned i)
{
	const uint8_t *p = f->code + f->off[i];
	size_t left = f->len - f->off[i];
	uint64_t pc = f->addr + f->off[i];

	return cs_disasm_iter(d->h, &p, &left, &pc, d->in) ? 0 : -1;
}

static int decode_all(struct dis *d, struct fn *f)
{
	const uint8_t *p = f->code;
	size_t left = f->len;
	uint64_t pc = f->addr;

	f->n = 0;
	while (left > 0) {
		const cs_x86 *x;

		if (f->n == DW_GO_DEFER_INSNS)
			return -1;
		f->off[f->n] = (uint32_t)(pc - f->addr);
		if (!cs_disasm_iter(d->h, &p, &left, &pc, d->in))
			return -1;
		f->n++;
		x = &d->in->detail->x86;
		if (dis_is_branch(d->in) && d->in->id != X86_INS_CALL && x->op_count == 1 &&
		    x->operands[0].type == X86_OP_IMM) {
			uint64_t t = (uint64_t)x->operands[0].imm;

			if (t >= f->addr && t < f->addr + f->len)
				f->target[t - f->addr] = 1;
		}
	}
	f->off[f->n] = (uint32_t)f->len;
	return 0;
}

/* A decoder with details, and F decoded into f: 0, or -1 (nothing left to close). */
static int fn_open(struct dis *d, struct fn *f, const uint8_t *code, size_t len, uint64_t addr)
{
	*f = (struct fn){ .code = code, .len = len, .addr = addr };
	if (!len || dis_open(d, 1) < 0)
		return -1;
	f->off = calloc(DW_GO_DEFER_INSNS + 1, sizeof(*f->off));
	f->target = calloc(len, 1);
	if (f->off && f->target && decode_all(d, f) == 0)
		return 0;
	free(f->off);
	free(f->target);
	dis_close(d);
	return -1;
}

static void fn_close(struct dis *d, struct fn *f)
{
	free(f->off);
	free(f->target);
	dis_close(d);
}

/* A 64-bit MOV between a register and [RSP + disp] (no index), the memory operand at mem (0: a store, 1: a load). */
static int sp_move(const cs_insn *in, int mem, x86_reg *reg, int64_t *disp)
{
	const cs_x86 *x = &in->detail->x86;

	if (in->id != X86_INS_MOV || x->op_count != 2 || x->operands[!mem].type != X86_OP_REG ||
	    x->operands[mem].type != X86_OP_MEM || x->operands[mem].mem.base != X86_REG_RSP ||
	    x->operands[mem].mem.index != X86_REG_INVALID || x->operands[mem].size != 8)
		return -1;
	*reg = x->operands[!mem].reg;
	*disp = x->operands[mem].mem.disp;
	return 0;
}

/* MOV reg64, [RSP + disp]: 0 with *reg and *disp. */
static int load_from_sp(const cs_insn *in, x86_reg *reg, int64_t *disp)
{
	return sp_move(in, 1, reg, disp);
}

/* MOV [RSP + disp], reg64: 0 with *reg and *disp. */
static int store_to_sp(const cs_insn *in, x86_reg *reg, int64_t *disp)
{
	return sp_move(in, 0, reg, disp);
}

/* MOV [RSP + disp], imm8: an open-coded defer's bit mask updated between the closures' calls. */
static int defer_bits_store(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;

	return in->id == X86_INS_MOV && x->op_count == 2 && x->operands[0].type == X86_OP_MEM &&
	       x->operands[0].mem.base == X86_REG_RSP && x->operands[0].mem.index == X86_REG_INVALID &&
	       x->operands[0].size == 1 && x->operands[1].type == X86_OP_IMM;
}

/*
 * Whether instruction k is the CALL of a closure call, MOV RDX, [RSP + dslot]; MOV reg, [RDX];
 * CALL reg: 1 with *dslot (d->in is left on the first MOV).
 */
static int closure_call(struct dis *d, const struct fn *f, unsigned k, int64_t *dslot)
{
	const cs_x86 *x;
	x86_reg callreg, reg;

	if (k < 2 || insn(d, f, k) < 0)
		return 0;
	x = &d->in->detail->x86;
	if (d->in->id != X86_INS_CALL || x->op_count != 1 || x->operands[0].type != X86_OP_REG)
		return 0;
	callreg = x->operands[0].reg;
	/* MOV callreg, [RDX]: the closure's function word */
	if (insn(d, f, k - 1) < 0 || d->in->id != X86_INS_MOV || x->op_count != 2 ||
	    x->operands[0].type != X86_OP_REG || x->operands[0].reg != callreg || x->operands[1].type != X86_OP_MEM ||
	    x->operands[1].mem.base != X86_REG_RDX || x->operands[1].mem.index != X86_REG_INVALID ||
	    x->operands[1].mem.disp)
		return 0;
	/* MOV RDX, [RSP + dslot]: the closure, from the defer's slot */
	return insn(d, f, k - 2) == 0 && load_from_sp(d->in, &reg, dslot) == 0 && reg == X86_REG_RDX;
}

/*
 * The closures RET r's path calls last, walking back over the epilogue (its loads from the frame,
 * its ADD to SP) to closure calls separated by defer-bit stores: their slots in call order
 * (chain[0] first), their number returned; *result where the epilogue loads RAX from. 0: no such
 * path (no closure call right before the epilogue); -1: a jump lands inside one, after its first
 * closure call began (a path that skips some of its calls: not this shape).
 */
static int exit_chain(struct dis *d, const struct fn *f, unsigned r, int64_t *chain, int64_t *result)
{
	int64_t back[DW_GO_DEFER_CHAIN], ds;
	unsigned k = r, n = 0, start = r;
	x86_reg reg;
	int64_t disp;

	*result = -1;
	while (k-- > 0) {
		const cs_x86 *x;

		if (insn(d, f, k) < 0)
			return 0;
		x = &d->in->detail->x86;
		if (d->in->id == X86_INS_ADD && x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
		    x->operands[0].reg == X86_REG_RSP && x->operands[1].type == X86_OP_IMM)
			continue;
		if (load_from_sp(d->in, &reg, &disp) == 0) {
			if (reg == X86_REG_RAX && *result < 0)
				*result = disp;
			continue;
		}
		break;
	}
	if (k == (unsigned)-1 || *result < 0)
		return 0;
	while (closure_call(d, f, k, &ds)) {
		if (n == DW_GO_DEFER_CHAIN)
			return -1;
		back[n++] = ds;
		start = k - 2;
		/* the defer bits' updates before it, then maybe the call before */
		for (k = start; k-- > 0;)
			if (insn(d, f, k) < 0 || !defer_bits_store(d->in))
				break;
		if (k == (unsigned)-1)
			break;
	}
	if (!n)
		return 0;
	for (unsigned i = start + 1; i <= r; i++)
		if (f->target[f->off[i]])
			return -1;
	for (unsigned i = 0; i < n; i++)
		chain[i] = back[n - 1 - i];
	return (int)n;
}

/* What a register holds within a block, as far as the defer site needs. */
enum { R_NONE, R_RIP, R_SP, R_ZERO };
#define FNWORDS 16

/*
 * Every store to dslot: nil, or the address of a stack closure whose function word the same
 * block set to one address (the closure). *closure then; -1 if any store is another.
 */
static int defer_site(struct dis *d, const struct fn *f, int64_t dslot, uint64_t *closure)
{
	uint8_t kind[X86_REG_ENDING];
	int64_t val[X86_REG_ENDING];
	struct { int64_t at; uint64_t fn; } word[FNWORDS];
	unsigned nword = 0;

	*closure = 0;
	memset(kind, R_NONE, sizeof(kind));
	for (unsigned i = 0; i < f->n; i++) {
		const cs_x86 *x;
		cs_regs rd, wr;
		uint8_t nrd = 0, nwr = 0;
		x86_reg reg;
		int64_t at;

		if (f->target[f->off[i]]) {	/* a block begins: nothing known */
			memset(kind, R_NONE, sizeof(kind));
			nword = 0;
		}
		if (insn(d, f, i) < 0 || cs_regs_access(d->h, d->in, rd, &nrd, wr, &nwr) != CS_ERR_OK)
			return -1;
		x = &d->in->detail->x86;
		if (store_to_sp(d->in, &reg, &at) == 0) {
			if (at == dslot) {
				if (kind[reg] == R_ZERO)
					goto next;
				if (kind[reg] != R_SP)
					return -1;
				for (unsigned w = 0; w < nword; w++)
					if (word[w].at == val[reg]) {
						if (!word[w].fn || (*closure && *closure != word[w].fn))
							return -1;
						*closure = word[w].fn;
						goto next;
					}
				return -1;
			}
			if (at + 8 > dslot && at < dslot + 8)
				return -1;
			for (unsigned w = 0; w < nword; w++)
				if (word[w].at == at) {
					word[w].fn = kind[reg] == R_RIP ? (uint64_t)val[reg] : 0;
					goto next;
				}
			if (nword < FNWORDS) {
				word[nword].at = at;
				word[nword++].fn = kind[reg] == R_RIP ? (uint64_t)val[reg] : 0;
			}
			goto next;
		}
		/* any other write over dslot: Go's zero register X15 stored (nil), or not this shape */
		for (unsigned o = 0; o < x->op_count; o++) {
			const cs_x86_op *op = &x->operands[o];

			if (op->type != X86_OP_MEM || !(op->access & CS_AC_WRITE))
				continue;
			if (op->mem.base != X86_REG_RSP)
				continue;
			if (op->mem.index != X86_REG_INVALID)
				return -1;
			if (op->mem.disp + op->size > dslot && op->mem.disp < dslot + 8 &&
			    !(d->in->id == X86_INS_MOVUPS && x->op_count == 2 && x->operands[1].type == X86_OP_REG &&
			      x->operands[1].reg == X86_REG_XMM15))
				return -1;
		}
next:
		for (unsigned w = 0; w < nwr; w++)
			kind[wr[w]] = R_NONE;
		if (d->in->id == X86_INS_LEA && x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
		    x->operands[1].type == X86_OP_MEM && x->operands[1].mem.index == X86_REG_INVALID) {
			reg = x->operands[0].reg;
			if (x->operands[1].mem.base == X86_REG_RIP) {
				kind[reg] = R_RIP;
				val[reg] = (int64_t)(f->addr + f->off[i + 1]) + x->operands[1].mem.disp;
			} else if (x->operands[1].mem.base == X86_REG_RSP) {
				kind[reg] = R_SP;
				val[reg] = x->operands[1].mem.disp;
			}
		} else if (d->in->id == X86_INS_MOV && x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
			   x->operands[1].type == X86_OP_IMM && x->operands[1].imm == 0) {
			kind[x->operands[0].reg] = R_ZERO;
		}
		if (dis_is_branch(d->in)) {	/* after a jump or a call nothing is known */
			memset(kind, R_NONE, sizeof(kind));
			nword = 0;
		}
	}
	return *closure ? 0 : -1;
}

int dw_go_find_defer_exits(const uint8_t *code, size_t len, uint64_t addr, struct dw_go_defer *out)
{
	int64_t chain[DW_GO_MAX_RETS][DW_GO_DEFER_CHAIN], result[DW_GO_MAX_RETS], dslot = -1, res = -1;
	int nchain[DW_GO_MAX_RETS];
	unsigned rets[DW_GO_MAX_RETS], nret = 0, longest = 0;
	struct fn f;
	struct dis d;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (fn_open(&d, &f, code, len, addr) < 0)
		return -1;
	for (unsigned i = 0; i < f.n; i++) {
		if (insn(&d, &f, i) < 0)
			goto out;
		if (d.in->id != X86_INS_RET)
			continue;
		if (nret == DW_GO_MAX_RETS)
			goto out;
		rets[nret] = i;
		nchain[nret] = exit_chain(&d, &f, i, chain[nret], &result[nret]);
		if (nchain[nret] < 0)
			goto out;
		if ((unsigned)nchain[nret] > longest)
			longest = (unsigned)nchain[nret];
		nret++;
	}
	/* the closure the longest paths call first: the last deferred, on every path past all defers */
	for (unsigned i = 0; i < nret; i++)
		if ((unsigned)nchain[i] == longest && longest) {
			if (dslot >= 0 && chain[i][0] != dslot)
				goto out;
			dslot = chain[i][0];
		}
	if (dslot < 0)
		goto out;
	for (unsigned i = 0; i < nret; i++) {
		int calls = 0;

		for (int c = 0; c < nchain[i]; c++)
			calls += chain[i][c] == dslot;
		if (calls > 1)
			goto out;
		if (!calls) {
			out->keep[out->nkeep++] = f.off[rets[i]];
			continue;
		}
		/* one result slot on all of them */
		if ((res >= 0 && result[i] != res) || result[i] > 0xffff)
			goto out;
		res = result[i];
		out->nexits++;
	}
	if (defer_site(&d, &f, dslot, &out->closure) < 0)
		goto out;
	out->result = (uint32_t)res;
	rc = 0;
out:
	fn_close(&d, &f);
	if (rc)
		memset(out, 0, sizeof(*out));
	return rc;
}

/* Whether in writes memory over [RSP + lo, RSP + hi), or through RBP, or through RSP with an index. */
static int writes_frame(const cs_insn *in, int64_t lo, int64_t hi)
{
	const cs_x86 *x = &in->detail->x86;

	for (unsigned o = 0; o < x->op_count; o++) {
		const cs_x86_op *op = &x->operands[o];

		if (op->type != X86_OP_MEM || !(op->access & CS_AC_WRITE))
			continue;
		if (op->mem.base == X86_REG_RBP)
			return 1;
		if (op->mem.base != X86_REG_RSP)
			continue;
		if (op->mem.index != X86_REG_INVALID || (op->mem.disp + op->size > lo && op->mem.disp < hi))
			return 1;
	}
	return 0;
}

int dw_go_find_arg_spill(const uint8_t *code, size_t len, uint64_t addr, uint32_t *base)
{
	static const x86_reg args[3] = { X86_REG_RAX, X86_REG_RBX, X86_REG_RCX };
	int64_t at[3] = { -1, -1, -1 };
	unsigned store[3] = { 0 }, written = 0, run;
	int sub = 0, rc = -1;
	struct fn f;
	struct dis d;

	if (fn_open(&d, &f, code, len, addr) < 0)
		return -1;
	/* the straight run from the entry: the stack check's branch is the only one allowed */
	for (run = 0; run < f.n && run < 32; run++) {
		const cs_x86 *x;
		x86_reg reg;
		int64_t disp;

		if (insn(&d, &f, run) < 0)
			goto out;
		x = &d.in->detail->x86;
		if (dis_is_branch(d.in)) {
			if (run < 3 && d.in->id == X86_INS_JBE)
				continue;
			break;
		}
		if (d.in->id == X86_INS_SUB && x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
		    x->operands[0].reg == X86_REG_RSP && x->operands[1].type == X86_OP_IMM && !sub) {
			sub = 1;
			continue;
		}
		if (sub && store_to_sp(d.in, &reg, &disp) == 0) {
			for (int a = 0; a < 3; a++)
				if (reg == args[a] && !(written & (1u << a)) && at[a] < 0) {
					at[a] = disp;
					store[a] = run;
				}
		}
		if (dis_writes(d.h, d.in, X86_REG_RSP))
			goto out;
		for (int a = 0; a < 3; a++)
			if (dis_writes(d.h, d.in, args[a]))
				written |= 1u << a;
	}
	if (at[0] < 0 || at[1] != at[0] + 8 || at[2] != at[0] + 16 || at[0] > 0xffff)
		goto out;
	/* nothing else in F writes over them */
	for (unsigned i = 0; i < f.n; i++) {
		if (i == store[0] || i == store[1] || i == store[2])
			continue;
		if (insn(&d, &f, i) < 0 || writes_frame(d.in, at[0], at[0] + 24))
			goto out;
	}
	*base = (uint32_t)at[0];
	rc = 0;
out:
	fn_close(&d, &f);
	return rc;
}
