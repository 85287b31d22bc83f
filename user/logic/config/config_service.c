// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * [service NAME] sections: their keys as read, and once the whole file is
 * read, their checks: names, ports, cgroups, and each path's timeouts
 * against the deadline.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logic/config/config_parser.h"
#include "logic/base/parse.h"

/*
 * Keys outside struct dw_dep_settings (off unused): their values are read
 * by hand, these give cfg_fail_value() the name and range.
 */
static const struct key_def pool_key = { "pool", KIND_UINT, 0, 1, 1000000 };
static const struct key_def deadline_key = { "deadline", KIND_DURATION, 0, NS_PER_MS, NS_PER_H };

/* Duplicate names, and names dependencies have too, are found at the end. */
int cfg_begin_service(struct parser *p, const char *name)
{
	struct psvc *s;
	int err;

	err = cfg_check_section_name(p, "service", name);
	if (!err)
		err = cfg_grow(&p->svcs, sizeof(*p->svcs), p->nsvcs, &p->svc_cap, 4);
	if (err)
		return err;
	s = &p->svcs[p->nsvcs++];
	memset(s, 0, sizeof(*s));
	snprintf(s->svc.name, sizeof(s->svc.name), "%s", name);
	s->svc.line = p->line;
	p->sec = SEC_SERVICE;
	return 0;
}

/* PORT, LOW-HIGH or cgroup:/PATH. */
static int set_listen(struct parser *p, struct psvc *s, char *val)
{
	char c[DW_CLIP_BUF], *dash, *path;
	uint64_t lo, hi;
	const char *why;
	size_t n, at;
	int err;

	err = cfg_check_unset(p, "listen", s->listen_line);
	if (err)
		return err;
	if (strncmp(val, "cgroup:", 7) == 0) {
		path = cfg_trim(val + 7);
		n = strlen(path);
		why = cfg_cgroup_path_problem(path, n, &at);
		if (why && at)	/* the byte itself stays out of the message */
			return fail(p, "listen: the cgroup path %s (0x%02x at byte %zu)", why,
				    (unsigned char)path[at - 1], at);
		if (why)
			return fail(p, "listen: cgroup '%s' %s", dw_clip(path, c), why);
		memcpy(s->svc.cgroup, path, n + 1);
		s->listen_line = p->line;
		return 0;
	}
	dash = strchr(val, '-');
	if (dash)
		*dash = '\0';
	if (dw_parse_uint(val, 1, 65535, &lo) || (dash && dw_parse_uint(dash + 1, 1, 65535, &hi))) {
		if (dash)
			*dash = '-';
		return fail(p, "listen: '%s' is not a port (1 to 65535), a range LOW-HIGH or cgroup:/PATH",
			    dw_clip(val, c));
	}
	if (!dash)
		hi = lo;
	if (lo > hi)
		return fail(p, "listen: bad port range: %llu is above %llu", (unsigned long long)lo,
			    (unsigned long long)hi);
	s->svc.port_lo = lo;
	s->svc.port_hi = hi;
	s->listen_line = p->line;
	return 0;
}

/*
 * Dependency names separated by commas, kept as names: whether each is a
 * dependency, and only once on the path, is known at the end.
 */
static int set_path(struct parser *p, struct psvc *s, char *val)
{
	char c[DW_CLIP_BUF], *names, *out, *tok, *next;
	unsigned n = 0;
	size_t len;
	int err;

	err = cfg_check_unset(p, "path", s->svc.path_line);
	if (err)
		return err;
	names = malloc(strlen(val) + 1);
	if (!names)
		return -ENOMEM;
	out = names;
	for (tok = val; tok; tok = next) {
		next = strchr(tok, ',');
		if (next)
			*next++ = '\0';
		tok = cfg_trim(tok);
		n++;
		if (!*tok) {
			free(names);
			return fail(p, "path: entry %u is empty: separate dependency names with single commas, as in 'auth, cart, payments'",
				    n);
		}
		if (!cfg_valid_name(tok)) {
			free(names);
			return fail(p, "path: '%s' is not a dependency name (1 to %d of A-Z a-z 0-9 _ . -)",
				    dw_clip(tok, c), DW_DEP_NAME_MAX);
		}
		len = strlen(tok) + 1;
		memcpy(out, tok, len);
		out += len;
	}
	s->names = names;
	s->svc.npath = n;
	s->svc.path_line = p->line;
	return 0;
}

int cfg_set_service_key(struct parser *p, const char *key, char *val)
{
	struct psvc *s = &p->svcs[p->nsvcs - 1];
	uint64_t u;
	int err;

	if (strcmp(key, "listen") == 0)
		return set_listen(p, s, val);
	if (strcmp(key, "path") == 0)
		return set_path(p, s, val);
	if (strcmp(key, "pool") == 0) {
		err = cfg_check_unset(p, key, s->pool_line);
		if (err)
			return err;
		if (dw_parse_uint(val, pool_key.min, pool_key.max, &u))
			return cfg_fail_value(p, &pool_key, val);
		s->svc.pool = u;
		s->pool_line = p->line;
		return 0;
	}
	if (strcmp(key, "deadline") == 0) {
		err = cfg_check_unset(p, key, s->deadline_line);
		if (!err)
			err = cfg_parse_duration_key(p, &deadline_key, val, &s->svc.deadline_ns);
		if (!err)
			s->deadline_line = p->line;
		return err;
	}
	return -ENOENT;
}

uint64_t cfg_hop_budget(const struct dw_dep_config *d, const char **which)
{
	uint64_t a = d->s.abort_after_ns;

	*which = "timeout";
	if (a && (!d->timeout_ns || a < d->timeout_ns)) {
		*which = "abort_after";
		return a;
	}
	return d->timeout_ns;
}

/*
 * "d1 800ms + d2 800ms" for the message of a path over its deadline; cut
 * short ("... + 12 more") where it would push the deadline out of err.
 */
static void path_parts(const struct parser *p, const struct dw_service *s, char *buf, size_t len)
{
	char t[DW_DURATION_STRLEN], part[DW_DEP_NAME_MAX + DW_DURATION_STRLEN + 24];
	const struct dw_dep_config *d;
	size_t n = 0, room = sizeof(" + 4294967295 more");
	const char *which;
	unsigned k;
	int w;

	buf[0] = '\0';
	for (k = 0; k < s->npath; k++) {
		d = &p->deps[s->path[k]].dep;
		dw_format_duration(cfg_hop_budget(d, &which), t, sizeof(t));
		w = snprintf(part, sizeof(part), "%s%s %s%s", k ? " + " : "", d->name, t,
			     strcmp(which, "timeout") ? " (abort_after)" : "");
		if (w < 0 || n + w + (k + 1 < s->npath ? room : 0) >= len) {
			snprintf(buf + n, len - n, " + %u more", s->npath - k);
			return;
		}
		memcpy(buf + n, part, w + 1);
		n += w;
	}
}

/* The sum of the timeouts along s's path against its deadline. */
static void check_budget(struct parser *p, const struct dw_service *s)
{
	char sum[DW_DURATION_STRLEN], dl[DW_DURATION_STRLEN], parts[256];
	const struct dw_dep_config *d;
	uint64_t total = 0, t;
	const char *which;
	unsigned k;

	if (!s->deadline_ns || !s->npath)
		return;
	dw_format_duration(s->deadline_ns, dl, sizeof(dl));
	for (k = 0; k < s->npath; k++) {
		d = &p->deps[s->path[k]].dep;
		t = cfg_hop_budget(d, &which);
		if (!t) {
			cfg_fail_at(p, s->path_line, k + 1,
				"dependency %s on the path of service %s has no timeout: set 'timeout = DURATION' in [dependency %s] (or abort_after) so the path can be held to the deadline %s",
				d->name, s->name, d->name, dl);
			return;
		}
		total += t;	/* a line holds < 2100 names of 1 h at most: no overflow */
	}
	if (total <= s->deadline_ns)
		return;
	dw_format_duration(total, sum, sizeof(sum));
	path_parts(p, s, parts, sizeof(parts));
	cfg_fail_at(p, s->path_line, 0,
		"service %s: timeouts along its path add up to %s (%s), more than its deadline %s",
		s->name, sum, parts, dl);
}

static int cmp_name_pdep(const void *key, const void *elem)
{
	return strcmp(key, (*(struct pdep *const *)elem)->dep.name);
}

/* The dependency called name; NULL if there is none. */
static struct pdep *find_dep(struct parser *p, struct pdep *const *sorted, const char *name)
{
	struct pdep *const *d;

	if (!sorted)
		return NULL;
	d = bsearch(name, sorted, p->ndeps, sizeof(*sorted), cmp_name_pdep);
	return d ? *d : NULL;
}

/*
 * The names of s's path into dependency indexes. seen[i] is the number
 * (from 1) of the service whose path last held dependency i, at entry
 * at[i], so that a name twice on one path is found in one pass.
 */
static int resolve_path(struct parser *p, struct psvc *s, unsigned num, struct pdep *const *sorted,
			unsigned *seen, unsigned *at)
{
	const char *name = s->names;
	struct pdep *d;
	unsigned k, i;
	bool ok = true;

	if (!s->svc.npath)
		return 0;
	s->svc.path = malloc(s->svc.npath * sizeof(*s->svc.path));
	if (!s->svc.path)
		return -ENOMEM;
	for (k = 0; k < s->svc.npath; k++, name += strlen(name) + 1) {
		d = find_dep(p, sorted, name);
		if (!d) {
			cfg_fail_at(p, s->svc.path_line, k + 1,
				"path: there is no [dependency %s] (entry %u of the path of service %s)",
				name, k + 1, s->svc.name);
			ok = false;
			continue;
		}
		i = d - p->deps;
		if (seen[i] == num) {
			cfg_fail_at(p, s->svc.path_line, k + 1,
				"path: dependency %s is on the path of service %s twice (entries %u and %u)",
				name, s->svc.name, at[i] + 1, k + 1);
			ok = false;
			continue;
		}
		seen[i] = num;
		at[i] = k;
		s->svc.path[k] = i;
	}
	if (ok)
		check_budget(p, &s->svc);
	return 0;
}

/* A service and a dependency of one name: reported at the later header. */
static void check_name_clash(struct parser *p, const struct psvc *s, struct pdep *const *sorted)
{
	const struct pdep *d = find_dep(p, sorted, s->svc.name);

	if (!d)
		return;
	if (s->svc.line > d->dep.line)
		cfg_fail_at(p, s->svc.line, 0,
			"[service %s] has the name of [dependency %s] (line %d): a service and a dependency may not share one",
			s->svc.name, d->dep.name, d->dep.line);
	else
		cfg_fail_at(p, d->dep.line, 0,
			"[dependency %s] has the name of [service %s] (line %d): a service and a dependency may not share one",
			d->dep.name, s->svc.name, s->svc.line);
}

static int cmp_psvc_name(const void *a, const void *b)
{
	const struct psvc *x = *(const struct psvc *const *)a, *y = *(const struct psvc *const *)b;
	int c = strcmp(x->svc.name, y->svc.name);

	if (c)
		return c;
	return x->svc.line - y->svc.line;
}

/* The cgroup path a written one names: no '//', no '.' components, no trailing '/'. */
static void normalise_cgroup(const char *in, char *out)
{
	size_t n = 0, len;
	const char *end;

	while (*in) {
		while (*in == '/')
			in++;
		end = strchrnul(in, '/');
		len = end - in;
		if (len && !(len == 1 && in[0] == '.')) {
			out[n++] = '/';
			memcpy(out + n, in, len);
			n += len;
		}
		in = end;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
}

static int cmp_psvc_cgroup(const void *a, const void *b)
{
	const struct psvc *x = *(const struct psvc *const *)a, *y = *(const struct psvc *const *)b;
	char nx[DW_CGROUP_PATH_MAX + 1], ny[DW_CGROUP_PATH_MAX + 1];
	int c;

	normalise_cgroup(x->svc.cgroup, nx);
	normalise_cgroup(y->svc.cgroup, ny);
	c = strcmp(nx, ny);
	if (c)
		return c;
	return x->listen_line - y->listen_line;
}

/* Duplicate service names, and two services on one cgroup: sorted, as for dependencies. */
static int check_service_names(struct parser *p)
{
	char a[DW_CGROUP_PATH_MAX + 1], b[DW_CGROUP_PATH_MAX + 1], c[DW_CLIP_BUF];
	struct psvc **v;
	unsigned i, n = 0;

	if (p->nsvcs < 2)
		return 0;
	v = malloc(p->nsvcs * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < p->nsvcs; i++)
		v[i] = &p->svcs[i];
	qsort(v, p->nsvcs, sizeof(*v), cmp_psvc_name);
	for (i = 1; i < p->nsvcs; i++)
		if (strcmp(v[i - 1]->svc.name, v[i]->svc.name) == 0)
			cfg_fail_at(p, v[i]->svc.line, 0,
				"duplicate service name '%s' (the first [service %s] is at line %d)",
				v[i]->svc.name, v[i]->svc.name, v[i - 1]->svc.line);
	for (i = 0; i < p->nsvcs; i++)
		if (p->svcs[i].svc.cgroup[0])
			v[n++] = &p->svcs[i];
	qsort(v, n, sizeof(*v), cmp_psvc_cgroup);
	for (i = 1; i < n; i++) {
		normalise_cgroup(v[i - 1]->svc.cgroup, a);
		normalise_cgroup(v[i]->svc.cgroup, b);
		if (strcmp(a, b) == 0)
			cfg_fail_at(p, v[i]->listen_line, 0,
				"listen: cgroup '%s' is the cgroup of [service %s] too ('%s:%d')",
				dw_clip(v[i]->svc.cgroup, c), v[i - 1]->svc.name, p->src,
				v[i - 1]->listen_line);
	}
	free(v);
	return 0;
}

static void format_ports(const struct dw_service *s, char *buf, size_t len)
{
	if (s->port_lo == s->port_hi)
		snprintf(buf, len, "%u", s->port_lo);
	else
		snprintf(buf, len, "%u-%u", s->port_lo, s->port_hi);
}

/*
 * Two services on one port. In file order, each port range is checked
 * against those before it, port by port in a table of owners, stopping at
 * the first overlap: until then no port is owned twice, so the whole scan
 * visits at most 65535 ports plus one range.
 */
static int check_ports(struct parser *p)
{
	char x[16], y[16];
	const struct psvc *s, *o;
	unsigned i, port, *owner;

	if (p->nsvcs < 2)
		return 0;
	owner = calloc(65536, sizeof(*owner));	/* service number from 1; 0: free */
	if (!owner)
		return -ENOMEM;
	for (i = 0; i < p->nsvcs; i++) {
		s = &p->svcs[i];
		if (!s->svc.port_lo)
			continue;
		for (port = s->svc.port_lo; port <= s->svc.port_hi && !owner[port]; port++)
			;
		if (port <= s->svc.port_hi) {
			o = &p->svcs[owner[port] - 1];
			format_ports(&s->svc, x, sizeof(x));
			format_ports(&o->svc, y, sizeof(y));
			cfg_fail_at(p, s->listen_line, 0,
				"listen '%s' overlaps '%s:%d' ('%s' of [service %s]): a port belongs to one service",
				x, p->src, o->listen_line, y, o->svc.name);
			break;
		}
		for (port = s->svc.port_lo; port <= s->svc.port_hi; port++)
			owner[port] = i + 1;
	}
	free(owner);
	return 0;
}

int cfg_check_services(struct parser *p, struct pdep *const *sorted)
{
	unsigned *seen, *at, i;
	struct psvc *s;
	int err = 0;

	if (!p->nsvcs)
		return 0;
	seen = calloc(p->ndeps + 1, sizeof(*seen));
	at = calloc(p->ndeps + 1, sizeof(*at));
	if (!seen || !at) {
		free(seen);
		free(at);
		return -ENOMEM;
	}
	for (i = 0; i < p->nsvcs && !err; i++) {
		s = &p->svcs[i];
		if (!s->listen_line)
			cfg_fail_at(p, s->svc.line, 0,
				"[service %s] has no listen: add 'listen = PORT', 'listen = LOW-HIGH' or 'listen = cgroup:/PATH'",
				s->svc.name);
		check_name_clash(p, s, sorted);
		err = resolve_path(p, s, i + 1, sorted, seen, at);
	}
	free(seen);
	free(at);
	if (!err)
		err = check_service_names(p);
	if (!err)
		err = check_ports(p);
	return err;
}

int dw_service_path_timeout(const struct dw_config *cfg, const struct dw_service *svc,
			    uint64_t *sum_ns)
{
	const char *which;
	uint64_t t, sum = 0;
	unsigned k;
	int ret = 0;

	for (k = 0; k < svc->npath; k++) {
		if (svc->path[k] >= cfg->ndeps) {
			ret = -EINVAL;
			continue;
		}
		t = cfg_hop_budget(&cfg->deps[svc->path[k]], &which);
		if (!t && !ret)
			ret = -ENODATA;
		sum = sum + t < sum ? UINT64_MAX : sum + t;	/* a hand-made config */
	}
	*sum_ns = sum;
	return ret;
}
