// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Services over rows the test builds itself: it knows every request it put
 * in an inbound row and every outstanding call it said a service waits on,
 * so it knows the figures, the order of the waits and the events a poll
 * must return.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "dwtest.h"

#include "logic/depset/depset.h"
#include "logic/services/services.h"

#define MS 1000000ULL
#define SEC (1000ULL * MS)
#define T0 (5000 * SEC)
#define LEASE (3 * SEC)
#define NDESTS 8

static const char base_conf[] =
	"[dependency payments]\n"
	"match = 10.0.3.0/24:443\n"
	"slow_call = 500ms\n"
	"timeout = 800ms\n"
	"\n"
	"[dependency orders]\n"
	"match = 10.0.4.7\n"
	"\n"
	"[service shop]\n"
	"listen = 8080\n"
	"pool = 10\n"
	"deadline = 1s\n"
	"path = payments\n"
	"\n"
	"[service admin]\n"
	"listen = 9000-9010\n";

struct fixture {
	struct dw_deps deps;
	struct dw_services s;
	struct dw_dest dests[NDESTS];
	struct dw_depset_out out;
};

static void setup(struct fixture *f, const char *text)
{
	struct dw_config cfg;

	memset(f, 0, sizeof(*f));
	dwt_parse(text, &cfg);
	assert_int_equal(dw_depset_init(&f->deps, &cfg, LEASE, T0), 0);
	assert_int_equal(dw_services_sync(&f->s, &f->deps.cfg), 0);
	dwt_rows_init(f->dests, NDESTS);
}

static void teardown(struct fixture *f)
{
	dwt_rows_free(f->dests, NDESTS);
	dw_services_free(&f->s);
	dw_depset_out_free(&f->out);
	dw_depset_free(&f->deps);
}

/* Cumulative counts, as the kernel's counters give them: in flight is the rest. */
static void requests(struct dw_dest *d, uint64_t started, uint64_t completed, uint64_t failed)
{
	d->sum.calls_started = started;
	d->sum.calls_completed = completed;
	d->sum.calls_failed = failed;
}

/* n calls of ms milliseconds in d's window. */
static void timed(struct dw_dest *d, double ms, unsigned n)
{
	assert_int_equal(dw_window_add(&d->call_win, dw_hist_bucket(ms * MS), n), 0);
}

/* The dependencies' poll (their figures), then the services', as the daemon runs them. */
static void poll(struct fixture *f, uint64_t now)
{
	dw_depset_out_reset(&f->out);
	dw_depset_poll(&f->deps, f->dests, NDESTS, now, &f->out);
	dw_services_begin(&f->s);
	dw_services_step(&f->s, f->dests, NDESTS, now, &f->deps);
}

static struct dw_svc *svc(struct fixture *f, const char *name)
{
	for (unsigned i = 0; i < f->s.n; i++)
		if (!strcmp(f->s.svc[i].name, name))
			return &f->s.svc[i];
	fail_msg("no service %s", name);
	return NULL;
}

static int dep_index(const struct fixture *f, const char *name)
{
	const struct dw_dep *dep = dw_depset_find(&f->deps, name);

	assert_non_null(dep);
	return dep - f->deps.deps;
}

static void expect_events(const struct dw_svc *s, const char *first, const char *second)
{
	unsigned n = !!first + !!second;

	if (s->nev != n)
		fail_msg("%s: %u events (%s), want %u", s->name, s->nev, s->nev ? s->ev[0] : "", n);
	if (first)
		assert_string_equal(s->ev[0], first);
	if (second)
		assert_string_equal(s->ev[1], second);
}

static void test_at_port(void **state)
{
	struct fixture f;

	(void)state;
	setup(&f, base_conf);
	assert_int_equal(f.s.n, 2);
	assert_ptr_equal(dw_services_at_port(&f.s, 8080), svc(&f, "shop"));
	assert_ptr_equal(dw_services_at_port(&f.s, 9000), svc(&f, "admin"));
	assert_ptr_equal(dw_services_at_port(&f.s, 9010), svc(&f, "admin"));
	assert_null(dw_services_at_port(&f.s, 8999));
	assert_null(dw_services_at_port(&f.s, 9011));
	assert_null(dw_services_at_port(&f.s, 8081));
	assert_null(dw_services_at_port(&f.s, 0));
	teardown(&f);
}

/* A cgroup service has no ports (both 0): port 0 (no port known) is never its. */
static void test_cgroup_service_has_no_port(void **state)
{
	struct fixture f;

	(void)state;
	setup(&f, "[service batch]\nlisten = cgroup:/sys/fs/cgroup/batch.slice\n");
	assert_int_equal(f.s.n, 1);
	assert_int_equal(f.s.svc[0].cfg->port_lo, 0);
	assert_null(dw_services_at_port(&f.s, 0));
	assert_null(dw_services_at_port(&f.s, 1));
	teardown(&f);
}

/* Before any poll: no history (-1), level ok, no event. */
static void test_fresh_service(void **state)
{
	struct fixture f;
	struct dw_svc *shop;

	(void)state;
	setup(&f, base_conf);
	shop = svc(&f, "shop");
	assert_ptr_equal(shop->cfg, &f.deps.cfg.services[0]);
	assert_double_eq(shop->arrival_rate, -1);
	assert_double_eq(shop->rising, -1);
	assert_double_eq(shop->p50_ms, -1);
	assert_double_eq(shop->path_p99_ms, -1);
	assert_double_eq(shop->fc.exhausted_in_s, -1);
	assert_int_equal(shop->level, DW_POOL_OK);
	assert_int_equal(shop->nev, 0);
	teardown(&f);
}

/* Only its own inbound rows count: not another service's, an outbound row, port 0, unused. */
static void test_rows_summed(void **state)
{
	struct fixture f;
	struct dw_dest *a, *b;
	struct dw_svc *shop, *admin;

	(void)state;
	setup(&f, base_conf);
	a = dwt_inbound(&f.dests[0], 8080);
	requests(a, 10, 6, 1);
	a->oldest_call_ns = T0 - 2 * SEC;
	a->sum.last_pid = 100;
	a->sum.last_conn_ns = 5;
	strcpy(a->sum.last_comm, "old");
	timed(a, 10, 50);
	b = dwt_inbound(&f.dests[1], 8080);
	b->key.netns = 7;		/* the same port in another namespace */
	requests(b, 4, 4, 0);
	b->oldest_call_ns = T0 - SEC;
	b->sum.last_pid = 200;
	b->sum.last_conn_ns = 9;
	strcpy(b->sum.last_comm, "nginx");
	timed(b, 30, 50);
	requests(dwt_inbound(&f.dests[2], 9005), 3, 1, 0);
	requests(dwt_outbound(&f.dests[3], "10.0.4.7", 8080), 100, 0, 0);
	requests(dwt_inbound(&f.dests[4], 0), 100, 0, 0);
	requests(dwt_inbound(&f.dests[5], 8080), 100, 0, 0);
	f.dests[5].used = false;

	poll(&f, T0);
	shop = svc(&f, "shop");
	assert_int_equal(shop->rows, 2);
	assert_int_equal(shop->started, 14);
	assert_int_equal(shop->requests, 10);
	assert_int_equal(shop->failed, 1);
	assert_int_equal(shop->inflight, 3);
	assert_int_equal(shop->oldest_ns, T0 - 2 * SEC);
	assert_int_equal(shop->pid, 200);
	assert_string_equal(shop->comm, "nginx");
	/* half the calls at 10 ms, half at 30: buckets are at most 6.25% wide */
	assert_near(shop->p50_ms, 10, 0.0625);
	assert_near(shop->p99_ms, 30, 0.0625);
	admin = svc(&f, "admin");
	assert_int_equal(admin->rows, 1);
	assert_int_equal(admin->inflight, 2);
	assert_double_eq(admin->p50_ms, -1);
	assert_double_eq(admin->p99_ms, -1);
	teardown(&f);
}

/* Rates need two polls; a counter that went back (a row gone) is skipped, not negative. */
static void test_rates(void **state)
{
	struct fixture f;
	struct dw_dest *a;
	struct dw_svc *admin;

	(void)state;
	setup(&f, base_conf);
	a = dwt_inbound(&f.dests[0], 9000);
	requests(a, 10, 10, 0);
	poll(&f, T0);
	admin = svc(&f, "admin");
	assert_double_eq(admin->arrival_rate, -1);
	assert_double_eq(admin->rising, -1);

	requests(a, 30, 26, 0);		/* 20 more started, 4 more in flight, in 1 s */
	poll(&f, T0 + SEC);
	assert_double_eq(admin->arrival_rate, 20);
	assert_double_eq(admin->rising, 4);

	requests(a, 5, 5, 0);		/* went back */
	poll(&f, T0 + 2 * SEC);
	assert_double_eq(admin->arrival_rate, 20);
	assert_double_eq(admin->rising, 4);
	assert_int_equal(admin->prev_started, 5);

	requests(a, 15, 15, 0);		/* from the new base: 10 in 1 s, smoothed, tau 1 s */
	poll(&f, T0 + 3 * SEC);
	assert_near(admin->arrival_rate, 20 + (1 - exp(-1)) * (10 - 20), 1e-9);
	teardown(&f);
}

/* Waits: by dependency, most first (ties in arrival order); none without dependency or service. */
static void test_waits_grouped_and_ordered(void **state)
{
	struct fixture f;
	struct dw_svc *shop, *admin;
	int pay, ord;
	char buf[160];

	(void)state;
	setup(&f, base_conf);
	pay = dep_index(&f, "payments");
	ord = dep_index(&f, "orders");
	dw_services_begin(&f.s);
	dw_services_wait(&f.s, 8080, pay, 3);
	dw_services_wait(&f.s, 8080, ord, 5);
	dw_services_wait(&f.s, 8080, pay, 4);
	dw_services_wait(&f.s, 8080, -1, 9);	/* a destination not yet in the set */
	dw_services_wait(&f.s, 7000, pay, 2);	/* no service listens there */
	dw_services_wait(&f.s, 9003, ord, 2);
	dw_services_wait(&f.s, 9003, pay, 2);
	dw_services_step(&f.s, f.dests, NDESTS, T0, &f.deps);

	shop = svc(&f, "shop");
	assert_int_equal(shop->nwaits, 2);
	assert_int_equal(shop->waits[0].dep, pay);
	assert_int_equal(shop->waits[0].count, 7);
	assert_int_equal(shop->waits[1].dep, ord);
	assert_int_equal(shop->waits[1].count, 5);
	assert_int_equal(shop->waiting, 12);
	assert_int_equal(shop->other_waiting, 0);
	admin = svc(&f, "admin");
	assert_int_equal(admin->nwaits, 2);
	assert_int_equal(admin->waits[0].dep, ord);	/* a tie: the first seen stays first */
	assert_int_equal(admin->waiting, 4);

	dw_svc_summary(shop, &f.deps, buf, sizeof(buf));
	assert_string_equal(buf, "shop: 7/10 waiting on payments");
	dw_svc_summary(admin, &f.deps, buf, sizeof(buf));
	assert_string_equal(buf, "admin: 2 waiting on orders");

	/* the next poll starts from none */
	dw_services_begin(&f.s);
	assert_int_equal(shop->nwaits, 0);
	assert_int_equal(shop->waiting, 0);
	dw_svc_summary(shop, &f.deps, buf, sizeof(buf));
	assert_string_equal(buf, "");
	teardown(&f);
}

/* Past DW_SVC_WAITS dependencies the rest is counted in other_waiting. */
static void test_waits_overflow(void **state)
{
	struct fixture f;
	struct dw_svc *shop;

	(void)state;
	setup(&f, base_conf);
	shop = svc(&f, "shop");
	dw_services_begin(&f.s);
	for (int dep = 0; dep < DW_SVC_WAITS + 2; dep++)
		dw_services_wait(&f.s, 8080, dep, 1 + dep);
	dw_services_wait(&f.s, 8080, 0, 100);	/* one it holds still adds up */
	assert_int_equal(shop->nwaits, DW_SVC_WAITS);
	assert_int_equal(shop->waits[0].count, 101);
	assert_int_equal(shop->other_waiting, (DW_SVC_WAITS + 1) + (DW_SVC_WAITS + 2));
	assert_int_equal(shop->waiting, 100 + (DW_SVC_WAITS + 2) * (DW_SVC_WAITS + 3) / 2);
	teardown(&f);
}

/* One event per change of level, none while it stays. */
static void test_pool_events(void **state)
{
	struct fixture f;
	struct dw_dest *a;
	struct dw_svc *shop;

	(void)state;
	setup(&f, base_conf);
	shop = svc(&f, "shop");
	a = dwt_inbound(&f.dests[0], 8080);
	requests(a, 100, 93, 0);	/* 7 of 10 in flight */
	poll(&f, T0);
	expect_events(shop, NULL, NULL);

	requests(a, 100, 92, 0);	/* 8 of 10: the warning */
	poll(&f, T0 + SEC);
	assert_int_equal(shop->level, DW_POOL_WARNING);
	expect_events(shop, "pool_80pct", NULL);
	poll(&f, T0 + 2 * SEC);
	expect_events(shop, NULL, NULL);

	requests(a, 110, 100, 0);	/* 10 of 10 */
	poll(&f, T0 + 3 * SEC);
	assert_int_equal(shop->level, DW_POOL_EXHAUSTED);
	expect_events(shop, "exhausted", NULL);

	requests(a, 110, 110, 0);
	poll(&f, T0 + 4 * SEC);
	assert_int_equal(shop->level, DW_POOL_OK);
	expect_events(shop, "pool_ok", NULL);
	/* admin has no pool: never a level */
	expect_events(svc(&f, "admin"), NULL, NULL);
	teardown(&f);
}

/*
 * What a request waits: its path's dependencies, each its median, or its
 * timeout while it hangs past slow_call; that forecasts the pool's end.
 */
static void test_latency_and_forecast(void **state)
{
	struct fixture f;
	struct dw_dest *pay, *in;
	struct dw_svc *shop;

	(void)state;
	setup(&f, base_conf);
	shop = svc(&f, "shop");
	pay = dwt_outbound(&f.dests[0], "10.0.3.1", 443);
	timed(pay, 100, 20);
	in = dwt_inbound(&f.dests[1], 8080);
	requests(in, 0, 0, 0);
	poll(&f, T0);
	assert_near(shop->latency_s, 0.1, 0.0625);
	expect_events(shop, NULL, NULL);

	/* payments hangs: its callers wait its timeout (800 ms); 20 requests/s need 16 > 10 */
	pay->oldest_call_ns = T0 + SEC - 2 * SEC;
	requests(in, 20, 18, 0);
	poll(&f, T0 + SEC);
	assert_double_eq(shop->latency_s, 0.8);
	assert_double_eq(shop->arrival_rate, 20);
	assert_near(shop->fc.steady, 16, 1e-9);
	assert_true(shop->fc.exhausted_in_s > 0);
	assert_int_equal(shop->level, DW_POOL_WARNING);
	expect_events(shop, "forecast", NULL);
	teardown(&f);
}

/* The path's observed p99s against the deadline: an event each way, after the level's. */
static void test_path_deadline(void **state)
{
	struct fixture f;
	struct dw_dest *pay, *in;
	struct dw_svc *shop;

	(void)state;
	setup(&f, base_conf);
	shop = svc(&f, "shop");
	in = dwt_inbound(&f.dests[1], 8080);
	poll(&f, T0);
	assert_double_eq(shop->path_p99_ms, -1);	/* no calls on the path */
	assert_double_eq(svc(&f, "admin")->path_p99_ms, -1);	/* no path */

	pay = dwt_outbound(&f.dests[0], "10.0.3.1", 443);
	timed(pay, 1500, 10);
	requests(in, 10, 0, 0);		/* every worker busy too */
	poll(&f, T0 + SEC);
	assert_near(shop->path_p99_ms, 1500, 0.0625);
	assert_true(shop->path_over);
	expect_events(shop, "exhausted", "path_p99_over_deadline");
	poll(&f, T0 + 2 * SEC);
	expect_events(shop, NULL, NULL);

	dw_window_free(&pay->call_win);
	assert_int_equal(dw_window_init(&pay->call_win, 4), 0);
	timed(pay, 100, 10);
	requests(in, 10, 10, 0);
	poll(&f, T0 + 3 * SEC);
	assert_false(shop->path_over);
	expect_events(shop, "pool_ok", "path_p99_ok");
	teardown(&f);
}

/* A reload keeps a service's figures and alerted state by name; a new one starts afresh. */
static void test_sync_keeps_by_name(void **state)
{
	static const char reload_conf[] =
		"[service fresh]\n"
		"listen = 7000\n"
		"\n"
		"[service shop]\n"
		"listen = 8081\n"
		"pool = 20\n";
	struct fixture f;
	struct dw_config next;
	struct dw_svc *shop;

	(void)state;
	setup(&f, base_conf);
	requests(dwt_inbound(&f.dests[0], 8080), 100, 90, 0);
	poll(&f, T0);
	poll(&f, T0 + SEC);
	assert_int_equal(svc(&f, "shop")->level, DW_POOL_EXHAUSTED);

	dwt_parse(reload_conf, &next);
	assert_int_equal(dw_services_sync(&f.s, &next), 0);
	assert_int_equal(f.s.n, 2);
	assert_string_equal(f.s.svc[0].name, "fresh");
	assert_ptr_equal(f.s.svc[0].cfg, &next.services[0]);
	assert_double_eq(f.s.svc[0].arrival_rate, -1);
	assert_int_equal(f.s.svc[0].level, DW_POOL_OK);
	shop = &f.s.svc[1];
	assert_string_equal(shop->name, "shop");
	assert_ptr_equal(shop->cfg, &next.services[1]);
	assert_int_equal(shop->level, DW_POOL_EXHAUSTED);	/* alerted: not raised again */
	assert_int_equal(shop->prev_started, 100);
	assert_null(dw_services_at_port(&f.s, 8080));
	assert_ptr_equal(dw_services_at_port(&f.s, 8081), shop);
	assert_ptr_equal(dw_services_at_port(&f.s, 7000), &f.s.svc[0]);

	/* the old config's services all go */
	assert_int_equal(dw_services_sync(&f.s, &f.deps.cfg), 0);
	dw_config_free(&next);
	teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_at_port),
		cmocka_unit_test(test_cgroup_service_has_no_port),
		cmocka_unit_test(test_fresh_service),
		cmocka_unit_test(test_rows_summed),
		cmocka_unit_test(test_rates),
		cmocka_unit_test(test_waits_grouped_and_ordered),
		cmocka_unit_test(test_waits_overflow),
		cmocka_unit_test(test_pool_events),
		cmocka_unit_test(test_latency_and_forecast),
		cmocka_unit_test(test_path_deadline),
		cmocka_unit_test(test_sync_keeps_by_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
