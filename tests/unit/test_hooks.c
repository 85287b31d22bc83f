// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/kernel/hooks.c: every optional hook explains itself with its own loss, looked up by
 * name (issue 47: the TLS hook's reason was read by row, [6], which DNS's rows had
 * made the sendmsg4 row's).
 */
#include "dwtest.h"

#include "kernel/hooks.h"

#define TLS_LOSS "TLS libraries get no uprobes: calls over TLS are timed from their records (doc/tls.md)"

static void test_every_row_by_its_name(void **state)
{
	(void)state;
	for (size_t i = 0; i < dw_nother_hooks; i++) {
		bool known = false;

		assert_ptr_equal(dw_other_hook_loss(dw_other_hooks[i].name), dw_other_hooks[i].without);
		assert_ptr_equal(dw_hook_loss(DW_BACKEND_SYSCALLS, dw_other_hooks[i].name, &known),
				 dw_other_hooks[i].without);
		assert_true(known);
		/* names are unique: a lookup by name finds this row and no other */
		for (size_t k = 0; k < i; k++)
			assert_string_not_equal(dw_other_hooks[k].name, dw_other_hooks[i].name);
	}
	assert_null(dw_other_hook_loss("no/such_hook"));
}

/* The whole texts the start line and status give: TLS's own, withheld and refused. */
static void test_tls_names_its_own_reason(void **state)
{
	char why[200];

	(void)state;
	assert_string_equal(dw_other_hook_loss(HOOK_TLS), TLS_LOSS);
	dw_hook_off_why(why, sizeof(why), HOOK_TLS, NULL);
	assert_string_equal(why, "absent (--without): " TLS_LOSS);
	/* the cause the loader's table of parts gives (user/kernel/parts.c), the whole text written out */
	dw_hook_off_why(why, sizeof(why), HOOK_TLS, HOOK_TLS_REFUSED);
	assert_string_equal(why, "the kernel refused the TLS uprobe programs: " TLS_LOSS);
}

/* The other hooks the loader explains with dw_hook_off_why: each its own text. */
static void test_the_loaders_other_reasons(void **state)
{
	char why[320];

	(void)state;
	dw_hook_off_why(why, sizeof(why), HOOK_ADOPT, NULL);
	assert_string_equal(why, "absent (--without): connections open before the start are not watched, only new ones");
	dw_hook_off_why(why, sizeof(why), HOOK_ABORT, "attach failed: Operation not permitted");
	assert_string_equal(why, "attach failed: Operation not permitted: enforce = abort falls back to connect, "
			    "abort_after aborts nothing");
	dw_hook_off_why(why, sizeof(why), HOOK_SENDMSG4, NULL);
	assert_string_equal(why, "absent (--without): IPv4 DNS queries sent on unconnected UDP sockets are not "
			    "refused while a resolver's breaker is open");
	dw_hook_off_why(why, sizeof(why), HOOK_DNS, "the kernel refused the program");
	assert_string_equal(why, "the kernel refused the program: DNS queries over UDP are not calls");
	/* the close path (issue 48): refused on its own, DNS kept */
	dw_hook_off_why(why, sizeof(why), HOOK_DNS_CLOSE, "the kernel refused the program");
	assert_string_equal(why, "the kernel refused the program: a DNS query whose socket closes unanswered "
			    "fails at its dns_timeout, not at the close");
	dw_hook_off_why(why, sizeof(why), HOOK_CONNECT6, NULL);
	assert_string_equal(why, "absent (--without): IPv6 connects are not refused while a breaker is open "
			    "(breakers are still judged)");
	/* a tracepoint of dw_prog_specs by its name too: the HTTP/2 copy program's refusal (parts.c) */
	dw_hook_off_why(why, sizeof(why), HOOK_H2_COPY,
			"the kernel refused the receive program (bpf_dynptr_from_skb in tracing: Linux 6.14+)");
	assert_string_equal(why, "the kernel refused the receive program (bpf_dynptr_from_skb in tracing: Linux 6.14+): "
			    "HTTP/2 calls are not timed per stream: h2c connections are timed as multiplexed bursts");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_row_by_its_name),
		cmocka_unit_test(test_tls_names_its_own_reason),
		cmocka_unit_test(test_the_loaders_other_reasons),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
