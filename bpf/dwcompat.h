/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the pure headers (depwatch.h, bucket.h, addr.h, rows.h, h2.h) need
 * of their surroundings, so that the same source compiles into the BPF
 * object and into user space and its cmocka tests (a host build of the
 * call model's pure parts: tracing programs cannot be run with
 * BPF_PROG_RUN, so that is how their logic is tested).
 *
 * In the BPF build vmlinux.h and libbpf's bpf_helpers.h and bpf_endian.h,
 * included first, give the types, __always_inline, barrier_var() and
 * bpf_htonl(); on the host they come from here.
 */
#ifndef DEPWATCH_DWCOMPAT_H
#define DEPWATCH_DWCOMPAT_H

#ifdef __bpf__
#ifndef barrier
#define barrier() asm volatile("" ::: "memory")
#endif
#define dw_htonl(x) bpf_htonl(x)
#else
#include <linux/types.h>
#include <stdbool.h>
#include <arpa/inet.h>
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#ifndef barrier
#define barrier() __asm__ __volatile__("" ::: "memory")
#endif
#ifndef barrier_var
#define barrier_var(var) __asm__ __volatile__("" : "+r"(var))
#endif
#define dw_htonl(x) htonl(x)
#endif

/* The address families of struct dw_dest_key (the kernel's values). */
#define DW_AF_INET 2
#define DW_AF_INET6 10

#endif /* DEPWATCH_DWCOMPAT_H */
