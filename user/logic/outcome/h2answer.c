// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <nghttp2/nghttp2.h>

#include "logic/outcome/h2answer.h"
#include "depwatch.h"
#include "h2/hblock.h"
#include "h2/h2.h"

const char *const dw_grpc_names[DW_GRPC_N] = {
#define DW_GRPC_NAME(code, name) [code] = #name,
	DW_GRPC_CODES(DW_GRPC_NAME)
#undef DW_GRPC_NAME
};

static bool is_sep(char c)
{
	return c == ',' || c == ' ' || c == '\t';
}

int dw_grpc_set_parse(const char *text, uint32_t *set)
{
	const char *p = text;
	uint32_t s = 0;
	unsigned items = 0;

	if (!strcmp(text, "none")) {
		*set = 0;
		return 0;
	}
	while (*p) {
		const char *start;
		size_t n;
		int code = -1;

		while (is_sep(*p))
			p++;
		if (!*p)
			break;
		start = p;
		while (*p && !is_sep(*p))
			p++;
		n = (size_t)(p - start);
		for (int c = 0; c < DW_GRPC_N && code < 0; c++)
			if (strlen(dw_grpc_names[c]) == n && !strncasecmp(start, dw_grpc_names[c], n))
				code = c;
		if (code < 0)
			return -EINVAL;
		s |= 1U << code;
		items++;
	}
	if (!items)
		return -EINVAL;
	*set = s;
	return 0;
}

void dw_grpc_set_format(uint32_t set, struct dw_buf *out)
{
	bool any = false;

	for (int c = 0; c < DW_GRPC_N; c++) {
		if (!(set >> c & 1))
			continue;
		dw_buf_printf(out, "%s%s", any ? ", " : "", dw_grpc_names[c]);
		any = true;
	}
	if (!any)
		dw_buf_printf(out, "none");
}

int dw_grpc_code_of(const char *value, size_t len)
{
	int code = 0;

	if (!len || len > 2)
		return DW_GRPC_OTHER;
	for (size_t i = 0; i < len; i++) {
		if (value[i] < '0' || value[i] > '9')
			return DW_GRPC_OTHER;
		code = code * 10 + (value[i] - '0');
	}
	if (len == 2 && value[0] == '0')
		return DW_GRPC_OTHER;
	return code < DW_GRPC_N ? code : DW_GRPC_OTHER;
}

/* ---- A connection's header blocks ---- */

/* A header block's bound (the frames of one block, put together) */
#define HB_BLOCK_MAX 16384
/* gRPC streams answered, their trailers still to come, per connection */
#define HB_WAITING 64
#define HB_PROBES 4

/* A stream whose answer's headers were read and whose end (trailers, or a final status) is to come. */
struct hb_wait {
	uint32_t stream;	/* 0: free */
	int status;
	bool kfailed, timed;
	uint64_t start_ns, end_ns;
};

struct hb_conn {
	uint64_t id;		/* 0: free */
	uint64_t used;		/* the table's tick at its last record */
	uint32_t next_seq;
	bool desync;
	nghttp2_hd_inflater *inf;
	/* the frame being put together */
	uint32_t fstream, flen, foff;
	uint8_t ftype, fflags;
	/* the block: its first frame's (a HEADERS) */
	uint32_t bstream;
	uint8_t bflags, bflags2;
	bool open;		/* a block is being put together (no END_HEADERS yet) */
	uint64_t bstart, bend;
	uint8_t *buf;		/* frame payload, then block fragments */
	size_t fat, blen, cap;	/* where the frame's payload starts in buf; block bytes before it */
	struct hb_wait wait[HB_WAITING];
};

struct dw_hb_table {
	unsigned n;
	uint64_t tick;
	struct dw_hb_figs figs;
	struct hb_conn *c;
};

struct dw_hb_table *dw_hb_table_new(unsigned max_conns)
{
	struct dw_hb_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->n = max_conns ? max_conns : 1;
	t->c = calloc(t->n, sizeof(*t->c));
	if (!t->c) {
		free(t);
		return NULL;
	}
	return t;
}

static void conn_reset(struct hb_conn *c)
{
	if (c->inf)
		nghttp2_hd_inflate_del(c->inf);
	free(c->buf);
	memset(c, 0, sizeof(*c));
}

void dw_hb_table_free(struct dw_hb_table *t)
{
	if (!t)
		return;
	for (unsigned i = 0; i < t->n; i++)
		conn_reset(&t->c[i]);
	free(t->c);
	free(t);
}

const struct dw_hb_figs *dw_hb_figs(const struct dw_hb_table *t)
{
	return &t->figs;
}

/* The connection's decoder: found, or a place taken for it (the least recently used of its window). */
static struct hb_conn *conn_of(struct dw_hb_table *t, uint64_t id, bool *fresh)
{
	struct hb_conn *lru = NULL;

	*fresh = false;
	for (unsigned i = 0; i < HB_PROBES; i++) {
		struct hb_conn *c = &t->c[(id + i) % t->n];

		if (c->id == id)
			return c;
		if (!lru || (c->id && lru->id && c->used < lru->used) || (!c->id && lru->id))
			lru = c;
	}
	if (lru->id)
		t->figs.evicted++;
	conn_reset(lru);
	lru->id = id;
	*fresh = true;
	return lru;
}

static void desync(struct dw_hb_table *t, struct hb_conn *c, const struct dw_hb_rec *r,
		   dw_hb_answer_fn *fn, void *arg)
{
	struct dw_hb_answer a = { .slot = r->slot, .stream = r->stream, .role = r->role, .desync = true,
				  .grpc = -1 };
	uint64_t id = c->id, used = c->used;

	conn_reset(c);
	c->id = id;
	c->used = used;
	c->desync = true;
	t->figs.desync++;
	fn(&a, arg);
}

static bool grow(struct hb_conn *c, size_t need)
{
	uint8_t *p;
	size_t cap = c->cap ? c->cap : 512;

	if (need <= c->cap)
		return true;
	while (cap < need)
		cap *= 2;
	p = realloc(c->buf, cap);
	if (!p)
		return false;
	c->buf = p;
	c->cap = cap;
	return true;
}

static struct hb_wait *wait_find(struct hb_conn *c, uint32_t stream)
{
	for (unsigned i = 0; i < HB_WAITING; i++)
		if (c->wait[i].stream == stream)
			return &c->wait[i];
	return NULL;
}

struct hb_decoded {
	int status;
	int grpc;
	bool is_grpc;
};

static bool name_is(const nghttp2_nv *nv, const char *name)
{
	size_t n = strlen(name);

	return nv->namelen == n && !memcmp(nv->name, name, n);
}

static void pick(const nghttp2_nv *nv, struct hb_decoded *d)
{
	if (name_is(nv, ":status")) {
		d->status = 0;
		if (nv->valuelen == 3)
			for (int i = 0; i < 3; i++)
				d->status = nv->value[i] >= '0' && nv->value[i] <= '9' && d->status >= 0 ?
						    d->status * 10 + (nv->value[i] - '0') :
						    -1;
		if (d->status < 100 || d->status > 599)
			d->status = -1;	/* read, not a status */
	} else if (name_is(nv, "grpc-status")) {
		d->grpc = dw_grpc_code_of((const char *)nv->value, nv->valuelen);
	} else if (name_is(nv, "content-type")) {
		d->is_grpc = nv->valuelen >= 16 && !memcmp(nv->value, "application/grpc", 16);
	}
}

/* The block in buf[0..blen) through the connection's inflater: false if it does not decode. */
static bool inflate(struct hb_conn *c, struct hb_decoded *d)
{
	const uint8_t *in = c->buf;
	size_t left = c->blen;

	for (;;) {
		nghttp2_nv nv;
		int fl = 0;
		ssize_t rv = nghttp2_hd_inflate_hd2(c->inf, &nv, &fl, in, left, 1);

		if (rv < 0)
			return false;
		in += rv;
		left -= (size_t)rv;
		if (fl & NGHTTP2_HD_INFLATE_EMIT)
			pick(&nv, d);
		if (fl & NGHTTP2_HD_INFLATE_FINAL) {
			nghttp2_hd_inflate_end_headers(c->inf);
			return true;
		}
		if (!rv && !left)
			return false;
	}
}

static void answer(struct hb_conn *c, const struct dw_hb_rec *r, int status, int grpc, bool kfailed,
		   bool timed, uint64_t start, uint64_t end, dw_hb_answer_fn *fn, void *arg)
{
	struct dw_hb_answer a = { .slot = r->slot, .stream = c->bstream, .role = r->role,
				  .kfailed = kfailed, .timed = timed, .status = status > 0 ? status : 0,
				  .grpc = grpc, .start_ns = start, .end_ns = end };

	fn(&a, arg);
}

/*
 * A whole block decoded: the stream's answer now, or (a gRPC answer's
 * headers, a 1xx) kept until its trailers or final headers.
 */
static void block_done(struct dw_hb_table *t, struct hb_conn *c, const struct dw_hb_rec *r,
		       const struct hb_decoded *d, dw_hb_answer_fn *fn, void *arg)
{
	bool end_stream = c->bflags & 0x1;
	bool timed = c->bflags2 & DW_HB_ENDED, kfailed = c->bflags2 & DW_HB_KFAILED;
	struct hb_wait *w = wait_find(c, c->bstream);
	int status = d->status;

	if (w) {
		/* trailers, or the final headers after a 1xx: the stream's first answer timed it */
		if (status <= 0 || (status >= 100 && status < 200))
			status = w->status;
		if (!end_stream && d->status >= 200 && !d->is_grpc) {
			answer(c, r, status, d->grpc, w->kfailed, w->timed, w->start_ns, w->end_ns, fn, arg);
			w->stream = 0;
			return;
		}
		if (!end_stream && d->grpc < 0) {
			w->status = status;
			return;
		}
		answer(c, r, status, d->grpc, w->kfailed, w->timed, w->start_ns, w->end_ns, fn, arg);
		w->stream = 0;
		return;
	}
	if (status == 0)
		return;		/* trailers of a stream not waited for (its headers came before us) */
	if (end_stream || d->grpc >= 0 || (status >= 200 && !d->is_grpc)) {
		answer(c, r, status, d->grpc, kfailed, timed, c->bstart, c->bend, fn, arg);
		return;
	}
	w = wait_find(c, 0);
	if (!w) {
		t->figs.untracked++;
		return;
	}
	*w = (struct hb_wait){ .stream = c->bstream, .status = status, .kfailed = kfailed,
			       .timed = timed, .start_ns = c->bstart, .end_ns = c->bend };
}

/* The frame in buf[fat..) is whole: its fragment joins the block; a block ended is decoded. */
static bool frame_done(struct dw_hb_table *t, struct hb_conn *c, const struct dw_hb_rec *r,
		       dw_hb_answer_fn *fn, void *arg)
{
	uint8_t *p = c->buf + c->fat;
	size_t n = c->flen, pad = 0;
	struct hb_decoded d = { .grpc = -1 };

	if (c->ftype == DW_H2_HEADERS) {
		if (c->fflags & DW_H2_F_PADDED) {
			if (!n)
				return false;
			pad = p[0];
			p++;
			n--;
		}
		if (c->fflags & DW_H2_F_PRIORITY) {
			if (n < 5)
				return false;
			p += 5;
			n -= 5;
		}
		if (pad > n)
			return false;
		n -= pad;
	}
	memmove(c->buf + c->blen, p, n);
	c->blen += n;
	if (!(c->fflags & 0x4))	/* END_HEADERS */
		return true;
	c->open = false;
	t->figs.blocks++;
	if (!inflate(c, &d))
		return false;
	block_done(t, c, r, &d, fn, arg);
	c->blen = 0;
	return true;
}

/* A record of a connection in step: false if it puts the connection out of step. */
static bool take(struct dw_hb_table *t, struct hb_conn *c, const struct dw_hb_rec *r,
		 dw_hb_answer_fn *fn, void *arg)
{
	size_t n = (size_t)r->npeek + r->nbody;

	if (r->npeek > DW_HB_PEEK || r->nbody > DW_HB_BODY || r->frame_len > DW_H2_DEFAULT_MAX_FRAME * 1024)
		return false;
	if (r->off == 0) {
		/* a new frame: the last one must be whole */
		if (c->foff != c->flen)
			return false;
		if (r->type == DW_H2_HEADERS) {
			if (c->open)
				return false;
			c->open = true;
			c->bstream = r->stream;
			c->bflags = r->flags;
			c->bflags2 = r->flags2;
			c->bstart = r->start_ns;
			c->bend = r->end_ns;
			c->blen = 0;
		} else if (r->type != DW_H2_CONTINUATION || !c->open || r->stream != c->bstream) {
			return false;
		}
		c->fstream = r->stream;
		c->flen = r->frame_len;
		c->ftype = r->type;
		c->fflags = r->flags;
		c->foff = 0;
		c->fat = c->blen;
		if (c->blen + c->flen > HB_BLOCK_MAX)
			return false;	/* the block's bound */
		if (!grow(c, c->blen + c->flen + 1))
			return false;
	} else if (r->off != c->foff || r->stream != c->fstream || r->type != c->ftype) {
		return false;
	}
	if (c->foff + n > c->flen)
		return false;
	memcpy(c->buf + c->fat + c->foff, r->peek, r->npeek);
	memcpy(c->buf + c->fat + c->foff + r->npeek, r->body, r->nbody);
	c->foff += (uint32_t)n;
	if (c->foff < c->flen)
		return true;
	return frame_done(t, c, r, fn, arg);
}

int dw_hb_feed(struct dw_hb_table *t, const void *rec, size_t size, dw_hb_answer_fn *fn, void *arg)
{
	struct dw_hb_rec r;
	struct hb_conn *c;
	bool fresh;

	t->figs.records++;
	if (size < sizeof(r))
		return 0;	/* not ours: nothing to tie it to */
	memcpy(&r, rec, sizeof(r));
	c = conn_of(t, r.conn_id, &fresh);
	c->used = ++t->tick;
	if (c->desync)
		return 0;
	if (fresh || !c->inf) {
		if (nghttp2_hd_inflate_new(&c->inf))
			return -ENOMEM;
		/* the largest table a client may allow (SETTINGS_HEADER_TABLE_SIZE): the encoder says its own */
		nghttp2_hd_inflate_change_table_size(c->inf, 1U << 16);
	}
	if (r.seq != c->next_seq || !take(t, c, &r, fn, arg)) {
		desync(t, c, &r, fn, arg);
		return 0;
	}
	c->next_seq++;
	return 0;
}
