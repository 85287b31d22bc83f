// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The bounded ELF64 view (goelf.h): headers read by offset, each read checked first. */
#include "logic/discovery/goelf.h"

#include <stdio.h>
#include <string.h>

#define EHDR_SIZE 64
#define SHDR_SIZE 64
#define PHDR_SIZE 56
#define PT_LOAD 1
#define SHT_NOBITS 8

int dw_elf_open(struct dw_elf *e, const void *buf, size_t len, char *why, size_t whylen)
{
	const uint8_t *b = buf;

	memset(e, 0, sizeof(*e));
	if (len < EHDR_SIZE || memcmp(b, "\x7f" "ELF", 4) != 0) {
		snprintf(why, whylen, "not an ELF file");
		return -1;
	}
	if (b[4] != 2 || b[5] != 1) {
		snprintf(why, whylen, "not a 64-bit little-endian ELF file (class %u, data %u)", b[4], b[5]);
		return -1;
	}
	e->buf = b;
	e->len = len;
	e->type = dw_le16(b + 16);
	e->machine = dw_le16(b + 18);
	e->phoff = dw_le64(b + 32);
	e->shoff = dw_le64(b + 40);
	e->phnum = dw_le16(b + 56);
	e->shnum = dw_le16(b + 60);
	e->shstrndx = dw_le16(b + 62);
	/* Entry sizes other than ELF64's would mean a header we do not read right. */
	if ((e->phnum && dw_le16(b + 54) != PHDR_SIZE) || (e->shnum && dw_le16(b + 58) != SHDR_SIZE)) {
		snprintf(why, whylen, "ELF header entry sizes are not ELF64's");
		return -1;
	}
	if (!dw_in_bounds(e->phoff, (uint64_t)e->phnum * PHDR_SIZE, len))
		e->phnum = 0;
	if (!dw_in_bounds(e->shoff, (uint64_t)e->shnum * SHDR_SIZE, len) || e->shstrndx >= e->shnum)
		e->shnum = 0;
	return 0;
}

int dw_elf_section(const struct dw_elf *e, const char *name, struct dw_elf_sect *s)
{
	const uint8_t *strh, *sh;
	uint64_t stroff, strsize;
	size_t nlen = strlen(name);

	if (!e->shnum)
		return -1;
	strh = e->buf + e->shoff + (uint64_t)e->shstrndx * SHDR_SIZE;
	stroff = dw_le64(strh + 24);
	strsize = dw_le64(strh + 32);
	if (!dw_in_bounds(stroff, strsize, e->len))
		return -1;
	for (uint16_t i = 0; i < e->shnum; i++) {
		uint32_t noff;

		sh = e->buf + e->shoff + (uint64_t)i * SHDR_SIZE;
		noff = dw_le32(sh);
		/* the name and its NUL inside the string table */
		if (noff >= strsize || strsize - noff < nlen + 1)
			continue;
		if (memcmp(e->buf + stroff + noff, name, nlen + 1) != 0)
			continue;
		s->type = dw_le32(sh + 4);
		s->addr = dw_le64(sh + 16);
		s->off = dw_le64(sh + 24);
		s->size = dw_le64(sh + 32);
		if (s->type == SHT_NOBITS || !dw_in_bounds(s->off, s->size, e->len))
			return -1;
		return 0;
	}
	return -1;
}

int64_t dw_elf_vaddr_to_off(const struct dw_elf *e, uint64_t vaddr)
{
	for (uint16_t i = 0; i < e->phnum; i++) {
		const uint8_t *ph = e->buf + e->phoff + (uint64_t)i * PHDR_SIZE;
		uint64_t off = dw_le64(ph + 8), va = dw_le64(ph + 16), filesz = dw_le64(ph + 32);

		if (dw_le32(ph) != PT_LOAD || vaddr < va || vaddr - va >= filesz)
			continue;
		if (!dw_in_bounds(off, filesz, e->len) || off + (vaddr - va) > INT64_MAX)
			return -1;
		return (int64_t)(off + (vaddr - va));
	}
	return -1;
}
