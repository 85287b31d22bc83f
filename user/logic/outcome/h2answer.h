/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * HTTP/2 and gRPC answers (issue 33): the server's header blocks of each
 * HTTP/2 connection, as the kernel copies them (bpf/h2/hblock.h records, in
 * order per connection), put back together (frames, CONTINUATION) and
 * decoded with nghttp2's HPACK inflater, one per connection; out come each
 * stream's :status and grpc-status. A gap in a connection's records (the
 * ring was full, a frame cut at the kernel's bound, a block that does not
 * decode) leaves its header table unknown: the connection is marked
 * desynced and says nothing more (no status invented) until it is gone.
 * And the gRPC status codes as operators write them (failure_grpc).
 * Pure: records in, answers out; no I/O.
 */
#ifndef DW_H2ANSWER_H
#define DW_H2ANSWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "logic/base/jsonw.h"

#define DW_GRPC_CODES(X)                                                                        \
	X(0, ok) X(1, cancelled) X(2, unknown) X(3, invalid_argument) X(4, deadline_exceeded)   \
	X(5, not_found) X(6, already_exists) X(7, permission_denied) X(8, resource_exhausted)   \
	X(9, failed_precondition) X(10, aborted) X(11, out_of_range) X(12, unimplemented)       \
	X(13, internal) X(14, unavailable) X(15, data_loss) X(16, unauthenticated)

#define DW_GRPC_N 17
/* an answer's grpc-status that names no code of DW_GRPC_CODES: counted apart, never failed */
#define DW_GRPC_OTHER DW_GRPC_N

extern const char *const dw_grpc_names[DW_GRPC_N];

#define DW_FAILURE_GRPC_DEFAULT \
	"unavailable, deadline_exceeded, resource_exhausted, internal, unknown, data_loss"

/*
 * "unavailable, deadline_exceeded" (commas or blanks between names, case
 * blind; "none" alone) into *set, bit (code) per code. 0, or -EINVAL with
 * *set untouched.
 */
int dw_grpc_set_parse(const char *text, uint32_t *set);

/* The set as a config writes it: names by code; "none" if empty. */
void dw_grpc_set_format(uint32_t set, struct dw_buf *out);

/* The code of a grpc-status value ("14"): 0..16, DW_GRPC_OTHER for any other text. */
int dw_grpc_code_of(const char *value, size_t len);

/* One stream's answer, or a connection's desync. */
struct dw_hb_answer {
	uint32_t slot;		/* the destination's slot */
	uint32_t stream;
	uint8_t role;		/* enum dw_role of the connection */
	bool desync;		/* not an answer: the connection lost its header table */
	bool kfailed;		/* the kernel counted the call failed already */
	bool timed;		/* start_ns and end_ns are the call's (its end was seen) */
	int status;		/* :status; 0: none read */
	int grpc;		/* grpc-status: 0..16, DW_GRPC_OTHER; -1: none */
	uint64_t start_ns, end_ns;
};

typedef void dw_hb_answer_fn(const struct dw_hb_answer *a, void *arg);

struct dw_hb_figs {
	uint64_t records;	/* records fed */
	uint64_t blocks;	/* header blocks decoded */
	uint64_t desync;	/* connections that lost step (hpack_desync) */
	uint64_t evicted;	/* connections' decoders dropped for a newer connection */
	uint64_t untracked;	/* gRPC streams whose trailers no slot was left to wait for */
};

struct dw_hb_table;

/* Room for max_conns connections' decoders (a power of two is not needed). NULL: no memory. */
struct dw_hb_table *dw_hb_table_new(unsigned max_conns);
void dw_hb_table_free(struct dw_hb_table *t);

/*
 * One record (struct dw_hb_rec, size bytes as read off the ring): the
 * answers it completes, and a connection's desync, go to fn. A record too
 * short or out of its bounds is a desync of its connection. 0, or -ENOMEM.
 */
int dw_hb_feed(struct dw_hb_table *t, const void *rec, size_t size, dw_hb_answer_fn *fn, void *arg);

const struct dw_hb_figs *dw_hb_figs(const struct dw_hb_table *t);

#endif /* DW_H2ANSWER_H */
