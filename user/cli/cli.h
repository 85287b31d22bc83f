/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the commands of the depwatch binary share on the command line:
 * usage errors, the default directories, and the options with which every
 * client command (status, top, breaker) finds the daemon. The options
 * themselves are documented in doc/depwatch.8 only.
 */
#ifndef DW_CLI_H
#define DW_CLI_H

#include <getopt.h>
#include <stdbool.h>

#define DW_DEFAULT_PIN_DIR "/sys/fs/bpf/depwatch"
#define DW_DEFAULT_RUN_DIR "/run/depwatch"

/* Exit statuses of a command (depwatch.8, EXIT STATUS). */
#define DW_EXIT_OK 0
#define DW_EXIT_ERROR 1
#define DW_EXIT_USAGE 2

/* Prints "depwatch: <message>" to stderr and returns -EINVAL. */
int dw_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Where a client command finds the daemon: --run-dir, --pin-dir. */
struct dw_client_opts {
	const char *run_dir;	/* the daemon's control socket is depwatch.sock in it */
	/*
	 * Accepted for symmetry with run, so one pair of flags names a
	 * daemon everywhere; the control socket is all a client needs.
	 */
	const char *pin_dir;
};

/*
 * A client command's own option: getopt_long's opt and optarg. Returns 0,
 * or an exit status to stop with (after saying why).
 */
typedef int (*dw_cli_opt_fn)(int opt, const char *arg, void *ctx);

/* What a client command's command line is made of besides the shared options. */
struct dw_cli_client {
	const char *usage;		/* printed by --help */
	const char *shortopts;		/* of own, "" for none */
	const struct option *own;	/* ended by a zeroed entry; NULL: none */
	dw_cli_opt_fn fn;		/* gets each of own */
	void *ctx;
	bool operands;			/* false: an operand is a usage error */
};

/*
 * Parses argv of a client command (argv[0] is its name): its own options
 * go to cmd->fn, --run-dir and --pin-dir into *c (the defaults first),
 * --help prints cmd->usage. Returns -1 to go on (argv[optind] is its first
 * operand), else the exit status to stop with.
 */
int dw_cli_client_parse(int argc, char **argv, const struct dw_cli_client *cmd,
			struct dw_client_opts *c);

#endif /* DW_CLI_H */
