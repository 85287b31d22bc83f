// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The client commands: status, breaker and top ask the running daemon over
 * its control socket. Each takes the shared --run-dir and --pin-dir
 * (cli.h); top's drawing is top.c's.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/commands.h"
#include "control/control.h"
#include "logic/config/config.h"
#include "logic/view/control_wire.h"
#include "logic/depset/dest.h"
#include "logic/base/parse.h"
#include "cli/top.h"

/* ---- status ---- */

static const char status_usage[] =
	"usage: depwatch status [--json [--max-series N]] [--pin-dir DIR] [--run-dir DIR]";

struct status_opts {
	bool json;
	const char *max_series;	/* --max-series N: the JSON capped (checked by the daemon too) */
};

static int status_opt(int opt, const char *arg, void *ctx)
{
	struct status_opts *o = ctx;
	uint64_t n;

	if (opt == 'j') {
		o->json = true;
		return 0;
	}
	if (opt != 'S')
		return DW_EXIT_USAGE;
	if (dw_parse_uint(arg, 0, 1000000, &n)) {
		dw_usage_error("--max-series: '%s' is not a number from 0 to 1000000", arg);
		return DW_EXIT_USAGE;
	}
	o->max_series = arg;
	return 0;
}

int dw_cmd_status(int argc, char **argv)
{
	static const struct option own[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "max-series", required_argument, NULL, 'S' },
		{}
	};
	struct status_opts o = { 0 };
	const struct dw_cli_client cmd = { .usage = status_usage, .shortopts = "j", .own = own,
					   .fn = status_opt, .ctx = &o };
	struct dw_client_opts c;
	char req[64];
	enum dw_verb verb;
	int ret;

	ret = dw_cli_client_parse(argc, argv, &cmd, &c);
	if (ret >= 0)
		return ret;
	if (o.max_series && !o.json) {
		dw_usage_error("--max-series goes with --json (the table follows run --max-series)");
		return DW_EXIT_USAGE;
	}
	verb = o.json ? DW_VERB_STATUS_JSON : DW_VERB_STATUS_TEXT;
	/* --max-series is at most 7 digits: the request fits */
	dw_verb_request(verb, o.max_series, req, sizeof(req));
	return dw_control_ask(c.run_dir, req) ? DW_EXIT_ERROR : DW_EXIT_OK;
}

/* ---- breaker ---- */

static const char breaker_usage[] =
	"usage: depwatch breaker open|close|auto NAME [--pin-dir DIR] [--run-dir DIR]\n"
	"       depwatch breaker eject|return NAME ADDR:PORT [--pin-dir DIR] [--run-dir DIR]";

/* How many operands the action takes after itself: 1 (NAME), 2 (NAME DEST); 0: no such action. */
static int breaker_operands(const char *s)
{
	if (!strcmp(s, "open") || !strcmp(s, "close") || !strcmp(s, "auto"))
		return 1;
	return !strcmp(s, "eject") || !strcmp(s, "return") ? 2 : 0;
}

int dw_cmd_breaker(int argc, char **argv)
{
	const struct dw_cli_client cmd = { .usage = breaker_usage, .operands = true };
	char request[DW_REQUEST_MAX], args[DW_DEP_NAME_MAX + 96];
	struct dw_dest_key key;
	struct dw_client_opts c;
	const char *name;
	int ret;

	ret = dw_cli_client_parse(argc, argv, &cmd, &c);
	if (ret >= 0)
		return ret;
	if (argc - optind < 2 || argc - optind - 1 != breaker_operands(argv[optind])) {
		dw_usage_error("%s", breaker_usage);
		return DW_EXIT_USAGE;
	}
	name = argv[optind + 1];
	if (strlen(name) > DW_DEP_NAME_MAX || strpbrk(name, " \n")) {
		dw_usage_error("breaker: '%s' is not a dependency name", name);
		return DW_EXIT_USAGE;
	}
	if (argc - optind == 3 && (strlen(argv[optind + 2]) > 64 || dw_dest_parse(argv[optind + 2], &key))) {
		dw_usage_error("breaker %s: '%s' is not ADDR:PORT (10.0.0.2:8080, [2001:db8::1]:443)",
			       argv[optind], argv[optind + 2]);
		return DW_EXIT_USAGE;
	}
	snprintf(args, sizeof(args), "%s %s%s%s", argv[optind], name, argc - optind == 3 ? " " : "",
		 argc - optind == 3 ? argv[optind + 2] : "");
	dw_verb_request(DW_VERB_BREAKER, args, request, sizeof(request));
	return dw_control_ask(c.run_dir, request) ? DW_EXIT_ERROR : DW_EXIT_OK;
}

/* ---- top ---- */

#define TOP_INTERVAL_MIN_NS 100000000ULL	/* the daemon itself polls every 250 ms */
#define TOP_INTERVAL_MAX_NS 3600000000000ULL

static const char top_usage[] =
	"usage: depwatch top [--pin-dir DIR] [--run-dir DIR] [--interval DUR]";

static int top_opt(int opt, const char *arg, void *ctx)
{
	uint64_t v;

	if (opt != 'i')
		return DW_EXIT_USAGE;
	if (dw_parse_duration(arg, &v) || v < TOP_INTERVAL_MIN_NS || v > TOP_INTERVAL_MAX_NS) {
		dw_usage_error("top: --interval takes 100ms to 60m, not '%s'", arg);
		return DW_EXIT_USAGE;
	}
	*(uint64_t *)ctx = v;
	return 0;
}

int dw_cmd_top(int argc, char **argv)
{
	static const struct option own[] = {
		{ "interval", required_argument, NULL, 'i' },
		{}
	};
	uint64_t interval_ns = 1000000000ULL;
	const struct dw_cli_client cmd = { .usage = top_usage, .shortopts = "i:", .own = own,
					   .fn = top_opt, .ctx = &interval_ns };
	struct dw_client_opts c;
	int ret;

	ret = dw_cli_client_parse(argc, argv, &cmd, &c);
	if (ret >= 0)
		return ret;
	return dw_top_show(c.run_dir, interval_ns);
}
