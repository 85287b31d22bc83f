// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The Go function table reader (gopcln.h). */
#include "logic/discovery/gopcln.h"

#include <stdio.h>
#include <string.h>

/* Header: magic, two zero pads, the minimum instruction size, the pointer size, then words. */
#define HDR_WORDS_116 7
#define HDR_WORDS_118 8
/* The longest function name read (Go's are far shorter; generic instantiations run to a few hundred). */
#define DW_PCLN_NAME_MAX 4096

int dw_go_pcln_parse(struct dw_go_pcln *p, const uint8_t *tab, uint64_t len, char *why, size_t whylen)
{
	uint64_t words, nent, entsz;

	memset(p, 0, sizeof(*p));
	if (len < 8) {
		snprintf(why, whylen, ".gopclntab is %llu bytes: too short for its header", (unsigned long long)len);
		return -1;
	}
	p->tab = tab;
	p->len = len;
	p->magic = dw_le32(tab);
	switch (p->magic) {
	case DW_PCLN_GO116:
		words = HDR_WORDS_116;
		break;
	case DW_PCLN_GO118:
	case DW_PCLN_GO120:
		words = HDR_WORDS_118;
		break;
	case 0xfffffffbu:
		snprintf(why, whylen, ".gopclntab of Go 1.2-1.15 (magic 0xfffffffb): not read (Go 1.17+ is probed)");
		return -1;
	default:
		snprintf(why, whylen, ".gopclntab magic 0x%08x is none this version knows", p->magic);
		return -1;
	}
	if (tab[4] || tab[5] || tab[7] != 8) {
		snprintf(why, whylen, ".gopclntab header: pads %u %u, pointer size %u (only 8 is read)",
			 tab[4], tab[5], tab[7]);
		return -1;
	}
	if (!dw_in_bounds(8, words * 8, len)) {
		snprintf(why, whylen, ".gopclntab header cut short");
		return -1;
	}
	p->nfunc = dw_le64(tab + 8);
	if (p->magic == DW_PCLN_GO116) {
		p->funcname = dw_le64(tab + 8 + 2 * 8);
		p->functab = dw_le64(tab + 8 + 6 * 8);
		entsz = 16;
	} else {
		p->text_start = dw_le64(tab + 8 + 2 * 8);
		p->funcname = dw_le64(tab + 8 + 3 * 8);
		p->functab = dw_le64(tab + 8 + 7 * 8);
		entsz = 8;
	}
	/* nfunc entries and the end PC's: all inside the table (nfunc bounded first: no overflow) */
	nent = p->nfunc + 1;
	if (p->nfunc > len / entsz || p->funcname >= len || !dw_in_bounds(p->functab, nent * entsz, len)) {
		snprintf(why, whylen, ".gopclntab: %llu functions or its table offsets lie outside its %llu bytes",
			 (unsigned long long)p->nfunc, (unsigned long long)len);
		return -1;
	}
	return 0;
}

/*
 * No section header names the table (sstrip, or a linker that renamed it): the header is looked
 * for at 8-byte alignment in the file, and taken only if it parses and, for Go 1.18+, its
 * textStart is the .text section's address or lies in the file's first executable bytes.
 */
static int pcln_scan(const struct dw_elf *e, struct dw_go_pcln *p)
{
	struct dw_elf_sect text;
	int have_text = dw_elf_section(e, ".text", &text) == 0;
	char why[160];

	for (uint64_t off = 0; off + 64 <= e->len; off += 8) {
		const uint8_t *b = e->buf + off;
		uint32_t m = dw_le32(b);
		uint64_t a, sz;
		const char *n;

		if (b[0] != 0xf0 && b[0] != 0xf1 && b[0] != 0xfa)
			continue;
		if ((m != DW_PCLN_GO116 && m != DW_PCLN_GO118 && m != DW_PCLN_GO120) || b[4] || b[5] || b[7] != 8)
			continue;
		if (dw_go_pcln_parse(p, b, e->len - off, why, sizeof(why)) < 0 || p->nfunc == 0 ||
		    dw_go_pcln_func(p, 0, &a, &sz, &n) < 0)
			continue;
		if (m != DW_PCLN_GO116 && have_text && p->text_start != text.addr)
			continue;
		if (dw_elf_vaddr_to_off(e, a) < 0)
			continue;
		return 0;
	}
	return -1;
}

int dw_go_pcln_open(const struct dw_elf *e, struct dw_go_pcln *p, char *why, size_t whylen)
{
	struct dw_elf_sect s;

	/* -buildmode=pie puts it in .data.rel.ro, named .data.rel.ro.gopclntab */
	if (dw_elf_section(e, ".gopclntab", &s) == 0 || dw_elf_section(e, ".data.rel.ro.gopclntab", &s) == 0)
		return dw_go_pcln_parse(p, e->buf + s.off, s.size, why, whylen);
	if (pcln_scan(e, p) == 0)
		return 0;
	snprintf(why, whylen, "no Go function table (.gopclntab) found");
	return -1;
}

/* The i-th table entry's address (i <= nfunc) and its _func's offset in tab. */
static void entry_at(const struct dw_go_pcln *p, uint64_t i, uint64_t *addr, uint64_t *funcoff)
{
	const uint8_t *t;

	if (p->magic == DW_PCLN_GO116) {
		t = p->tab + p->functab + i * 16;
		*addr = dw_le64(t);
		*funcoff = dw_le64(t + 8);
	} else {
		t = p->tab + p->functab + i * 8;
		*addr = p->text_start + dw_le32(t);
		*funcoff = dw_le32(t + 4);
	}
}

int dw_go_pcln_func(const struct dw_go_pcln *p, uint64_t i, uint64_t *entry, uint64_t *size,
		    const char **name)
{
	uint64_t a, next, funcoff, fo, nameoff_at, noff;
	const uint8_t *nul;

	if (i >= p->nfunc)
		return -1;
	entry_at(p, i, &a, &funcoff);
	entry_at(p, i + 1, &next, &fo);
	if (next <= a)
		return -1;
	/* _func: entry (8 bytes in 1.16-1.17, a 4-byte offset since), then nameOff int32; funcoff is
	 * relative to the function table */
	nameoff_at = p->functab + funcoff + (p->magic == DW_PCLN_GO116 ? 8 : 4);
	if (funcoff > p->len || !dw_in_bounds(nameoff_at, 4, p->len))
		return -1;
	noff = p->funcname + (uint32_t)dw_le32(p->tab + nameoff_at);
	if (noff >= p->len)
		return -1;
	/* bounded, so a scan over hostile bytes stays linear in the file */
	nul = memchr(p->tab + noff, '\0', p->len - noff < DW_PCLN_NAME_MAX ? p->len - noff : DW_PCLN_NAME_MAX);
	if (!nul)
		return -1;
	*entry = a;
	*size = next - a;
	*name = (const char *)p->tab + noff;
	return 0;
}

int dw_go_pcln_find(const struct dw_go_pcln *p, const char *name, uint64_t *entry, uint64_t *size)
{
	for (uint64_t i = 0; i < p->nfunc; i++) {
		const char *n;

		if (dw_go_pcln_func(p, i, entry, size, &n) == 0 && !strcmp(n, name))
			return 0;
	}
	return -1;
}
