// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * STUB of the TLS uprobes (issue 32; the real programs are wt-tlsbpf's and
 * replace this file). It holds the contract the user side relies on: the
 * program names, their sections, dw_tls_on, and tls_writes counted at every
 * SSL_write and SSL_write_ex entry, so that the discovery (user/tls/) can be
 * tested alone. The programs have no target in their section: the daemon
 * attaches them per ELF file (user/tls/attach.c), never the skeleton.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "conn.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the daemon before load exactly when these programs will be attached. */
const volatile __u32 dw_tls_on = 0;

SEC("uprobe")
int BPF_KPROBE(dw_ssl_write)
{
	global_count(G_tls_writes);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(dw_ssl_write_ret)
{
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(dw_ssl_write_ex)
{
	global_count(G_tls_writes);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(dw_ssl_write_ex_ret)
{
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(dw_ssl_read)
{
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(dw_ssl_read_ret)
{
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(dw_ssl_read_ex)
{
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(dw_ssl_read_ex_ret)
{
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(dw_ssl_free)
{
	return 0;
}
