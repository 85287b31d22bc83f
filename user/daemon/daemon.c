// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* `depwatch run`: the daemon's life, from options to clean exit. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <bpf/libbpf.h>
#include "daemon/abort.h"
#include "collect/collect.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "host/config_file.h"
#include "control/control.h"
#include "logic/view/control_wire.h"
#include "output/alert.h"
#include "host/cgroups.h"
#include "daemon/deps.h"
#include "dns/dnsports.h"
#include "collect/hblocks.h"
#include "kernel/hooks.h"
#include "kernel/loader.h"
#include "host/log.h"
#include "logic/base/parse.h"
#include "logic/view/series.h"
#include "output/metrics.h"
#include "host/privs.h"
#include "output/report.h"
#include "daemon/services.h"
#include "discovery/tls/tls.h"

struct run_opts {
	const char *config;
	const char *events;
	const char *metrics;		/* --metrics ADDR:PORT, NULL: off */
	const char *pin_dir;
	const char *run_dir;
	const char *backend;		/* --backend sock|syscalls, NULL: the best the kernel has */
	uint64_t interval_ns;
	uint64_t window_ns;
	unsigned max_dests;
	unsigned max_conns;		/* --max-conns, 0: the map's own size */
	unsigned max_series;		/* --max-series: per output, 0 no cap (issue 16) */
	bool keep_pinned;
	int group;			/* --group: gid with read access, -1: root only */
	const char *without[DW_MAX_PROGS + 1];	/* --without hooks, NULL-terminated */
	int nwithout;
};

struct daemon {
	struct run_opts opts;
	struct dw_bpf bpf;
	struct dw_collector coll;
	struct dw_deps_io deps;		/* the dependencies, and what the kernel holds of them */
	struct dw_services svcs;	/* polled after the dependencies */
	struct dw_abort abort;		/* enforce = abort, abort_after: when the abort iterator runs */
	struct dw_tls tls;		/* the TLS discovery (issue 32): libraries in processes, their uprobes */
	struct dw_hblocks hb;		/* HTTP/2 answers: the header-block ring, decoded (issue 33) */
	struct dw_run_info info;
	char programs[1024];
	int run_lock_fd;
	int control_fd;
	int signal_fd;
	int timer_fd;
	int fast_fd;		/* one-shot: the next outstanding call to turn slow (arm_fast) */
	struct dw_clients clients;	/* of the control socket, served in the loop */
	struct dw_control_figs control;	/* of clients, as of the request being answered (info.control) */
	struct dw_global_stats reported;	/* kernel trouble counters as last logged */
	uint64_t reported_ns;
};

static const char run_usage[] =
	"usage: depwatch run [-c FILE] [--pin-dir DIR] [--run-dir DIR] [--interval DUR] [--window DUR]\n"
	"                    [--max-dests N] [--max-conns N] [--events FILE|-] [--metrics ADDR:PORT]\n"
	"                    [--backend sock|syscalls] [--without HOOK[,HOOK]|list] [--group GROUP]\n"
	"                    [--max-series N] [--keep-pinned] [-v]\n";

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG && !dw_verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static int parse_run_opts(int argc, char **argv, struct run_opts *o)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "pin-dir", required_argument, NULL, 'P' },
		{ "run-dir", required_argument, NULL, 'R' },
		{ "interval", required_argument, NULL, 'i' },
		{ "window", required_argument, NULL, 'w' },
		{ "max-dests", required_argument, NULL, 'm' },
		{ "events", required_argument, NULL, 'e' },
		{ "keep-pinned", no_argument, NULL, 'K' },
		{ "metrics", required_argument, NULL, 'M' },
		{ "backend", required_argument, NULL, 'B' },
		{ "max-conns", required_argument, NULL, 'C' },
		{ "without", required_argument, NULL, 'W' },
		{ "group", required_argument, NULL, 'G' },
		{ "max-series", required_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	uint64_t n;
	int opt;

	*o = (struct run_opts){ .pin_dir = DW_DEFAULT_PIN_DIR, .run_dir = DW_DEFAULT_RUN_DIR,
				.interval_ns = 250000000ULL, .window_ns = 10000000000ULL,
				.max_dests = DW_MAX_DESTS_DEFAULT, .group = -1, .max_series = DW_MAX_SERIES_DEFAULT };
	while ((opt = getopt_long(argc, argv, "c:vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c': o->config = optarg; break;
		case 'e': o->events = optarg; break;
		case 'K': o->keep_pinned = true; break;
		case 'B': {
			int backend;

			if (dw_backend_parse(optarg, &backend))
				return dw_usage_error("--backend: '%s' is not sock or syscalls",
						      optarg);
			o->backend = optarg;
			break;
		}
		case 'P': o->pin_dir = optarg; break;
		case 'R': o->run_dir = optarg; break;
		case 'v': dw_verbose = true; break;
		case 'i':
			if (dw_parse_duration(optarg, &o->interval_ns) || o->interval_ns < 10000000ULL ||
			    o->interval_ns > 10000000000ULL)
				return dw_usage_error("--interval: '%s' is not a duration from 10ms to 10s", optarg);
			break;
		case 'w':
			if (dw_parse_duration(optarg, &o->window_ns) || o->window_ns < 1000000000ULL ||
			    o->window_ns > 3600000000000ULL)
				return dw_usage_error("--window: '%s' is not a duration from 1s to 60m", optarg);
			break;
		case 'm':
			if (dw_parse_uint(optarg, 16, 1000000, &n))
				return dw_usage_error("--max-dests: '%s' is not a number from 16 to 1000000", optarg);
			o->max_dests = n;
			break;
		case 'S':
			if (dw_parse_uint(optarg, 0, 1000000, &n))
				return dw_usage_error("--max-series: '%s' is not a number from 0 to 1000000", optarg);
			o->max_series = n;
			break;
		case 'C':
			if (dw_parse_uint(optarg, 1, 16777216, &n))
				return dw_usage_error("--max-conns: '%s' is not a number from 1 to 16777216", optarg);
			o->max_conns = n;
			break;
		case 'W':
			if (!strcmp(optarg, "list")) {
				dw_bpf_list_hooks(stdout);
				exit(0);
			}
			/* comma-separated, repeatable; names checked once the backend is known */
			for (char *tok = strtok(optarg, ","); tok; tok = strtok(NULL, ",")) {
				if (o->nwithout == DW_MAX_PROGS)
					return dw_usage_error("--without: more than %d hooks", DW_MAX_PROGS);
				o->without[o->nwithout++] = tok;
			}
			break;
		case 'G':
			o->group = dw_group_parse(optarg);
			if (o->group < 0)
				return dw_usage_error("--group: no group named '%s'", optarg);
			break;
		case 'M': {
			struct sockaddr_storage ss;
			socklen_t len;
			char err[256];

			if (dw_metrics_parse_addr(optarg, &ss, &len, err, sizeof(err)))
				return dw_usage_error("--metrics: %s", err);
			o->metrics = optarg;
			break;
		}
		case 'h': fputs(run_usage, stdout); exit(0);
		default: fputs(run_usage, stderr); return -EINVAL;
		}
	}
	if (optind < argc)
		return dw_usage_error("run: unexpected argument '%s'", argv[optind]);
	if (o->window_ns < o->interval_ns)
		return dw_usage_error("--window must be at least --interval");
	return 0;
}

static int lock_run_dir(struct daemon *d)
{
	char path[300];

	if (mkdir(d->opts.run_dir, 0700) && errno != EEXIST) {
		dw_err("cannot create run dir %s: %s", d->opts.run_dir, strerror(errno));
		return -errno;
	}
	snprintf(path, sizeof(path), "%s/depwatch.lock", d->opts.run_dir);
	d->run_lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (d->run_lock_fd < 0) {
		dw_err("cannot open %s: %s", path, strerror(errno));
		return -errno;
	}
	if (flock(d->run_lock_fd, LOCK_EX | LOCK_NB)) {
		dw_err("another depwatch daemon is running with run dir %s", d->opts.run_dir);
		return -EBUSY;
	}
	return 0;
}

/*
 * Blocked from the first instruction of `run`: a SIGHUP or SIGTERM during a
 * slow start is handled once the loop runs, instead of killing the daemon
 * half-attached.
 */
static void daemon_signals(sigset_t *mask)
{
	sigemptyset(mask);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGTERM);
	sigaddset(mask, SIGHUP);
	sigprocmask(SIG_BLOCK, mask, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static int open_fds(struct daemon *d)
{
	struct itimerspec its = {
		.it_interval = { .tv_sec = d->opts.interval_ns / 1000000000ULL,
				 .tv_nsec = d->opts.interval_ns % 1000000000ULL },
	};
	sigset_t mask;

	its.it_value = its.it_interval;
	daemon_signals(&mask);
	d->signal_fd = signalfd(-1, &mask, SFD_CLOEXEC);
	d->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	d->fast_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (d->signal_fd < 0 || d->timer_fd < 0 || d->fast_fd < 0 ||
	    timerfd_settime(d->timer_fd, 0, &its, NULL)) {
		dw_err("cannot set up signals and timer: %s", strerror(errno));
		return -errno;
	}
	d->control_fd = dw_control_listen(d->opts.run_dir, d->opts.group);
	return d->control_fd < 0 ? d->control_fd : 0;
}

/*
 * The answer to each verb of logic/view/control_wire.h's table; args is what
 * follows the verb's words (NULL: nothing), as the table allows.
 */
typedef void answer_fn(struct daemon *d, const char *args, struct dw_buf *out);

/* The kernel's aborts, then the lines of the ejections they were for. */
static void act(struct daemon *d)
{
	dw_abort_check(&d->abort, &d->deps.set, &d->bpf, dw_monotonic_ns());
	dw_deps_announce(&d->deps);
}

/* "eject NAME DEST", "return NAME DEST": one destination by hand; 1 if args was one of these. */
static bool answer_eject(struct daemon *d, const char *args, struct dw_buf *out)
{
	char name[DW_DEP_NAME_MAX + 1], dest[80];
	struct dw_dest_key key;
	bool eject = !strncmp(args, "eject ", 6);
	int err;

	if (!eject && strncmp(args, "return ", 7))
		return false;
	if (sscanf(args + (eject ? 6 : 7), "%63s %79s", name, dest) != 2 || dw_dest_parse(dest, &key)) {
		dw_buf_printf(out, "error: breaker %s takes a dependency name and ADDR:PORT\n",
			      eject ? "eject" : "return");
		return true;
	}
	err = dw_deps_eject(&d->deps, name, &key, eject, dw_monotonic_ns());
	if (err == -EINVAL)
		dw_buf_printf(out, "error: dependency '%s' has eject = off\n", name);
	else if (err)
		dw_buf_printf(out, "error: no dependency named '%s' with destination %s\n", name, dest);
	else
		dw_buf_printf(out, "ok\n");
	/* an ejected one's connections are aborted before the answer, as a forced open's */
	if (!err)
		act(d);
	return true;
}

/* "open NAME", "close NAME", "auto NAME" */
static void answer_breaker(struct daemon *d, const char *args, struct dw_buf *out)
{
	static const char *const verbs[] = { "close", "open", "auto" };
	static const int states[] = { DW_BREAKER_CLOSED, DW_BREAKER_OPEN, -1 };

	for (int i = 0; i < 3; i++) {
		size_t n = strlen(verbs[i]);

		if (strncmp(args, verbs[i], n) || args[n] != ' ')
			continue;
		if (dw_deps_force(&d->deps, args + n + 1, states[i], dw_monotonic_ns())) {
			dw_buf_printf(out, "error: no dependency named '%s'\n", args + n + 1);
			return;
		}
		/* a forced open aborts as a judged one does, before the answer */
		act(d);
		dw_buf_printf(out, "ok\n");
		return;
	}
	if (answer_eject(d, args, out))
		return;
	dw_buf_printf(out, "error: breaker takes open, close or auto and a dependency name, or eject or return, a name and ADDR:PORT\n");
}

/* "status json", or "status json N" (status --json --max-series N): the JSON under a cap of N series. */
static void answer_status_json(struct daemon *d, const char *args, struct dw_buf *out)
{
	struct dw_run_info info = d->info;
	uint64_t n;

	if (!args) {
		dw_report_json(out, &d->coll, &d->deps.set, &d->svcs, &d->info);
		return;
	}
	if (dw_parse_uint(args, 0, 1000000, &n)) {
		dw_buf_printf(out, "error: --max-series: not a number from 0 to 1000000\n");
		return;
	}
	info.json_max_series = n;
	dw_report_json(out, &d->coll, &d->deps.set, &d->svcs, &info);
}

static void answer_status_text(struct daemon *d, const char *args, struct dw_buf *out)
{
	(void)args;
	dw_report_text(out, &d->coll, &d->deps.set, &d->svcs, &d->info);
}

static void answer_top_tsv(struct daemon *d, const char *args, struct dw_buf *out)
{
	(void)args;
	dw_report_tsv(out, &d->coll, &d->deps.set, &d->svcs);
}

static answer_fn *const answers[DW_NVERBS] = {
#define ANSWER_OF(id, words, root_only, args, handler) [DW_VERB_##id] = handler,
	DW_VERBS(ANSWER_OF)
#undef ANSWER_OF
};

/*
 * A request acts in full before its answer is queued: "ok" to a breaker
 * means forced. The answer then goes out as the client reads it; a client
 * still connected when the daemon stops gets none or part of it (no
 * request stops the daemon), which it tells from a whole one by the
 * answer's length line.
 */
static void answer(struct daemon *d, struct dw_client *c)
{
	struct dw_buf *out = &c->answer;
	const char *args;
	int verb = dw_verb_match(c->req, &args);

	dw_clients_figs(&d->clients, &d->control);
	if (verb < 0)
		dw_buf_printf(out, "error: unknown request\n");
	else if (dw_verbs[verb].root_only && !dw_control_peer_is_root(c->fd))
		dw_buf_printf(out, "error: forcing a breaker needs root (--group grants reading only)\n");
	else
		answers[verb](d, args, out);
	if (out->oom) {
		/* the length line must not call a part of it whole */
		dw_err("out of memory answering a status request");
		dw_buf_free(out);
		dw_buf_printf(out, "error: the daemon ran out of memory answering\n");
	}
	dw_client_write(c, dw_monotonic_ns());
}

static void on_client(struct daemon *d, struct dw_client *c)
{
	if (c->writing)
		dw_client_write(c, dw_monotonic_ns());
	else if (dw_client_read(c) > 0)
		answer(d, c);
}

/* Full maps and failed allocations: a log line when they grow, at most once a minute. */
static void report_kernel_trouble(struct daemon *d)
{
	const struct dw_global_stats *now = &d->coll.globals;
	struct dw_global_stats *was = &d->reported;

	if (!memcmp(now, was, sizeof(*now)) || d->coll.now_ns - d->reported_ns < 60000000000ULL)
		return;
	if (now->dest_map_full != was->dest_map_full)
		dw_warn("destination map full (%u rows): %llu events so far counted in the overflow row; raise --max-dests",
			d->opts.max_dests, (unsigned long long)now->dest_map_full);
	if (now->hist_map_full != was->hist_map_full)
		dw_warn("histogram map full: %llu completions so far not in any histogram",
			(unsigned long long)now->hist_map_full);
	if (now->conn_storage_fail != was->conn_storage_fail && d->bpf.backend == DW_BACKEND_SYSCALLS)
		dw_warn("connection map full (%u connections): %llu connections so far not tracked; raise --max-conns",
			d->bpf.max_conns, (unsigned long long)now->conn_storage_fail);
	else if (now->conn_storage_fail != was->conn_storage_fail)
		dw_warn("%llu sockets so far could not get socket-local storage (kernel out of memory) and are not tracked",
			(unsigned long long)now->conn_storage_fail);
	if (now->pending_table_full != was->pending_table_full)
		dw_warn("pending table full (%u connections): %llu connections so far counted without the ages of their outstanding calls; raise --max-conns",
			d->bpf.max_conns, (unsigned long long)now->pending_table_full);
	if (now->thread_map_full != was->thread_map_full)
		dw_warn("per-thread map full: %llu socket system calls so far not traced",
			(unsigned long long)now->thread_map_full);
	*was = *now;
	d->reported_ns = d->coll.now_ns;
}

/*
 * An outstanding call that turns slow can tip a judgement. The rule's
 * floor (slow_call, then enough slow calls) does not fall on a polling
 * edge: waiting for the next poll would add up to one interval to every
 * decision. So a one-shot timer fires just after the next call turns slow,
 * if that is before the next poll, and re-reads only the destinations of
 * dependencies with such calls (dw_collect_refresh): at most one of these
 * per FAST_GAP_NS, and none while no call is near slow_call.
 */
#define FAST_GAP_NS 20000000ULL

static void arm_fast(struct daemon *d)
{
	uint64_t t = dw_deps_next_slow(&d->deps, &d->coll), now = dw_monotonic_ns();
	uint64_t abort_t = dw_abort_next(&d->abort);
	struct itimerspec its = {};

	/* an abort_after deadline (or rescan) wakes the daemon the same way */
	if (abort_t && (!t || abort_t < t))
		t = abort_t;

	if (t) {
		if (t < now + FAST_GAP_NS)
			t = now + FAST_GAP_NS;
		/* else the regular poll comes first and re-arms */
		if (t - now < d->opts.interval_ns) {
			its.it_value.tv_sec = t / 1000000000ULL;
			its.it_value.tv_nsec = t % 1000000000ULL;
		}
	}
	/* a zero it_value disarms */
	timerfd_settime(d->fast_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void poll_once(struct daemon *d)
{
	int err = dw_bpf_dns_sweep(&d->bpf);	/* DNS queries past their timeout fail before the figures are read */

	if (err < 0)
		dw_err("the DNS timeout sweep failed: %s", strerror(-err));
	err = dw_collect_poll(&d->coll, &d->bpf);

	if (err)
		dw_err("polling the kernel maps failed: %s", strerror(-err));
	/* HTTP/2 answers decoded since: merged before the figures are summed and judged */
	dw_hblocks_drain(&d->hb, &d->coll, &d->deps.set, true);
	dw_deps_poll(&d->deps, &d->coll);
	act(d);
	dw_services_poll(&d->svcs, &d->coll, &d->deps.set);
	report_kernel_trouble(d);
	dw_tls_set_exec_lost(&d->tls, d->coll.globals.tls_exec_lost);
	if (d->opts.metrics) {
		struct dw_control_figs control;

		dw_clients_figs(&d->clients, &control);
		dw_metrics_publish(&d->coll, &d->deps.set, &d->svcs, &control, d->opts.max_series);
	}
	arm_fast(d);
}

static void on_timer(struct daemon *d)
{
	uint64_t expirations;

	if (read(d->timer_fd, &expirations, sizeof(expirations)) == sizeof(expirations))
		poll_once(d);
}

static void on_fast(struct daemon *d)
{
	uint64_t expirations;
	int err;

	if (read(d->fast_fd, &expirations, sizeof(expirations)) != sizeof(expirations))
		return;
	err = dw_collect_refresh(&d->coll, &d->bpf);
	if (err)
		dw_err("re-reading the kernel maps failed: %s", strerror(-err));
	dw_deps_rejudge(&d->deps, &d->coll);
	/* a breaker that opened in this wakeup aborts in it, not a poll later */
	act(d);
	arm_fast(d);
}

/* SIGHUP: a new config, all or nothing; an invalid one leaves the old in force. */
static void reload(struct daemon *d)
{
	struct dw_config cfg, was_ports = { 0 };
	char err[512];
	const char *path = dw_config_path(d->opts.config);

	if (dw_config_read(path, &cfg, err, sizeof(err))) {
		dw_err("reload rejected, the old config stays in force: %s", err);
		return;
	}
	if (strcmp(cfg.enforce_cgroup, d->deps.set.cfg.enforce_cgroup))
		dw_warn("reload: enforce_cgroup changed to '%s'; enforcement stays on %s until a restart",
			cfg.enforce_cgroup, d->bpf.cgroup[0] ? d->bpf.cgroup : "nothing");
	/* the old ports, kept to turn off what the new list drops once it is in force */
	memcpy(was_ports.dns_ports, d->deps.set.cfg.dns_ports, sizeof(was_ports.dns_ports));
	was_ports.ndns_ports = d->deps.set.cfg.ndns_ports;
	if (dw_deps_reload(&d->deps, &cfg, &d->coll)) {
		dw_err("reload of %s failed while applying it to the kernel", cfg.source);
		return;
	}
	if (dw_dns_ports_apply(&d->bpf, &was_ports, &d->deps.set.cfg))
		dw_err("reload: dns_ports not all applied; the kernel reads the ports it could turn on");
	if (dw_services_sync(&d->svcs, &d->deps.set.cfg))
		dw_err("out of memory: services dropped until the next reload");
	dw_abort_reload(&d->abort, &d->deps.set);
	dw_alert_set_facility(d->deps.set.cfg.syslog_facility);
	dw_notice("reloaded %s: %u dependencies", d->deps.set.cfg.source, d->deps.set.cfg.ndeps);
}

/* Returns 1 to stop. */
static int on_signal(struct daemon *d)
{
	struct signalfd_siginfo si;

	if (read(d->signal_fd, &si, sizeof(si)) != sizeof(si))
		return 0;
	if (si.ssi_signo == SIGHUP) {
		reload(d);
		return 0;
	}
	dw_notice("signal %d: detaching and exiting", si.ssi_signo);
	return 1;
}

static void loop(struct daemon *d)
{
	/* the TLS discovery is not here: it has a thread of its own (discovery/tls/tls.h) */
	struct pollfd pfds[5 + DW_CONTROL_CLIENTS] = {
		{ .fd = d->signal_fd, .events = POLLIN },
		{ .fd = d->timer_fd, .events = POLLIN },
		{ .fd = d->control_fd, .events = POLLIN },
		{ .fd = d->fast_fd, .events = POLLIN },
		{ .fd = dw_hblocks_fd(&d->hb), .events = POLLIN },	/* the ring a quarter full */
	};
	struct dw_client *polled[DW_CONTROL_CLIENTS];

	for (;;) {
		/* the timerfds wake the loop for the daemon's work, the timeout for the clients' deadlines */
		int timeout = dw_clients_expire(&d->clients, dw_monotonic_ns());
		int n = 0;

		for (int i = 0; i < DW_CONTROL_CLIENTS; i++) {
			struct dw_client *c = &d->clients.c[i];

			if (c->fd >= 0) {
				pfds[5 + n] = (struct pollfd){ .fd = c->fd, .events = dw_client_events(c) };
				polled[n++] = c;
			}
		}
		if (poll(pfds, 5 + n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			dw_err("poll: %s", strerror(errno));
			return;
		}
		if ((pfds[0].revents & POLLIN) && on_signal(d))
			return;
		if (pfds[1].revents & POLLIN)
			on_timer(d);
		else if (pfds[3].revents & POLLIN)
			on_fast(d);
		/* a burst of HTTP/2 answers: drained between polls, nothing lost to a full ring */
		if (pfds[4].revents & POLLIN)
			dw_hblocks_drain(&d->hb, &d->coll, &d->deps.set, false);
		for (int i = 0; i < n; i++)
			if (pfds[5 + i].revents)
				on_client(d, polled[i]);
		/* after the clients: it may take a slot one of them just left */
		if (pfds[2].revents & POLLIN)
			dw_control_accept(d->control_fd, &d->clients, dw_monotonic_ns());
	}
}

static int config_to_kernel(struct dw_bpf *b, void *arg)
{
	struct daemon *d = arg;

	int err = dw_dns_ports_apply(b, NULL, &d->deps.set.cfg);

	return err ? err : dw_deps_to_kernel(&d->deps);
}

/* Lease of the breakers map entries: two intervals and a half-second margin for a slow poll. */
static uint64_t lease_ns(const struct run_opts *o)
{
	return 2 * o->interval_ns + 500000000ULL;
}

static int open_events(struct daemon *d)
{
	FILE *events = NULL;

	if (d->opts.events && !strcmp(d->opts.events, "-"))
		events = stdout;
	else if (d->opts.events && !(events = fopen(d->opts.events, "ae"))) {
		dw_err("cannot open events file %s: %s", d->opts.events, strerror(errno));
		return -errno;
	}
	dw_alert_open(d->deps.set.cfg.syslog_facility, events);
	return 0;
}

/* Callers' names (issue 16): without a cgroup v2 mount they are shown as cgroup:<id>. */
static void open_cgroups(struct daemon *d)
{
	char root[4096];
	int err = dw_cgroup2_mount(NULL, root, sizeof(root));

	if (err) {
		dw_warn("callers are not named: no cgroup v2 mount (%s)", strerror(-err));
		return;
	}
	d->coll.cgroups = dw_cgroups_new(root, 0, 0);
	if (!d->coll.cgroups)
		dw_warn("callers are not named: cannot open %s: %s", root, strerror(errno));
}

static int start(struct daemon *d, struct dw_config *cfg)
{
	struct dw_bpf_opts bopts = { .pin_dir = d->opts.pin_dir, .max_dests = d->opts.max_dests,
				     .cgroup = cfg->enforce_cgroup,
				     .keep_pinned = d->opts.keep_pinned, .backend = d->opts.backend,
				     .max_conns = d->opts.max_conns, .without = d->opts.without,
				     .group = d->opts.group,
				     .before_attach = config_to_kernel, .arg = d };
	int adopted, err;

	err = dw_deps_init(&d->deps, cfg, lease_ns(&d->opts), &d->bpf);
	if (!err)
		err = dw_services_sync(&d->svcs, &d->deps.set.cfg);
	if (!err)
		err = open_events(d);
	if (!err)
		err = lock_run_dir(d);
	if (!err && d->opts.metrics)
		err = dw_metrics_start(d->opts.metrics);
	if (!err)
		err = dw_bpf_start(&d->bpf, &bopts);
	if (err)
		return err;
	dw_bpf_describe(&d->bpf, d->programs, sizeof(d->programs));
	dw_abort_init(&d->abort, &d->deps.set, &d->bpf, d->opts.interval_ns);
	err = dw_tls_start(&d->tls, &d->bpf, dw_bpf_object(&d->bpf));
	if (!err)
		err = dw_hblocks_start(&d->hb, dw_bpf_object(&d->bpf));
	if (err)
		return err;
	adopted = dw_bpf_classify_existing(&d->bpf);
	if (adopted < 0)
		dw_warn("cannot classify connections open before start: %s", strerror(-adopted));
	err = dw_collect_init(&d->coll, d->opts.window_ns / d->opts.interval_ns);
	if (!err)
		open_cgroups(d);
	if (!err)
		err = open_fds(d);
	if (err)
		return err;
	d->info = (struct dw_run_info){ .started_ns = dw_monotonic_ns(),
					 .interval_ns = d->opts.interval_ns,
					 .window_ns = d->opts.window_ns,
					 .max_dests = d->opts.max_dests,
					 .max_series = d->opts.max_series,
					 .max_conns = d->bpf.max_conns,
					 .backend = dw_backend_name(d->bpf.backend),
					 .programs = d->programs,
					 .control = &d->control,
					 .tls = &d->tls };
	poll_once(d);
	/*
	 * enforce = abort, abort_after: other network namespaces need setns, sock_diag's
	 * destroy CAP_NET_ADMIN (doc/enforcement.md)
	 */
	err = dw_drop_privileges(dw_abort_wants_netns(&d->abort, &d->deps.set),
				 dw_abort_wants_net_admin(&d->abort), d->bpf.tls_on);
	if (err) {
		dw_err("cannot drop capabilities: %s", strerror(-err));
		return err;
	}
	if (d->opts.metrics && (err = dw_metrics_serve()))
		return err;
	/* its thread inherits the capabilities left: those the discovery needs (tls_on above) */
	err = dw_tls_run(&d->tls);
	if (err)
		return err;
	/* one line for what --without took away, before the start line that tests wait for */
	if (d->bpf.without_line[0])
		dw_warn("running without %s", d->bpf.without_line);
	dw_notice("started (backend %s (%s), pid %d, pin dir %s, run dir %s, config %s: %u "
		  "dependencies); %s",
		  dw_backend_name(d->bpf.backend), d->bpf.backend_why, getpid(), d->opts.pin_dir,
		  d->opts.run_dir, d->deps.set.cfg.source, d->deps.set.cfg.ndeps, d->programs);
	return 0;
}

static void stop(struct daemon *d)
{
	dw_metrics_stop();
	dw_clients_close_all(&d->clients);
	dw_control_close(d->control_fd, d->opts.run_dir);
	if (d->signal_fd >= 0)
		close(d->signal_fd);
	if (d->timer_fd >= 0)
		close(d->timer_fd);
	if (d->fast_fd >= 0)
		close(d->fast_fd);
	dw_cgroups_free(d->coll.cgroups);
	d->coll.cgroups = NULL;
	dw_collect_free(&d->coll);
	dw_abort_free(&d->abort);
	dw_tls_stop(&d->tls);
	dw_hblocks_stop(&d->hb);
	dw_bpf_stop(&d->bpf);
	dw_services_free(&d->svcs);
	dw_deps_free(&d->deps);
	dw_alert_close();
	if (d->run_lock_fd >= 0)
		close(d->run_lock_fd);
}

int dw_cmd_run(int argc, char **argv)
{
	struct daemon d = { .run_lock_fd = -1, .control_fd = -1, .signal_fd = -1, .timer_fd = -1,
			   .fast_fd = -1 };
	struct dw_config cfg;
	sigset_t mask;
	char msg[512];
	int err;

	daemon_signals(&mask);
	err = parse_run_opts(argc, argv, &d.opts);
	if (err)
		return 2;
	if (geteuid() != 0) {
		dw_err("run needs root (CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN): try sudo");
		return 1;
	}
	if (dw_config_read(dw_config_path(d.opts.config), &cfg, msg, sizeof(msg))) {
		dw_err("%s", msg);
		return 1;
	}
	libbpf_set_print(libbpf_print);
	dw_clients_init(&d.clients);
	d.bpf.pin_dir_fd = -1;
	err = start(&d, &cfg);
	if (!err)
		loop(&d);
	stop(&d);
	return err ? 1 : 0;
}
