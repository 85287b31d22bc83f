// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "commands.h"
#include "control.h"

static const char usage[] =
	"usage: depwatch <command> [options]\n"
	"\n"
	"commands:\n"
	"  run      load the BPF programs and watch every outbound TCP call (root)\n"
	"  status   show the running daemon's per-destination figures (--json for machines)\n"
	"\n"
	"`depwatch <command> --help` shows a command's options.\n";

int dw_usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("depwatch: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return -EINVAL;
}

int dw_cmd_status(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "pin-dir", required_argument, NULL, 'P' },
		{ "run-dir", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *run_dir = DW_DEFAULT_RUN_DIR;
	bool json = false;
	int opt;

	while ((opt = getopt_long(argc, argv, "jh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'j': json = true; break;
		case 'P': break;	/* the daemon is found by its run dir; accepted for symmetry with run */
		case 'R': run_dir = optarg; break;
		case 'h':
			puts("usage: depwatch status [--json] [--pin-dir DIR] [--run-dir DIR]");
			return 0;
		default: return 2;
		}
	}
	if (optind < argc) {
		dw_usage_error("status: unexpected argument '%s'", argv[optind]);
		return 2;
	}
	return dw_control_ask(run_dir, json ? "status json" : "status text") ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "run"))
		return dw_cmd_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "status"))
		return dw_cmd_status(argc - 1, argv + 1);
	fprintf(stderr, "depwatch: unknown command '%s'\n%s", argv[1], usage);
	return 2;
}
