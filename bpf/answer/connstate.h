/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The answers' per-connection state (answer/): its room in a connection's
 * struct dw_conn (core/conn.bpf.h), one sub-struct, reset in one
 * assignment when a connection begins: whether its answers' status lines
 * are read, the status of the one the outstanding call had, an answer
 * owed to the reader's copy, and whether the outstanding call is a
 * protocol's goodbye.
 */
#ifndef DEPWATCH_ANSWER_CONNSTATE_H
#define DEPWATCH_ANSWER_CONNSTATE_H

#include "dwcompat.h"

/* dw_conn_answer.http1: whether the connection's answers are HTTP/1 responses. */
enum dw_http1_state {
	DW_HTTP1_UNSEEN = 0,	/* no answer read yet */
	DW_HTTP1_YES = 1,	/* an answer was a status line: each answer's is read */
	DW_HTTP1_NEVER = 2,	/* its first answer read was no status line: never looked at again */
	DW_HTTP1_UNCOPIED = 3,	/* sock backend: an answer owed to the reader's copy never had one (a
				 * splice() reader): its answers complete at their arrival, unread */
};

/* dw_conn_answer.status besides 100-599: what was read of the answer that is no status. */
#define DW_STATUS_UNKNOWN 1	/* an HTTP/1 answer whose line could not be read */
#define DW_STATUS_BAD 2		/* one whose line breaks the grammar */

/* dw_conn_answer.bye: whether the outstanding call is a protocol's goodbye (bpf/answer/goodbye.h). */
enum dw_bye {
	DW_BYE_NO = 0,
	DW_BYE_YES = 1,		/* a close that ends it drops it */
	DW_BYE_HEAD = 2,	/* inbound: a MySQL header of COM_QUIT's read, its body not yet */
};

/* call outcomes (bpf/answer/outcome.bpf.h, answer.bpf.h) and goodbyes (goodbye.bpf.h) */
struct dw_conn_answer {
	__u64 ns;		/* sock backend: the outstanding call was answered then; its outcome is owed to the read */
	__s32 status;		/* the answer's status, read before its call ends (0: none; 1: unknown) */
	__u8 http1;		/* enum dw_http1_state: whether its answers' status lines are read (outcome.bpf.h) */
	__u8 looks;		/* sock backend: copies looked at for the owed answer's status line */
	__u8 bye;		/* enum dw_bye: the outstanding call is a protocol's goodbye (goodbye.h): a close drops it */
	__u8 pad;
};

/* An answer came and its call's outcome is owed to the reader's copy: only the answers end it. */
static inline bool dw_answer_owed(const struct dw_conn_answer *a)
{
	return *(volatile __u64 *)&a->ns;
}

/* The outstanding call's answer had its status read (outcome.bpf.h counts it at the call's end). */
static inline bool dw_answer_has_status(const struct dw_conn_answer *a)
{
	return a->status;
}

/* The outstanding call is a protocol's goodbye: the close that ends it drops it. */
static inline bool dw_answer_bye(const struct dw_conn_answer *a)
{
	return a->bye == DW_BYE_YES;
}

#endif /* DEPWATCH_ANSWER_CONNSTATE_H */
