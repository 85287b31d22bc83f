// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>

#include "logic/judge/judge.h"
#include "logic/base/lowerbound.h"

/*
 * The inputs come unsorted and judging may not allocate, so slices are
 * visited a chunk at a time: each chunk is the next DW_JUDGE_CHUNK
 * distinct slice numbers in walk order, found in one pass over the inputs.
 * A judgement rarely needs more than one chunk (64 slices are 4.3 s).
 */
#define DW_JUDGE_CHUNK 64

/* One slice, as the judgement sees it. */
struct slice_sum {
	uint64_t key; /* position in walk order, see walk_key() */
	uint64_t slice;
	uint64_t done;	       /* fast + slow + failed */
	uint64_t slow, failed; /* completed slow; failed */
	uint64_t slow_now;     /* outstanding, older than slow_call */
	bool young;	       /* an outstanding call no older than slow_call: undecided */
};

struct walk {
	const struct dw_judge_input *in;
	bool newest_first;
	bool more; /* keys next..last may still hold slices */
	uint64_t next, last;
	struct slice_sum sum[DW_JUDGE_CHUNK]; /* ascending key */
	unsigned n;
};

/* Running totals of the calls taken, up to limit. */
struct tally {
	double limit, decided, slow, failed;
};

/* Walk order is ascending key; newest first walks the complement. */
static uint64_t walk_key(const struct walk *w, uint64_t slice)
{
	return w->newest_first ? ~slice : slice;
}

/* Slices first_slice, first_slice + 1, ... (or down from it, newest first). */
static void walk_init(struct walk *w, const struct dw_judge_input *in, bool newest_first,
		      uint64_t first_slice, uint64_t last_slice)
{
	w->in = in;
	w->newest_first = newest_first;
	w->next = walk_key(w, first_slice);
	w->last = walk_key(w, last_slice);
	w->more = w->next <= w->last;
	w->n = 0;
}

/* chunk_find(w->sum, w->n, key): the index of the first chunk entry whose key is >= key. */
DW_LOWER_BOUND(chunk_find, struct slice_sum, key, uint64_t)

/* The chunk entry of key, or NULL when key is not in this chunk. */
static struct slice_sum *chunk_get(struct walk *w, uint64_t key)
{
	unsigned pos = chunk_find(w->sum, w->n, key);

	if (pos == w->n || w->sum[pos].key != key)
		return NULL;
	return &w->sum[pos];
}

/* Keeps key if it is among the DW_JUDGE_CHUNK smallest seen in range. */
static void chunk_offer(struct walk *w, uint64_t key)
{
	unsigned pos;

	if (key < w->next || key > w->last)
		return;
	pos = chunk_find(w->sum, w->n, key);
	if (pos == DW_JUDGE_CHUNK || (pos < w->n && w->sum[pos].key == key))
		return;
	if (w->n == DW_JUDGE_CHUNK)
		w->n--;
	memmove(&w->sum[pos + 1], &w->sum[pos], (w->n - pos) * sizeof(w->sum[0]));
	memset(&w->sum[pos], 0, sizeof(w->sum[pos]));
	w->sum[pos].key = key;
	w->sum[pos].slice = w->newest_first ? ~key : key;
	w->n++;
}

static uint64_t pending_slice(const struct dw_judge_input *in, unsigned i)
{
	return in->pending_start_ns[i] >> DW_SLICE_SHIFT;
}

/* A start after now (clocks read apart) is age 0: young, never slow. */
static bool pending_slow_now(const struct dw_judge_input *in, unsigned i)
{
	uint64_t start = in->pending_start_ns[i];

	return in->now_ns > start && in->now_ns - start > in->s->slow_call_ns;
}

static void chunk_fill(struct walk *w)
{
	const struct dw_judge_input *in = w->in;
	const struct dw_slice_counts *c;
	struct slice_sum *sum;
	unsigned i;

	for (i = 0; i < in->nslices; i++) {
		c = &in->slices[i];
		sum = chunk_get(w, walk_key(w, c->slice));
		if (!sum)
			continue;
		sum->done += c->fast + c->slow + c->failed;
		sum->slow += c->slow;
		sum->failed += c->failed;
	}
	for (i = 0; i < in->npending; i++) {
		sum = chunk_get(w, walk_key(w, pending_slice(in, i)));
		if (!sum)
			continue;
		if (pending_slow_now(in, i))
			sum->slow_now++;
		else
			sum->young = true;
	}
}

/* The next chunk of slices in walk order; false when none are left. */
static bool walk_chunk(struct walk *w)
{
	const struct dw_judge_input *in = w->in;
	unsigned i;

	w->n = 0;
	if (!w->more)
		return false;
	/* a pending call may be all that is left of a slice whose slot was reused */
	for (i = 0; i < in->nslices; i++)
		chunk_offer(w, walk_key(w, in->slices[i].slice));
	for (i = 0; i < in->npending; i++)
		chunk_offer(w, walk_key(w, pending_slice(in, i)));
	chunk_fill(w);
	w->more = w->n == DW_JUDGE_CHUNK && w->sum[w->n - 1].key < w->last;
	if (w->more)
		w->next = w->sum[w->n - 1].key + 1;
	return w->n > 0;
}

/* Takes a decided slice, only the fraction of it that fits the limit. */
static void tally_take(struct tally *t, const struct slice_sum *s)
{
	double decided = (double)(s->done + s->slow_now);
	double slow = (double)(s->slow + s->slow_now);
	double room = t->limit - t->decided;

	if (decided <= 0 || room <= 0)
		return;
	if (decided > room) {
		/* the calls of a slice have no order: take an average part */
		slow = slow * room / decided;
		t->failed += (double)s->failed * room / decided;
		t->slow += slow;
		t->decided = t->limit;
		return;
	}
	t->decided += decided;
	t->slow += slow;
	t->failed += (double)s->failed;
}

/*
 * Takes the chunk's slices in walk order; false once no more are wanted.
 * Slices numbered `before` and later are passed over, the undecided ones
 * counted. An undecided slice before it ends the walk: probes are judged
 * in order.
 */
static bool tally_chunk(struct tally *t, const struct walk *w, uint64_t before, unsigned *undecided)
{
	const struct slice_sum *sum;
	unsigned i;

	for (i = 0; i < w->n; i++) {
		sum = &w->sum[i];
		if (sum->slice >= before) {
			*undecided += sum->young;
			continue;
		}
		if (t->decided >= t->limit || sum->young)
			return false;
		tally_take(t, sum);
	}
	return t->decided < t->limit;
}

/* The oldest slice the window still uses: the one holding now - window, or since_ns if later. */
static uint64_t window_first_slice(const struct dw_judge_input *in)
{
	uint64_t first = 0, since = in->since_ns >> DW_SLICE_SHIFT;

	if (in->now_ns > in->s->window_ns)
		first = (in->now_ns - in->s->window_ns) >> DW_SLICE_SHIFT;
	return since > first ? since : first;
}

/*
 * The oldest slice with a young outstanding call, or UINT64_MAX. Newer
 * slices may be decided, but using them would count their fast calls while
 * an older call may still turn slow: the sample would favour fast calls,
 * which are decided first. So the sample ends where the undecided begin;
 * a call older than the window is no part of the sample, and ends nothing.
 */
static uint64_t first_undecided_slice(const struct dw_judge_input *in)
{
	uint64_t first = UINT64_MAX, oldest = window_first_slice(in), slice;
	unsigned i;

	for (i = 0; i < in->npending; i++) {
		slice = pending_slice(in, i);
		if (slice >= oldest && slice < first && !pending_slow_now(in, i))
			first = slice;
	}
	return first;
}

/*
 * The oldest slice holding a call outstanding past slow_call in the window,
 * and how many such calls there are (0: none, *oldest untouched).
 */
static unsigned hanging_calls(const struct dw_judge_input *in, uint64_t *oldest)
{
	uint64_t first = window_first_slice(in), slice;
	unsigned n = 0;

	for (unsigned i = 0; i < in->npending; i++) {
		slice = pending_slice(in, i);
		if (slice < first || !pending_slow_now(in, i))
			continue;
		if (!n || slice < *oldest)
			*oldest = slice;
		n++;
	}
	return n;
}

/* Whether a call started in a slice after `oldest` has been answered or failed. */
static bool answered_after(const struct dw_judge_input *in, uint64_t oldest)
{
	const struct dw_slice_counts *c;

	for (unsigned i = 0; i < in->nslices; i++) {
		c = &in->slices[i];
		if (c->slice > oldest && c->fast + c->slow + c->failed > 0)
			return true;
	}
	return false;
}

/* The breaker's test (breaker.c): failures are checked before slow calls. */
static bool failing(const struct dw_judge_input *in, const struct dw_judgement *out)
{
	double limit = in->s->failure_rate;

	return out->enough && limit > 0 && out->failure_rate >= limit - 1e-9;
}

/*
 * Calls started in the slices just before `oldest`, as many slices as now
 * is past its start: what the callers asked in a span as long as the stall
 * has lasted.
 */
static uint64_t asked_before(const struct dw_judge_input *in, uint64_t oldest)
{
	uint64_t span = ((in->now_ns >> DW_SLICE_SHIFT) - oldest) + 1, sum = 0;
	const struct dw_slice_counts *c;

	for (unsigned i = 0; i < in->nslices; i++) {
		c = &in->slices[i];
		if (c->slice < oldest && c->slice + span >= oldest)
			sum += c->started;
	}
	return sum;
}

/*
 * Whether a call started in the last slow_call / 2 is outstanding: its
 * caller had an answer not long ago, or is not one of a pool's callers.
 */
static bool asked_lately(const struct dw_judge_input *in)
{
	uint64_t start;

	for (unsigned i = 0; i < in->npending; i++) {
		start = in->pending_start_ns[i];
		if (start >= in->now_ns || in->now_ns - start < in->s->slow_call_ns / 2)
			return true;
	}
	return false;
}

/* Stalled: judged by the hanging calls alone (judge.h). */
static void judge_stall(const struct dw_judge_input *in, struct dw_judgement *out)
{
	uint64_t oldest = 0;

	out->hanging = hanging_calls(in, &oldest);
	if (out->hanging < DW_STALL_MIN_CALLS || answered_after(in, oldest) || asked_lately(in))
		return;
	/* callers that asked little before would have asked little since: no evidence */
	if (asked_before(in, oldest) < in->s->min_calls)
		return;
	out->stalled = true;
	/* failing and then hanging: the failures say more */
	if (failing(in, out))
		return;
	out->decided = out->hanging < in->s->sample ? out->hanging : in->s->sample;
	out->slow = out->decided;
	out->failed = 0;
	out->slow_rate = 1;
	out->failure_rate = 0;
	out->enough = true;
}

void dw_judge(const struct dw_judge_input *in, struct dw_judgement *out)
{
	struct tally t = {.limit = in->s->sample};
	uint64_t before = first_undecided_slice(in);
	unsigned undecided = 0;
	struct walk w;

	memset(out, 0, sizeof(*out));
	/* from the top, so that every undecided slice in the window is counted */
	walk_init(&w, in, true, UINT64_MAX, window_first_slice(in));
	while (walk_chunk(&w) && tally_chunk(&t, &w, before, &undecided))
		;
	out->decided = t.decided;
	out->slow = t.slow;
	out->failed = t.failed;
	if (t.decided > 0) {
		out->slow_rate = t.slow / t.decided;
		out->failure_rate = t.failed / t.decided;
	}
	out->enough = t.decided >= in->s->min_calls;
	out->undecided_slices = undecided;
	judge_stall(in, out);
}

void dw_judge_probes(const struct dw_judge_input *in, uint64_t since_ns, unsigned limit,
		     struct dw_probe_result *out)
{
	struct tally t = {.limit = limit};
	unsigned undecided = 0;
	struct walk w;

	memset(out, 0, sizeof(*out));
	walk_init(&w, in, false, since_ns >> DW_SLICE_SHIFT, UINT64_MAX);
	while (walk_chunk(&w) && tally_chunk(&t, &w, UINT64_MAX, &undecided))
		;
	out->decided = t.decided;
	out->bad = t.slow + t.failed;
	out->done = out->decided >= limit || out->bad > 0;
}

uint64_t dw_judge_next_slow(const uint64_t *pending_start_ns, unsigned npending, uint64_t slow_call_ns,
			    uint64_t now_ns)
{
	uint64_t first = 0;

	if (!slow_call_ns)
		return 0;
	for (unsigned i = 0; i < npending; i++) {
		uint64_t t = pending_start_ns[i] + slow_call_ns + 1;

		if (t > now_ns && (!first || t < first))
			first = t;
	}
	return first;
}
