// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * depwatch <command> [options]: a table of the commands, as bpftool's
 * cmds[]. Each handler lives with its concern (commands.h) and parses its
 * own options; main only picks it.
 */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/commands.h"

#ifndef DW_VERSION
#error "DW_VERSION: the Makefile passes debian/changelog's version"
#endif

struct cmd {
	const char *name;
	int (*handler)(int argc, char **argv);
	const char *help;	/* one line of the usage */
};

static const struct cmd cmds[] = {
	{ "run", dw_cmd_run, "load the BPF programs and watch every outbound TCP call (root)" },
	{ "status", dw_cmd_status,
	  "show the running daemon's figures per dependency and destination (--json)" },
	{ "check", dw_cmd_check,
	  "validate a config file and print the effective settings per dependency" },
	{ "breaker", dw_cmd_breaker,
	  "open|close|auto NAME: force a dependency's breaker, or hand it back" },
	{ "top", dw_cmd_top,
	  "a live table of the dependencies, worst first (one plain frame when piped)" },
};

#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static void usage(FILE *f)
{
	size_t i;

	fputs("usage: depwatch <command> [options]\n\ncommands:\n", f);
	for (i = 0; i < NCMDS; i++)
		fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].help);
	fputs("\n`depwatch <command> --help` shows a command's options.\n", f);
	fputs("`depwatch --version` prints the version.\n", f);
}

static const struct cmd *cmd_select(const char *name)
{
	size_t i;

	for (i = 0; i < NCMDS; i++)
		if (!strcmp(cmds[i].name, name))
			return &cmds[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const struct cmd *c;

	if (argc < 2) {
		usage(stderr);
		return DW_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return DW_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("depwatch %s\n", DW_VERSION);
		return DW_EXIT_OK;
	}
	c = cmd_select(argv[1]);
	if (!c) {
		fprintf(stderr, "depwatch: unknown command '%s'\n", argv[1]);
		usage(stderr);
		return DW_EXIT_USAGE;
	}
	return c->handler(argc - 1, argv + 1);
}
