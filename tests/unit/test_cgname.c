// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwtest.h"

#include "logic/callers/cgname.h"

/* A container id, and another: 64 lowercase hex digits. */
#define H1 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define H2 "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
/* H1 in capitals: not an id */
#define HU "0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF"
/* A pod UID as kubelet writes it under cgroupfs, as under systemd, and a static pod's */
#define UID "74c13223-5a00-11e9-b385-42010a80018d"
#define UIDU "74c13223_5a00_11e9_b385_42010a80018d"
#define STATIC "6a3c9e3f2b1d4e5f6a7b8c9d0e1f2a3b"
/* The systemd driver's burstable pods */
#define BURST "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"

static const struct {
	const char *path;
	enum dw_cg_kind kind;
	const char *name, *pod;
} cases[] = {
	{ "/system.slice/payments-api.service",
	  DW_CG_UNIT, "payments-api.service", "" },
	{ "system.slice/payments-api.service",
	  DW_CG_UNIT, "payments-api.service", "" },
	{ "/system.slice/foo.service/sub",
	  DW_CG_UNIT, "foo.service", "" },
	{ "/system.slice/foo.service/sub/deeper.scope",
	  DW_CG_UNIT, "foo.service", "" },
	{ "/init.scope",
	  DW_CG_UNIT, "init.scope", "" },
	{ "/system.slice",
	  DW_CG_UNIT, "system.slice", "" },
	{ "/system.slice/",
	  DW_CG_UNIT, "system.slice", "" },
	{ "//system.slice//cron.service",
	  DW_CG_UNIT, "cron.service", "" },
	{ "/system.slice/systemd-journald.socket",
	  DW_CG_UNIT, "systemd-journald.socket", "" },
	{ "/system.slice/boot.mount",
	  DW_CG_UNIT, "boot.mount", "" },
	{ "/system.slice/dev-sda2.swap",
	  DW_CG_UNIT, "dev-sda2.swap", "" },
	{ "/system.slice/system-getty.slice/getty@tty1.service",
	  DW_CG_UNIT, "getty@tty1.service", "" },
	{ "/user.slice/user-1000.slice/session-3.scope",
	  DW_CG_UNIT, "session-3 (user 1000)", "" },
	{ "/user.slice/user-0.slice/session-c12.scope",
	  DW_CG_UNIT, "session-c12 (user 0)", "" },
	{ "/session-3.scope",
	  DW_CG_UNIT, "session-3.scope", "" },
	{ "/user.slice/user-1000.slice",
	  DW_CG_UNIT, "user-1000.slice", "" },
	{ "/user.slice/user-1000.slice/user@1000.service",
	  DW_CG_UNIT, "user@1000.service", "" },
	{ "/user.slice/user-1000.slice/user@1000.service/init.scope",
	  DW_CG_UNIT, "init.scope (user 1000)", "" },
	{ "/user.slice/user-1000.slice/user@1000.service/app.slice/podman-4242.scope",
	  DW_CG_UNIT, "podman-4242.scope (user 1000)", "" },
	{ "/user.slice/user-1000.slice/user@1000.service/app.slice/gnome-terminal-server.service",
	  DW_CG_UNIT, "gnome-terminal-server.service (user 1000)", "" },
	{ "/user.slice/user-1000.slice/user@1000.service/app.slice",
	  DW_CG_UNIT, "app.slice (user 1000)", "" },
	{ "/user.slice/user-1000.slice/user@1000.service/app.slice/app-x.service/worker",
	  DW_CG_UNIT, "app-x.service (user 1000)", "" },
	{ "/system.slice/user@x.service",
	  DW_CG_UNIT, "user@x.service", "" },
	{ "/user.slice/user-abc.slice/session-3.scope",
	  DW_CG_UNIT, "session-3.scope", "" },
	{ "/system.slice/docker-" H1 ".scope",
	  DW_CG_CONTAINER, "docker:0123456789ab", "" },
	{ "/docker/" H1,
	  DW_CG_CONTAINER, "docker:0123456789ab", "" },
	{ "/system.slice/docker-" H1 ".scope/init",
	  DW_CG_CONTAINER, "docker:0123456789ab", "" },
	{ "/system.slice/containerd.service/" H2,
	  DW_CG_CONTAINER, "container:fedcba987654", "" },
	{ "/default/" H1,
	  DW_CG_CONTAINER, "container:0123456789ab", "" },
	{ "/system.slice/nerdctl-" H1 ".scope",
	  DW_CG_CONTAINER, "containerd:0123456789ab", "" },
	{ "/system.slice/cri-containerd-" H1 ".scope",
	  DW_CG_CONTAINER, "containerd:0123456789ab", "" },
	{ "/system.slice/crio-" H1 ".scope",
	  DW_CG_CONTAINER, "cri-o:0123456789ab", "" },
	{ "/system.slice/crio-conmon-" H1 ".scope",
	  DW_CG_CONTAINER, "cri-o-conmon:0123456789ab", "" },
	{ "/machine.slice/libpod-" H1 ".scope",
	  DW_CG_CONTAINER, "podman:0123456789ab", "" },
	{ "/machine.slice/libpod-" H1 ".scope/container",
	  DW_CG_CONTAINER, "podman:0123456789ab", "" },
	{ "/machine.slice/libpod-conmon-" H1 ".scope",
	  DW_CG_CONTAINER, "podman-conmon:0123456789ab", "" },
	{ "/libpod_parent/libpod-" H1,
	  DW_CG_CONTAINER, "podman:0123456789ab", "" },
	{ "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" H1 ".scope",
	  DW_CG_CONTAINER, "podman:0123456789ab", "" },
	{ "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" H1 ".scope/container",
	  DW_CG_CONTAINER, "podman:0123456789ab", "" },
	{ "/system.slice/docker-" H1 ".scope/docker/" H2,
	  DW_CG_CONTAINER, "docker:0123456789ab", "" },
	{ BURST UIDU ".slice/cri-containerd-" H1 ".scope",
	  DW_CG_POD, "pod:" UID "/containerd:0123456789ab", UID },
	{ "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UIDU
	  ".slice/crio-" H1 ".scope",
	  DW_CG_POD, "pod:" UID "/cri-o:0123456789ab", UID },
	{ "/kubepods.slice/kubepods-pod" UIDU ".slice/docker-" H1 ".scope",
	  DW_CG_POD, "pod:" UID "/docker:0123456789ab", UID },
	{ "/kubepods.slice/kubepods-pod" UIDU ".slice/crio-conmon-" H1 ".scope",
	  DW_CG_POD, "pod:" UID "/cri-o-conmon:0123456789ab", UID },
	{ BURST UIDU ".slice",
	  DW_CG_POD, "pod:" UID, UID },
	{ "/kubepods/besteffort/pod" UID "/" H1,
	  DW_CG_POD, "pod:" UID "/0123456789ab", UID },
	{ "/kubepods/burstable/pod" UID "/crio-" H1,
	  DW_CG_POD, "pod:" UID "/cri-o:0123456789ab", UID },
	{ "/kubepods/pod" UID "/" H2,
	  DW_CG_POD, "pod:" UID "/fedcba987654", UID },
	{ "/kubepods/pod" UID,
	  DW_CG_POD, "pod:" UID, UID },
	{ "/kubepods/burstable/pod" STATIC "/" H1,
	  DW_CG_POD, "pod:" STATIC "/0123456789ab", STATIC },
	{ BURST STATIC ".slice/cri-containerd-" H1 ".scope",
	  DW_CG_POD, "pod:" STATIC "/containerd:0123456789ab", STATIC },
	{ "/kubepods.slice/kubepods-burstable.slice",
	  DW_CG_UNIT, "kubepods-burstable.slice", "" },
	{ "/kubepods/burstable",
	  DW_CG_PATH, "/kubepods/burstable", "" },
	{ "/system.slice/docker-0123456789ab.scope",
	  DW_CG_UNIT, "docker-0123456789ab.scope", "" },
	{ "/system.slice/docker-" HU ".scope",
	  DW_CG_UNIT, "docker-" HU ".scope", "" },
	{ "/docker/" H1 "0",
	  DW_CG_PATH, "/docker/" H1 "0", "" },
	{ "/kubepods/podnot-a-uid/" H1,
	  DW_CG_CONTAINER, "container:0123456789ab", "" },
	{ "/kubepods/pod" UID "XX",
	  DW_CG_PATH, "/kubepods/pod" UID "XX", "" },
	{ "/",
	  DW_CG_PATH, "/", "" },
	{ "",
	  DW_CG_PATH, "/", "" },
	{ "///",
	  DW_CG_PATH, "/", "" },
	{ "/process_api/cc61b44e0daa37fd35120b0438a6c234",
	  DW_CG_PATH, "/process_api/cc61b44e0daa37fd35120b0438a6c234", "" },
	{ "dwtest",
	  DW_CG_PATH, "/dwtest", "" },
	{ "/system.slice/weird",
	  DW_CG_PATH, "/system.slice/weird", "" },
	{ "/.service",
	  DW_CG_PATH, "/.service", "" },
	{ "/a\tb\x1b[31m",
	  DW_CG_PATH, "/a?b?[31m", "" },
	{ "/system.slice/x\x7f.service",
	  DW_CG_UNIT, "x?.service", "" },
};

static void test_table(void **state)
{
	struct dw_cgname got;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		dw_cgname_of_path(cases[i].path, &got);
		if (got.kind != cases[i].kind || strcmp(got.name, cases[i].name) ||
		    strcmp(got.pod, cases[i].pod))
			fail_msg("case %zu %s: %s \"%s\" pod \"%s\", want %s \"%s\" pod \"%s\"", i,
				 cases[i].path, dw_cg_kind_name(got.kind), got.name, got.pod,
				 dw_cg_kind_name(cases[i].kind), cases[i].name, cases[i].pod);
	}
}

static void test_null_is_root(void **state)
{
	struct dw_cgname got;

	(void)state;
	dw_cgname_of_path(NULL, &got);
	assert_int_equal(got.kind, DW_CG_PATH);
	assert_string_equal(got.name, "/");
	assert_string_equal(got.pod, "");
}

static void test_gone(void **state)
{
	struct dw_cgname got;

	(void)state;
	memset(&got, 0x55, sizeof(got));
	dw_cgname_gone(18446744073709551615ULL, &got);
	assert_int_equal(got.kind, DW_CG_PATH);
	assert_string_equal(got.name, "gone:18446744073709551615");
	assert_string_equal(got.pod, "");
	dw_cgname_gone(4242, &got);
	assert_string_equal(got.name, "gone:4242");
}

static void test_kind_names(void **state)
{
	(void)state;
	assert_string_equal(dw_cg_kind_name(DW_CG_UNIT), "unit");
	assert_string_equal(dw_cg_kind_name(DW_CG_CONTAINER), "container");
	assert_string_equal(dw_cg_kind_name(DW_CG_POD), "pod");
	assert_string_equal(dw_cg_kind_name(DW_CG_PATH), "path");
	assert_string_equal(dw_cg_kind_name(DW_CG_NKINDS), "?");
	assert_string_equal(dw_cg_kind_name((enum dw_cg_kind)-1), "?");
}

/* A long unit name keeps its start and ends with "..." within the buffer. */
static void test_long_unit_cut(void **state)
{
	char path[400], unit[300];
	struct dw_cgname got;

	(void)state;
	memset(unit, 'u', 250);
	strcpy(unit + 250, ".service");
	snprintf(path, sizeof(path), "/system.slice/%s", unit);
	dw_cgname_of_path(path, &got);
	assert_int_equal(got.kind, DW_CG_UNIT);
	assert_int_equal(strlen(got.name), DW_CG_NAME_LEN - 1);
	assert_memory_equal(got.name, unit, DW_CG_NAME_LEN - 4);
	assert_string_equal(got.name + DW_CG_NAME_LEN - 4, "...");
}

/* A long session name with its user suffix is cut the same way. */
static void test_long_session_cut(void **state)
{
	char path[400];
	struct dw_cgname got;

	(void)state;
	snprintf(path, sizeof(path), "/user.slice/user-4294967295.slice/session-%0200d.scope", 7);
	dw_cgname_of_path(path, &got);
	assert_int_equal(got.kind, DW_CG_UNIT);
	assert_int_equal(strlen(got.name), DW_CG_NAME_LEN - 1);
	assert_string_equal(got.name + DW_CG_NAME_LEN - 4, "...");
	assert_memory_equal(got.name, "session-0000", 12);
}

/* A long path keeps its end, where cgroups differ. */
static void test_long_path_keeps_tail(void **state)
{
	char path[600];
	struct dw_cgname got;
	size_t n = 0;

	(void)state;
	for (int i = 0; i < 40; i++)
		n += snprintf(path + n, sizeof(path) - n, "/dir%02d", i);
	dw_cgname_of_path(path, &got);
	assert_int_equal(got.kind, DW_CG_PATH);
	assert_int_equal(strlen(got.name), DW_CG_NAME_LEN - 1);
	assert_memory_equal(got.name, "...", 3);
	assert_string_equal(got.name + strlen(got.name) - 6, "/dir39");
	assert_string_equal(got.name + 3, path + n - (DW_CG_NAME_LEN - 4));
}

/* A path that exactly fills the name is kept whole; one byte more is cut. */
static void test_path_at_the_limit(void **state)
{
	char path[DW_CG_NAME_LEN + 1];
	struct dw_cgname got;

	(void)state;
	path[0] = '/';
	memset(path + 1, 'p', DW_CG_NAME_LEN - 2);
	path[DW_CG_NAME_LEN - 1] = '\0';
	dw_cgname_of_path(path, &got);
	assert_string_equal(got.name, path);
	path[DW_CG_NAME_LEN - 1] = 'q';
	path[DW_CG_NAME_LEN] = '\0';
	dw_cgname_of_path(path, &got);
	assert_memory_equal(got.name, "...", 3);
	assert_int_equal(got.name[DW_CG_NAME_LEN - 2], 'q');
}

/* Beyond DW_CG_PATH_MAX nothing is read: no terminator is needed there. */
static void test_path_max_bounds_reading(void **state)
{
	char *path = malloc(DW_CG_PATH_MAX);
	struct dw_cgname got;

	(void)state;
	assert_non_null(path);
	memset(path, 'x', DW_CG_PATH_MAX); /* not NUL-terminated: ASan sees any overread */
	path[0] = '/';
	dw_cgname_of_path(path, &got);
	assert_int_equal(got.kind, DW_CG_PATH);
	assert_int_equal(strlen(got.name), DW_CG_NAME_LEN - 1);
	memset(path, '/', DW_CG_PATH_MAX);
	dw_cgname_of_path(path, &got);
	assert_string_equal(got.name, "/");
	free(path);
}

/* Random bytes: always a terminated, clean name (ASan/UBSan watch the rest). */
static void test_random_paths(void **state)
{
	static const char alphabet[] = "/-_.@0123456789abcdefpodkubescrilbnt\x01\xff";
	uint64_t seed = 16;
	char path[300];
	struct dw_cgname got;

	(void)state;
	for (int round = 0; round < 20000; round++) {
		size_t n = dwt_rand(&seed) % (sizeof(path) - 1);

		for (size_t i = 0; i < n; i++)
			path[i] = alphabet[dwt_rand(&seed) % (sizeof(alphabet) - 1)];
		path[n] = '\0';
		dw_cgname_of_path(path, &got);
		assert_true(memchr(got.name, '\0', sizeof(got.name)) != NULL);
		assert_true(memchr(got.pod, '\0', sizeof(got.pod)) != NULL);
		assert_true(got.name[0] != '\0');
		for (const char *p = got.name; *p; p++)
			assert_true((unsigned char)*p >= 0x20 && *p != 0x7f);
		assert_true((unsigned)got.kind < DW_CG_NKINDS);
		if (got.pod[0])
			assert_int_equal(got.kind, DW_CG_POD);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_null_is_root),
		cmocka_unit_test(test_gone),
		cmocka_unit_test(test_kind_names),
		cmocka_unit_test(test_long_unit_cut),
		cmocka_unit_test(test_long_session_cut),
		cmocka_unit_test(test_long_path_keeps_tail),
		cmocka_unit_test(test_path_at_the_limit),
		cmocka_unit_test(test_path_max_bounds_reading),
		cmocka_unit_test(test_random_paths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
