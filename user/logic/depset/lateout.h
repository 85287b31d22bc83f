/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Outcomes that come after their call (issue 33): an HTTP/2 stream's
 * answer decoded by the daemon (h2answer.h) once the kernel had counted
 * the call completed at its first response byte. Its latency stays the
 * kernel's; its outcome is merged here, per destination: the answer's
 * class or gRPC code counted, and a failing one moves its call from
 * completed (fast or slow, as the kernel put it by slow_call) to failed,
 * in the figures since start and in the start-time slice the breaker
 * reads (as long as the kernel's slices still hold it: DW_SLICES). Pure.
 */
#ifndef DW_LATEOUT_H
#define DW_LATEOUT_H

#include <stdint.h>

#include "depwatch.h"
#include "logic/outcome/h2answer.h"
#include "logic/outcome/outcome.h"

struct dw_slice_counts;

/* Calls of one start-time slice moved to failed. */
struct dw_late_slice {
	uint64_t slice;
	uint64_t fast, slow;
};

struct dw_late {
	uint64_t answers[4];		/* HTTP/2 answers by class: 2xx..5xx */
	uint64_t grpc[DW_GRPC_N + 1];	/* by grpc-status code; [DW_GRPC_N]: a number no code names */
	uint64_t moved_status;		/* calls moved to failed by their :status (failure_status) */
	uint64_t moved_grpc;		/* by their grpc-status (failure_grpc) */
	uint64_t moved_slow;		/* of those moved, completed slow by the kernel's count */
	uint64_t untimed;		/* failing answers whose call's start the walk never saw: not moved */
	uint64_t desync;		/* connections whose header table was lost (hpack_desync) */
	int last_status;		/* the newest failing answer's :status, 0 */
	int last_grpc;			/* or its gRPC code + 1; 0: none */
	struct dw_late_slice sl[DW_SLICES];
};

/*
 * One answer (or desync) of the destination's: fs and fg are its
 * dependency's failure_status and failure_grpc, slow_call_ns its slow_call.
 */
void dw_late_add(struct dw_late *l, const struct dw_hb_answer *a, const struct dw_status_set *fs,
		 uint32_t fg, uint64_t slow_call_ns);

/* A slice's counts as the kernel left them (acc), with this destination's moves put in. */
void dw_late_slice_apply(const struct dw_late *l, uint64_t slice, struct dw_slice_counts *acc);

/* The newest failing answer as a breaker's outcome: "http_503", "grpc_unavailable"; false: none. */
bool dw_late_outcome(const struct dw_late *l, char *buf, size_t len);

/* ,"grpc":{"unavailable":N,...},"failed_grpc":N,"hpack_desync":N  (codes seen only) */
void dw_late_json(struct dw_buf *out, const uint64_t *grpc, uint64_t failed_grpc, uint64_t desync);

#endif /* DW_LATEOUT_H */
