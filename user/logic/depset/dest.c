// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "logic/depset/dest.h"
#include "logic/base/parse.h"

uint64_t dw_dest_key_hash(const struct dw_dest_key *key)
{
	const unsigned char *p = (const unsigned char *)key;
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < sizeof(*key); i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

const char *dw_dest_eject_reason(const struct dw_dest_eject *ej)
{
	return ej->forced ? "forced" : ej->e.slow ? "slow_rate" : "failure_rate";
}

void dw_dest_set_key(struct dw_dest *d, const struct dw_dest_key *key)
{
	d->key = *key;
	d->kind = dw_row_kind_of(key);
}

bool dw_dest_shown(const struct dw_dest *d)
{
	if (!d->used || dw_dest_is_listener(d))
		return false;
	return !dw_dest_is_overflow(d) || d->sum.calls_started || d->sum.connect_attempts;
}

uint64_t dw_dest_inflight(const struct dw_dest *d)
{
	uint64_t ended = d->sum.calls_completed + d->sum.calls_failed + d->sum.calls_dropped;

	return d->sum.calls_started > ended ? d->sum.calls_started - ended : 0;
}

uint64_t dw_dest_connect_failures(const struct dw_dest *d)
{
	return d->sum.connect_refused + d->sum.connect_timedout + d->sum.connect_other;
}

uint64_t dw_dest_connecting(const struct dw_dest *d)
{
	uint64_t ended = d->sum.connects_ok + dw_dest_connect_failures(d);

	return d->sum.connect_attempts > ended ? d->sum.connect_attempts - ended : 0;
}

uint64_t dw_dest_conns_open(const struct dw_dest *d)
{
	const struct dw_dest_stats *s = &d->sum;

	return s->conns_opened > s->conns_closed ? s->conns_opened - s->conns_closed : 0;
}

void dw_listener_fig_of(const struct dw_dest *d, struct dw_listener_fig *f)
{
	f->requests = d->sum.calls_completed;
	f->failed = d->sum.calls_failed;
	f->dropped = d->sum.calls_dropped;
	f->started = d->sum.calls_started;
	f->inflight = dw_dest_inflight(d);
	f->connections = dw_dest_conns_open(d);
}

void dw_dest_format(const struct dw_dest_key *key, char *buf, size_t len)
{
	char addr[INET6_ADDRSTRLEN] = "?";

	switch (dw_row_kind_of(key)) {
	case DW_ROW_OVERFLOW:
		snprintf(buf, len, "overflow");
		return;
	case DW_ROW_LISTENER:
		snprintf(buf, len, "*:%u", key->port);
		return;
	case DW_ROW_OUTBOUND:
		break;
	}
	inet_ntop(key->family, key->addr, addr, sizeof(addr));
	if (key->family == AF_INET6)
		snprintf(buf, len, "[%s]:%u", addr, key->port);
	else
		snprintf(buf, len, "%s:%u", addr, key->port);
}

int dw_dest_parse(const char *s, struct dw_dest_key *key)
{
	char addr[INET6_ADDRSTRLEN + 1];
	const char *colon = strrchr(s, ':'), *a = s;
	size_t alen;
	uint64_t port;

	memset(key, 0, sizeof(*key));
	if (!colon || dw_parse_uint(colon + 1, 1, 65535, &port))
		return -EINVAL;
	alen = colon - s;
	if (s[0] == '[') {
		if (alen < 2 || s[alen - 1] != ']')
			return -EINVAL;
		a = s + 1;
		alen -= 2;
	}
	if (alen == 0 || alen >= sizeof(addr))
		return -EINVAL;
	memcpy(addr, a, alen);
	addr[alen] = 0;
	key->port = port;
	if (s[0] != '[' && inet_pton(AF_INET, addr, key->addr) == 1) {
		key->family = AF_INET;
		return 0;
	}
	if (s[0] != '[' || inet_pton(AF_INET6, addr, key->addr) != 1)
		return -EINVAL;
	key->family = AF_INET6;
	/* as the kernel keys them: an IPv4-mapped address is the IPv4 destination */
	if (!memcmp(key->addr, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12)) {
		memmove(key->addr, key->addr + 12, 4);
		memset(key->addr + 4, 0, 12);
		key->family = AF_INET;
	}
	return 0;
}
