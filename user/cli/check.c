// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* `depwatch check`: validates a config file and prints its effective settings. */
#include <getopt.h>
#include <stdio.h>
#include "cli/cli.h"
#include "cli/commands.h"
#include "host/config_file.h"
#include "logic/config/config.h"

int dw_cmd_check(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *given = NULL;
	struct dw_config cfg;
	struct dw_buf out = {};
	char err[512];
	int opt;

	while ((opt = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c': given = optarg; break;
		case 'h': puts("usage: depwatch check [-c FILE]"); return DW_EXIT_OK;
		default: return DW_EXIT_USAGE;
		}
	}
	if (dw_config_read(dw_config_path(given), &cfg, err, sizeof(err))) {
		fprintf(stderr, "depwatch: %s\n", err);
		return DW_EXIT_ERROR;
	}
	dw_config_describe(&cfg, &out);
	if (!out.oom)
		fwrite(out.data, 1, out.len, stdout);
	dw_buf_free(&out);
	dw_config_free(&cfg);
	return DW_EXIT_OK;
}
