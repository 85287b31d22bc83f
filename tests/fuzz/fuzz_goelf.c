// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer over the Go probe finder's parsers (user/logic/discovery/go*.c): the bytes are a file a
 * process could map, so any of them must give an answer, never a read out of bounds, a
 * hang or a crash. The first byte picks the entry: 0 the whole ELF pipeline, 1 a
 * .gopclntab (every function walked), 2 a build info blob (behind a bare ELF header, where
 * the 16-byte scan finds it), 3 Capstone's RET finder.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "logic/discovery/gobuild.h"
#include "logic/discovery/goelf.h"
#include "logic/discovery/gopcln.h"
#include "logic/discovery/goprobes.h"
#include "logic/discovery/goret.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[256];

	if (size < 1)
		return 0;
	switch (data[0] % 4) {
	case 0: {
		struct dw_go_probes p;

		(void)dw_go_probes_image(data + 1, size - 1, &p, why, sizeof(why));
		break;
	}
	case 1: {
		struct dw_go_pcln p;
		uint64_t e, s;
		const char *n;

		if (dw_go_pcln_parse(&p, data + 1, size - 1, why, sizeof(why)) == 0) {
			for (uint64_t i = 0; i < p.nfunc; i++)
				if (dw_go_pcln_func(&p, i, &e, &s, &n) == 0 && strlen(n) > p.len)
					abort();
			(void)dw_go_pcln_find(&p, "crypto/tls.(*Conn).Write", &e, &s);
		}
		break;
	}
	case 2: {
		uint8_t *b = calloc(1, 64 + size);
		struct dw_elf e;
		struct dw_go_build bi;

		if (!b)
			return 0;
		memcpy(b, "\x7f" "ELF\x02\x01\x01", 7);
		memcpy(b + 64, data + 1, size - 1);
		if (dw_elf_open(&e, b, 64 + size - 1, why, sizeof(why)) == 0)
			(void)dw_go_buildinfo(&e, &bi, why, sizeof(why));
		free(b);
		break;
	}
	case 3: {
		uint32_t rets[DW_GO_MAX_RETS];
		unsigned n;

		(void)dw_go_find_rets(data + 1, size - 1, 0x401000, rets, &n, why, sizeof(why));
		break;
	}
	}
	return 0;
}
