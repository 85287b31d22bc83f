/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Reading an ELF object's symbols for the TLS discovery: which of the
 * names it cares about the object defines (logic/tlsfind.h's DW_TLS_SYM_*),
 * and the file offsets of the OpenSSL functions the uprobes attach to.
 */
#ifndef DW_TLS_ELFSYMS_H
#define DW_TLS_ELFSYMS_H

#include <stddef.h>
#include <stdint.h>

/* The probed functions, in the order of attach.c's table's symbols. */
enum dw_tls_fn { DW_TLS_FN_WRITE, DW_TLS_FN_WRITE_EX, DW_TLS_FN_READ, DW_TLS_FN_READ_EX, DW_TLS_FN_FREE,
		 DW_TLS_FN_COUNT };

struct dw_tls_elf {
	unsigned syms;				/* DW_TLS_SYM_* */
	uint64_t offset[DW_TLS_FN_COUNT];	/* in the file, for the uprobe; 0: absent */
};

/*
 * Reads path's .dynsym and .symtab (defined functions only). 0, or -errno
 * (-ENOEXEC: not ELF); err gets a line on failure.
 */
int dw_tls_elf_read(const char *path, struct dw_tls_elf *out, char *err, size_t errlen);

#endif /* DW_TLS_ELFSYMS_H */
