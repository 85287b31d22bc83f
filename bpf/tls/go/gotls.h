/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Go's crypto/tls seen by uprobes (bpf/tls/go/gotls.bpf.c, doc/go.md): the struct layout
 * of a Go version, set by user space per layout (the uprobe's attach cookie is its
 * index), and what a goroutine inside tls.(*Conn).Write or Read is doing, keyed by
 * the goroutine (its g, R14 on amd64) since goroutines move between threads.
 * Shared with user space: __u* fields only.
 */
#ifndef DEPWATCH_GOTLS_H
#define DEPWATCH_GOTLS_H

/* Distinct Go layouts loaded at once (one per Go version among the probed binaries). */
#define DW_GO_LAYOUTS 16	/* DW_GO_CK_LAYOUT's 4 bits */
/* Goroutines inside a probed Write or Read at once, over all Go programs. */
#define DW_GO_GOROUTINES 16384

/*
 * dw_go_gstate.fd when the chain did not read (a user page the probe could not touch: a
 * uprobe cannot fault one in): apart from -1, which the chain read from a closed conn
 * (internal/poll's destroy sets Sysfd to -1: a Write or Read entered after Close, as
 * HTTP/2's frame writers can at shutdown), which is no fault.
 */
#define DW_GO_FD_UNREAD (-2)

/*
 * A Go probe's attach cookie: the layout's index (go_layouts) in its low 4 bits. A deferred-exit
 * probe's (dw_go_tls_{read,write}_defer, dw_go_tls_read_done; user/logic/discovery/godefer.h) also
 * holds the function's first result's offset in its frame (bits 4-15), where it keeps its
 * arguments (16-27; 0: not known, dw_go_tls_read_done only), the function's size (28-43) and its
 * start less the probe's address (44-63, signed): enough to tell its own exits' calls of the
 * closure from the runtime's and to read n and the arguments, with no per-file map.
 */
#define DW_GO_CK_LAYOUT(c) ((__u32)((c) & 0xf))
#define DW_GO_CK_RESULT(c) ((__u32)(((c) >> 4) & 0xfff))
#define DW_GO_CK_SPILL(c) ((__u32)(((c) >> 16) & 0xfff))
#define DW_GO_CK_SIZE(c) ((__u32)(((c) >> 28) & 0xffff))
#define DW_GO_CK_LO(c) ((__s64)(c) >> 44)
#define DW_GO_CK(layout, result, spill, size, lo)                                                  \
	((__u64)(layout) | ((__u64)(result) << 4) | ((__u64)(spill) << 16) | ((__u64)(size) << 28) |     \
	 ((__u64)(lo) << 44))

/* user/logic/discovery/golayout.h's struct dw_go_fdchain, as the kernel reads it. */
struct dw_go_layout {
	__u32 valid;		/* 0: a slot user space has not filled; the probe reads nothing */
	__s32 conn_iface;	/* crypto/tls.Conn.conn (net.Conn: data word at +8) */
	__s32 conn_fd;		/* net.TCPConn -> net.conn.fd (*netFD) */
	__s32 pfd_sysfd;	/* net.netFD.pfd + internal/poll.FD.Sysfd */
};

struct dw_go_gkey {
	__u32 tgid;
	__u32 pad;
	__u64 g;		/* the goroutine's runtime.g address (R14) */
};

/* A goroutine's last Write or Read entry (its conn, fd and length) and its totals. */
struct dw_go_gstate {
	__s64 fd;
	__u64 conn;		/* the *tls.Conn */
	__u64 len;		/* the buffer's length (RCX) */
	__u64 writes;		/* Write entries of this goroutine */
	__u64 returns;		/* ... and returns, at its RETs */
	__u64 bytes_asked;	/* the lengths at entry, summed */
	__u64 bytes_written;	/* n (RAX) at return, summed */
	__u64 reads;		/* Read entries */
	__u64 read_returns;	/* ... and returns, at its RETs */
	__u64 bytes_read;	/* n (RAX) at Read's return, summed */
	__u64 write_len;	/* the last Write's length: what a Write still inside it would write */
	/*
	 * An entry seen while the goroutine is already inside (no RET since): the kernel ran the
	 * entry probe twice (a signal, Go's preemption SIGURG among them, during the out-of-line
	 * single-step restarts the probed instruction), or a return went unseen. Counted apart,
	 * so entries less repeats are the calls; the call model counts at the RETs.
	 */
	__u64 write_repeats, read_repeats;
	__u32 in_write, in_read;
	/* the call model's (bpf/tls/go/gotls.bpf.c): the last entry's buffer, time, thread and socket */
	__u64 buf;		/* RBX: the slice's data */
	__u64 start_ns;
	__u64 tid;		/* the pid_tgid whose ssl_threads mark the entry set */
	__u64 sk;		/* the fd's struct sock, 0 if it did not read */
	__u32 tx_fed;		/* this Write's bytes went to the call model at its entry */
	__u32 pad;
};

#endif
