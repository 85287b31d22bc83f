// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * HTTP/2 and gRPC answers (user/logic/outcome/h2answer.c): header blocks made by
 * nghttp2's HPACK deflater (the encoder nghttpd uses; nginx and grpc-core
 * index :status and grpc-status the same way), cut into records as the
 * kernel cuts them (bpf/h2/hblock.bpf.h: the 16-byte peek with the first
 * piece, pieces of at most DW_HB_BODY), fed in order, with gaps.
 */
#include "dwtest.h"

#include <errno.h>
#include <stdlib.h>

#include <nghttp2/nghttp2.h>

#include "depwatch.h"
#include "h2/hblock.h"
#include "logic/outcome/h2answer.h"

#define MAXANS 64

struct got {
	unsigned n;
	struct dw_hb_answer a[MAXANS];
};

static void on_answer(const struct dw_hb_answer *a, void *arg)
{
	struct got *g = arg;

	if (g->n < MAXANS)
		g->a[g->n++] = *a;
}

/* A connection as the kernel sends it: its number, its next record's seq. */
struct kconn {
	uint64_t id;
	uint32_t seq;
	nghttp2_hd_deflater *def;
	struct dw_hb_table *t;
	struct got *g;
	unsigned piece;		/* body bytes a record at the most (the kernel's DW_HB_BODY, or fewer) */
	uint32_t drop_seq;	/* lose the record with this seq (the ring full); UINT32_MAX: none */
};

static size_t deflate(struct kconn *k, const char *const *nv, unsigned n, uint8_t *out, size_t cap)
{
	nghttp2_nv v[16];
	ssize_t rv;

	for (unsigned i = 0; i < n; i++)
		v[i] = (nghttp2_nv){ .name = (uint8_t *)nv[2 * i], .namelen = strlen(nv[2 * i]),
				     .value = (uint8_t *)nv[2 * i + 1], .valuelen = strlen(nv[2 * i + 1]) };
	rv = nghttp2_hd_deflate_hd(k->def, out, cap, v, n);
	assert_true(rv > 0);
	return (size_t)rv;
}

/* One frame's payload, cut as the walker cuts it. */
static void send_frame(struct kconn *k, uint8_t type, uint8_t flags, uint32_t stream, const uint8_t *p,
		       size_t len, uint8_t flags2, uint64_t start, uint64_t end)
{
	size_t npeek = type == 1 ? (len < DW_HB_PEEK ? len : DW_HB_PEEK) : 0, at = npeek;
	bool first = true;

	while (first || at < len) {
		struct dw_hb_rec r = { .conn_id = k->id, .seq = k->seq++, .stream = stream, .slot = 7,
				       .frame_len = (uint32_t)len, .type = type, .flags = flags,
				       .flags2 = flags2, .start_ns = start, .end_ns = end };
		size_t nb = len - at < k->piece ? len - at : k->piece;

		if (first) {
			r.npeek = (uint8_t)npeek;
			memcpy(r.peek, p, npeek);
			r.off = 0;
		} else {
			r.off = (uint32_t)at;
		}
		r.nbody = (uint16_t)nb;
		memcpy(r.body, p + at, nb);
		at += nb;
		first = false;
		if (r.seq == k->drop_seq)
			continue;
		assert_int_equal(dw_hb_feed(k->t, &r, sizeof(r), on_answer, k->g), 0);
	}
}

static void kconn_init(struct kconn *k, struct dw_hb_table *t, struct got *g, uint64_t id)
{
	memset(k, 0, sizeof(*k));
	k->id = id;
	k->t = t;
	k->g = g;
	k->piece = DW_HB_BODY;
	k->drop_seq = UINT32_MAX;
	assert_int_equal(nghttp2_hd_deflate_new(&k->def, 4096), 0);
}

static void kconn_done(struct kconn *k)
{
	nghttp2_hd_deflate_del(k->def);
}

static void block(struct kconn *k, uint32_t stream, bool end_stream, const char *const *nv, unsigned n,
		  uint8_t flags2)
{
	uint8_t buf[4096];
	size_t len = deflate(k, nv, n, buf, sizeof(buf));

	send_frame(k, 1, 0x4 | (end_stream ? 0x1 : 0), stream, buf, len, flags2, 1000 * stream,
		   1000 * stream + 500);
}

static const char *const nginx_503[] = { ":status", "503", "server", "nginx/1.22.1",
					 "date", "Fri, 04 Dec 2026 21:00:00 GMT",
					 "content-type", "text/html", "content-length", "157" };
static const char *const nginx_200[] = { ":status", "200", "server", "nginx/1.22.1",
					 "content-type", "text/plain" };

/* :status 503 twice: a literal that enters the table, then its index in the dynamic table. */
static void test_status_from_dynamic_table(void **state)
{
	struct dw_hb_table *t = dw_hb_table_new(16);
	struct got g = { 0 };
	struct kconn k;
	uint8_t buf[512];
	size_t l1, l2;

	(void)state;
	kconn_init(&k, t, &g, 1);
	l1 = deflate(&k, nginx_503, 5, buf, sizeof(buf));
	l2 = deflate(&k, nginx_503, 5, buf, sizeof(buf));
	/* the second block is all indexes, :status's among them a dynamic one (62 and above) */
	assert_true(l2 < l1);
	assert_true(buf[0] & 0x80);
	assert_true((buf[0] & 0x7f) >= 62);
	kconn_done(&k);

	kconn_init(&k, t, &g, 2);
	for (uint32_t s = 1; s <= 9; s += 2)
		block(&k, s, false, s % 4 == 1 ? nginx_503 : nginx_200, s % 4 == 1 ? 5 : 3, DW_HB_ENDED);
	assert_int_equal(g.n, 5);
	for (unsigned i = 0; i < 5; i++) {
		assert_int_equal(g.a[i].status, i % 2 ? 200 : 503);
		assert_int_equal(g.a[i].grpc, -1);
		assert_int_equal(g.a[i].stream, 2 * i + 1);
		assert_true(g.a[i].timed);
		assert_int_equal(g.a[i].start_ns, 1000 * (2 * i + 1));
		assert_int_equal(g.a[i].slot, 7);
		assert_false(g.a[i].desync);
	}
	kconn_done(&k);
	dw_hb_table_free(t);
}

static const char *const grpc_headers[] = { ":status", "200", "content-type", "application/grpc",
					    "grpc-accept-encoding", "identity,deflate,gzip" };
static const char *const grpc_trailers_14[] = { "grpc-status", "14", "grpc-message", "down for repairs" };
static const char *const grpc_trailers_0[] = { "grpc-status", "0" };
static const char *const grpc_only_5[] = { ":status", "200", "content-type", "application/grpc",
					   "grpc-status", "5", "grpc-message", "no such thing" };

/* gRPC: headers then trailers (one answer, at the trailers), and a trailers-only answer. */
static void test_grpc_trailers(void **state)
{
	struct dw_hb_table *t = dw_hb_table_new(16);
	struct got g = { 0 };
	struct kconn k;

	(void)state;
	kconn_init(&k, t, &g, 1);
	block(&k, 1, false, grpc_headers, 3, DW_HB_ENDED);
	block(&k, 3, false, grpc_headers, 3, DW_HB_ENDED);
	assert_int_equal(g.n, 0);
	block(&k, 3, true, grpc_trailers_0, 1, 0);
	block(&k, 1, true, grpc_trailers_14, 2, 0);
	block(&k, 5, true, grpc_only_5, 4, DW_HB_ENDED | DW_HB_KFAILED);
	assert_int_equal(g.n, 3);
	assert_int_equal(g.a[0].stream, 3);
	assert_int_equal(g.a[0].grpc, 0);
	assert_int_equal(g.a[0].status, 200);
	assert_int_equal(g.a[1].stream, 1);
	assert_int_equal(g.a[1].grpc, 14);
	assert_true(g.a[1].timed);
	assert_int_equal(g.a[1].start_ns, 1000);
	assert_int_equal(g.a[2].grpc, 5);
	assert_true(g.a[2].kfailed);
	/* trailers of a stream never seen answered: no answer made up */
	block(&k, 7, true, grpc_trailers_14, 2, 0);
	assert_int_equal(g.n, 3);
	kconn_done(&k);
	dw_hb_table_free(t);
}

/* A block over a HEADERS and CONTINUATIONs, padded and with priority, in pieces of 1..DW_HB_BODY. */
static void test_continuation_and_pieces(void **state)
{
	static const char *const big[] = { ":status", "502", "x-a", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
					   "x-b", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
					   "x-c", "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc" };

	static const char *const big2[] = { ":status", "502", "x-a", "dddddddddddddddddddddddddddddddddddddddddddddddddd",
					    "x-b", "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee",
					    "x-c", "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff" };

	(void)state;
	for (unsigned piece = 1; piece <= DW_HB_BODY; piece = piece * 3 + 1) {
		struct dw_hb_table *t = dw_hb_table_new(4);
		struct got g = { 0 };
		struct kconn k;
		uint8_t blk[1024], f[1100];
		size_t len;

		kconn_init(&k, t, &g, 1);
		k.piece = piece;
		for (unsigned round = 0; round < 2; round++) {
			size_t a = 40, b = 50;

			len = deflate(&k, round ? big2 : big, 4, blk, sizeof(blk));
			assert_true(len > a + b);
			/* HEADERS: pad length 3, priority (5 bytes), 40 bytes of the block, 3 of padding */
			f[0] = 3;
			memset(f + 1, 0, 5);
			memcpy(f + 6, blk, a);
			memset(f + 6 + a, 0, 3);
			send_frame(&k, 1, 0x8 | 0x20, 11 + 2 * round, f, a + 9, DW_HB_ENDED, 5, 6);
			send_frame(&k, 9, 0, 11 + 2 * round, blk + a, b, 0, 0, 0);
			send_frame(&k, 9, 0x4, 11 + 2 * round, blk + a + b, len - a - b, 0, 0, 0);
		}
		assert_int_equal(g.n, 2);
		assert_int_equal(g.a[0].status, 502);
		assert_int_equal(g.a[1].status, 502);
		assert_int_equal(g.a[1].stream, 13);
		assert_int_equal(dw_hb_figs(t)->desync, 0);
		kconn_done(&k);
		dw_hb_table_free(t);
	}
}

/* A lost record (the ring was full): a desync once, then nothing from that connection; others go on. */
static void test_gap_desyncs(void **state)
{
	struct dw_hb_table *t = dw_hb_table_new(16);
	struct got g = { 0 };
	struct kconn k, k2;

	(void)state;
	kconn_init(&k, t, &g, 1);
	kconn_init(&k2, t, &g, 2);
	block(&k, 1, false, nginx_503, 5, DW_HB_ENDED);
	k.drop_seq = 1;
	block(&k, 3, false, nginx_200, 3, DW_HB_ENDED);
	block(&k, 5, false, nginx_503, 5, DW_HB_ENDED);
	block(&k, 7, false, nginx_503, 5, DW_HB_ENDED);
	block(&k2, 1, false, nginx_503, 5, DW_HB_ENDED);
	assert_int_equal(g.n, 3);
	assert_int_equal(g.a[0].status, 503);
	assert_true(g.a[1].desync);
	assert_int_equal(g.a[1].status, 0);
	assert_int_equal(g.a[2].status, 503);
	assert_int_equal(dw_hb_figs(t)->desync, 1);
	kconn_done(&k);
	kconn_done(&k2);

	/* a connection whose first records went by: its table is unknown from the start */
	memset(&g, 0, sizeof(g));
	kconn_init(&k, t, &g, 3);
	k.seq = 4;
	block(&k, 1, false, nginx_200, 3, DW_HB_ENDED);
	assert_int_equal(g.n, 1);
	assert_true(g.a[0].desync);
	kconn_done(&k);
	dw_hb_table_free(t);
}

/* A frame cut at the kernel's bound, and bytes that are no HPACK: desyncs, never a status. */
static void test_cut_and_garbage(void **state)
{
	struct dw_hb_table *t = dw_hb_table_new(16);
	struct got g = { 0 };
	struct kconn k;
	uint8_t junk[300];
	struct dw_hb_rec r = { .conn_id = 9, .seq = 0, .stream = 1, .frame_len = 5000, .type = 1,
			       .flags = 0x5, .npeek = 16, .nbody = DW_HB_BODY };

	(void)state;
	/* the first piece of a 5000-byte frame, then the next frame: the rest never came */
	assert_int_equal(dw_hb_feed(t, &r, sizeof(r), on_answer, &g), 0);
	r.seq = 1;
	r.off = 0;
	r.frame_len = 3;
	r.npeek = 3;
	r.nbody = 0;
	assert_int_equal(dw_hb_feed(t, &r, sizeof(r), on_answer, &g), 0);
	assert_int_equal(g.n, 1);
	assert_true(g.a[0].desync);

	kconn_init(&k, t, &g, 10);
	memset(junk, 0xff, sizeof(junk));
	send_frame(&k, 1, 0x5, 1, junk, sizeof(junk), DW_HB_ENDED, 1, 2);
	assert_int_equal(g.n, 2);
	assert_true(g.a[1].desync);
	/* a record shorter than the struct, or with lengths past its bounds */
	r.conn_id = 11;
	r.seq = 0;
	r.nbody = DW_HB_BODY + 1;
	assert_int_equal(dw_hb_feed(t, &r, sizeof(r) - 1, on_answer, &g), 0);
	assert_int_equal(dw_hb_feed(t, &r, sizeof(r), on_answer, &g), 0);
	assert_int_equal(g.n, 3);
	assert_true(g.a[2].desync);
	kconn_done(&k);
	dw_hb_table_free(t);
}

/* More connections than room: the least recently used goes; coming back, it is desynced. */
static void test_eviction(void **state)
{
	struct dw_hb_table *t = dw_hb_table_new(4);
	struct got g = { 0 };
	struct kconn k[8];

	(void)state;
	for (unsigned i = 0; i < 8; i++) {
		kconn_init(&k[i], t, &g, i + 1);
		block(&k[i], 1, false, nginx_200, 3, DW_HB_ENDED);
	}
	assert_int_equal(g.n, 8);
	assert_true(dw_hb_figs(t)->evicted >= 4);
	block(&k[0], 3, false, nginx_200, 3, DW_HB_ENDED);
	assert_int_equal(g.n, 9);
	assert_true(g.a[8].desync);
	for (unsigned i = 0; i < 8; i++)
		kconn_done(&k[i]);
	dw_hb_table_free(t);
}

static void test_grpc_names(void **state)
{
	struct dw_buf b = { 0 };
	uint32_t set = 0xdead;

	(void)state;
	assert_int_equal(dw_grpc_set_parse(DW_FAILURE_GRPC_DEFAULT, &set), 0);
	assert_int_equal(set, 1U << 14 | 1U << 4 | 1U << 8 | 1U << 13 | 1U << 2 | 1U << 15);
	dw_grpc_set_format(set, &b);
	assert_string_equal(b.data, "unknown, deadline_exceeded, resource_exhausted, internal, unavailable, data_loss");
	free(b.data);
	assert_int_equal(dw_grpc_set_parse("UNAVAILABLE,not_found", &set), 0);
	assert_int_equal(set, 1U << 14 | 1U << 5);
	assert_int_equal(dw_grpc_set_parse("none", &set), 0);
	assert_int_equal(set, 0);
	memset(&b, 0, sizeof(b));
	dw_grpc_set_format(0, &b);
	assert_string_equal(b.data, "none");
	free(b.data);
	set = 3;
	assert_int_equal(dw_grpc_set_parse("unavailabel", &set), -EINVAL);
	assert_int_equal(dw_grpc_set_parse("", &set), -EINVAL);
	assert_int_equal(dw_grpc_set_parse("14", &set), -EINVAL);
	assert_int_equal(set, 3);
	assert_int_equal(dw_grpc_code_of("14", 2), 14);
	assert_int_equal(dw_grpc_code_of("0", 1), 0);
	assert_int_equal(dw_grpc_code_of("17", 2), DW_GRPC_OTHER);
	assert_int_equal(dw_grpc_code_of("01", 2), DW_GRPC_OTHER);
	assert_int_equal(dw_grpc_code_of("-1", 2), DW_GRPC_OTHER);
	assert_int_equal(dw_grpc_code_of("", 0), DW_GRPC_OTHER);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_from_dynamic_table),
		cmocka_unit_test(test_grpc_trailers),
		cmocka_unit_test(test_continuation_and_pieces),
		cmocka_unit_test(test_gap_desyncs),
		cmocka_unit_test(test_cut_and_garbage),
		cmocka_unit_test(test_eviction),
		cmocka_unit_test(test_grpc_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
