// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The dependency set over destinations the test builds itself: it knows
 * every call it put in a slice, so it knows what the set must judge, which
 * events it must return and which breakers map entries it must want.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "dwtest.h"

#include "logic/depset/depset.h"

#define MS 1000000ULL
#define SEC (1000ULL * MS)
#define T0 (5000 * SEC)
#define LEASE (3 * SEC)
#define NDESTS 8

static const char base_conf[] =
	"[defaults]\n"
	"slow_call = 1s\n"
	"open_for = 2s\n"
	"half_open_calls = 5\n"
	"\n"
	"[dependency payments]\n"
	"match = 10.0.3.0/24:443\n"
	"slow_call = 500ms\n"
	"timeout = 800ms\n"
	"\n"
	"[dependency orders]\n"
	"match = 10.0.4.7\n";

struct fixture {
	struct dw_deps deps;
	struct dw_dest dests[NDESTS];
	struct dw_depset_out out;
};

static void setup(struct fixture *f, const char *text)
{
	struct dw_config cfg;

	memset(f, 0, sizeof(*f));
	dwt_parse(text, &cfg);
	assert_int_equal(dw_depset_init(&f->deps, &cfg, LEASE, T0), 0);
	dwt_rows_init(f->dests, NDESTS);
}

static void teardown(struct fixture *f)
{
	dwt_rows_free(f->dests, NDESTS);
	dw_depset_out_free(&f->out);
	dw_depset_free(&f->deps);
}

/* One slice of calls started at `at`: fast, slow and failed among them, all decided. */
static void calls(struct dw_dest *d, uint64_t at, unsigned fast, unsigned slow, unsigned failed)
{
	struct dw_slice_counts *sl = &d->slices[d->nslices++];

	*sl = (struct dw_slice_counts){ .slice = at >> DW_SLICE_SHIFT, .started = fast + slow + failed,
					.fast = fast, .slow = slow, .failed = failed };
	d->sum.calls_started += fast + slow + failed;
	d->sum.calls_completed += fast + slow;
	d->sum.calls_failed += failed;
	d->sum.calls_slow += slow;
}

static void poll(struct fixture *f, uint64_t now)
{
	dw_depset_out_reset(&f->out);
	dw_depset_poll(&f->deps, f->dests, NDESTS, now, &f->out);
	assert_false(f->out.oom);
}

static const struct dw_dep *named(const struct fixture *f, const char *name)
{
	for (unsigned i = 0; i < f->deps.n; i++)
		if (f->deps.deps[i].used && !strcmp(f->deps.deps[i].name, name))
			return &f->deps.deps[i];
	fail_msg("no dependency %s", name);
	return NULL;
}

/* The breakers map op for key, or NULL. */
static const struct dw_breaker_op *op_for(const struct fixture *f, unsigned dep_id,
					  const struct dw_dest_key *dest)
{
	for (unsigned i = 0; i < f->out.nops; i++) {
		const struct dw_breaker_op *op = &f->out.ops[i];

		if (op->key.dep_id != dep_id)
			continue;
		if (!dep_id && memcmp(&op->key.dest, dest, sizeof(*dest)))
			continue;
		return op;
	}
	return NULL;
}

static void expect_transition(const struct fixture *f, unsigned i, const struct dw_dep *dep,
			      enum dw_breaker_state from, enum dw_breaker_state to,
			      enum dw_breaker_reason reason)
{
	const struct dw_dep_event *ev = &f->out.ev[i];

	assert_true(i < f->out.nev);
	assert_int_equal(ev->kind, DW_DEP_TRANSITION);
	assert_ptr_equal(&f->deps.deps[ev->dep], dep);
	assert_int_equal(ev->from, from);
	assert_int_equal(ev->state, to);
	assert_int_equal(ev->reason, reason);
}

static void test_registers_configured_and_destinations(void **state)
{
	struct fixture f;
	const struct dw_dep *pay, *own;

	(void)state;
	setup(&f, base_conf);
	assert_non_null(dw_depset_find(&f.deps, "payments"));
	assert_non_null(dw_depset_find(&f.deps, "orders"));
	assert_int_equal(dw_depset_find(&f.deps, "payments")->id, 1);
	assert_int_equal(dw_depset_find(&f.deps, "orders")->id, 2);
	assert_null(dw_depset_find(&f.deps, "nothing"));
	assert_int_equal(dw_depset_timeout_ns(&f.deps, dw_depset_find(&f.deps, "payments")), 800 * MS);

	dwt_outbound(&f.dests[0], "10.0.3.9", 443);	/* payments */
	dwt_outbound(&f.dests[1], "10.0.3.10", 443);	/* payments too */
	dwt_outbound(&f.dests[2], "192.168.1.1", 80);	/* no match: its own */
	dwt_outbound(&f.dests[3], "10.0.3.9", 80); /* port outside payments' match: its own */
	f.dests[4].used = true;			/* an empty overflow row: nobody's */
	poll(&f, T0);

	pay = named(&f, "payments");
	assert_int_equal(pay->ndests, 2);
	assert_ptr_equal(dw_depset_at(&f.deps, f.dests[0].dep), pay);
	assert_ptr_equal(dw_depset_at(&f.deps, f.dests[1].dep), pay);
	own = named(&f, "192.168.1.1:80");
	assert_int_equal(own->id, 0);
	assert_int_equal(own->ndests, 1);
	assert_int_equal(own->s->slow_call_ns, 1 * SEC);	/* the defaults */
	assert_ptr_equal(dw_depset_at(&f.deps, f.dests[3].dep), named(&f, "10.0.3.9:80"));
	assert_int_equal(f.dests[4].dep, -1);
	assert_ptr_equal(dw_depset_configured(&f.deps, 0), pay);

	/* configured ones always have an entry, with a lease; closed destinations none */
	assert_int_equal(f.out.nops, 2);
	assert_non_null(op_for(&f, 1, NULL));
	assert_int_equal(op_for(&f, 1, NULL)->v.lease_expires_ns, T0 + LEASE);
	assert_string_equal(op_for(&f, 1, NULL)->v.name, "payments");
	assert_non_null(op_for(&f, 2, NULL));
	assert_int_equal(f.out.nev, 0);

	/* a second poll finds the same dependencies, registers nothing new */
	poll(&f, T0 + SEC);
	assert_int_equal(f.deps.n, 4);
	teardown(&f);
}

/*
 * A listener row (requests this host answers) is no dependency's, whatever it
 * counts; the overflow row becomes a dependency of its own, never judged, once
 * something landed in it. Only dependencies with a destination are shown.
 */
static void test_row_kinds(void **state)
{
	struct fixture f;
	const struct dw_dep *over;

	(void)state;
	setup(&f, base_conf);
	f.dests[0].used = true;			/* the overflow row, empty */
	dwt_inbound(&f.dests[1], 8080);
	calls(&f.dests[1], T0 - SEC, 5, 0, 0);
	poll(&f, T0);
	assert_int_equal(f.dests[0].dep, -1);
	assert_int_equal(f.dests[1].dep, -1);
	assert_int_equal(f.deps.n, 2);		/* the two configured ones */

	f.dests[0].sum.calls_started = 1;
	poll(&f, T0 + SEC);
	assert_int_equal(f.deps.n, 3);
	over = dw_depset_at(&f.deps, f.dests[0].dep);
	assert_non_null(over);
	assert_string_equal(over->name, "overflow");
	assert_int_equal(over->id, 0);
	assert_true(over->s->ignore);
	assert_true(dw_dep_shown(over));
	assert_int_equal(f.dests[1].dep, -1);
	teardown(&f);
}

/* Shown in every output: configured dependencies always, destinations' own with a destination. */
static void test_dep_shown_and_rates(void **state)
{
	struct dw_dep dep = { 0 };

	(void)state;
	assert_false(dw_dep_shown(&dep));	/* unused */
	dep.used = true;
	assert_false(dw_dep_shown(&dep));	/* a destination's own with no destination left */
	dep.ndests = 1;
	assert_true(dw_dep_shown(&dep));
	dep.ndests = 0;
	dep.id = 3;
	assert_true(dw_dep_shown(&dep));	/* configured */

	assert_double_eq(dw_rate_or_zero(-1), 0);	/* not judged yet */
	assert_double_eq(dw_rate_or_zero(0), 0);
	assert_double_eq(dw_rate_or_zero(0.25), 0.25);
	assert_double_eq(dw_rate_or_zero(1), 1);
	assert_double_eq(dw_rate_or_zero(1.5), 0);
	assert_double_eq(dw_rate_or_zero(NAN), 0);
}

/* Slow calls open the breaker; open_for later half_open, then good probes close it. */
static void test_opens_half_opens_closes(void **state)
{
	struct fixture f;
	struct dw_dest *d;
	const struct dw_dep *pay;
	const struct dw_breaker_op *op;
	uint64_t t = T0;

	(void)state;
	setup(&f, base_conf);
	d = dwt_outbound(&f.dests[0], "10.0.3.9", 443);
	calls(d, t - SEC, 0, 20, 0);
	poll(&f, t);
	pay = named(&f, "payments");
	assert_int_equal(pay->br.state, DW_BREAKER_OPEN);
	assert_int_equal(f.out.nev, 1);
	expect_transition(&f, 0, pay, DW_BREAKER_CLOSED, DW_BREAKER_OPEN, DW_REASON_SLOW_RATE);
	assert_int_equal(f.out.ev[0].now_ns, t);
	op = op_for(&f, 1, NULL);
	assert_non_null(op);
	assert_false(op->remove);
	assert_int_equal(op->v.state, DW_BREAKER_OPEN);
	assert_int_equal(op->v.reason, DW_REASON_SLOW_RATE);
	assert_int_equal(op->v.since_ns, t);
	assert_int_equal(op->v.probes_left, 0);

	/* still open: no event, the lease renewed */
	poll(&f, t + SEC);
	assert_int_equal(f.out.nev, 0);
	assert_int_equal(op_for(&f, 1, NULL)->v.lease_expires_ns, t + SEC + LEASE);

	t += 2 * SEC;
	poll(&f, t);
	expect_transition(&f, 0, pay, DW_BREAKER_OPEN, DW_BREAKER_HALF_OPEN, DW_REASON_SLOW_RATE);
	op = op_for(&f, 1, NULL);
	assert_int_equal(op->v.state, DW_BREAKER_HALF_OPEN);
	/* a fresh probe budget: the writer keeps the kernel's while the period is the same */
	assert_int_equal(op->v.probes_left, 5);
	assert_int_equal(op->v.since_ns, t);

	calls(d, t + 200 * MS, 5, 0, 0);
	poll(&f, t + SEC);
	expect_transition(&f, 0, pay, DW_BREAKER_HALF_OPEN, DW_BREAKER_CLOSED, DW_REASON_NONE);
	assert_int_equal(op_for(&f, 1, NULL)->v.state, DW_BREAKER_CLOSED);
	teardown(&f);
}

/* A destination's own breaker has an entry only while not closed, and loses it on closing. */
static void test_destination_entry_lives_while_open(void **state)
{
	struct fixture f;
	struct dw_dest *d;
	const struct dw_breaker_op *op;
	uint64_t t = T0;

	(void)state;
	setup(&f, base_conf);
	d = dwt_outbound(&f.dests[0], "192.168.1.1", 80);
	calls(d, t - SEC, 0, 20, 0);
	poll(&f, t);
	op = op_for(&f, 0, &d->key);
	assert_non_null(op);
	assert_int_equal(op->v.state, DW_BREAKER_OPEN);
	assert_string_equal(op->v.name, "192.168.1.1:80");

	t += 2 * SEC;
	poll(&f, t);
	/* enough good calls that the sample no longer holds the slow ones: it stays closed */
	calls(d, t + 200 * MS, 20, 0, 0);
	poll(&f, t + SEC);
	op = op_for(&f, 0, &d->key);
	assert_non_null(op);
	assert_true(op->remove);
	/* removed once: closed and unpublished, nothing more to say */
	poll(&f, t + 2 * SEC);
	assert_null(op_for(&f, 0, &d->key));
	teardown(&f);
}

static void test_force_and_auto(void **state)
{
	struct fixture f;
	struct dw_dest *d;
	const struct dw_dep *pay;
	const struct dw_breaker_op *op;

	(void)state;
	setup(&f, base_conf);
	d = dwt_outbound(&f.dests[0], "10.0.3.9", 443);
	calls(d, T0 - SEC, 20, 0, 0);
	poll(&f, T0);
	pay = named(&f, "payments");

	dw_depset_out_reset(&f.out);
	assert_int_equal(dw_depset_force(&f.deps, "nothing", DW_BREAKER_OPEN, T0, &f.out), -ENOENT);
	assert_int_equal(f.out.nev, 0);
	assert_int_equal(dw_depset_force(&f.deps, "payments", DW_BREAKER_OPEN, T0 + SEC, &f.out), 0);
	assert_int_equal(f.out.nev, 1);
	assert_int_equal(f.out.ev[0].kind, DW_DEP_OVERRIDE);
	assert_true(f.out.ev[0].forced);
	assert_int_equal(f.out.ev[0].state, DW_BREAKER_OPEN);
	/* the kernel acts on it now: the entry comes with the override */
	op = op_for(&f, 1, NULL);
	assert_non_null(op);
	assert_int_equal(op->v.state, DW_BREAKER_OPEN);
	assert_int_equal(op->v.reason, DW_REASON_FORCED);
	assert_int_equal(op->v.forced, 1);

	/* healthy calls do not close a forced breaker, and open_for does not half-open it */
	poll(&f, T0 + 10 * SEC);
	assert_int_equal(pay->br.state, DW_BREAKER_OPEN);
	assert_int_equal(f.out.nev, 0);
	assert_int_equal(op_for(&f, 1, NULL)->v.forced, 1);

	dw_depset_out_reset(&f.out);
	assert_int_equal(dw_depset_force(&f.deps, "payments", -1, T0 + 11 * SEC, &f.out), 0);
	assert_int_equal(f.out.ev[0].kind, DW_DEP_OVERRIDE);
	assert_false(f.out.ev[0].forced);
	assert_int_equal(f.out.ev[0].state, DW_BREAKER_CLOSED);
	op = op_for(&f, 1, NULL);
	assert_int_equal(op->v.state, DW_BREAKER_CLOSED);
	assert_int_equal(op->v.forced, 0);
	assert_int_equal(op->v.reason, DW_REASON_NONE);
	assert_int_equal(pay->enforce.forced, -1);
	teardown(&f);
}

/* A forced breaker raises the first rejected connect of its open period. */
static void test_rejection_raised_once(void **state)
{
	struct fixture f;
	struct dw_dest *d;

	(void)state;
	setup(&f, base_conf);
	d = dwt_outbound(&f.dests[0], "10.0.3.9", 443);
	poll(&f, T0);
	dw_depset_force(&f.deps, "payments", DW_BREAKER_OPEN, T0, &f.out);
	d->sum.connects_rejected = 3;
	poll(&f, T0 + SEC);
	assert_int_equal(f.out.nev, 1);
	assert_int_equal(f.out.ev[0].kind, DW_DEP_REJECTING);
	d->sum.connects_rejected = 9;
	poll(&f, T0 + 2 * SEC);
	assert_int_equal(f.out.nev, 0);
	teardown(&f);
}

static const char reload_conf[] =
	"[defaults]\n"
	"open_for = 2s\n"
	"\n"
	"[dependency search]\n"
	"match = 10.0.9.0/24\n"
	"\n"
	"[dependency payments]\n"
	"match = 10.0.3.0/24:443\n"
	"slow_call = 300ms\n";

/* Same-named dependencies keep their id and breaker; the others go, their entries with them. */
static void test_reload_keeps_same_named_breakers(void **state)
{
	struct fixture f;
	struct dw_config cfg;
	unsigned ids[DW_MAX_DEPS];
	const struct dw_dep *pay;
	struct dw_dest *d;

	(void)state;
	setup(&f, base_conf);
	d = dwt_outbound(&f.dests[0], "10.0.3.9", 443);
	calls(d, T0 - SEC, 0, 20, 0);
	poll(&f, T0);
	pay = named(&f, "payments");
	assert_int_equal(pay->br.state, DW_BREAKER_OPEN);

	dwt_parse(reload_conf, &cfg);
	dw_depset_out_reset(&f.out);
	assert_int_equal(dw_depset_prepare(&f.deps, &cfg, ids, &f.out), 0);
	/* orders (id 2) goes: its entry is to be removed; search takes the free id 2 */
	assert_int_equal(ids[0], 2);
	assert_int_equal(ids[1], 1);
	assert_int_equal(f.out.nops, 1);
	assert_true(f.out.ops[0].remove);
	assert_int_equal(f.out.ops[0].key.dep_id, 2);
	/* prepared, not committed: nothing changed */
	assert_non_null(dw_depset_find(&f.deps, "orders"));
	assert_null(dw_depset_find(&f.deps, "search"));

	dw_depset_commit(&f.deps, &cfg, ids, T0 + SEC, f.dests, NDESTS);
	assert_null(dw_depset_find(&f.deps, "orders"));
	assert_int_equal(dw_depset_find(&f.deps, "search")->id, 2);
	pay = dw_depset_find(&f.deps, "payments");
	assert_int_equal(pay->id, 1);
	assert_int_equal(pay->br.state, DW_BREAKER_OPEN);
	assert_int_equal(pay->br.since_ns, T0);
	assert_int_equal(pay->s->slow_call_ns, 300 * MS);
	assert_int_equal(f.dests[0].dep, -1);

	/* the destination is matched again, to the same breaker */
	poll(&f, T0 + SEC);
	assert_ptr_equal(dw_depset_at(&f.deps, f.dests[0].dep), pay);
	assert_int_equal(op_for(&f, 1, NULL)->v.state, DW_BREAKER_OPEN);
	teardown(&f);
}

static const char eject_conf[] =
	"[dependency pay]\n"
	"match = 10.0.5.1:80\n"
	"match = 10.0.5.2:80\n"
	"match = 10.0.5.3:80\n"
	"slow_call = 500ms\n"
	"eject = on\n"
	"eject_for = 10s\n"
	"eject_probe_calls = 3\n";

/* The op for the ejection entry of dest in dependency dep_id (both set), or NULL. */
static const struct dw_breaker_op *eject_op(const struct fixture *f, unsigned dep_id,
					    const struct dw_dest_key *dest)
{
	for (unsigned i = 0; i < f->out.nops; i++) {
		const struct dw_breaker_op *op = &f->out.ops[i];

		if (op->key.dep_id == dep_id && !memcmp(&op->key.dest, dest, sizeof(*dest)))
			return op;
	}
	return NULL;
}

static const struct dw_dep_event *eject_event(const struct fixture *f)
{
	for (unsigned i = 0; i < f->out.nev; i++)
		if (f->out.ev[i].kind == DW_DEP_EJECT)
			return &f->out.ev[i];
	return NULL;
}

/*
 * One slow replica of three: its own entry (dep_id and dest both set) is
 * open under a lease while the dependency's stays closed, half_open with
 * the probe budget once eject_for is over, removed when its probes pass;
 * a reload that turns eject off removes it in the reload's own step.
 */
static void test_ejection_entries(void **state)
{
	struct fixture f;
	struct dw_dest *d[3];
	const struct dw_breaker_op *op;
	const struct dw_dep_event *ev;
	const struct dw_dep *pay;
	struct dw_config cfg;
	unsigned ids[DW_MAX_DEPS];
	uint64_t t = T0;

	(void)state;
	setup(&f, eject_conf);
	d[0] = dwt_outbound(&f.dests[0], "10.0.5.1", 80);
	d[1] = dwt_outbound(&f.dests[1], "10.0.5.2", 80);
	d[2] = dwt_outbound(&f.dests[2], "10.0.5.3", 80);
	calls(d[0], t - SEC, 20, 0, 0);
	calls(d[1], t - SEC, 0, 20, 0);
	calls(d[2], t - SEC, 20, 0, 0);
	poll(&f, t);
	pay = named(&f, "pay");
	assert_int_equal(pay->br.state, DW_BREAKER_CLOSED);
	assert_int_equal(pay->ejected_dests, 1);
	ev = eject_event(&f);
	assert_non_null(ev);
	assert_true(ev->out);
	assert_false(ev->forced);
	assert_memory_equal(&ev->dest, &d[1]->key, sizeof(ev->dest));
	op = eject_op(&f, pay->id, &d[1]->key);
	assert_non_null(op);
	assert_false(op->remove);
	assert_int_equal(op->v.state, DW_BREAKER_OPEN);
	assert_int_equal(op->v.reason, DW_REASON_SLOW_RATE);
	assert_int_equal(op->v.lease_expires_ns, t + LEASE);
	assert_null(eject_op(&f, pay->id, &d[0]->key));
	assert_int_equal(op_for(&f, pay->id, NULL)->v.state, DW_BREAKER_CLOSED);

	/* out: renewed every poll, no event */
	poll(&f, t + SEC);
	assert_null(eject_event(&f));
	assert_int_equal(eject_op(&f, pay->id, &d[1]->key)->v.lease_expires_ns, t + SEC + LEASE);
	/* probing after eject_for: the kernel lets eject_probe_calls through */
	poll(&f, t + 10 * SEC);
	assert_null(eject_event(&f));
	op = eject_op(&f, pay->id, &d[1]->key);
	assert_int_equal(op->v.state, DW_BREAKER_HALF_OPEN);
	assert_int_equal(op->v.probes_left, 3);
	assert_int_equal(op->v.since_ns, t + 10 * SEC);
	/* three good probes: back, its entry removed, and not judged again on what came before */
	calls(d[0], t + 10 * SEC + 200 * MS, 20, 0, 0);
	calls(d[1], t + 10 * SEC + 200 * MS, 3, 0, 0);
	calls(d[2], t + 10 * SEC + 200 * MS, 20, 0, 0);
	poll(&f, t + 11 * SEC);
	ev = eject_event(&f);
	assert_non_null(ev);
	assert_false(ev->out);
	assert_true(eject_op(&f, pay->id, &d[1]->key)->remove);
	assert_int_equal(pay->ejected_dests, 0);
	poll(&f, t + 12 * SEC);
	assert_null(eject_op(&f, pay->id, &d[1]->key));

	/* slow again, by hand this time; then a reload that turns eject off ends it at once */
	assert_int_equal(dw_depset_eject(&f.deps, "pay", &d[1]->key, true, t + 13 * SEC, &f.out), 0);
	assert_int_equal(eject_op(&f, pay->id, &d[1]->key)->v.reason, DW_REASON_FORCED);
	assert_int_equal(d[1]->ej.e.ejections, 2);
	dwt_parse("[dependency pay]\nmatch = 10.0.5.0/24:80\n", &cfg);
	dw_depset_out_reset(&f.out);
	assert_int_equal(dw_depset_prepare(&f.deps, &cfg, ids, &f.out), 0);
	dw_depset_prepare_ejections(&f.deps, &cfg, f.dests, NDESTS, &f.out);
	op = eject_op(&f, pay->id, &d[1]->key);
	assert_non_null(op);
	assert_true(op->remove);
	dw_depset_commit(&f.deps, &cfg, ids, t + 14 * SEC, f.dests, NDESTS);
	poll(&f, t + 14 * SEC);
	ev = eject_event(&f);
	assert_non_null(ev);
	assert_true(ev->ended);
	assert_int_equal(named(&f, "pay")->ejected_dests, 0);
	assert_int_equal(dw_depset_eject(&f.deps, "pay", &d[1]->key, true, t + 15 * SEC, &f.out), -EINVAL);
	teardown(&f);
}

/* A prepared reload that is not committed (the kernel refused it) leaves the set as it was. */
static void test_reload_abandoned(void **state)
{
	struct fixture f;
	struct dw_config cfg;
	unsigned ids[DW_MAX_DEPS];

	(void)state;
	setup(&f, base_conf);
	dwt_parse(reload_conf, &cfg);
	assert_int_equal(dw_depset_prepare(&f.deps, &cfg, ids, &f.out), 0);
	dw_config_free(&cfg);
	assert_non_null(dw_depset_find(&f.deps, "orders"));
	assert_string_equal(f.deps.cfg.deps[1].name, "orders");
	poll(&f, T0);
	assert_non_null(op_for(&f, 2, NULL));
	teardown(&f);
}

/* Retries that multiply the load of a slow dependency: raised once, and once over. */
static void test_retry_storm(void **state)
{
	struct fixture f;
	struct dw_dest *d;
	const struct dw_dep *pay;
	uint64_t t = T0;
	unsigned storms = 0, overs = 0;

	(void)state;
	setup(&f, base_conf);
	d = dwt_outbound(&f.dests[0], "10.0.3.9", 443);
	/* slow, below the limits: 4 of 20 */
	calls(d, t - SEC, 16, 4, 0);
	poll(&f, t);
	pay = named(&f, "payments");
	assert_int_equal(pay->br.state, DW_BREAKER_CLOSED);

	/* each second: 100 calls started, 60 of them retries */
	for (unsigned i = 1; i <= 3; i++) {
		d->sum.calls_started += 100;
		d->sum.calls_retried += 60;
		poll(&f, t + i * SEC);
		for (unsigned k = 0; k < f.out.nev; k++)
			if (f.out.ev[k].kind == DW_DEP_RETRY_STORM && f.out.ev[k].storm)
				storms++;
	}
	assert_int_equal(storms, 1);
	assert_true(pay->rates.retry_storm);
	assert_near(pay->rates.retry_ratio, 2.5, 1e-9);

	/* the retries stop: over once the last 10 s hold none */
	for (unsigned i = 4; i <= 20; i++) {
		d->sum.calls_started += 100;
		poll(&f, t + i * SEC);
		for (unsigned k = 0; k < f.out.nev; k++)
			if (f.out.ev[k].kind == DW_DEP_RETRY_STORM)
				overs += !f.out.ev[k].storm;
	}
	assert_int_equal(overs, 1);
	assert_false(pay->rates.retry_storm);
	teardown(&f);
}

/* Between polls: the moment the oldest outstanding call turns slow, and its destinations hot. */
static void test_next_slow_and_rejudge(void **state)
{
	struct fixture f;
	struct dw_dest *d, *other;
	uint64_t start = T0 - 100 * MS, t;

	(void)state;
	setup(&f, base_conf);
	d = dwt_outbound(&f.dests[0], "10.0.3.9", 443);
	other = dwt_outbound(&f.dests[1], "192.168.1.1", 80);
	d->pending_start = &start;
	d->pending_calls = 1;
	d->sum.calls_started = 1;
	poll(&f, T0);
	t = dw_depset_next_slow(&f.deps, f.dests, NDESTS, T0);
	assert_int_equal(t, start + 500 * MS + 1);
	assert_true(d->hot);
	assert_false(other->hot);

	dw_depset_out_reset(&f.out);
	dw_depset_rejudge(&f.deps, t, &f.out);
	/* only the hot dependency's entry is renewed */
	assert_int_equal(f.out.nops, 1);
	assert_int_equal(f.out.ops[0].key.dep_id, 1);
	d->pending_start = NULL;
	d->pending_calls = 0;
	teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_registers_configured_and_destinations),
	    cmocka_unit_test(test_opens_half_opens_closes),
	    cmocka_unit_test(test_destination_entry_lives_while_open),
	    cmocka_unit_test(test_force_and_auto),
	    cmocka_unit_test(test_rejection_raised_once),
	    cmocka_unit_test(test_reload_keeps_same_named_breakers),
	    cmocka_unit_test(test_reload_abandoned),
	    cmocka_unit_test(test_ejection_entries),
	    cmocka_unit_test(test_retry_storm),
	    cmocka_unit_test(test_next_slow_and_rejudge),
	    cmocka_unit_test(test_row_kinds),
	    cmocka_unit_test(test_dep_shown_and_rates),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
