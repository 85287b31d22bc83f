// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* `depwatch check`: a config as the text of a config, every key spelt out. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "logic/config/config_parser.h"
#include "logic/base/parse.h"
#include "logic/config/match.h"
#include "logic/outcome/h2answer.h"

static void describe_value(struct dw_buf *out, const struct key_def *k,
			   const struct dw_dep_settings *s)
{
	const void *field = (const char *)s + k->off;
	char d[DW_DURATION_STRLEN];

	switch (k->kind) {
	case KIND_DURATION:
		dw_format_duration(*(const uint64_t *)field, d, sizeof(d));
		dw_buf_printf(out, "%s", *(const uint64_t *)field || k->min ? d : "0");
		return;
	case KIND_PERCENT:
		/* %.15g: 0.07 * 100 is 7.000000000000001, and must read "7%" */
		dw_buf_printf(out, "%.15g%%", *(const double *)field * 100);
		return;
	case KIND_UINT:
		dw_buf_printf(out, "%u", *(const unsigned *)field);
		return;
	case KIND_BOOL:
		dw_buf_printf(out, "%s", *(const bool *)field ? "yes" : "no");
		return;
	case KIND_ENFORCE:
		dw_buf_printf(out, "%s", s->enforce_abort ? "abort" : *(const bool *)field ? "connect" : "off");
		return;
	case KIND_MULTIPLEXED:
		dw_buf_printf(out, "%s", *(const bool *)field ? "judge" : "ignore");
		return;
	case KIND_SWITCH:
		dw_buf_printf(out, "%s", *(const bool *)field ? "on" : "off");
		return;
	case KIND_STATUSES:
		dw_status_set_format(field, out);
		return;
	case KIND_GRPC_CODES:
		dw_grpc_set_format(*(const uint32_t *)field, out);
		return;
	}
}

static void describe_settings(struct dw_buf *out, const struct dw_dep_settings *s)
{
	size_t k;

	for (k = 0; k < NKEYS; k++) {
		dw_buf_printf(out, "%s = ", cfg_keys[k].name);
		describe_value(out, &cfg_keys[k], s);
		dw_buf_putc(out, '\n');
	}
}

static const char *facility_name(int value)
{
	size_t i;

	for (i = 0; i < NFACILITIES; i++)
		if (cfg_facilities[i].value == value)
			return cfg_facilities[i].name;
	return NULL;
}

static void describe_cgroup(struct dw_buf *out, const char *path)
{
	size_t n = strnlen(path, DW_CGROUP_PATH_MAX + 1), at;

	if (n == 0) {
		dw_buf_printf(out, "# enforce_cgroup: the cgroup v2 root\n");
		return;
	}
	/* a parsed config always passes; one filled in by hand may not */
	if (cfg_cgroup_path_problem(path, n, &at) || memchr(path, '#', n)) {
		dw_buf_printf(out, "# enforce_cgroup = ");
		dw_escape_text(out, path, n);
		dw_buf_printf(out, " (not one a config can name)\n");
		return;
	}
	dw_buf_printf(out, "enforce_cgroup = %.*s\n", (int)n, path);
}

/* A list filled in by hand may be empty or too long; a parsed one never is. */
static void describe_dns_ports(struct dw_buf *out, const struct dw_config *cfg)
{
	unsigned i, n = cfg->ndns_ports;

	if (n == 0 || n > DW_DNS_PORTS_MAX) {
		dw_buf_printf(out, "# dns_ports: %u ports (not a list a config can name)\n", n);
		return;
	}
	dw_buf_printf(out, "dns_ports = ");
	for (i = 0; i < n; i++)
		dw_buf_printf(out, "%s%u", i ? ", " : "", cfg->dns_ports[i]);
	dw_buf_printf(out, "\n");
}

static void describe_listen(struct dw_buf *out, const struct dw_service *s)
{
	size_t n = strnlen(s->cgroup, DW_CGROUP_PATH_MAX + 1), at;

	if (n == 0 && s->port_lo && s->port_lo <= s->port_hi) {
		if (s->port_lo == s->port_hi)
			dw_buf_printf(out, "listen = %u\n", s->port_lo);
		else
			dw_buf_printf(out, "listen = %u-%u\n", s->port_lo, s->port_hi);
		return;
	}
	/* a parsed config always has one of the two; one filled in by hand may not */
	if (n == 0 || cfg_cgroup_path_problem(s->cgroup, n, &at) || memchr(s->cgroup, '#', n)) {
		dw_buf_printf(out, "# listen = ");
		dw_escape_text(out, s->cgroup, n);
		dw_buf_printf(out, " ports %u-%u (not one a config can name)\n", s->port_lo,
			      s->port_hi);
		return;
	}
	dw_buf_printf(out, "listen = cgroup:%.*s\n", (int)n, s->cgroup);
}

static void describe_service(struct dw_buf *out, const struct dw_config *cfg,
			     const struct dw_service *s)
{
	char sum[DW_DURATION_STRLEN], dl[DW_DURATION_STRLEN];
	uint64_t total;
	unsigned k;
	int ret;

	dw_buf_printf(out, "\n[service %s]\t# line %d\n", s->name, s->line);
	describe_listen(out, s);
	if (s->pool)
		dw_buf_printf(out, "pool = %u\n", s->pool);
	else
		dw_buf_printf(out, "# pool: not set\n");
	dw_format_duration(s->deadline_ns, dl, sizeof(dl));
	if (s->deadline_ns)
		dw_buf_printf(out, "deadline = %s\n", dl);
	else
		dw_buf_printf(out, "# deadline: not set, so the path is not checked\n");
	if (!s->npath) {
		dw_buf_printf(out, "# path: not set\n");
		return;
	}
	ret = dw_service_path_timeout(cfg, s, &total);
	if (ret == -EINVAL) {
		dw_buf_printf(out, "# path: %u dependencies this config does not have\n", s->npath);
		return;
	}
	dw_buf_printf(out, "path = ");
	for (k = 0; k < s->npath; k++)
		dw_buf_printf(out, "%s%s", k ? ", " : "", cfg->deps[s->path[k]].name);
	dw_buf_putc(out, '\n');
	/* a hop held by abort_after (shorter than its timeout, or the only one) says so */
	for (k = 0; k < s->npath; k++) {
		const char *which;
		char a[DW_DURATION_STRLEN];
		uint64_t t = cfg_hop_budget(&cfg->deps[s->path[k]], &which);

		dw_format_duration(t, a, sizeof(a));
		if (t && strcmp(which, "timeout"))
			dw_buf_printf(out, "# %s counts %s: its abort_after, shorter than its timeout or the only one\n",
				      cfg->deps[s->path[k]].name, a);
	}
	if (!s->deadline_ns)
		return;
	dw_format_duration(total, sum, sizeof(sum));
	if (ret)
		dw_buf_printf(out, "# path timeouts unknown: not every dependency on it has one\n");
	else
		dw_buf_printf(out, "# path timeouts %s of deadline %s\n", sum, dl);
}

void dw_config_describe(const struct dw_config *cfg, struct dw_buf *out)
{
	const struct dw_dep_config *d;
	const char *fac = facility_name(cfg->syslog_facility);
	char m[DW_MATCH_STRLEN], t[DW_DURATION_STRLEN];
	unsigned i, k;

	/* the source name may hold anything; escaped, it cannot break the comment */
	dw_buf_printf(out, "# ");
	dw_escape_text(out, cfg->source, sizeof(cfg->source));
	dw_buf_printf(out, ": %u %s", cfg->ndeps, cfg->ndeps == 1 ? "dependency" : "dependencies");
	if (cfg->nservices)
		dw_buf_printf(out, ", %u %s", cfg->nservices,
			      cfg->nservices == 1 ? "service" : "services");
	dw_buf_printf(out, "; destinations no match covers get [defaults]\n");
	dw_buf_printf(out, "[defaults]\n");
	describe_settings(out, &cfg->defaults);
	if (fac)
		dw_buf_printf(out, "syslog_facility = %s\n", fac);
	else
		dw_buf_printf(out, "# syslog_facility = %d (not one a config can name)\n",
			      cfg->syslog_facility);
	describe_cgroup(out, cfg->enforce_cgroup);
	describe_dns_ports(out, cfg);
	for (i = 0; i < cfg->ndeps; i++) {
		d = &cfg->deps[i];
		dw_buf_printf(out, "\n[dependency %s]\t# line %d\n", d->name, d->line);
		for (k = 0; k < d->nmatches; k++) {
			dw_match_format(&d->matches[k], m, sizeof(m));
			dw_buf_printf(out, "match = %s\n", m);
		}
		describe_settings(out, &d->s);
		if (d->timeout_ns) {
			dw_format_duration(d->timeout_ns, t, sizeof(t));
			dw_buf_printf(out, "timeout = %s\n", t);
		}
	}
	for (i = 0; i < cfg->nservices; i++)
		describe_service(out, cfg, &cfg->services[i]);
}
