// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer over the header-block reader (user/logic/outcome/h2answer.c): the
 * input is a run of records as the ring would hand them (struct dw_hb_rec,
 * any bytes), fed to a table of 4 connections: frames put together,
 * CONTINUATION, padding, HPACK through nghttp2, gaps. Never a crash, a
 * leak or an answer from a desynced connection.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "depwatch.h"
#include "h2/hblock.h"
#include "logic/outcome/h2answer.h"

static void on_answer(const struct dw_hb_answer *a, void *arg)
{
	unsigned *n = arg;

	if (!a->desync && a->status < 0)
		abort();
	(*n)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dw_hb_table *t = dw_hb_table_new(4);
	unsigned n = 0;

	if (!t)
		return 0;
	/* records of the struct's size; a few fields folded into range so that frames complete */
	while (size >= 8) {
		struct dw_hb_rec r;
		size_t take = size < sizeof(r) ? size : sizeof(r);

		memset(&r, 0, sizeof(r));
		memcpy(&r, data, take);
		r.conn_id &= 3;
		r.frame_len %= 600;
		r.off %= 600;
		r.npeek %= DW_HB_PEEK + 2;
		r.nbody %= DW_HB_BODY + 2;
		dw_hb_feed(t, &r, sizeof(r), on_answer, &n);
		data += take;
		size -= take;
	}
	dw_hb_table_free(t);
	return 0;
}
