// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An ELF object's symbols for the TLS discovery (elfsyms.h), with libelf.
 * The offsets are computed here, once per file, rather than by libbpf at
 * each of a file's attaches (each would parse the file again).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "logic/discovery/tlsfind.h"
#include "logic/discovery/sslinner.h"
#include "discovery/tls/elfsyms.h"

#define FN_NAME(id, sym, bit) [DW_TLS_FN_##id] = sym,
static const char *const fn_names[DW_TLS_FN_COUNT] = { DW_TLS_FNS(FN_NAME) };
#undef FN_NAME
#define FN_BIT(id, sym, bit) [DW_TLS_FN_##id] = bit,
static const unsigned fn_bits[DW_TLS_FN_COUNT] = { DW_TLS_FNS(FN_BIT) };
#undef FN_BIT

/* A symbol's virtual address as a file offset: through the PT_LOAD segment that holds it. */
static uint64_t file_offset(Elf *elf, uint64_t vaddr)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_memsz)
			return vaddr - ph.p_vaddr + ph.p_offset;
	}
	return 0;
}

/* What one symbol name says; the exact names first (they are the common case in libssl). */
static void note(Elf *elf, const char *name, const GElf_Sym *s, struct dw_tls_elf *out)
{
	out->syms |= DW_TLS_SYM_ANY;
	if (name[0] == 'S' && name[1] == 'S' && name[2] == 'L' && name[3] == '_') {
		/* every name of the table begins SSL_: the test above spares the others */
		for (int i = 0; i < DW_TLS_FN_COUNT; i++)
			if (fn_names[i] && !strcmp(name, fn_names[i]) && !out->offset[i]) {
				out->offset[i] = file_offset(elf, s->st_value);
				out->vaddr[i] = s->st_value;
				if (out->offset[i])
					out->syms |= fn_bits[i];
			}
		if (!strcmp(name, "SSL_ImportFD"))
			out->syms |= DW_TLS_SYM_NSS;
		return;
	}
	if (!strncmp(name, "BORINGSSL_", 10))
		out->syms |= DW_TLS_SYM_BORINGSSL;
	else if (!strcmp(name, "gnutls_record_send"))
		out->syms |= DW_TLS_SYM_GNUTLS;
	else if (!strcmp(name, "mbedtls_ssl_write") || !strcmp(name, "wolfSSL_write"))
		out->syms |= DW_TLS_SYM_OTHER;
	else if (strstr(name, "rustls"))
		out->syms |= DW_TLS_SYM_RUSTLS;
}

static void read_table(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct dw_tls_elf *out)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

	for (size_t i = 0; data && i < n; i++) {
		GElf_Sym s;
		const char *name;

		if (!gelf_getsym(data, (int)i, &s) || s.st_shndx == SHN_UNDEF || !s.st_value)
			continue;
		if (GELF_ST_TYPE(s.st_info) != STT_FUNC && GELF_ST_TYPE(s.st_info) != STT_GNU_IFUNC)
			continue;
		name = elf_strptr(elf, sh->sh_link, s.st_name);
		if (name && *name)
			note(elf, name, &s, out);
	}
}

/*
 * What an object without telling symbols holds: OpenSSL's version text in
 * .rodata (linked in, stripped), Go's crypto/tls in .gopclntab (kept even
 * in a stripped Go binary), rustls in panic paths. Each file is read once.
 */
static void read_text(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, size_t shstrndx, struct dw_tls_elf *out)
{
	const char *name = elf_strptr(elf, shstrndx, sh->sh_name);
	Elf_Data *data;

	if (!name || sh->sh_type == SHT_NOBITS || (strcmp(name, ".rodata") && strcmp(name, ".gopclntab")))
		return;
	data = elf_rawdata(scn, NULL);
	if (!data || !data->d_buf)
		return;
	if (!strcmp(name, ".gopclntab")) {
		if (memmem(data->d_buf, data->d_size, "crypto/tls.(*Conn).Write", 24))
			out->syms |= DW_TLS_SYM_GO_TLS;
		return;
	}
	if (memmem(data->d_buf, data->d_size, "OpenSSL 3.", 10) || memmem(data->d_buf, data->d_size, "OpenSSL 1.", 10))
		out->syms |= DW_TLS_SYM_OPENSSL_TEXT;
	if (memmem(data->d_buf, data->d_size, "/rustls-", 8))
		out->syms |= DW_TLS_SYM_RUSTLS;
}

/* The wrappers' first bytes: more than DW_SSL_WRAP_MAX instructions need. */
#define WRAP_BYTES 96

/*
 * Where an operation's two forms (plain, ex) reach one inner function: its
 * offset goes to inner and the wrappers' are cleared, so that only it is
 * probed. Anything unproven leaves the wrappers as they are.
 */
static void find_inner(Elf *elf, int fd, struct dw_tls_elf *out, enum dw_tls_fn plain, enum dw_tls_fn ex,
		       enum dw_tls_fn inner)
{
	uint8_t a[WRAP_BYTES], b[WRAP_BYTES];
	uint64_t at, off;

	if (!out->offset[plain] || !out->offset[ex] ||
	    pread(fd, a, sizeof(a), (off_t)out->offset[ex]) != (ssize_t)sizeof(a) ||
	    pread(fd, b, sizeof(b), (off_t)out->offset[plain]) != (ssize_t)sizeof(b) ||
	    dw_ssl_find_inner(a, sizeof(a), out->vaddr[ex], b, sizeof(b), out->vaddr[plain], &at))
		return;
	off = file_offset(elf, at);
	if (!off)
		return;
	out->offset[inner] = off;
	out->vaddr[inner] = at;
	out->offset[plain] = out->offset[ex] = 0;
}

int dw_tls_elf_read(const char *path, struct dw_tls_elf *out, char *err, size_t errlen)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	Elf *elf;
	int fd, ret = 0;

	memset(out, 0, sizeof(*out));
	if (elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(err, errlen, "libelf: %s", elf_errmsg(-1));
		return -EINVAL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return ret;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		snprintf(err, errlen, "%s: not an ELF object", path);
		ret = -ENOEXEC;
		goto out;
	}
	if (elf_getshdrstrndx(elf, &shstrndx))
		shstrndx = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_SYMTAB)
			read_table(elf, scn, &sh, out);
		else if (shstrndx)
			read_text(elf, scn, &sh, shstrndx, out);
	}
	find_inner(elf, fd, out, DW_TLS_FN_READ, DW_TLS_FN_READ_EX, DW_TLS_FN_READ_INNER);
	find_inner(elf, fd, out, DW_TLS_FN_WRITE, DW_TLS_FN_WRITE_EX, DW_TLS_FN_WRITE_INNER);
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return ret;
}
