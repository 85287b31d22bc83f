/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A bounded view of an ELF64 little-endian file held in memory, as much of it as
 * the Go probe finder needs: a section by name, and a virtual address turned into
 * a file offset (what a uprobe is attached at). Pure and defensive: the bytes may
 * be any file a process maps, so every offset read is checked against the length
 * first, and a malformed header is an error, never a read outside the buffer.
 * Fed by user/discovery/golang/goprobe.c (the file mapped read-only) and by the fuzzer.
 */
#ifndef DW_GOELF_H
#define DW_GOELF_H

#include <stddef.h>
#include <stdint.h>

struct dw_elf {
	const uint8_t *buf;
	size_t len;
	uint16_t machine;	/* e_machine: 62 is x86-64, 183 is AArch64 */
	uint16_t type;		/* e_type: 2 EXEC, 3 DYN (PIE) */
	uint64_t shoff, phoff;
	uint16_t shnum, phnum, shstrndx;
};

/* One section: where its bytes are in the file, and its address when loaded. */
struct dw_elf_sect {
	uint64_t off, size, addr;
	uint32_t type;		/* SHT_NOBITS (8) has no bytes in the file */
};

#define DW_EM_X86_64 62
#define DW_EM_AARCH64 183

/* 0, or -1 with why[] saying what is wrong (not ELF, not 64-bit little-endian, a header cut short). */
int dw_elf_open(struct dw_elf *e, const void *buf, size_t len, char *why, size_t whylen);
/* 0 and *s filled when the section is there with its bytes inside the file; -1 otherwise. */
int dw_elf_section(const struct dw_elf *e, const char *name, struct dw_elf_sect *s);
/* The file offset of a loaded address (a PT_LOAD segment's bytes), or -1 when none holds it. */
int64_t dw_elf_vaddr_to_off(const struct dw_elf *e, uint64_t vaddr);

/* Little-endian reads; the caller has checked the bounds. */
static inline uint32_t dw_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t dw_le64(const uint8_t *p)
{
	return (uint64_t)dw_le32(p) | (uint64_t)dw_le32(p + 4) << 32;
}
static inline uint16_t dw_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* Whether [off, off+n) lies inside a buffer of len bytes, without overflow. */
static inline int dw_in_bounds(uint64_t off, uint64_t n, uint64_t len)
{
	return off <= len && n <= len - off;
}

#endif
