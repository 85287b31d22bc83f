// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What this kernel can run, decided before anything is loaded: the
 * backend, the programs to load and why each missing one is missing, and
 * what --without takes away. Apart from loader.c because it only asks
 * (BTF, tracefs) and marks programs not to load; loader.c then loads,
 * pins and attaches what is left.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "depwatch.skel.h"
#include "kernel/bpfstate.h"
#include "kernel/hooks.h"
#include "host/log.h"
#include "kernel/probe.h"
#include "kernel/sockdiag.h"

/* --without NAME: the daemon behaves as on a kernel lacking that hook (tests, and a way out of a broken one). */
bool dw_bpf_withheld(const struct dw_bpf *b, const char *hook)
{
	for (const char *const *w = b->without; w && *w; w++)
		if (!strcmp(*w, hook))
			return true;
	return false;
}

bool dw_tls_supported(char *why, size_t len)
{
	/* the uprobe PMU: links that go with their fd, so a killed daemon leaves none behind */
	if (access("/sys/bus/event_source/devices/uprobe/type", F_OK)) {
		snprintf(why, len, "this kernel has no uprobe PMU (/sys/bus/event_source/devices/uprobe: "
			 "CONFIG_UPROBE_EVENTS, Linux 4.17+): TLS is timed as records");
		return false;
	}
	return true;
}

/* Appended to "this kernel lacks X" when the lack is --without's doing. */
static const char *simulated(const struct dw_bpf *b, const char *hook)
{
	return dw_bpf_withheld(b, hook) ? " (simulated by --without)" : "";
}

/*
 * Checks every --without name against the backend that runs and writes the
 * one line the daemon logs about them; fails on a name that is no hook of
 * this backend (a typo must not look like a kernel that lacks nothing).
 */
static int check_without(struct dw_bpf *b)
{
	size_t off = 0, len = sizeof(b->without_line);
	bool known;

	for (const char *const *w = b->without; w && *w; w++) {
		const char *loss = dw_hook_loss(b->backend, *w, &known);

		/* without sock_send_length or sock_recv_length the probe fell back to syscalls */
		if (!known && b->backend == DW_BACKEND_SYSCALLS && !strncmp(*w, "sock_", 5) &&
		    strstr(b->backend_why, *w)) {
			known = true;
			loss = "the syscalls backend runs instead of sock (see its support matrix)";
		}
		if (!known) {
			dw_err("--without %s: not a hook of the %s backend (`depwatch run --without list` lists them)",
			       *w, dw_backend_name(b->backend));
			return -EINVAL;
		}
		if (!loss)
			continue;	/* the probe refuses to run with its own error */
		if (off < len)
			off += snprintf(b->without_line + off, len - off, "%s%s: %s", off ? "; " : "", *w, loss);
	}
	if (off && off < len)
		snprintf(b->without_line + off, len - off, "; everything else works");
	return 0;
}

static bool kernel_has_tracepoint(const struct btf *vmlinux, const char *tp)
{
	char name[96];

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	return btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF) > 0;
}

/* A classic tracepoint under tracefs (libbpf attaches through it), wherever tracefs is mounted. */
static bool kernel_has_syscall_tracepoint(const char *event)
{
	static const char *const roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char path[160];

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		snprintf(path, sizeof(path), "%s/events/syscalls/%s", roots[i], event);
		if (!access(path, F_OK))
			return true;
	}
	return false;
}

void dw_bpf_no_autoload(struct dw_bpf *b, const char *name)
{
	bpf_program__set_autoload(bpf_object__find_program_by_name(b->skel->obj, name), false);
}

/* The sock backend when the kernel has its tracepoints, unless --backend says otherwise. */
static void choose_backend(struct dw_bpf *b, const struct btf *vmlinux, const char *want)
{
	const char *missing = NULL;

	if (!kernel_has_tracepoint(vmlinux, "sock_send_length") ||
	    dw_bpf_withheld(b, "sock_send_length"))
		missing = "sock_send_length";
	else if (!kernel_has_tracepoint(vmlinux, "sock_recv_length") ||
		 dw_bpf_withheld(b, "sock_recv_length"))
		missing = "sock_recv_length";

	if (want && !dw_backend_parse(want, &b->backend)) {
		snprintf(b->backend_why, sizeof(b->backend_why), "forced by --backend");
		return;
	}
	b->backend = missing ? DW_BACKEND_SYSCALLS : DW_BACKEND_SOCK;
	snprintf(b->backend_why, sizeof(b->backend_why), "kernel %s %s%s", missing ? "lacks" : "has",
		 missing ? missing : "sock_send_length", missing ? simulated(b, missing) : "");
}

/* The syscalls backend's tracepoints; fails when a required one is missing. */
static int probe_syscalls(struct dw_bpf *b)
{
	char enter[64], exit[64], hook[64];
	int err = 0;

	for (size_t i = 0; i < dw_nsyscall_specs; i++) {
		const struct dw_syscall_spec *spec = &dw_syscall_specs[i];
		struct dw_prog_status *ps = &b->progs[b->nprogs++];

		ps->name = spec->enter;
		ps->exit = spec->exit;
		ps->hook = spec->name;
		ps->required = spec->required;
		ps->syscall = true;
		snprintf(enter, sizeof(enter), "sys_enter_%s", spec->name);
		snprintf(exit, sizeof(exit), "sys_exit_%s", spec->name);
		snprintf(hook, sizeof(hook), "syscalls/%s", spec->name);
		if (dw_bpf_withheld(b, hook)) {
			snprintf(ps->why, sizeof(ps->why), "absent (--without): calls made with %s() are not seen",
				 spec->name);
			if (spec->required) {
				dw_err("the syscalls backend cannot run without %s (simulated by --without): "
				       "it is how most programs send and receive", hook);
				err = -ENOTSUP;
			}
			continue;
		}
		if (kernel_has_syscall_tracepoint(enter) && kernel_has_syscall_tracepoint(exit))
			continue;
		snprintf(ps->why, sizeof(ps->why), "no tracepoint syscalls/%s in tracefs", enter);
		if (spec->required) {
			dw_err("the syscalls backend needs the tracepoint syscalls/%s: not under "
			       "/sys/kernel/tracing/events or /sys/kernel/debug/tracing/events "
			       "(tracefs not mounted, or a kernel without CONFIG_FTRACE_SYSCALLS)",
			       enter);
			err = -ENOTSUP;
		}
	}
	return err;
}

/* A program another one stands in for, which is loaded: it is not needed (probe.h). */
bool dw_bpf_superseded(const struct dw_bpf *b, const char *name)
{
	for (int i = 0; i < b->nprogs; i++) {
		const struct dw_prog_status *ps = &b->progs[i];

		for (size_t j = 0; j < dw_nprog_specs; j++)
			if (!strcmp(dw_prog_specs[j].name, ps->name) && dw_prog_specs[j].instead_of &&
			    !strcmp(dw_prog_specs[j].instead_of, name) && !ps->why[0])
				return true;
	}
	return false;
}

/*
 * How connections are aborted: dw_abort with the bpf_sock_destroy kfunc
 * (Linux 6.5+); else dw_abort_list, the daemon destroying through
 * sock_diag's SOCK_DESTROY where the kernel has it (CONFIG_INET_DIAG_DESTROY:
 * Debian's 6.1 does); else not at all, and b->abort_why says why. Each can
 * be withheld (--without) to run the next.
 */
static void probe_abort(struct dw_bpf *b, const struct btf *vmlinux)
{
	bool kfunc = btf__find_by_name_kind(vmlinux, "bpf_sock_destroy", BTF_KIND_FUNC) > 0;
	char why[120] = "";

	b->abort_path = DW_ABORT_PATH_NONE;
	if (dw_bpf_withheld(b, HOOK_ABORT))
		snprintf(b->abort_why, sizeof(b->abort_why), "absent (--without)");
	else if (kfunc && !dw_bpf_withheld(b, HOOK_ABORT_KFUNC))
		b->abort_path = DW_ABORT_PATH_KFUNC;
	else if (dw_bpf_withheld(b, HOOK_ABORT_DIAG))
		snprintf(why, sizeof(why), "sock_diag absent (--without)");
	else if (!dw_sockdiag_probe(why, sizeof(why)))
		b->abort_path = DW_ABORT_PATH_SOCK_DIAG;
	if (!b->abort_why[0] && b->abort_path == DW_ABORT_PATH_NONE)
		snprintf(b->abort_why, sizeof(b->abort_why), "%s, and %s",
			 kfunc ? "kfunc bpf_sock_destroy absent (--without)" :
				 "this kernel has no kfunc bpf_sock_destroy (Linux 6.5+)",
			 why);
	if (b->abort_path != DW_ABORT_PATH_KFUNC)
		dw_bpf_no_autoload(b, "dw_abort");
	if (b->abort_path != DW_ABORT_PATH_SOCK_DIAG)
		dw_bpf_no_autoload(b, "dw_abort_list");
}

/* Picks the backend and the tracing programs to load; fails when a required one cannot be. */
int dw_bpf_probe(struct dw_bpf *b, const char *want)
{
	struct btf *vmlinux = btf__load_vmlinux_btf();
	int err = 0;

	if (!vmlinux) {
		dw_err("cannot read the kernel's BTF (/sys/kernel/btf/vmlinux): %s", strerror(errno));
		return -ENOENT;
	}
	choose_backend(b, vmlinux, want);
	err = check_without(b);
	if (err) {
		btf__free(vmlinux);
		return err;
	}
	for (size_t i = 0; i < dw_nprog_specs; i++) {
		const struct dw_prog_spec *spec = &dw_prog_specs[i];
		struct dw_prog_status *ps;

		if (!(spec->backends & (1u << b->backend)) || dw_bpf_superseded(b, spec->name)) {
			dw_bpf_no_autoload(b, spec->name);
			continue;
		}
		ps = &b->progs[b->nprogs++];
		ps->name = spec->name;
		ps->hook = spec->tracepoint;
		ps->required = spec->required;
		if (kernel_has_tracepoint(vmlinux, spec->tracepoint) &&
		    !dw_bpf_withheld(b, spec->tracepoint))
			continue;
		dw_bpf_no_autoload(b, spec->name);
		snprintf(ps->why, sizeof(ps->why), "%s%s%s",
			 dw_bpf_withheld(b, spec->tracepoint) ? "absent (--without)" : "tracepoint not in this kernel",
			 spec->without ? ": " : "", spec->without ? spec->without : "");
		if (spec->required && spec->backends == DW_ON_SOCK) {
			dw_err("this kernel lacks the tracepoint %s%s, which the sock backend needs "
			       "(Linux 6.3+); --backend syscalls does without",
			       spec->tracepoint, simulated(b, spec->tracepoint));
			err = -ENOTSUP;
		} else if (spec->required) {
			dw_err("this kernel lacks the tracepoint %s%s, which depwatch needs: it is how "
			       "connects and closes are seen",
			       spec->tracepoint, simulated(b, spec->tracepoint));
			err = -ENOTSUP;
		}
	}
	probe_abort(b, vmlinux);
	btf__free(vmlinux);
	if (!b->max_conns)
		b->max_conns = bpf_map__max_entries(b->skel->maps.pending);
	bpf_map__set_max_entries(b->skel->maps.pending, b->max_conns);
	bpf_map__set_max_entries(b->skel->maps.pending_free, b->max_conns);
	b->skel->rodata->dw_max_pend = b->max_conns;
	if (b->backend == DW_BACKEND_SYSCALLS) {
		if (!err)
			err = probe_syscalls(b);
		bpf_map__set_max_entries(b->skel->maps.conns_sk, b->max_conns);
	} else {
		for (size_t i = 0; i < dw_nsyscalls_only; i++)
			dw_bpf_no_autoload(b, dw_syscalls_only[i]);
		/* one set of maps: the syscalls backend's need no room here */
		bpf_map__set_max_entries(b->skel->maps.sys_calls, 1);
		bpf_map__set_max_entries(b->skel->maps.conns_sk, 1);
	}
	b->skel->rodata->dw_backend = b->backend;
	return err;
}
