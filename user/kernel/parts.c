// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The object's optional parts (parts.h): whether each is in the object
 * loader.c loads, and once the kernel refused one, the object without it.
 */
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "depwatch.skel.h"
#include "host/log.h"
#include "kernel/bpfstate.h"
#include "kernel/hooks.h"
#include "kernel/parts.h"
#include "kernel/probe.h"

/*
 * HTTP/2 off (h2_why the cause): no connection is walked as HTTP/2, and the
 * copy program, if it was to load, is not: its reason, the cause and its hook's loss.
 */
static void h2_off(struct dw_bpf *b, const char *cause)
{
	struct bpf_program *copy = b->skel->progs.dw_h2_copy;

	snprintf(b->h2_why, sizeof(b->h2_why), "%s", cause);
	b->skel->rodata->dw_h2_enabled = false;
	if (!bpf_program__autoload(copy))
		return;
	bpf_program__set_autoload(copy, false);
	for (int i = 0; i < b->nprogs; i++)
		if (!strcmp(b->progs[i].name, "dw_h2_copy"))
			dw_hook_off_why(b->progs[i].why, sizeof(b->progs[i].why), HOOK_H2_COPY, cause);
}

/*
 * The stream layer (bpf/h2/streams.bpf.h) needs to see both directions: in the
 * sock backend the send program with the msghdr (tcp_sendmsg_locked) and
 * the receive program (dw_h2_copy). Without either, or when the kernel
 * refused dw_h2_copy (it needs bpf_dynptr_from_skb in tracing programs,
 * Linux 6.14+: the table of parts below), no connection is walked as
 * HTTP/2 and h2_why says why.
 */
static void decide_h2(struct dw_bpf *b)
{
	b->h2_why[0] = 0;
	/* x86-64: dw_recv reads the bytes (user/kernel/hooks.c, DW_RECV_READS_H2), the copy program is not loaded */
	b->skel->rodata->dw_h2_at_read = b->backend == DW_BACKEND_SOCK && dw_bpf_superseded(b, "dw_h2_copy");
	if (b->backend == DW_BACKEND_SOCK && !bpf_program__autoload(b->skel->progs.dw_sendmsg))
		h2_off(b, "no send program that sees the bytes (tcp_sendmsg_locked)");
	else if (b->skel->rodata->dw_h2_at_read && dw_bpf_withheld(b, HOOK_H2_COPY))
		h2_off(b, "no receive reader (skb_copy_datagram_iovec absent (--without))");
	else if (!b->skel->rodata->dw_h2_at_read && b->backend == DW_BACKEND_SOCK &&
		 !bpf_program__autoload(b->skel->progs.dw_h2_copy))
		h2_off(b, "no receive program (skb_copy_datagram_iovec)");
	b->skel->rodata->dw_h2_enabled = !b->h2_why[0];
}

/* TLS off (tls_why says why): the dw_ssl_* and dw_go_* uprobes, their walker and the exec watch do not load. */
static void tls_off(struct dw_bpf *b)
{
	struct bpf_program *prog;

	b->tls_on = false;
	b->skel->rodata->dw_tls_on = false;
	bpf_object__for_each_program(prog, b->skel->obj)
		if (!strncmp(bpf_program__name(prog), "dw_ssl_", 7) ||
		    !strncmp(bpf_program__name(prog), "dw_go_", 6))
			bpf_program__set_autoload(prog, false);
	bpf_program__set_autoload(b->skel->progs.dw_tls_walk, false);
	bpf_program__set_autoload(b->skel->progs.dw_tls_exec, false);
}

/*
 * TLS (issue 32): the dw_ssl_* uprobes and the exec watch load only when
 * they will be attached (dw_tls_on tells the BPF side, before the load):
 * not with --without tls, not on a kernel without the uprobe PMU, not once
 * the kernel refused them (the table of parts below).
 */
static void decide_tls(struct dw_bpf *b)
{
	b->tls_why[0] = 0;
	if (dw_bpf_withheld(b, HOOK_TLS))
		dw_hook_off_why(b->tls_why, sizeof(b->tls_why), HOOK_TLS, NULL);
	else
		dw_tls_supported(b->tls_why, sizeof(b->tls_why));
	b->tls_on = !b->tls_why[0];
	b->skel->rodata->dw_tls_on = b->tls_on;
	if (!b->tls_on)
		tls_off(b);
}

/*
 * DNS over UDP (issue 35) off: the sock backend's query program and the
 * sweep not loaded, and the DNS branches of the sock and syscalls programs
 * cut at load (dw_dns_on): none of it verified.
 */
static void dns_off(struct dw_bpf *b)
{
	b->skel->rodata->dw_dns_on = false;
	bpf_program__set_autoload(b->skel->progs.dw_dns_send, false);
	bpf_program__set_autoload(b->skel->progs.dw_dns_sweep, false);
}

/* DNS's close path (issue 48) off: the release program not loaded. */
static void dns_close_off(struct dw_bpf *b)
{
	b->dns_close_on = false;
	b->skel->rodata->dw_dns_close_on = false;
	bpf_program__set_autoload(b->skel->progs.dw_dns_release, false);
}

/*
 * --without dns: none of it loads; the close path with the rest of DNS
 * only. Where DNS reads (issue 46): the sock backend a query at
 * sock_send_length (dw_dns_send, or dw_send's UDP branch where dw_send is
 * the TCP send program) and an answer in sk_data_ready, so without
 * sk_data_ready (before Linux 6.6, or withheld) it has no answers and is
 * off; the syscalls backend in its system calls' own programs.
 */
static void decide_dns(struct dw_bpf *b)
{
	b->skel->rodata->dw_dns_on = true;
	/* where the TCP send program is dw_send (no tcp_sendmsg_locked), it reads the queries too */
	if (b->backend != DW_BACKEND_SOCK || bpf_program__autoload(b->skel->progs.dw_send))
		bpf_program__set_autoload(b->skel->progs.dw_dns_send, false);
	if (dw_bpf_withheld(b, HOOK_DNS) ||
	    (b->backend == DW_BACKEND_SOCK && !bpf_program__autoload(b->skel->progs.dw_data_ready)))
		dns_off(b);
	b->dns_close_on = true;
	b->skel->rodata->dw_dns_close_on = true;
	if (!b->skel->rodata->dw_dns_on || dw_bpf_withheld(b, HOOK_DNS_CLOSE))
		dns_close_off(b);
}

/*
 * The optional parts of the object, in the order a refusal drops them
 * (fail-open, issue 32; enum dw_part): when the kernel refuses the object,
 * the first part still in it goes, the object loads again, and so on down
 * the table; only a refusal of what is left fails the start. Each part:
 * its programs (whether it is in the object being loaded), how it is left
 * out of the next (after the probe, before the load), and its reason,
 * "CAUSE: LOSS" with the loss of its hook looked up by name (hooks.c).
 */
struct dw_load_part {
	const char *what;	/* in the warning: "the kernel refused the BPF object with WHAT" */
	const char *them;	/* "loading it without THEM" */
	const char *progs;	/* it is in the object while a program whose name begins so is to load */
	const char *hook;	/* whose loss the reason names; NULL: cause is the whole reason */
	const char *cause;
	void (*off)(struct dw_bpf *b, const struct dw_load_part *p);	/* leaves it out */
};

/* Whether a program whose name begins with prefix is to load. */
static bool part_in(const struct dw_bpf *b, const char *prefix)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, b->skel->obj)
		if (!strncmp(bpf_program__name(prog), prefix, strlen(prefix)) && bpf_program__autoload(prog))
			return true;
	return false;
}

/* A part's reason: "CAUSE: LOSS", the loss its hook's. */
static void part_why(const struct dw_load_part *p, char *buf, size_t len)
{
	if (p->hook)
		dw_hook_off_why(buf, len, p->hook, p->cause);
	else
		snprintf(buf, len, "%s", p->cause);
}

static void tls_refused(struct dw_bpf *b, const struct dw_load_part *p)
{
	part_why(p, b->tls_why, sizeof(b->tls_why));
	tls_off(b);
}

static void h2_refused(struct dw_bpf *b, const struct dw_load_part *p)
{
	h2_off(b, p->cause);
}

/* The close path's and DNS's reasons are given where they attach (attach_dns). */
static void dns_close_refused(struct dw_bpf *b, const struct dw_load_part *p)
{
	(void)p;
	dns_close_off(b);
}

static void dns_refused(struct dw_bpf *b, const struct dw_load_part *p)
{
	(void)p;
	dns_off(b);
	dns_close_off(b);
}

static void abort_refused(struct dw_bpf *b, const struct dw_load_part *p)
{
	snprintf(b->abort_why, sizeof(b->abort_why), "%s", p->cause);
	b->abort_path = DW_ABORT_PATH_NONE;
	dw_bpf_no_autoload(b, "dw_abort");
	dw_bpf_no_autoload(b, "dw_abort_list");
}

/* The four cgroup programs; their reason is given where they attach (attach_enforce). */
static void enforce_refused(struct dw_bpf *b, const struct dw_load_part *p)
{
	(void)p;
	bpf_program__set_autoload(b->skel->progs.dw_enforce4, false);
	bpf_program__set_autoload(b->skel->progs.dw_enforce6, false);
	bpf_program__set_autoload(b->skel->progs.dw_enforce_send4, false);
	bpf_program__set_autoload(b->skel->progs.dw_enforce_send6, false);
}

static const struct dw_load_part load_parts[DW_NPARTS] = {
	/* the newest and most optional part, the first to go */
	[DW_PART_TLS] = { "the TLS uprobes", "them", "dw_ssl_", HOOK_TLS,
			  HOOK_TLS_REFUSED, tls_refused },
	/* h2_why, the cause alone; the program's own reason adds its hook's loss */
	[DW_PART_H2] = { "the HTTP/2 receive program", "it", "dw_h2_copy", HOOK_H2_COPY,
			 "the kernel refused the receive program (bpf_dynptr_from_skb in tracing: Linux 6.14+)",
			 h2_refused },
	/* DNS's close path (issue 48), then DNS (issue 35): each refusal keeps what it can */
	[DW_PART_DNS_CLOSE] = { "the DNS close program", "it", "dw_dns_release", HOOK_DNS_CLOSE,
				"the kernel refused the program", dns_close_refused },
	[DW_PART_DNS] = { "the DNS programs", "them", "dw_dns_sweep", HOOK_DNS,
			  "the kernel refused the program", dns_refused },
	/* abort_why, the cause alone (status' abort); the start line adds sock_destroy's loss */
	[DW_PART_ABORT] = { "the abort iterator", "it", "dw_abort", HOOK_ABORT,
			    "the kernel refused the program", abort_refused },
	/* the four cgroup hooks (bpf_set_retval is 5.18+) share one reason, the whole text here */
	[DW_PART_ENFORCE] = { "the enforcement programs", "them", "dw_enforce", NULL,
			      "the kernel refused the program (enforcement needs Linux 5.18+): breakers are judged, not enforced",
			      enforce_refused },
};

bool dw_bpf_part_refused(const struct dw_bpf *b, enum dw_part part, char *buf, size_t len)
{
	if (!(b->refused & (1u << part)))
		return false;
	part_why(&load_parts[part], buf, len);
	return true;
}

void dw_bpf_parts_decide(struct dw_bpf *b)
{
	decide_dns(b);
	decide_h2(b);
	decide_tls(b);
	for (int i = 0; i < DW_NPARTS; i++)
		if (b->refused & (1u << i))
			load_parts[i].off(b, &load_parts[i]);
}

bool dw_bpf_part_drop(struct dw_bpf *b, int err)
{
	for (int i = 0; i < DW_NPARTS; i++) {
		const struct dw_load_part *p = &load_parts[i];

		if (!part_in(b, p->progs))
			continue;
		dw_warn("the kernel refused the BPF object with %s (%s); loading it without %s", p->what,
			strerror(-err), p->them);
		b->refused |= 1u << i;
		return true;
	}
	return false;
}
