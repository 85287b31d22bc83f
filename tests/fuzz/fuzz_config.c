// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for the config parser: any bytes must give either a
 * config or one FILE:LINE error, never a crash, a leak or undefined
 * behaviour; a config that parses must describe itself into text that
 * parses again to the same number of dependencies.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "logic/config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dw_config cfg, again;
	struct dw_buf text = {};
	char err[512];

	if (dw_config_parse("fuzz.conf", (const char *)data, size, &cfg, err, sizeof(err))) {
		if (strncmp(err, "fuzz.conf:", 10))
			abort();	/* every error names the file */
		return 0;
	}
	dw_config_describe(&cfg, &text);
	if (!text.oom) {
		if (dw_config_parse("described", text.data, text.len, &again, err, sizeof(err)))
			abort();	/* describe must print a valid config */
		if (again.ndeps != cfg.ndeps || again.nservices != cfg.nservices)
			abort();
		dw_config_free(&again);
	}
	dw_buf_free(&text);
	dw_config_free(&cfg);
	return 0;
}
