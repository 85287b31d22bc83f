// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "commands.h"
#include "config_file.h"
#include "control.h"
#include "logic/config.h"

static const char usage[] =
	"usage: depwatch <command> [options]\n"
	"\n"
	"commands:\n"
	"  run      load the BPF programs and watch every outbound TCP call (root)\n"
	"  status   show the running daemon's figures per dependency and destination (--json)\n"
	"  check    validate a config file and print the effective settings per dependency\n"
	"  breaker  open|close|auto NAME: force a dependency's breaker, or hand it back\n"
	"  top      a live table of the dependencies, worst first (one plain frame when piped)\n"
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

int dw_cmd_check(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *given = NULL, *path;
	struct dw_config cfg;
	struct dw_buf out = {};
	char err[512];
	int opt;

	while ((opt = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c': given = optarg; break;
		case 'h': puts("usage: depwatch check [-c FILE]"); return 0;
		default: return 2;
		}
	}
	path = dw_config_path(given);
	if (dw_config_read(path, &cfg, err, sizeof(err))) {
		fprintf(stderr, "depwatch: %s\n", err);
		return 1;
	}
	dw_config_describe(&cfg, &out);
	if (!out.oom)
		fwrite(out.data, 1, out.len, stdout);
	dw_buf_free(&out);
	dw_config_free(&cfg);
	return 0;
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

int dw_cmd_breaker(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "run-dir", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *run_dir = DW_DEFAULT_RUN_DIR;
	char request[DW_REQUEST_MAX];
	int opt;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'R': run_dir = optarg; break;
		case 'h': puts("usage: depwatch breaker open|close|auto NAME [--run-dir DIR]"); return 0;
		default: return 2;
		}
	}
	if (argc - optind != 2 || (strcmp(argv[optind], "open") && strcmp(argv[optind], "close") &&
				   strcmp(argv[optind], "auto"))) {
		dw_usage_error("usage: depwatch breaker open|close|auto NAME [--run-dir DIR]");
		return 2;
	}
	if (strlen(argv[optind + 1]) > DW_DEP_NAME_MAX || strpbrk(argv[optind + 1], " \n")) {
		dw_usage_error("breaker: '%s' is not a dependency name", argv[optind + 1]);
		return 2;
	}
	snprintf(request, sizeof(request), "breaker %s %s", argv[optind], argv[optind + 1]);
	return dw_control_ask(run_dir, request) ? 1 : 0;
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
	if (!strcmp(argv[1], "check"))
		return dw_cmd_check(argc - 1, argv + 1);
	if (!strcmp(argv[1], "breaker"))
		return dw_cmd_breaker(argc - 1, argv + 1);
	if (!strcmp(argv[1], "top"))
		return dw_cmd_top(argc - 1, argv + 1);
	fprintf(stderr, "depwatch: unknown command '%s'\n%s", argv[1], usage);
	return 2;
}
