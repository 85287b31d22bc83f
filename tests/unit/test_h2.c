// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The HTTP/2 frame walker (bpf/h2/h2.h), built on the host from the header the
 * BPF object is built from: byte sequences as real clients and servers send
 * them, split at every offset, byte by byte and at random; a preface split
 * across sends; frames far larger than any one read; what desyncs it; and
 * what each frame means for calls (a response's :status among them).
 */
#include "dwtest.h"

#include <stdlib.h>
#include <string.h>

#include "h2/h2.h"

#define MAX_FRAMES 64

struct walked {
	int n;
	struct dw_h2_frame f[MAX_FRAMES];
	__u8 peek[MAX_FRAMES][DW_H2_PEEK];
};

/*
 * Gives the walker bytes p[0..n) the way the BPF side does: collect or pass
 * over what it asks for, in as many steps as it takes. -1: it lost step.
 */
static int feed(struct dw_h2_dir *d, const __u8 *p, size_t n, struct walked *w)
{
	size_t pos = 0;

	while (pos < n) {
		__u8 *dst;
		__u32 want = dw_h2_need(d, &dst), take;
		int r;

		assert_true(want > 0);
		take = want < n - pos ? want : (__u32)(n - pos);
		if (dst)
			memcpy(dst, p + pos, take);
		pos += take;
		r = dw_h2_took(d, take);
		if (r == DW_H2_BAD)
			return -1;
		if (r == DW_H2_FRAME) {
			assert_true(w->n < MAX_FRAMES);
			dw_h2_frame_of(d, &w->f[w->n]);
			memcpy(w->peek[w->n], w->f[w->n].peek, w->f[w->n].npeek);
			w->f[w->n].peek = w->peek[w->n];
			w->n++;
		}
	}
	return 0;
}

/* A stream of frames, built as a peer would write it. */
struct wire {
	__u8 *b;
	size_t n, cap;
};

static void put(struct wire *w, const void *p, size_t n)
{
	if (w->n + n > w->cap) {
		w->cap = (w->n + n) * 2;
		w->b = realloc(w->b, w->cap);
		assert_non_null(w->b);
	}
	memcpy(w->b + w->n, p, n);
	w->n += n;
}

static void frame(struct wire *w, __u8 type, __u8 flags, __u32 id, const void *payload, __u32 len)
{
	__u8 h[9] = { len >> 16, len >> 8, len, type, flags, id >> 24, id >> 16, id >> 8, id };

	put(w, h, sizeof(h));
	if (len) {
		if (payload) {
			put(w, payload, len);
		} else {
			__u8 *z = calloc(1, len);

			put(w, z, len);
			free(z);
		}
	}
}

/* What a gRPC or h2load client writes: preface, SETTINGS, requests, a cancel. */
static void client_wire(struct wire *w)
{
	static const __u8 settings[12] = { 0, 3, 0, 0, 0, 100, 0, 4, 0, 0x10, 0, 0 };
	static const __u8 wu[4] = { 0, 0x0f, 0, 1 };
	static const __u8 hdrs[6] = { 0x83, 0x86, 0x44, 0x02, 'a', 'b' };
	static const __u8 msg[12] = { 0, 0, 0, 0, 7, 'p', 'a', 'y', 'l', 'o', 'a', 'd' };
	static const __u8 rst[4] = { 0, 0, 0, 8 };

	put(w, DW_H2_PREFACE, DW_H2_PREFACE_LEN);
	frame(w, DW_H2_SETTINGS, 0, 0, settings, sizeof(settings));
	frame(w, DW_H2_WINDOW_UPDATE, 0, 0, wu, sizeof(wu));
	frame(w, DW_H2_HEADERS, 0x4, 1, hdrs, sizeof(hdrs));
	frame(w, DW_H2_DATA, 0x1, 1, msg, sizeof(msg));
	frame(w, DW_H2_SETTINGS, DW_H2_F_ACK, 0, NULL, 0);
	frame(w, DW_H2_HEADERS, 0x5, 3, hdrs, sizeof(hdrs));
	frame(w, DW_H2_PING, 0, 0, NULL, 8);
	frame(w, DW_H2_RST_STREAM, 0, 3, rst, sizeof(rst));
	frame(w, DW_H2_HEADERS, 0x4, 1, hdrs, 2);	/* trailers on stream 1: no new call */
}

static void expect_client(const struct walked *w)
{
	static const __u8 types[] = { DW_H2_SETTINGS, DW_H2_WINDOW_UPDATE, DW_H2_HEADERS, DW_H2_DATA,
				      DW_H2_SETTINGS, DW_H2_HEADERS, DW_H2_PING, DW_H2_RST_STREAM,
				      DW_H2_HEADERS };
	static const __u32 ids[] = { 0, 0, 1, 1, 0, 3, 0, 3, 1 };
	static const int acts[] = { DW_H2_ACT_NONE, DW_H2_ACT_NONE, DW_H2_ACT_OPEN, DW_H2_ACT_NONE,
				    DW_H2_ACT_NONE, DW_H2_ACT_OPEN, DW_H2_ACT_NONE, DW_H2_ACT_CANCEL,
				    DW_H2_ACT_NONE };
	__u32 newest = 0;

	assert_int_equal(w->n, sizeof(types));
	for (int i = 0; i < w->n; i++) {
		int act = dw_h2_action(&w->f[i], DW_H2_CLIENT, newest);

		assert_int_equal(w->f[i].type, types[i]);
		assert_int_equal(w->f[i].id, ids[i]);
		assert_int_equal(w->f[i].npeek, 0);
		assert_int_equal(act, acts[i]);
		if (act == DW_H2_ACT_OPEN)
			newest = w->f[i].id;
	}
}

static void test_client_whole(void **state)
{
	struct wire w = { 0 };
	struct walked out = { 0 };
	struct dw_h2_dir d;

	(void)state;
	client_wire(&w);
	dw_h2_dir_init(&d, 1000, DW_H2_CLIENT);
	assert_int_equal(feed(&d, w.b, w.n, &out), 0);
	expect_client(&out);
	assert_int_equal(d.seq, 1000 + w.n);
	free(w.b);
}

/* Split in two at every offset: the same frames, whatever the two reads were. */
static void test_client_split_everywhere(void **state)
{
	struct wire w = { 0 };

	(void)state;
	client_wire(&w);
	for (size_t cut = 0; cut <= w.n; cut++) {
		struct walked out = { 0 };
		struct dw_h2_dir d;

		dw_h2_dir_init(&d, 0, DW_H2_CLIENT);
		assert_int_equal(feed(&d, w.b, cut, &out), 0);
		assert_int_equal(feed(&d, w.b + cut, w.n - cut, &out), 0);
		expect_client(&out);
	}
	free(w.b);
}

/* A byte a send, as a small client of our own writes it in the integration suite. */
static void test_client_byte_by_byte(void **state)
{
	struct wire w = { 0 };
	struct walked out = { 0 };
	struct dw_h2_dir d;

	(void)state;
	client_wire(&w);
	dw_h2_dir_init(&d, 0, DW_H2_CLIENT);
	for (size_t i = 0; i < w.n; i++)
		assert_int_equal(feed(&d, w.b + i, 1, &out), 0);
	expect_client(&out);
	free(w.b);
}

static void test_client_random_pieces(void **state)
{
	struct wire w = { 0 };
	uint64_t seed = 99;

	(void)state;
	client_wire(&w);
	for (int round = 0; round < 500; round++) {
		struct walked out = { 0 };
		struct dw_h2_dir d;
		size_t pos = 0;

		dw_h2_dir_init(&d, 7, DW_H2_CLIENT);
		while (pos < w.n) {
			size_t k = 1 + dwt_rand(&seed) % 40;

			if (k > w.n - pos)
				k = w.n - pos;
			assert_int_equal(feed(&d, w.b + pos, k, &out), 0);
			pos += k;
		}
		expect_client(&out);
	}
	free(w.b);
}

/* The preface split across sends: each piece is matched as it comes, and a wrong byte fails. */
static void test_preface_split_and_wrong(void **state)
{
	struct walked out = { 0 };
	struct dw_h2_dir d;
	const char *p = DW_H2_PREFACE;

	(void)state;
	dw_h2_dir_init(&d, 0, DW_H2_CLIENT);
	assert_int_equal(feed(&d, (const __u8 *)p, 8, &out), 0);
	assert_int_equal(d.pre, DW_H2_PREFACE_LEN);
	assert_int_equal(feed(&d, (const __u8 *)p + 8, 16, &out), 0);
	assert_int_equal(d.pre, 0);
	assert_int_equal(out.n, 0);
	/* HTTP/1.1 is not HTTP/2: found at the first byte that differs */
	dw_h2_dir_init(&d, 0, DW_H2_CLIENT);
	assert_int_equal(feed(&d, (const __u8 *)"PRI * HTTP/1.1\r\n", 16, &out), -1);
	dw_h2_dir_init(&d, 0, DW_H2_CLIENT);
	assert_int_equal(feed(&d, (const __u8 *)"GET / HTTP/1.1\r\n", 16, &out), -1);
}

/* A server's side: its SETTINGS, answers, a 5xx in each encoding, a reset, GOAWAY. */
static void server_wire(struct wire *w)
{
	static const __u8 ok[1] = { 0x88 };			/* :status 200, indexed */
	static const __u8 lit503[5] = { 0x08, 3, '5', '0', '3' };	/* literal, indexed name 8 */
	static const __u8 huf503[5] = { 0x48, 0x83, 0x6c, 0x0c, 0xff };	/* incremental, Huffman "503" */
	static const __u8 idx500[1] = { 0x8e };			/* :status 500, indexed */
	/* padded (pad length 2), priority (5 bytes), a size update 4096, then 500 */
	static const __u8 padprio[12] = { 2, 0, 0, 0, 1, 16, 0x3f, 0xe1, 0x1f, 0x8e, 0, 0 };
	static const __u8 huf200[4] = { 0x48, 0x82, 0x10, 0x01 };
	static const __u8 rst[4] = { 0, 0, 0, 2 };
	static const __u8 goaway[8] = { 0, 0, 0, 7, 0, 0, 0, 0 };

	frame(w, DW_H2_SETTINGS, 0, 0, NULL, 6);
	frame(w, DW_H2_SETTINGS, DW_H2_F_ACK, 0, NULL, 0);
	frame(w, DW_H2_HEADERS, 0x4, 1, ok, sizeof(ok));
	frame(w, DW_H2_DATA, 0, 1, NULL, 100);
	frame(w, DW_H2_HEADERS, 0x4, 3, lit503, sizeof(lit503));
	frame(w, DW_H2_HEADERS, 0x4, 5, huf503, sizeof(huf503));
	frame(w, DW_H2_HEADERS, 0x4, 7, idx500, sizeof(idx500));
	frame(w, DW_H2_HEADERS, 0x4 | DW_H2_F_PADDED | DW_H2_F_PRIORITY, 9, padprio, sizeof(padprio));
	frame(w, DW_H2_HEADERS, 0x4, 11, huf200, sizeof(huf200));
	frame(w, DW_H2_RST_STREAM, 0, 13, rst, sizeof(rst));
	frame(w, DW_H2_WINDOW_UPDATE, 0, 0, NULL, 4);
	frame(w, DW_H2_GOAWAY, 0, 0, goaway, sizeof(goaway));
}

static void expect_server(const struct walked *w)
{
	static const int acts[] = { DW_H2_ACT_NONE, DW_H2_ACT_NONE, DW_H2_ACT_ANSWER, DW_H2_ACT_ANSWER,
				    DW_H2_ACT_FAIL, DW_H2_ACT_FAIL, DW_H2_ACT_FAIL, DW_H2_ACT_FAIL,
				    DW_H2_ACT_ANSWER, DW_H2_ACT_FAIL, DW_H2_ACT_NONE, DW_H2_ACT_GOAWAY };

	assert_int_equal(w->n, sizeof(acts) / sizeof(acts[0]));
	for (int i = 0; i < w->n; i++)
		assert_int_equal(dw_h2_action(&w->f[i], DW_H2_SERVER, 0), acts[i]);
	assert_int_equal(w->f[3].npeek, 0);		/* DATA: nothing read of its payload */
	assert_int_equal(w->f[7].npeek, 12);
	assert_int_equal(dw_h2_goaway_last(&w->f[11]), 7);
}

static void test_server_whole_and_split(void **state)
{
	struct wire w = { 0 };

	(void)state;
	server_wire(&w);
	for (size_t cut = 0; cut <= w.n; cut++) {
		struct walked out = { 0 };
		struct dw_h2_dir d;

		dw_h2_dir_init(&d, 0, DW_H2_SERVER);
		assert_int_equal(feed(&d, w.b, cut, &out), 0);
		assert_int_equal(feed(&d, w.b + cut, w.n - cut, &out), 0);
		expect_server(&out);
	}
	free(w.b);
}

/* A DATA frame of 16 MiB - 1 read 1000 bytes at a time: one frame, its payload passed over. */
static void test_huge_data_frame(void **state)
{
	static const __u8 ok[1] = { 0x88 };
	struct wire w = { 0 };
	struct walked out = { 0 };
	struct dw_h2_dir d;
	__u8 hdr[9] = { 0xff, 0xff, 0xff, DW_H2_DATA, 0, 0, 0, 0, 1 };
	__u8 chunk[1000] = { 0x5a };
	__u32 left = 0xffffff;

	(void)state;
	dw_h2_dir_init(&d, 0, DW_H2_SERVER);
	frame(&w, DW_H2_SETTINGS, 0, 0, NULL, 0);
	assert_int_equal(feed(&d, w.b, w.n, &out), 0);
	assert_int_equal(feed(&d, hdr, sizeof(hdr), &out), 0);
	while (left) {
		__u32 k = left < sizeof(chunk) ? left : sizeof(chunk);

		assert_int_equal(feed(&d, chunk, k, &out), 0);
		left -= k;
	}
	w.n = 0;
	frame(&w, DW_H2_HEADERS, 0x4, 3, ok, sizeof(ok));
	assert_int_equal(feed(&d, w.b, w.n, &out), 0);
	assert_int_equal(out.n, 3);
	assert_int_equal(out.f[1].len, 0xffffff);
	assert_int_equal(out.f[2].id, 3);
	free(w.b);
}

/* What is not HTTP/2 loses step at once; so does a frame whose fixed length is wrong. */
static void test_desync(void **state)
{
	struct walked out = { 0 };
	struct dw_h2_dir d;
	struct wire w = { 0 };

	(void)state;
	dw_h2_dir_init(&d, 0, DW_H2_SERVER);
	assert_int_equal(feed(&d, (const __u8 *)"HTTP/1.1 400 Bad Request\r\n", 26, &out), -1);
	/* the first frame of each direction is SETTINGS */
	dw_h2_dir_init(&d, 0, DW_H2_SERVER);
	frame(&w, DW_H2_PING, 0, 0, NULL, 8);
	assert_int_equal(feed(&d, w.b, w.n, &out), -1);
	/* a PING of 7 bytes, a SETTINGS ACK with a payload, a HEADERS on stream 0 */
	w.n = 0;
	frame(&w, DW_H2_SETTINGS, 0, 0, NULL, 0);
	dw_h2_dir_init(&d, 0, DW_H2_SERVER);
	assert_int_equal(feed(&d, w.b, w.n, &out), 0);
	w.n = 0;
	frame(&w, DW_H2_PING, 0, 0, NULL, 7);
	assert_int_equal(feed(&d, w.b, w.n, &out), -1);
	dw_h2_dir_init(&d, 0, DW_H2_SERVER);
	w.n = 0;
	frame(&w, DW_H2_SETTINGS, 0, 0, NULL, 0);
	frame(&w, DW_H2_SETTINGS, DW_H2_F_ACK, 0, NULL, 6);
	assert_int_equal(feed(&d, w.b, w.n, &out), -1);
	dw_h2_dir_init(&d, 0, DW_H2_SERVER);
	w.n = 0;
	frame(&w, DW_H2_SETTINGS, 0, 0, NULL, 0);
	frame(&w, DW_H2_HEADERS, 0x4, 0, "\x88", 1);
	assert_int_equal(feed(&d, w.b, w.n, &out), -1);
	/* text read as a frame header: an unknown type of megabytes */
	dw_h2_dir_init(&d, 0, DW_H2_SERVER);
	w.n = 0;
	frame(&w, DW_H2_SETTINGS, 0, 0, NULL, 0);
	assert_int_equal(feed(&d, w.b, w.n, &out), 0);
	assert_int_equal(feed(&d, (const __u8 *)"HTTP/1.1 400 Bad Request\r\n", 26, &out), -1);
	/* an unknown type (an extension: ORIGIN, 0xc) is legal and passes */
	dw_h2_dir_init(&d, 0, DW_H2_SERVER);
	w.n = 0;
	frame(&w, DW_H2_SETTINGS, 0, 0, NULL, 0);
	frame(&w, 0xc, 0, 0, NULL, 20);
	assert_int_equal(feed(&d, w.b, w.n, &out), 0);
	free(w.b);
}

/* Where an event's bytes start against the walker's place: repeats skipped, gaps refused. */
static void test_skip(void **state)
{
	struct dw_h2_dir d;

	(void)state;
	dw_h2_dir_init(&d, 5000, DW_H2_SERVER);
	assert_int_equal(dw_h2_skip(&d, 5000, 100), 0);
	assert_int_equal(dw_h2_skip(&d, 4900, 300), 100);	/* 100 bytes sent again */
	assert_int_equal(dw_h2_skip(&d, 4000, 300), 300);	/* all of them */
	assert_int_equal(dw_h2_skip(&d, 5001, 10), -1);		/* a byte went by unseen */
	/* sequence numbers wrap */
	dw_h2_dir_init(&d, 10, DW_H2_SERVER);
	assert_int_equal(dw_h2_skip(&d, 0xfffffff0U, 100), 26);
}

/* :status in every form the kernel can read, and what it cannot (reads as not 5xx). */
static void test_status(void **state)
{
	static const struct {
		__u8 b[8];
		__u32 n;
		__u8 flags;
		bool fail;
	} cases[] = {
		{ { 0x88 }, 1, 0, false },			/* 200 */
		{ { 0x8d }, 1, 0, false },			/* 404 */
		{ { 0x8e }, 1, 0, true },			/* 500 */
		{ { 0x48, 3, '5', '0', '2' }, 5, 0, true },	/* literal, incremental, name 8 */
		{ { 0x0e, 3, '5', '0', '4' }, 5, 0, true },	/* literal without indexing, name 14 */
		{ { 0x18, 3, '5', '0', '3' }, 5, 0, true },	/* never indexed, name 8 */
		{ { 0x18, 3, '2', '0', '6' }, 5, 0, false },
		{ { 0x48, 0x83, 0x6c, 0x0c, 0xff }, 5, 0, true },	/* Huffman 503 */
		{ { 0x48, 0x82, 0x10, 0x01 }, 4, 0, false },		/* Huffman 200 */
		{ { 0x40, 7, ':', 's' }, 4, 0, false },		/* a new name: not readable */
		{ { 0xbe }, 1, 0, false },			/* dynamic table entry 62 */
		{ { 0x3f, 0xe1, 0x1f, 0x8e }, 4, 0, true },	/* size update, then 500 */
		{ { 0x20, 0x8e }, 2, 0, true },			/* size update 0, then 500 */
		{ { 0x48, 3 }, 2, 0, false },			/* cut short */
		{ { 1, 0x8e, 0 }, 3, DW_H2_F_PADDED, true },
		{ { 0, 0, 0, 3, 7, 0x8e }, 6, DW_H2_F_PRIORITY, true },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		__u8 peek[DW_H2_PEEK] = { 0 };

		memcpy(peek, cases[i].b, sizeof(cases[i].b));
		if (dw_h2_status_5xx(peek, cases[i].n, cases[i].flags) != cases[i].fail)
			fail_msg("case %zu: want %s", i, cases[i].fail ? "5xx" : "not 5xx");
	}
}

/* Stream slots: neighbours for streams opened together, wrapping at DW_H2_STREAMS. */
static void test_stream_slots(void **state)
{
	(void)state;
	assert_int_equal(dw_h2_home(1), 0);
	assert_int_equal(dw_h2_home(3), 1);
	assert_int_equal(dw_h2_home(2 * DW_H2_STREAMS + 1), 0);
	assert_int_equal(dw_h2_probe(2 * DW_H2_STREAMS - 1, 1), 0);
	assert_int_equal(dw_h2_probe(0x7fffffff, DW_H2_PROBES - 1),
			 ((0x7fffffffU >> 1) + DW_H2_PROBES - 1) % DW_H2_STREAMS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_client_whole),
	    cmocka_unit_test(test_client_split_everywhere),
	    cmocka_unit_test(test_client_byte_by_byte),
	    cmocka_unit_test(test_client_random_pieces),
	    cmocka_unit_test(test_preface_split_and_wrong),
	    cmocka_unit_test(test_server_whole_and_split),
	    cmocka_unit_test(test_huge_data_frame),
	    cmocka_unit_test(test_desync),
	    cmocka_unit_test(test_skip),
	    cmocka_unit_test(test_status),
	    cmocka_unit_test(test_stream_slots),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
