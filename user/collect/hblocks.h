/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The daemon's end of the hblocks ring (issue 33, bpf/h2/hblock.bpf.h): the
 * server's HTTP/2 header blocks read off the ring, decoded per connection
 * (user/logic/outcome/h2answer.c) and merged into their destination's figures
 * (user/logic/depset/lateout.c), after the kernel's counters were read and before
 * the dependencies are judged.
 */
#ifndef DW_HBLOCKS_H
#define DW_HBLOCKS_H

#include <stdbool.h>
#include <stdint.h>

struct bpf_object;
struct dw_collector;
struct dw_deps;
struct dw_hb_answer;

struct dw_hblocks {
	struct ring_buffer *rb;		/* NULL: the object has no ring (nothing decoded) */
	struct dw_hb_table *table;
	/* during a drain: the destinations by slot, and whose settings */
	struct dw_dest **by_slot;
	unsigned nslots;
	const struct dw_deps *deps;
	uint64_t answers;		/* answers merged since start */
	/* answers of destinations not read yet (a drain between polls), for the next poll's drain */
	struct dw_hb_answer *held;
	unsigned nheld;
	bool replaying;
	uint64_t unplaced;		/* answers whose destination was never read: not merged */
};

int dw_hblocks_start(struct dw_hblocks *h, struct bpf_object *obj);
/* The ring's fd for poll (readable once a quarter full); -1 without one. */
int dw_hblocks_fd(const struct dw_hblocks *h);
/*
 * Everything on the ring now, decoded and merged into c's destinations;
 * polled: c was just read (the answers held for destinations new since are
 * placed first).
 */
void dw_hblocks_drain(struct dw_hblocks *h, struct dw_collector *c, const struct dw_deps *deps,
		      bool polled);
void dw_hblocks_stop(struct dw_hblocks *h);

#endif /* DW_HBLOCKS_H */
