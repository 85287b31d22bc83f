/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * TLS's maps (tls/): threads inside SSL calls, the links that tie a
 * session to its connection (a copy of its struct dw_conn: core/conn.bpf.h
 * comes first), the candidates and ties of memory BIOs and Go, HTTP/2
 * inside TLS, the walker's tail call and the exec ring of the discovery;
 * __weak, one set for all programs (core/maps.bpf.h says how). Go's own
 * are tls/go/maps.bpf.h.
 */
#ifndef DEPWATCH_TLS_MAPS_BPF_H
#define DEPWATCH_TLS_MAPS_BPF_H

#include "h2/h2.h"

#define DW_TLS_LINKS_MAX 16384	/* TLS sessions tied to a connection at once */
#define DW_SSL_THREADS_MAX 16384	/* threads with an SSL call (LRU: the last one is kept) */

/*
 * Set by user space before load, exactly when the TLS uprobes will be attached (OpenSSL's,
 * tls/ssl.bpf.c, and Go's, tls/go/gotls.bpf.c): the TLS contract. Every program that includes
 * this has it (__weak: one after the link).
 */
const volatile __u32 dw_tls_on __weak = 0;

/* dw_ssl_thread.op */
#define DW_SSL_WRITE 1
#define DW_SSL_READ 2
#define DW_SSL_SHAKE 3
#define DW_SSL_GO 4	/* Go's crypto/tls Write or Read (tls/go/gotls.bpf.c): sk says which socket */

/* A thread's SSL call: inside it (inside), or its last one (done_ns). */
struct dw_ssl_thread {
	__u64 ssl;
	__u64 start_ns;		/* when the call began */
	__u64 done_ns;		/* when it returned; 0 while inside */
	__u64 buf;		/* the plaintext's buffer */
	__u64 len_at;		/* the _ex forms: where they put the length done (size_t *) */
	__u8 op;		/* DW_SSL_* */
	__u8 inside;
	__u8 pad[6];
	__u32 len;		/* SSL_write: the bytes given */
	__u32 pad2;
	__u64 sk;		/* DW_SSL_GO: the socket of the conn's fd; only a send on it ties */
};

struct dw_tls_key {
	__u64 ssl;
	__u32 tgid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, DW_SSL_THREADS_MAX);
	__type(key, __u64);
	__type(value, struct dw_ssl_thread);
} ssl_threads SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DW_TLS_LINKS_MAX);
	__type(key, struct dw_tls_key);
	__type(value, struct dw_conn);
} tls_links SEC(".maps") __weak;

/* A thread's candidate connection (tls_rx_candidate()): a copy, tls_sk its socket, last_ns when. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, DW_SSL_THREADS_MAX);
	__type(key, __u64);
	__type(value, struct dw_conn);
} ssl_cands SEC(".maps") __weak;

/*
 * The syscalls backend's read-side candidate (memory BIOs read outside SSL
 * calls: grpc-core's client): the TLS socket no session owns that the
 * thread last entered a receive on, noted at the enter (tls_sys_rx_note()),
 * where there is room; the thread's next SSL call within DW_TLS_LATE_NS
 * ties it (ssl_take_sys_cand() in tls/ssl.bpf.c), writing the connection's
 * own entry in conns_sk, which the uprobes can look up by the socket's
 * address: no exit program has anything more to do.
 */
struct dw_tls_rx {
	__u64 sk;
	__u64 ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, DW_SSL_THREADS_MAX);
	__type(key, __u64);
	__type(value, struct dw_tls_rx);
} tls_sys_rx SEC(".maps") __weak;

/* A socket an SSL call tied its session to, for the socket's next send to take over (tls_link()). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DW_TLS_LINKS_MAX);
	__type(key, __u64);
	__type(value, struct dw_tls_key);
} tls_owner SEC(".maps") __weak;

/*
 * Go's sessions by socket (tls/go/gotls.bpf.c): crypto/tls.(*Conn).handshakeContext's entry,
 * while its session is tied to nothing, names the struct sock of the conn's fd here. A
 * goroutine that parks in the handshake (a server waiting for the ClientHello) resumes on
 * any thread, whose send carries no mark of its: the socket's next send, whichever thread
 * makes it, ties the session by this entry (tls_link()). An LRU: a session over a socket
 * that never sends on TCP (a unix socket's fd) leaves an entry nothing takes; TCP_CLOSE
 * removes the rest (tls_owner_forget()).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, DW_TLS_LINKS_MAX);
	__type(key, __u64);
	__type(value, struct dw_tls_key);
} tls_go_owner SEC(".maps") __weak;

/*
 * Set once a Go handshake named a socket: until then no send looks in tls_go_owner (a TLS
 * connection no session owns, an opaque process's, pays nothing for Go's tie).
 */
__u32 dw_go_owners __weak;

#define DW_TLS_H2_MAX 4096	/* HTTP/2-over-TLS sessions with stream state at once */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, DW_TLS_H2_MAX);
	__type(key, struct dw_tls_key);
	__type(value, struct dw_h2_conn);
} tls_h2 SEC(".maps") __weak;

/*
 * HTTP/2 inside TLS: the walk of a tied session's plaintext is one program,
 * dw_tls_walk (tls/walk.bpf.c), which OpenSSL's and Go's write and read
 * returns tail-call with their bytes in tls_jobs.
 */
/* A tied session's plaintext for the walker (dw_tls_walk): one per CPU, for one tail call. */
struct dw_tls_job {
	struct dw_tls_key key;
	__u64 addr;
	__u64 now;
	__u32 len;
	__u32 seq;	/* the direction's plaintext bytes before these */
	__u8 way;	/* enum h2_way */
	__u8 pad[7];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dw_tls_job);
} tls_jobs SEC(".maps") __weak;

/* [0]: dw_tls_walk, put there by user space after load (only when TLS is on: it is loaded then) */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} tls_walkers SEC(".maps") __weak;

/* One record per exec, the discovery's (tls/tlsexec.bpf.c). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, DW_TLS_EXEC_RING);
} tls_execs SEC(".maps") __weak;

#endif /* DEPWATCH_TLS_MAPS_BPF_H */
