/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The config parser's own header, for the files it is made of:
 * config_lines.c (the text line by line, and dw_config_parse),
 * config_resolve.c ([defaults] onto each dependency, and the checks that
 * need the whole file), config_service.c ([service] sections and their
 * checks), config_describe.c (the config as text) and config_parser.c
 * (what the others share: the key table, the parser's state and its
 * error messages).
 * Nothing outside user/logic/config/config*.c includes it.
 */
#ifndef DW_CONFIG_PARSER_H
#define DW_CONFIG_PARSER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "logic/config/config.h"

#define NS_PER_MS 1000000ULL
#define NS_PER_S 1000000000ULL
#define NS_PER_H (3600 * NS_PER_S)

#define IS_SPACE(c) ((c) == ' ' || (c) == '\t' || (c) == '\r')

/*
 * KIND_SWITCH: a KIND_BOOL written on | off; KIND_STATUSES: a struct dw_status_set (outcome.h);
 * KIND_GRPC_CODES: a uint32_t, bit per gRPC code (h2answer.h)
 */
enum key_kind { KIND_DURATION, KIND_PERCENT, KIND_UINT, KIND_BOOL, KIND_ENFORCE, KIND_MULTIPLEXED,
		KIND_SWITCH, KIND_STATUSES, KIND_GRPC_CODES };

struct key_def {
	const char *name;
	enum key_kind kind;
	size_t off;		/* of the field in struct dw_dep_settings */
	uint64_t min, max;	/* KIND_DURATION and KIND_UINT */
};

/* The per-dependency keys (config_parser.c), in the order describe prints them. */
#define NKEYS 20
extern const struct key_def cfg_keys[NKEYS];
/* The places in cfg_keys[] of the keys config_resolve.c checks against each other. */
#define KEY_SAMPLE 3
#define KEY_MIN_CALLS 5
#define KEY_ABORT_AFTER 10
#define KEY_IGNORE 11

struct facility_def {
	const char *name;
	int value;
};

/* The syslog facilities a config can name (config_parser.c). */
#define NFACILITIES 10
extern const struct facility_def cfg_facilities[NFACILITIES];

enum section { SEC_NONE, SEC_DEFAULTS, SEC_DEP, SEC_SERVICE };

/* A [dependency] section as read: dep.s holds only the keys it set. */
struct pdep {
	struct dw_dep_config dep;
	int key_line[NKEYS];	/* line that set each key; 0: inherited from [defaults] */
	int timeout_line;
	unsigned mcap;
};

/*
 * A [service] section as read. Its path is names until the whole file is
 * read (the dependencies may come later): svc.npath of them, each ending
 * in a NUL, one after the other in names; svc.path is set at the end.
 */
struct psvc {
	struct dw_service svc;
	int listen_line, pool_line, deadline_line;
	char *names;
};

struct parser {
	const char *src;
	char *err;
	size_t errlen;
	int err_line, err_sub;	/* of the message in err; 0: none yet */
	int line;
	enum section sec;
	int defaults_line;
	struct dw_dep_settings defaults;
	int key_line[NKEYS];	/* of [defaults] */
	int facility, facility_line;
	char cgroup[DW_CGROUP_PATH_MAX + 1];
	int cgroup_line;
	uint16_t dns_ports[DW_DNS_PORTS_MAX];
	unsigned ndns_ports;
	int dns_ports_line;
	struct pdep *deps;
	unsigned ndeps, cap;
	struct psvc *svcs;
	unsigned nsvcs, svc_cap;
};

/* ---- config_dnsports.c ---- */

/* dns_ports = PORT[, PORT...] in [defaults]: into p->dns_ports, or an error at p->line. */
int cfg_set_dns_ports(struct parser *p, const char *val);

/* ---- config_parser.c ---- */

/*
 * Records "SRC:LINE: message" unless an earlier error is already there;
 * returns -EINVAL. sub orders several errors of one line.
 */
int cfg_fail_at(struct parser *p, int line, int sub, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
#define fail(p, ...) cfg_fail_at(p, (p)->line, 0, __VA_ARGS__)

/* s without the blanks around it (cut in place). */
char *cfg_trim(char *s);
/* "[defaults]", "[dependency NAME]" or "[service NAME]": the section being read. */
void cfg_section_name(const struct parser *p, char *buf, size_t len);
/* 1 to DW_DEP_NAME_MAX of A-Z a-z 0-9 _ . - */
bool cfg_valid_name(const char *s);
/* What is wrong with s (n bytes) as a cgroup path, NULL if nothing; *at: the bad byte from 1, or 0. */
const char *cfg_cgroup_path_problem(const char *s, size_t n, size_t *at);
/* 0 if name can name a section of kind ("dependency", "service"), else why not. */
int cfg_check_section_name(struct parser *p, const char *kind, const char *name);
/*
 * Room for element n of the array *arrayp (a T ** passed as void *) of
 * *cap elements of size bytes: doubled when full, first when empty.
 * 0 or -ENOMEM (the array is left as it was).
 */
int cfg_grow(void *arrayp, size_t size, unsigned n, unsigned *cap, unsigned first);
/* 0 if key is not set yet in the current section; line: where it was. */
int cfg_check_unset(struct parser *p, const char *key, int line);
/* A key of [defaults] alone (an error in a [dependency]), set at most once (line: where it was). */
int cfg_check_defaults_only(struct parser *p, const char *key, int line);
/* "KEY: 'VAL' is not ..." for a value of k's kind out of its range. */
int cfg_fail_value(struct parser *p, const struct key_def *k, const char *val);
/* val as a duration within k's range into *ns, else cfg_fail_value. */
int cfg_parse_duration_key(struct parser *p, const struct key_def *k, const char *val,
			   uint64_t *ns);

/* ---- config_resolve.c ---- */

/*
 * Once every line is read: [defaults] (keys it did not set from base;
 * base NULL: the built-in config, which must set them all) onto each
 * [dependency], then every check that needs the whole file. 0, -EINVAL
 * with the earliest error recorded, or -ENOMEM.
 */
int cfg_finish(struct parser *p, const struct dw_config *base);

/* ---- config_service.c ---- */

/* [service NAME] begins. */
int cfg_begin_service(struct parser *p, const char *name);
/* key = val in the current [service]; -ENOENT if key is not a service key. */
int cfg_set_service_key(struct parser *p, const char *key, char *val);
/* The checks of the services once the whole file is read; sorted: deps by name (NULL: none). */
int cfg_check_services(struct parser *p, struct pdep *const *sorted);

/*
 * What one call to d can take at most: its timeout, or abort_after where
 * that is shorter (or the only one set); *which names the one taken. 0:
 * neither is set. (config_service.c)
 */
uint64_t cfg_hop_budget(const struct dw_dep_config *d, const char **which);

#endif /* DW_CONFIG_PARSER_H */
