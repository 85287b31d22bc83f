// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"

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

/* Room for a command's own long options besides the shared ones. */
#define OWN_MAX 8

static const struct option client_longopts[] = {
	{ "run-dir", required_argument, NULL, 'R' },
	{ "pin-dir", required_argument, NULL, 'P' },
	{ "help", no_argument, NULL, 'h' },
};

#define NCLIENT (sizeof(client_longopts) / sizeof(client_longopts[0]))

/* own, then the shared options, then the zeroed end, into all. */
static void merge_longopts(const struct option *own, struct option *all)
{
	size_t n = 0, i;

	while (own && own[n].name && n < OWN_MAX) {
		all[n] = own[n];
		n++;
	}
	for (i = 0; i < NCLIENT; i++)
		all[n++] = client_longopts[i];
	memset(&all[n], 0, sizeof(all[n]));
}

/* Says so and returns DW_EXIT_USAGE if argv has an operand left. */
static int no_operands(int argc, char **argv)
{
	if (optind >= argc)
		return -1;
	dw_usage_error("%s: unexpected argument '%s'", argv[0], argv[optind]);
	return DW_EXIT_USAGE;
}

int dw_cli_client_parse(int argc, char **argv, const struct dw_cli_client *cmd,
			struct dw_client_opts *c)
{
	struct option all[OWN_MAX + NCLIENT + 1];
	char shorts[32];
	int opt, ret;

	c->run_dir = DW_DEFAULT_RUN_DIR;
	c->pin_dir = DW_DEFAULT_PIN_DIR;
	merge_longopts(cmd->own, all);
	snprintf(shorts, sizeof(shorts), "%sh", cmd->shortopts ? cmd->shortopts : "");
	while ((opt = getopt_long(argc, argv, shorts, all, NULL)) != -1) {
		switch (opt) {
		case 'R': c->run_dir = optarg; break;
		case 'P': c->pin_dir = optarg; break;
		case 'h': puts(cmd->usage); return DW_EXIT_OK;
		case '?': return DW_EXIT_USAGE;	/* getopt said why */
		default:
			ret = cmd->fn ? cmd->fn(opt, optarg, cmd->ctx) : DW_EXIT_USAGE;
			if (ret)
				return ret;
		}
	}
	return cmd->operands ? -1 : no_operands(argc, argv);
}
