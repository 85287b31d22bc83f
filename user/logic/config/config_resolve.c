// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Once the whole file is read: [defaults] onto each [dependency], then
 * the checks that need more than one line to see (min_calls against
 * sample wherever either was set, a name used twice, matches that
 * overlap, too many dependencies, the services' paths). A seam of its
 * own because none of it reads text: config_lines.c reads lines into the
 * parser, this turns what they said into one consistent config, or the
 * earliest error in it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logic/config/config_parser.h"
#include "logic/base/dwtypes.h"
#include "logic/base/parse.h"
#include "logic/config/match.h"

static size_t kind_size(enum key_kind kind)
{
	switch (kind) {
	case KIND_DURATION:
		return sizeof(uint64_t);
	case KIND_PERCENT:
		return sizeof(double);
	case KIND_UINT:
		return sizeof(unsigned);
	case KIND_BOOL:
	case KIND_SWITCH:
	case KIND_ENFORCE:
	case KIND_MULTIPLEXED:
		return sizeof(bool);
	case KIND_STATUSES:
		return sizeof(struct dw_status_set);
	case KIND_GRPC_CODES:
		return sizeof(uint32_t);
	}
	return 0;
}

static void copy_key(const struct key_def *k, struct dw_dep_settings *dst,
		     const struct dw_dep_settings *src)
{
	memcpy((char *)dst + k->off, (const char *)src + k->off, kind_size(k->kind));
	if (k->kind == KIND_ENFORCE)
		dst->enforce_abort = src->enforce_abort;
}
/* The line a min_calls/sample conflict is reported at: the later of the two set. */
static void check_min_calls(struct parser *p, const struct dw_dep_settings *s,
			    const int *key_line, const char *where)
{
	int line = key_line[KEY_MIN_CALLS];

	if (key_line[KEY_SAMPLE] > line)
		line = key_line[KEY_SAMPLE];
	if (line == 0 || s->min_calls <= s->sample)
		return;
	cfg_fail_at(p, line, 0, "min_calls (%u) is larger than sample (%u)%s", s->min_calls, s->sample,
		where);
}

/*
 * abort_after cuts calls; ignore = yes says this dependency's calls are
 * long-polls or streams that are slow by design. Both at once is an error,
 * reported at the later of the two lines (or the section when both come
 * from [defaults]).
 */
static void check_abort_after(struct parser *p, const struct dw_dep_settings *s,
			      const int *key_line, int section_line, const char *where)
{
	char t[DW_DURATION_STRLEN];
	int line = key_line[KEY_ABORT_AFTER];

	if (!s->ignore || !s->abort_after_ns)
		return;
	if (key_line[KEY_IGNORE] > line)
		line = key_line[KEY_IGNORE];
	dw_format_duration(s->abort_after_ns, t, sizeof(t));
	cfg_fail_at(p, line ? line : section_line, 0,
		"abort_after = %s with ignore = yes%s: an ignored dependency's calls are long by design (long-poll, streaming), aborting them would cut them; set abort_after = 0 there",
		t, where);
}

static int cmp_pdep_name(const void *a, const void *b)
{
	const struct pdep *x = *(const struct pdep *const *)a, *y = *(const struct pdep *const *)b;
	int c = strcmp(x->dep.name, y->dep.name);

	if (c)
		return c;
	return x->dep.line - y->dep.line;
}

/*
 * The dependencies by name (and line), for duplicates and for looking
 * names up; NULL with none. Sorted rather than compared pairwise: a 1 MiB
 * file can hold 30000 sections.
 */
static int sort_deps(struct parser *p, struct pdep ***sorted)
{
	struct pdep **v;
	unsigned i;

	*sorted = NULL;
	if (p->ndeps == 0)
		return 0;
	v = malloc(p->ndeps * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < p->ndeps; i++)
		v[i] = &p->deps[i];
	qsort(v, p->ndeps, sizeof(*v), cmp_pdep_name);
	*sorted = v;
	return 0;
}

static void check_names(struct parser *p, struct pdep *const *v)
{
	unsigned i;

	for (i = 1; i < p->ndeps; i++)
		if (strcmp(v[i - 1]->dep.name, v[i]->dep.name) == 0)
			cfg_fail_at(p, v[i]->dep.line, 0,
				"duplicate dependency name '%s' (the first [dependency %s] is at line %d)",
				v[i]->dep.name, v[i]->dep.name, v[i - 1]->dep.line);
}

/* A problem dw_match_check found, as parse errors are: the earliest is kept. */
static void report_match(void *ctx, int line, int sub, const char *msg)
{
	cfg_fail_at(ctx, line, sub, "%s", msg);
}

static int check_matches(struct parser *p)
{
	unsigned n = 0, i, k;
	struct dw_match_ref *r;

	for (i = 0; i < p->ndeps; i++)
		n += p->deps[i].dep.nmatches;
	if (n == 0)
		return 0;
	r = malloc(n * sizeof(*r));
	if (!r)
		return -ENOMEM;
	n = 0;
	for (i = 0; i < p->ndeps; i++) {
		for (k = 0; k < p->deps[i].dep.nmatches; k++) {
			r[n].m = &p->deps[i].dep.matches[k];
			r[n++].dep = p->deps[i].dep.name;
		}
	}
	dw_match_check(r, n, p->src, report_match, p);
	free(r);
	return 0;
}

/* [defaults] with the section's own keys on top, then the section's own checks. */
static void resolve_dep(struct parser *p, struct pdep *d)
{
	char where[DW_DEP_NAME_MAX + 32];
	size_t k;

	for (k = 0; k < NKEYS; k++)
		if (!d->key_line[k])
			copy_key(&cfg_keys[k], &d->dep.s, &p->defaults);
	if (d->dep.nmatches == 0)
		cfg_fail_at(p, d->dep.line, 0, "[dependency %s] has no match: add 'match = CIDR[:PORT[-PORT]]'",
			d->dep.name);
	snprintf(where, sizeof(where), " in [dependency %s]", d->dep.name);
	check_min_calls(p, &d->dep.s, d->key_line, where);
	check_abort_after(p, &d->dep.s, d->key_line, d->dep.line, where);
}

/* Keys [defaults] did not set come from base; base NULL: every key must be set. */
static void resolve_defaults(struct parser *p, const struct dw_config *base)
{
	size_t k;

	for (k = 0; k < NKEYS; k++) {
		if (p->key_line[k])
			continue;
		if (!base) {
			cfg_fail_at(p, 1, 0, "the built-in config does not set '%s'", cfg_keys[k].name);
			continue;
		}
		copy_key(&cfg_keys[k], &p->defaults, &base->defaults);
	}
	if (!p->facility_line && base)
		p->facility = base->syslog_facility;
	else if (!p->facility_line)
		cfg_fail_at(p, 1, 0, "the built-in config does not set 'syslog_facility'");
	/* not in the built-in config: unset there means the cgroup v2 root */
	if (!p->cgroup_line && base)
		memcpy(p->cgroup, base->enforce_cgroup, sizeof(p->cgroup));
	if (!p->dns_ports_line && base) {
		memcpy(p->dns_ports, base->dns_ports, sizeof(p->dns_ports));
		p->ndns_ports = base->ndns_ports;
	} else if (!p->dns_ports_line) {
		cfg_fail_at(p, 1, 0, "the built-in config does not set 'dns_ports'");
	}
	check_min_calls(p, &p->defaults, p->key_line, "");
	check_abort_after(p, &p->defaults, p->key_line, p->defaults_line ? p->defaults_line : 1,
			  " in [defaults]");
}

/* Dependency ids are 1..DW_MAX_DEPS-1 in the kernel; 0 is "no match covers it". */
static void check_dep_count(struct parser *p)
{
	const struct pdep *d;

	if (p->ndeps < DW_MAX_DEPS)
		return;
	d = &p->deps[DW_MAX_DEPS - 1];
	cfg_fail_at(p, d->dep.line, 0,
		"[dependency %s] is one too many: the kernel supports at most %d dependencies (this file has %u)",
		d->dep.name, DW_MAX_DEPS - 1, p->ndeps);
}

int cfg_finish(struct parser *p, const struct dw_config *base)
{
	struct pdep **sorted;
	unsigned i;
	int err;

	resolve_defaults(p, base);
	for (i = 0; i < p->ndeps; i++)
		resolve_dep(p, &p->deps[i]);
	check_dep_count(p);
	err = sort_deps(p, &sorted);
	if (err)
		return err;
	check_names(p, sorted);
	err = check_matches(p);
	if (!err)
		err = cfg_check_services(p, sorted);
	free(sorted);
	if (err)
		return err;
	return p->err_line ? -EINVAL : 0;
}
