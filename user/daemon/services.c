// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>
#include <syslog.h>
#include "output/alert.h"
#include "collect/collect.h"
#include "logic/depset/depset.h"
#include "daemon/services.h"

static void alert_pool(const struct dw_svc *svc, const struct dw_deps *deps, const char *reason)
{
	char summary[160];
	struct dw_service_alert a = {
		.service = svc->name,
		.reason = reason,
		.level = dw_pool_level_name(svc->fc.level),
		.pool = svc->cfg->pool,
		.inflight = svc->inflight,
		.rising = svc->fc.rising,
		.arrival_rate = svc->arrival_rate,
		.exhausted_in_s = svc->fc.exhausted_in_s,
		.path_p99_ms = svc->path_p99_ms,
		.deadline_ms = svc->cfg->deadline_ns / 1e6,
		.waiting = svc->nwaits ? svc->waits[0].count : 0,
		.waiting_on = svc->nwaits ? dw_depset_at(deps, svc->waits[0].dep)->name : NULL,
		.summary = summary,
	};

	dw_svc_summary(svc, deps, summary, sizeof(summary));
	a.severity = LOG_WARNING;
	if (svc->fc.level == DW_POOL_EXHAUSTED)
		a.severity = LOG_ERR;
	else if (!strcmp(reason, "pool_ok") || !strcmp(reason, "path_p99_ok"))
		a.severity = LOG_NOTICE;
	dw_alert_service(&a);
}

void dw_services_poll(struct dw_services *s, const struct dw_collector *c, const struct dw_deps *deps)
{
	dw_services_begin(s);
	for (unsigned i = 0; i < c->nwaits; i++) {
		const struct dw_wait *w = &c->waits[i];

		dw_services_wait(s, w->caller_port, w->callee->dep, w->count);
	}
	dw_services_step(s, c->dests, c->cap, c->now_ns, deps);
	for (unsigned i = 0; i < s->n; i++)
		for (unsigned k = 0; k < s->svc[i].nev; k++)
			alert_pool(&s->svc[i], deps, s->svc[i].ev[k]);
}
