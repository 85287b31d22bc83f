// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "logic/base/ratelimit.h"

void dw_ratelimit_init(struct dw_ratelimit *r)
{
	*r = (struct dw_ratelimit){ .tokens = DW_RATELIMIT_BURST };
}

bool dw_ratelimit_take(struct dw_ratelimit *r, uint64_t now_ns, bool must, unsigned *suppressed)
{
	r->tokens += (double)(now_ns - r->tokens_ns) / DW_RATELIMIT_REFILL_NS;
	if (r->tokens > DW_RATELIMIT_BURST)
		r->tokens = DW_RATELIMIT_BURST;
	r->tokens_ns = now_ns;
	if (r->tokens < 1 && !must) {
		r->suppressed++;
		return false;
	}
	r->tokens -= 1;
	*suppressed = r->suppressed;
	r->suppressed = 0;
	return true;
}
