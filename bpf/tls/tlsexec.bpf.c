// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The TLS discovery's one kernel part (issue 32): every exec writes its
 * process's id into a ring buffer, so the daemon scans the new program's
 * maps for TLS libraries within a second of its start (user/discovery/tls/). One
 * record per exec, never per call; a full ring is counted (tls_exec_lost).
 * Apart from bpf/tls/ssl.bpf.c, the uprobes, which another engineer owns.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "core/maps.bpf.h"
#include "core/conn.bpf.h"
#include "tls/maps.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tp_btf/sched_process_exec")
int BPF_PROG(dw_tls_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct dw_tls_exec *e = bpf_ringbuf_reserve(&tls_execs, sizeof(*e), 0);

	if (!e) {
		global_count(G_tls_exec_lost);
		return 0;
	}
	e->pid = bpf_get_current_pid_tgid() >> 32;
	e->pad = 0;
	bpf_ringbuf_submit(e, 0);
	return 0;
}
