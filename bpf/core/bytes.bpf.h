/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * An event's bytes, as a hook sees them: where they are (a user buffer, an
 * iovec array in user or kernel memory, an skb), how many, and the TCP
 * sequence number of the first. The layers above TCP read a send's or a
 * receive's bytes through these (the stream layer's walker, h2/; the
 * answers' status lines and the goodbyes, answer/); the programs fill them
 * (core/sock.bpf.c's msghdr, core/syscalls.bpf.c's buffers, the read's
 * end in core/readend.bpf.h). Named h2_ for their first reader, the
 * stream layer.
 */
#ifndef DEPWATCH_BYTES_BPF_H
#define DEPWATCH_BYTES_BPF_H

/* The kernel's skbs in tracing programs (Linux 6.14+ for tp_btf): the receive side's bytes. */
extern int bpf_dynptr_from_skb(struct __sk_buff *skb, __u64 flags,
			       struct bpf_dynptr *ptr__uninit) __ksym __weak;

enum h2_way { H2_TX = 0, H2_RX = 1 };

/* Where an event's bytes are. */
enum h2_src {
	H2_SRC_USER = 0,	/* one user buffer */
	H2_SRC_IOV_USER = 1,	/* an iovec array in user memory (the syscalls backend) */
	H2_SRC_IOV_KERNEL = 2,	/* an iovec array the kernel copied in (a msghdr's iov_iter) */
	H2_SRC_SKB = 3,		/* an skb (struct h2_walk.skb) */
};

/* An event's bytes: what a hook knows of them. */
struct h2_bytes {
	__u64 addr;	/* user address of the bytes (H2_SRC_USER), or of the iovec array */
	__u32 nseg;	/* iovecs in the array */
	__u32 off;	/* the first byte's offset in the first iovec, or in the skb */
	__u32 len;	/* bytes in the event */
	__u32 seq;	/* TCP sequence number of its first byte */
	__u8 kind;	/* enum h2_src */
};

#endif /* DEPWATCH_BYTES_BPF_H */
