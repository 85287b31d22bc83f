// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <bpf/libbpf.h>

#include "collect/hblocks.h"
#include "collect/collect.h"
#include "host/log.h"
#include "logic/depset/depset.h"
#include "logic/outcome/h2answer.h"
#include "logic/depset/lateout.h"

/* Connections' HPACK decoders kept at once (each a few KiB at the most: its table, a block) */
#define HB_CONNS 4096
/* Answers held for destinations the collector reads at its next poll */
#define HB_HELD 65536

static void on_answer(const struct dw_hb_answer *a, void *arg)
{
	struct dw_hblocks *h = arg;
	const struct dw_dep_settings *s;
	struct dw_dest *d;

	if (a->slot >= h->nslots || !(d = h->by_slot[a->slot])) {
		/* a destination the collector has not read yet (a drain between polls): the next poll's */
		if (h->replaying || h->nheld == HB_HELD)
			h->unplaced++;
		else
			h->held[h->nheld++] = *a;
		return;
	}
	if (d->dep >= 0 && (unsigned)d->dep < h->deps->n && h->deps->deps[d->dep].s)
		s = h->deps->deps[d->dep].s;
	else
		s = &h->deps->cfg.defaults;
	if (!d->late && !(d->late = calloc(1, sizeof(*d->late)))) {
		h->unplaced++;
		return;
	}
	dw_late_add(d->late, a, &s->failure_status, s->failure_grpc, s->slow_call_ns);
	h->answers++;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct dw_hblocks *h = ctx;

	return dw_hb_feed(h->table, data, size, on_answer, h);
}

int dw_hblocks_start(struct dw_hblocks *h, struct bpf_object *obj)
{
	int fd = bpf_object__find_map_fd_by_name(obj, "hblocks");

	memset(h, 0, sizeof(*h));
	if (fd < 0)
		return 0;
	h->table = dw_hb_table_new(HB_CONNS);
	h->held = calloc(HB_HELD, sizeof(*h->held));
	if (!h->table || !h->held) {
		dw_hb_table_free(h->table);
		free(h->held);
		h->table = NULL;
		h->held = NULL;
		return -ENOMEM;
	}
	h->rb = ring_buffer__new(fd, on_record, h, NULL);
	if (!h->rb) {
		int err = -errno;

		dw_err("cannot read the HTTP/2 header-block ring: %s", strerror(-err));
		dw_hb_table_free(h->table);
		h->table = NULL;
		return err;
	}
	/*
	 * The ring and the inflaters' dynamic tables hold answers' header blocks,
	 * read from TLS plaintext too: this process never dumps core (doc/tls.md,
	 * "Privacy"). Not dumpable also keeps other users' ptrace out.
	 */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
		dw_warn("cannot turn core dumps off (prctl PR_SET_DUMPABLE): %s", strerror(errno));
	return 0;
}

int dw_hblocks_fd(const struct dw_hblocks *h)
{
	return h->rb ? ring_buffer__epoll_fd(h->rb) : -1;
}

void dw_hblocks_drain(struct dw_hblocks *h, struct dw_collector *c, const struct dw_deps *deps,
		      bool polled)
{
	unsigned need = 0;

	if (!h->rb)
		return;
	for (size_t i = 0; i < c->cap; i++)
		if (c->dests[i].used && c->dests[i].slot >= need)
			need = c->dests[i].slot + 1;
	if (need > h->nslots) {
		struct dw_dest **p = realloc(h->by_slot, need * sizeof(*p));

		if (!p)
			return;		/* left on the ring for the next drain */
		h->by_slot = p;
		h->nslots = need;
	}
	memset(h->by_slot, 0, h->nslots * sizeof(*h->by_slot));
	for (size_t i = 0; i < c->cap; i++)
		if (c->dests[i].used)
			h->by_slot[c->dests[i].slot] = &c->dests[i];
	h->deps = deps;
	if (polled && h->nheld) {
		unsigned n = h->nheld;

		h->replaying = true;
		for (unsigned i = 0; i < n; i++)
			on_answer(&h->held[i], h);
		h->replaying = false;
		h->nheld = 0;
	}
	if (ring_buffer__consume(h->rb) < 0)
		dw_warn("reading the HTTP/2 header-block ring failed");
	h->deps = NULL;
}

void dw_hblocks_stop(struct dw_hblocks *h)
{
	ring_buffer__free(h->rb);
	dw_hb_table_free(h->table);
	free(h->by_slot);
	free(h->held);
	memset(h, 0, sizeof(*h));
}
