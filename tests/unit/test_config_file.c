// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/host/config_file.c: reading the config file, and refusing one others could write. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dwtest.h"

#include "host/config_file.h"
#include "logic/config/config.h"
#include "logic/config/match.h"

static char err[1024];

static int lookup(const struct dw_config *cfg, int family, const char *addr, uint16_t port)
{
	uint8_t a[16] = { 0 };

	assert_int_equal(inet_pton(family, addr, a), 1);
	return dw_config_lookup(cfg, family, a, port);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static void test_load(void **state)
{
	char dir[] = "/tmp/dwconfXXXXXX", path[256], want[512];
	struct dw_config cfg;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));

	snprintf(path, sizeof(path), "%s/missing.conf", dir);
	memset(&cfg, 0x5a, sizeof(cfg));
	assert_int_equal(dw_config_load(path, &cfg, err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "%s: No such file or directory", path);
	assert_string_equal(err, want);
	assert_int_equal(cfg.ndeps, 0x5a5a5a5a);

	assert_int_equal(dw_config_load(dir, &cfg, err, sizeof(err)), -EISDIR);
	snprintf(want, sizeof(want), "%s: is a directory", dir);
	assert_string_equal(err, want);

	/* a FIFO with no writer would block a plain open(): refused at once */
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(dw_config_load(path, &cfg, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s: is not a regular file", path);
	assert_string_equal(err, want);
	unlink(path);

	/* too big: refused from its size, unread (sparse, so cheap) */
	snprintf(path, sizeof(path), "%s/big.conf", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, DW_CONFIG_MAX_BYTES + 1), 0);
	close(fd);
	assert_int_equal(dw_config_load(path, &cfg, err, sizeof(err)), -EFBIG);
	snprintf(want, sizeof(want), "%s: file is larger than 1 MiB", path);
	assert_int_equal(strncmp(err, want, strlen(want)), 0);
	unlink(path);

	/* content errors carry the path as the source */
	snprintf(path, sizeof(path), "%s/bad.conf", dir);
	write_file(path, "[defaults]\nslow_rate = 150%\n");
	assert_int_equal(dw_config_load(path, &cfg, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:2: slow_rate: '150%%' is not a percentage from 0%% to 100%%",
		 path);
	assert_string_equal(err, want);
	unlink(path);

	snprintf(path, sizeof(path), "%s/good.conf", dir);
	write_file(path, "[dependency db]\nmatch = [::1]:5432\n");
	assert_int_equal(dw_config_load(path, &cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg.source, path);
	assert_int_equal(cfg.ndeps, 1);
	assert_int_equal(lookup(&cfg, AF_INET6, "::1", 5432), 0);
	dw_config_free(&cfg);
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
}

/* The daemon enforces what the config says: only root may have written it. */
static void test_read_trust(void **state)
{
	char dir[] = "/tmp/dwconfXXXXXX", path[256], want[512];
	struct dw_config cfg;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/w.conf", dir);
	write_file(path, "[dependency db]\nmatch = [::1]:5432\n");

	assert_int_equal(dw_config_read(NULL, &cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg.source, "<built-in>");
	dw_config_free(&cfg);

	assert_int_equal(chmod(path, 0666), 0);
	if (geteuid() == 0) {
		assert_int_equal(dw_config_read(path, &cfg, err, sizeof(err)), -EPERM);
		snprintf(want, sizeof(want), "%s: group- or world-writable (mode 0666): refused, since others could change what depwatch enforces",
			 path);
		assert_string_equal(err, want);
		assert_int_equal(chmod(path, 0644), 0);
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_int_equal(dw_config_read(path, &cfg, err, sizeof(err)), -EPERM);
		snprintf(want, sizeof(want), "%s: owned by uid 65534, not root: refused, since others could change what depwatch enforces",
			 path);
		assert_string_equal(err, want);
		assert_int_equal(chown(path, 0, 0), 0);
		assert_int_equal(dw_config_read(path, &cfg, err, sizeof(err)), 0);
		assert_int_equal(cfg.ndeps, 1);
		dw_config_free(&cfg);
	} else {
		/* not root: the file is ours, so not root's */
		assert_int_equal(dw_config_read(path, &cfg, err, sizeof(err)), -EPERM);
		assert_non_null(strstr(err, "not root: refused"));
	}
	/* a missing file is not a trust question: the load says what is wrong */
	unlink(path);
	assert_int_equal(dw_config_read(path, &cfg, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s: No such file or directory", path);
	assert_string_equal(err, want);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_read_trust),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
