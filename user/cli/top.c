// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * depwatch top: asks the daemon once a second and draws with curses, or
 * prints one plain frame when stdout is not a terminal. What it draws is
 * worked out in logic/view/topview.c and topview_layout.c (pure, unit-tested).
 */
#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "host/clock.h"
#include "control/control.h"
#include "logic/view/control_wire.h"
#include "logic/base/parse.h"
#include "logic/view/topview_layout.h"
#include "cli/top.h"

/* ---- asking the daemon ---- */

/*
 * One answer, parsed and sorted. On failure err says why, unless
 * dw_control_request already did on stderr (then err is empty).
 */
static int fetch(const char *run_dir, struct dw_top_frame *f, char *err, size_t errlen)
{
	struct dw_buf ans = {};
	int ret = dw_control_request(run_dir, dw_verbs[DW_VERB_TOP_TSV].words, &ans);

	err[0] = 0;
	memset(f, 0, sizeof(*f));
	if (ret) {
		dw_buf_free(&ans);
		return ret;
	}
	ret = dw_top_parse(ans.data, ans.len, f);
	if (ret == -EPROTO) {
		char first[81];

		/* the daemon's own words, cleaned: it may be an older one without "top tsv" */
		dw_top_clean(first, sizeof(first), ans.data ? ans.data : "",
			     ans.data ? strcspn(ans.data, "\n") : 0);
		snprintf(err, errlen, "the daemon's answer is not a top table: %s",
			 first[0] ? first : "(empty)");
	} else if (ret) {
		snprintf(err, errlen, "%s", strerror(-ret));
	}
	dw_buf_free(&ans);
	if (!ret)
		dw_top_sort(f);
	return ret;
}

/* ---- one plain frame, for pipes ---- */

static void put_line(struct dw_buf *out, struct dw_buf *line)
{
	size_t n = line->len;

	while (n && line->data[n - 1] == ' ')
		n--;
	dw_buf_write(out, line->data, n);
	dw_buf_putc(out, '\n');
	line->len = 0;
}

static void plain_frame(const struct dw_top_frame *f, const struct tm *when, struct dw_buf *out)
{
	struct dw_top_layout lay;
	struct dw_buf line = {};

	dw_top_layout(f, DW_TOP_PLAIN_WIDTH, &lay);
	dw_top_header(f, when, &line);
	put_line(out, &line);
	for (size_t i = 0; i < f->nnotes; i++) {
		dw_buf_printf(&line, "%s", f->notes[i]);
		put_line(out, &line);
	}
	dw_top_titles(&lay, &line);
	put_line(out, &line);
	for (size_t i = 0; i < f->n; i++) {
		dw_top_row_text(&lay, &f->rows[i], &line);
		put_line(out, &line);
	}
	if (f->burst) {
		dw_buf_printf(&line, "%s", DW_TOP_BURST_LEGEND);
		put_line(out, &line);
	}
	if (f->desync) {
		dw_buf_printf(&line, "%s", DW_TOP_DESYNC_LEGEND);
		put_line(out, &line);
	}
	dw_buf_free(&line);
}

static int top_plain(const char *run_dir)
{
	struct dw_top_frame f;
	struct dw_buf out = {};
	char err[160];
	time_t now = time(NULL);
	int ret = 0;

	if (fetch(run_dir, &f, err, sizeof(err))) {
		if (err[0])
			fprintf(stderr, "depwatch: %s\n", err);
		return 1;
	}
	plain_frame(&f, localtime(&now), &out);
	if (out.oom || fwrite(out.data, 1, out.len, stdout) != out.len || fflush(stdout)) {
		fprintf(stderr, "depwatch: top: cannot write the frame\n");
		ret = 1;
	}
	dw_buf_free(&out);
	dw_top_frame_free(&f);
	return ret;
}

/* ---- the live view ---- */

enum { PAIR_OPEN = 1, PAIR_HALF_OPEN };

struct live {
	const char *run_dir;
	uint64_t interval_ns;
	struct dw_top_frame cur;
	uint64_t cur_ns;	/* when cur was asked for */
	time_t cur_time;
	char err[160];		/* why the last refresh failed; cur is then older */
	bool color;
	bool callers;		/* 'c': each dependency's top callers under its row */
};

static volatile sig_atomic_t quit;

static void on_quit_signal(int sig)
{
	(void)sig;
	quit = 1;
}

/* No SA_RESTART: the signal should cut the wait for a key short. */
static void catch_quit_signals(void)
{
	struct sigaction sa = { .sa_handler = on_quit_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* https://no-color.org: set and not empty means no colour. */
static bool color_wanted(void)
{
	const char *no = getenv("NO_COLOR");

	return !(no && *no) && has_colors();
}

static void start_colors(struct live *t)
{
	t->color = color_wanted();
	if (!t->color)
		return;
	start_color();
	use_default_colors();
	init_pair(PAIR_OPEN, COLOR_RED, -1);
	init_pair(PAIR_HALF_OPEN, COLOR_YELLOW, -1);
}

/* A failed refresh keeps the last table on screen and says so in the header. */
static void refresh_frame(struct live *t)
{
	struct dw_top_frame next;
	uint64_t now = dw_monotonic_ns();
	int ret = fetch(t->run_dir, &next, t->err, sizeof(t->err));

	if (ret) {
		if (t->err[0])
			return;
		/* dw_control_read_answer's errors: the answer came, but not whole */
		if (ret == -EPIPE)
			snprintf(t->err, sizeof(t->err), "the daemon's answer was cut");
		else if (ret == -EPROTO || ret == -EMSGSIZE)
			snprintf(t->err, sizeof(t->err), "the daemon's answer has no valid length line");
		else
			snprintf(t->err, sizeof(t->err), "cannot reach the daemon: %s",
				 strerror(-ret));
		return;
	}
	dw_top_rates(&next, &t->cur, (now - t->cur_ns) / 1e9);
	dw_top_frame_free(&t->cur);
	t->cur = next;
	t->cur_ns = now;
	t->cur_time = time(NULL);
}

static void draw_header(const struct live *t, int w)
{
	struct dw_buf line = {};

	dw_top_header(&t->cur, localtime(&t->cur_time), &line);
	if (t->err[0])
		dw_buf_printf(&line, "  [%s]", t->err);
	else
		dw_buf_printf(&line, "  (q quits, c %s callers)", t->callers ? "hides" : "shows");
	attron(A_BOLD);
	if (line.data)
		mvaddnstr(0, 0, line.data, w);
	attroff(A_BOLD);
	dw_buf_free(&line);
}

static void draw_titles(const struct dw_top_layout *lay, int y, int w)
{
	struct dw_buf line = {};

	dw_top_titles(lay, &line);
	while (!line.oom && (int)line.len < w)
		dw_buf_putc(&line, ' ');
	attron(A_REVERSE);
	if (line.data)
		mvaddnstr(y, 0, line.data, w);
	attroff(A_REVERSE);
	dw_buf_free(&line);
}

static void draw_row(const struct live *t, const struct dw_top_layout *lay,
		     const struct dw_top_row *r, int y, int w)
{
	struct dw_buf line = {};
	int pair = r->state == DW_TOP_OPEN ? PAIR_OPEN :
		   r->state == DW_TOP_HALF_OPEN ? PAIR_HALF_OPEN : 0;

	dw_top_row_text(lay, r, &line);
	if (t->color && pair)
		attron(COLOR_PAIR(pair));
	if (line.data)
		mvaddnstr(y, 0, line.data, w);
	if (t->color && pair)
		attroff(COLOR_PAIR(pair));
	dw_buf_free(&line);
}

/* Under a row, with 'c': its callers, as many as fit above the last line; returns the lines drawn. */
static int draw_callers(const struct live *t, const struct dw_top_row *r, int y, int h, int w)
{
	int drawn = 0;

	for (size_t k = 0; t->callers && k < r->ncallers && y + drawn < h - 1; k++, drawn++) {
		struct dw_buf line = {};

		dw_top_caller_text(&t->cur.callers[r->caller_first + k], &line);
		if (line.data)
			mvaddnstr(y + drawn, 0, line.data, w);
		dw_buf_free(&line);
	}
	return drawn;
}

static void draw(const struct live *t)
{
	struct dw_top_layout lay;
	int h, w, y = 1;
	size_t i;

	getmaxyx(stdscr, h, w);
	erase();
	dw_top_layout(&t->cur, w, &lay);
	draw_header(t, w);
	/* services first: the cascade is the headline, and rows below can scroll off */
	for (i = 0; i < t->cur.nnotes && y < h - 1; i++, y++)
		mvaddnstr(y, 0, t->cur.notes[i], w);
	if (y < h)
		draw_titles(&lay, y++, w);
	for (i = 0; i < t->cur.n && y < h; i++, y++) {
		/* the last line says how many more there are rather than show one of them */
		if (y == h - 1 && i + 1 < t->cur.n) {
			mvprintw(y, 0, "... %zu more", t->cur.n - i);
			break;
		}
		draw_row(t, &lay, &t->cur.rows[i], y, w);
		y += draw_callers(t, &t->cur.rows[i], y + 1, h, w);
	}
	if (t->cur.burst && i == t->cur.n && y < h)
		mvaddnstr(y++, 0, DW_TOP_BURST_LEGEND, w);
	if (t->cur.desync && i == t->cur.n && y < h)
		mvaddnstr(y, 0, DW_TOP_DESYNC_LEGEND, w);
	refresh();
}

/* Milliseconds until the next refresh is due, for the key wait. */
static int wait_ms(uint64_t due)
{
	uint64_t now = dw_monotonic_ns();

	if (now >= due)
		return 0;
	return (due - now) / 1000000 + 1;
}

static void run_loop(struct live *t)
{
	uint64_t due = t->cur_ns + t->interval_ns;

	draw(t);
	while (!quit) {
		int ch;

		timeout(wait_ms(due));
		ch = getch();
		if (quit || ch == 'q' || ch == 'Q')
			return;
		if (ch == KEY_RESIZE)
			draw(t);
		if (ch == 'c' || ch == 'C') {
			t->callers = !t->callers;
			draw(t);
		}
		if (dw_monotonic_ns() < due)
			continue;
		refresh_frame(t);
		draw(t);
		due += t->interval_ns;
		if (due < dw_monotonic_ns())	/* we fell behind (suspended): no catching up */
			due = dw_monotonic_ns() + t->interval_ns;
	}
}

/*
 * stderr goes to /dev/null while curses owns the screen: a failed refresh
 * would otherwise print over the table (dw_control_request says why on
 * stderr); the header says it instead.
 */
static int mute_stderr(void)
{
	int saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (saved >= 0 && null >= 0)
		dup2(null, STDERR_FILENO);
	if (null >= 0)
		close(null);
	return saved;
}

static void unmute_stderr(int saved)
{
	if (saved < 0)
		return;
	dup2(saved, STDERR_FILENO);
	close(saved);
}

static int top_live(struct live *t)
{
	SCREEN *scr;
	int saved;

	/* the first answer before curses starts, so a missing daemon is a plain error */
	t->cur_ns = dw_monotonic_ns();
	t->cur_time = time(NULL);
	if (fetch(t->run_dir, &t->cur, t->err, sizeof(t->err))) {
		if (t->err[0])
			fprintf(stderr, "depwatch: %s\n", t->err);
		return 1;
	}
	catch_quit_signals();
	scr = newterm(NULL, stdout, stdin);
	if (!scr) {
		fprintf(stderr, "depwatch: top: cannot use terminal '%s'\n",
			getenv("TERM") ? getenv("TERM") : "(TERM unset)");
		dw_top_frame_free(&t->cur);
		return 1;
	}
	saved = mute_stderr();
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	start_colors(t);
	run_loop(t);
	endwin();
	delscreen(scr);
	unmute_stderr(saved);
	dw_top_frame_free(&t->cur);
	return 0;
}

/* ---- what client.c calls ---- */

int dw_top_show(const char *run_dir, uint64_t interval_ns)
{
	struct live t = { .run_dir = run_dir, .interval_ns = interval_ns };

	/* without a terminal to read keys from, curses would spin on end-of-file */
	if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO))
		return top_plain(t.run_dir);
	return top_live(&t);
}
