/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The control socket's wire format; user/control/control.c moves the bytes. A
 * client sends one request line, "VERB" or "VERB ARGS", and the daemon
 * answers with a length line and that many bytes, then closes:
 *
 *	depwatch-answer 1234\n
 *	...1234 bytes: the JSON, the table, top's TSV, "ok\n" or "error: ...\n"
 *
 * The answer carries its own end because the close alone does not tell a
 * whole answer from a cut one: the daemon closes a client that stops
 * reading (DW_ANSWER_NS), and what arrived until then looks like an answer.
 * A length rather than a terminator: the daemon has the whole answer in
 * memory before it sends a byte, a length needs no byte kept out of the
 * answers (names, escaped text), and the client can say how much of it
 * arrived. An answer without the line (another program on the socket, or a
 * daemon older than this client) is told apart from a cut one.
 *
 * Pure: no I/O.
 */
#ifndef DW_CONTROL_WIRE_H
#define DW_CONTROL_WIRE_H

#include <stdbool.h>
#include <stddef.h>

enum dw_verb_args {
	DW_ARGS_NONE,		/* "VERB" only */
	DW_ARGS_OPTIONAL,	/* "VERB" or "VERB ARGS" */
	DW_ARGS_REQUIRED,	/* "VERB ARGS" only */
};

/*
 * The verbs, one row each: its id, the request's words, whether only root
 * may ask it (--group grants reading), its arguments, and the daemon's
 * handler of it (a function of daemon.c). The clients build their requests
 * from it (dw_verb_request), the daemon matches them against it.
 */
#define DW_VERBS(X)									\
	X(STATUS_JSON,	"status json",	false,	DW_ARGS_OPTIONAL,	answer_status_json)	\
	X(STATUS_TEXT,	"status text",	false,	DW_ARGS_NONE,		answer_status_text)	\
	X(TOP_TSV,	"top tsv",	false,	DW_ARGS_NONE,		answer_top_tsv)		\
	X(BREAKER,	"breaker",	true,	DW_ARGS_REQUIRED,	answer_breaker)

enum dw_verb {
#define DW_VERB_ID(id, words, root_only, args, handler) DW_VERB_##id,
	DW_VERBS(DW_VERB_ID)
#undef DW_VERB_ID
	DW_NVERBS
};

struct dw_verb_def {
	const char *words;
	bool root_only;
	enum dw_verb_args args;
};

extern const struct dw_verb_def dw_verbs[DW_NVERBS];

/*
 * The verb a request line asks for, -1 for none (unknown words, or
 * arguments where the verb takes none, or none where it needs them);
 * *args: what follows the verb's words and one space, NULL when nothing.
 */
int dw_verb_match(const char *line, const char **args);

/* The request line of verb with args (NULL: none), no line end. 0, or -ENAMETOOLONG. */
int dw_verb_request(enum dw_verb verb, const char *args, char *buf, size_t len);

#define DW_ANSWER_LINE "depwatch-answer "
/* Room for the length line, line end and NUL included. */
#define DW_ANSWER_LINE_MAX 40

/* The length line of an answer of len bytes into buf (DW_ANSWER_LINE_MAX); returns its length. */
size_t dw_answer_line(size_t len, char *buf);

/*
 * An answer as it arrived, n bytes up to the daemon's close. 0: *body and
 * *len are the answer without its length line. -EPIPE: it was cut, the
 * daemon closed first: *len bytes of *want arrived (*want 0: not even the
 * length line did). -EPROTO: it has no length line. -EMSGSIZE: more bytes
 * came than the line says (*len of *want).
 */
int dw_answer_parse(const char *data, size_t n, const char **body, size_t *len, size_t *want);

#endif /* DW_CONTROL_WIRE_H */
