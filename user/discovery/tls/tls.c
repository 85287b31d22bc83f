// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The TLS discovery's life in the daemon (tls.h): start, its thread (the
 * exec ring and its rescans, the periodic full scan), stop; and what status
 * and /metrics say of it, as the thread's snapshots. The maps are read by
 * scan.c, the pure part is logic/discovery/tlsfind.c.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/sysmacros.h>
#include <bpf/libbpf.h>
#include "kernel/bpfstate.h"
#include "depwatch.h"
#include "host/clock.h"
#include "host/log.h"
#include "discovery/tls/tls.h"

/*
 * When an exec'd process's maps are read again, in ms after the exec: at
 * once (a program that links OpenSSL in), then while the loader and the
 * program's first imports map libraries (libssl: a few ms after the exec,
 * Python's ssl module when it is imported). The first second is the
 * issue's promise, so no gap in it is longer than 200 ms; the later ones
 * catch slow starts. Each is one maps file read (bench/RESULTS.md).
 */
static const unsigned rescan_after_ms[] = { 0, 10, 50, 100, 200, 350, 500, 700, 900, 2000, 5000 };
#define NSTEPS (sizeof(rescan_after_ms) / sizeof(rescan_after_ms[0]))
#define PRUNE_NS (5ULL * 1000000000ULL)

static const struct dw_tls *current;

static void publish(struct dw_tls *t);
/* The thread's wake-ups: the ms until a rescan is due (-1: none). */
static int timeout_ms(const struct dw_tls *t, uint64_t now_ns);
/* The ring readable: queue its execs. Then, and at every wake-up: the rescans that are due. */
static void on_ready(struct dw_tls *t, uint64_t now_ns);
static void tick(struct dw_tls *t, uint64_t now_ns);

const struct dw_tls *dw_tls_current(void)
{
	return current;
}

static void enqueue(struct dw_tls *t, uint32_t pid, uint64_t now_ns)
{
	for (unsigned i = 0; i < t->nq; i++)
		if (t->q[i].pid == pid) {
			/* exec'd again: start its schedule over */
			t->q[i].step = 0;
			t->q[i].due_ns = now_ns;
			return;
		}
	if (t->nq == DW_TLS_QUEUE_MAX) {
		t->queue_full++;
		return;
	}
	t->q[t->nq++] = (struct dw_tls_rescan){ .pid = pid, .step = 0, .due_ns = now_ns };
}

struct ring_ctx {
	struct dw_tls *t;
	uint64_t now_ns;
};

static int on_exec(void *arg, void *data, size_t size)
{
	struct ring_ctx *c = arg;
	const struct dw_tls_exec *e = data;

	if (size < sizeof(*e))
		return 0;
	c->t->execs++;
	if ((pid_t)e->pid != c->t->self)
		enqueue(c->t, e->pid, c->now_ns);
	return 0;
}

static struct ring_ctx ring_ctx;

/* The exec records in the ring, each queued for its rescans from now_ns. */
static void read_ring(struct dw_tls *t, uint64_t now_ns)
{
	if (!t->ring)
		return;
	ring_ctx.now_ns = now_ns;
	ring_buffer__consume(t->ring);
}

int dw_tls_start(struct dw_tls *t, struct dw_bpf *b, struct bpf_object *obj)
{
	struct bpf_map *ring;

	memset(t, 0, sizeof(*t));
	t->stop_fd = -1;
	pthread_mutex_init(&t->snap_lock, NULL);
	t->snap_init = true;
	current = t;
	t->self = getpid();
	dw_tls_self_exe(t);
	t->on = b->tls_on;
	snprintf(t->why, sizeof(t->why), "%s", b->tls_why);
	if (!t->on) {
		publish(t);
		return 0;
	}
	t->obj = obj;
	t->files = calloc(1, sizeof(*t->files));
	t->procs = calloc(1, sizeof(*t->procs));
	if (!t->files || !t->procs) {
		dw_err("tls: out of memory for the discovery's tables");
		return -ENOMEM;
	}
	ring = bpf_object__find_map_by_name(obj, "tls_execs");
	ring_ctx.t = t;
	t->ring = ring ? ring_buffer__new(bpf_map__fd(ring), on_exec, &ring_ctx, NULL) : NULL;
	if (!t->ring)
		dw_warn("tls: cannot read the exec ring (%s): processes started from now on are not traced",
			strerror(errno));
	dw_tls_scan_all(t);
	dw_tls_scan_system(t);
	{
		struct dw_tls_counts c;

		dw_tls_count(t->files, t->procs, &c);
		dw_notice("tls: %u files with uprobes, %u processes traced, %u opaque; the scan of %u processes took %.1f ms",
			  c.files_attached, c.traced, c.opaque, t->last_full_procs, t->last_full_ms);
	}
	publish(t);
	return 0;
}

/* The thread's longest sleep: the snapshot's exec_lost (the loop's) is at most this old. */
#define WAKE_MAX_MS 1000
/*
 * The snapshots are rendered (every file and process walked, three times)
 * at most once per PUBLISH_MIN_NS: an exec storm wakes the thread for every
 * batch of the ring and every rescan step (0, 10, 50 ms ... after each
 * exec). The first wake-up after a quiet spell publishes at once; one that
 * comes sooner leaves it due, and the thread wakes for it at the latest
 * PUBLISH_MIN_NS after the last, so status is never staler than that.
 */
#define PUBLISH_MIN_NS (50ULL * 1000000ULL)

static void publish_throttled(struct dw_tls *t, uint64_t now_ns)
{
	if (now_ns - t->published_ns < PUBLISH_MIN_NS) {
		t->publish_due = true;
		return;
	}
	publish(t);
	t->published_ns = now_ns;
	t->publish_due = false;
}

/* poll's timeout: the rescans' (timeout_ms), a due publish's, and WAKE_MAX_MS at most */
static int wake_ms(const struct dw_tls *t, uint64_t now_ns)
{
	int timeout = timeout_ms(t, now_ns);

	if (timeout < 0 || timeout > WAKE_MAX_MS)
		timeout = WAKE_MAX_MS;
	if (t->publish_due) {
		uint64_t at = t->published_ns + PUBLISH_MIN_NS;
		int due = at <= now_ns ? 0 : (int)((at - now_ns + 999999) / 1000000);

		if (due < timeout)
			timeout = due;
	}
	return timeout;
}

static void *discovery_thread(void *arg)
{
	struct dw_tls *t = arg;

	for (;;) {
		struct pollfd pfds[2] = {
			{ .fd = t->stop_fd, .events = POLLIN },
			{ .fd = t->ring ? ring_buffer__epoll_fd(t->ring) : -1, .events = POLLIN },
		};
		int timeout = wake_ms(t, dw_monotonic_ns());

		if (poll(pfds, 2, timeout) < 0 && errno != EINTR) {
			dw_err("tls: the discovery's poll failed, no process is scanned from now on: %s",
			       strerror(errno));
			return NULL;
		}
		if (pfds[0].revents & POLLIN)
			return NULL;
		if (pfds[1].revents & POLLIN)
			on_ready(t, dw_monotonic_ns());
		else
			tick(t, dw_monotonic_ns());
		publish_throttled(t, dw_monotonic_ns());
	}
}

int dw_tls_run(struct dw_tls *t)
{
	int err;

	if (!t->on)
		return 0;
	t->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (t->stop_fd < 0) {
		dw_err("tls: cannot start the discovery's thread: eventfd: %s", strerror(errno));
		return -errno;
	}
	err = pthread_create(&t->thread, NULL, discovery_thread, t);
	if (err) {
		dw_err("tls: cannot start the discovery's thread: %s", strerror(err));
		return -err;
	}
	t->running = true;
	return 0;
}

void dw_tls_set_exec_lost(struct dw_tls *t, uint64_t lost)
{
	__atomic_store_n(&t->exec_lost, lost, __ATOMIC_RELAXED);
}

/*
 * Closing a uprobe's link waits for the kernel's unregistration (about
 * 29 ms a link on 6.18, more under load): a daemon that had 37 Go binaries
 * in sight (660 links) took 51 s to exit from one thread. From 16 at once
 * it took 35 s: the kernel serialises most of the wait (a global lock), so
 * more threads would not help; fewer links would (doc/tls.md).
 */
#define DETACH_THREADS 16

struct detach_work {
	struct dw_tls *t;
	unsigned next;		/* the next att[] to detach (atomic) */
};

static void *detach_some(void *arg)
{
	struct detach_work *w = arg;
	unsigned i;

	while ((i = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED)) < w->t->natt)
		dw_tls_detach_file(&w->t->att[i].links);
	return NULL;
}

static void detach_all(struct dw_tls *t)
{
	struct detach_work w = { .t = t };
	pthread_t th[DETACH_THREADS];
	unsigned n = 0;

	while (n < DETACH_THREADS && n + 1 < t->natt && !pthread_create(&th[n], NULL, detach_some, &w))
		n++;
	detach_some(&w);	/* this thread too, and alone if none could start */
	for (unsigned i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	t->natt = 0;
}

void dw_tls_stop(struct dw_tls *t)
{
	/* a daemon whose start failed before the discovery's: nothing to stop (stop_fd is 0 there) */
	if (!t->snap_init)
		return;
	if (t->running) {
		uint64_t one = 1;

		if (write(t->stop_fd, &one, sizeof(one)) != sizeof(one))
			dw_err("tls: cannot stop the discovery's thread: %s", strerror(errno));
		else
			pthread_join(t->thread, NULL);
		t->running = false;
	}
	if (t->stop_fd >= 0)
		close(t->stop_fd);
	t->stop_fd = -1;
	detach_all(t);
	ring_buffer__free(t->ring);
	t->ring = NULL;
	free(t->files);
	free(t->procs);
	t->files = NULL;
	t->procs = NULL;
	t->on = false;
	current = NULL;
	dw_buf_free(&t->snap_json);
	dw_buf_free(&t->snap_text);
	dw_buf_free(&t->snap_metrics);
	pthread_mutex_destroy(&t->snap_lock);
	t->snap_init = false;
}

static int timeout_ms(const struct dw_tls *t, uint64_t now_ns)
{
	uint64_t next = UINT64_MAX;

	if (!t->on)
		return -1;
	for (unsigned i = 0; i < t->nq; i++)
		if (t->q[i].due_ns < next)
			next = t->q[i].due_ns;
	if (t->next_prune_ns < next)
		next = t->next_prune_ns;
	if (next <= now_ns)
		return 0;
	next = (next - now_ns + 999999) / 1000000;
	return next > 60000 ? 60000 : (int)next;
}

static void on_ready(struct dw_tls *t, uint64_t now_ns)
{
	if (!t->ring)
		return;
	read_ring(t, now_ns);
	tick(t, now_ns);
}

static bool alive(uint32_t pid, uint64_t start, void *arg)
{
	char p[64];

	(void)start;
	(void)arg;
	snprintf(p, sizeof(p), "/proc/%u", pid);
	return !access(p, F_OK);
}

/* The rescans due by now_ns: each reads a process's maps again (a new process's first, at once). */
static void rescan_due(struct dw_tls *t, uint64_t now_ns)
{
	for (unsigned i = 0; i < t->nq;) {
		struct dw_tls_rescan *r = &t->q[i];

		if (r->due_ns > now_ns) {
			i++;
			continue;
		}
		dw_tls_scan_pid(t, r->pid);
		if (++r->step < (int)NSTEPS && alive(r->pid, 0, NULL)) {
			r->due_ns = now_ns + (rescan_after_ms[r->step] - rescan_after_ms[r->step - 1]) * 1000000ULL;
			i++;
		} else {
			*r = t->q[--t->nq];
		}
	}
}

static void tick(struct dw_tls *t, uint64_t now_ns)
{
	if (!t->on)
		return;
	rescan_due(t, now_ns);
	if (now_ns >= t->next_prune_ns) {
		dw_tls_procs_prune(t->procs, alive, NULL);
		t->next_prune_ns = now_ns + PRUNE_NS;
	}
	if (!t->next_full_ns)
		t->next_full_ns = now_ns + DW_TLS_RESCAN_FULL_NS;
	else if (now_ns >= t->next_full_ns) {
		uint64_t after;

		dw_tls_scan_all(t);
		/*
		 * The processes exec'd while it ran are in the ring, unread: their
		 * first look before the detach, or a file only they map would come
		 * off and go back on (half a second of links for a Go binary).
		 */
		after = dw_monotonic_ns();
		read_ring(t, after);
		rescan_due(t, after);
		dw_tls_detach_unmapped(t);
		t->next_full_ns = now_ns + DW_TLS_RESCAN_FULL_NS;
	}
}

const char *dw_tls_why(const struct dw_tls *t)
{
	return t->on ? "" : t->why;
}

/* Rows listed in status, at most: the counts cover them all. */
#define LIST_MAX 64

static uint64_t exec_lost(const struct dw_tls *t)
{
	return __atomic_load_n(&t->exec_lost, __ATOMIC_RELAXED);
}

static uint64_t escaped(const struct dw_tls *t)
{
	return exec_lost(t) + t->queue_full + t->unreadable;
}

static void render_json(struct dw_buf *out, const struct dw_tls *t)
{
	struct dw_tls_counts c;
	unsigned listed = 0;

	dw_buf_printf(out, ",\"tls\":{\"on\":%s,\"why\":", t->on ? "true" : "false");
	if (t->on) {
		dw_buf_printf(out, "null");
	} else {
		dw_json_str(out, t->why);
		dw_buf_printf(out, "}");
		return;
	}
	dw_tls_count(t->files, t->procs, &c);
	dw_buf_printf(out, ",\"files_attached\":%u,\"files_failed\":%u,\"files_detached\":%llu,\"processes\":%u,"
		      "\"opaque_processes\":%u", c.files_attached, c.files_failed, (unsigned long long)t->detached,
		      c.traced, c.opaque);
	dw_buf_printf(out, ",\"files\":[");
	for (size_t i = 0; i < DW_TLS_FILES_MAX && listed < LIST_MAX; i++) {
		const struct dw_tls_file *f = &t->files->e[i];

		if (!f->ino || (f->state != DW_TLS_FILE_ATTACHED && f->state != DW_TLS_FILE_FAILED))
			continue;
		dw_buf_printf(out, "%s{\"path\":", listed++ ? "," : "");
		dw_json_str(out, f->path);
		dw_buf_printf(out, ",\"dev\":\"%u:%u\",\"inode\":%llu,\"kind\":\"%s\",\"attached\":%s,\"probes\":%u,\"processes\":%u,\"why\":",
			      major(f->dev), minor(f->dev), (unsigned long long)f->ino, dw_tls_kind_name(f->kind),
			      f->state == DW_TLS_FILE_ATTACHED ? "true" : "false", f->probes,
			      dw_tls_file_procs(t->procs, (int)i));
		if (f->state == DW_TLS_FILE_FAILED)
			dw_json_str(out, f->why);
		else
			dw_buf_printf(out, "null");
		dw_buf_printf(out, "}");
	}
	dw_buf_printf(out, "],\"opaque\":[");
	listed = 0;
	for (size_t i = 0; i < DW_TLS_PROCS_MAX && listed < LIST_MAX; i++) {
		const struct dw_tls_proc *p = &t->procs->p[i];

		if (!p->pid || p->verdict != DW_TLS_OPAQUE)
			continue;
		dw_buf_printf(out, "%s{\"pid\":%u,\"comm\":", listed++ ? "," : "", p->pid);
		dw_json_strn(out, p->comm, sizeof(p->comm));
		dw_buf_printf(out, ",\"kind\":\"%s\",\"reason\":",
			      p->bounded ? "bounded" : p->failed ? "attach_failed" : dw_tls_kind_name(p->kind));
		dw_json_str(out, dw_tls_proc_why(p));
		dw_buf_printf(out, "}");
	}
	dw_buf_printf(out, "],\"opaque_by_kind\":{");
	listed = 0;
	for (int k = 0; k < DW_TLS_KIND_NKINDS; k++)
		if (dw_tls_kind_why(k))
			dw_buf_printf(out, "%s\"%s\":%u", listed++ ? "," : "", dw_tls_kind_name(k), c.opaque_by_kind[k]);
	dw_buf_printf(out, ",\"attach_failed\":%u,\"bounded\":%u}", c.opaque_failed, c.opaque_bounded);
	dw_buf_printf(out, ",\"bounded\":{\"files_max\":%u,\"files_full\":%llu,\"processes_max\":%u,\"processes_full\":%llu}",
		      DW_TLS_FILES_MAX / 4 * 3, (unsigned long long)t->files->full, DW_TLS_PROCS_MAX,
		      (unsigned long long)t->procs->full);
	dw_buf_printf(out, ",\"escaped\":%llu,\"escaped_by\":{\"exec_lost\":%llu,\"queue_full\":%llu,\"unreadable\":%llu}",
		      (unsigned long long)escaped(t), (unsigned long long)exec_lost(t),
		      (unsigned long long)t->queue_full, (unsigned long long)t->unreadable);
	dw_buf_printf(out, ",\"execs\":%llu,\"scans\":%llu,\"full_scans\":%llu,\"last_full_scan_ms\":",
		      (unsigned long long)t->execs, (unsigned long long)t->scans, (unsigned long long)t->full_scans);
	dw_json_num(out, t->last_full_ms, 1);
	dw_buf_printf(out, ",\"last_full_scan_processes\":%u}", t->last_full_procs);
}

static void render_text(struct dw_buf *out, const struct dw_tls *t)
{
	struct dw_tls_counts c;

	if (!t->on) {
		dw_buf_printf(out, "tls: off (%s)\n", t->why);
		return;
	}
	dw_tls_count(t->files, t->procs, &c);
	dw_buf_printf(out, "tls: %u files with uprobes, %u processes traced, %u opaque", c.files_attached,
		      c.traced, c.opaque);
	for (int k = 0; k < DW_TLS_KIND_NKINDS; k++)
		if (c.opaque_by_kind[k])
			dw_buf_printf(out, ", %s %u", dw_tls_kind_name(k), c.opaque_by_kind[k]);
	if (c.opaque_failed)
		dw_buf_printf(out, ", attach failed %u", c.opaque_failed);
	if (escaped(t))
		dw_buf_printf(out, "; %llu escaped", (unsigned long long)escaped(t));
	dw_buf_printf(out, "\n");
}

static void render_metrics(struct dw_buf *o, const struct dw_tls *t)
{
	struct dw_tls_counts c = { 0 };

	if (t->on)
		dw_tls_count(t->files, t->procs, &c);
	dw_buf_printf(o, "# HELP depwatch_tls_files_attached ELF files with the TLS uprobes attached.\n"
		      "# TYPE depwatch_tls_files_attached gauge\ndepwatch_tls_files_attached %u\n", c.files_attached);
	dw_buf_printf(o, "# HELP depwatch_tls_processes Processes with TLS by whether depwatch traces it (traced) or not (opaque).\n"
		      "# TYPE depwatch_tls_processes gauge\n"
		      "depwatch_tls_processes{state=\"traced\"} %u\ndepwatch_tls_processes{state=\"opaque\"} %u\n",
		      c.traced, c.opaque);
	dw_buf_printf(o, "# HELP depwatch_tls_escaped_total Processes the TLS discovery could not look at (lost execs, a full queue, unreadable maps).\n"
		      "# TYPE depwatch_tls_escaped_total counter\ndepwatch_tls_escaped_total %llu\n",
		      (unsigned long long)escaped(t));
}

static void swap(struct dw_buf *a, struct dw_buf *b)
{
	struct dw_buf x = *a;

	*a = *b;
	*b = x;
}

/* The thread's figures as status and /metrics show them: rendered here, swapped in under the lock. */
static void publish(struct dw_tls *t)
{
	struct dw_buf json = { 0 }, text = { 0 }, metrics = { 0 };

	render_json(&json, t);
	render_text(&text, t);
	render_metrics(&metrics, t);
	pthread_mutex_lock(&t->snap_lock);
	swap(&t->snap_json, &json);
	swap(&t->snap_text, &text);
	swap(&t->snap_metrics, &metrics);
	pthread_mutex_unlock(&t->snap_lock);
	dw_buf_free(&json);
	dw_buf_free(&text);
	dw_buf_free(&metrics);
}

static void copy_snapshot(struct dw_buf *out, const struct dw_tls *t, const struct dw_buf *snap)
{
	pthread_mutex_t *lock = (pthread_mutex_t *)&t->snap_lock;

	if (!t->snap_init)
		return;
	pthread_mutex_lock(lock);
	dw_buf_write(out, snap->data, snap->len);
	pthread_mutex_unlock(lock);
}

void dw_tls_json(struct dw_buf *out, const struct dw_tls *t)
{
	if (t)
		copy_snapshot(out, t, &t->snap_json);
}

void dw_tls_text(struct dw_buf *out, const struct dw_tls *t)
{
	if (t)
		copy_snapshot(out, t, &t->snap_text);
}

void dw_tls_metrics(struct dw_buf *o)
{
	if (current)
		copy_snapshot(o, current, &current->snap_metrics);
}
