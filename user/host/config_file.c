// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/config_file.h"
#include "logic/config/config.h"

const char *dw_config_path(const char *given)
{
	if (given)
		return given;
	return access(DW_DEFAULT_CONFIG, F_OK) == 0 ? DW_DEFAULT_CONFIG : NULL;
}

static int io_fail(const char *path, int e, char *err, size_t errlen)
{
	char buf[128];

	dw_config_error(path, err, errlen, "%s", strerror_r(e, buf, sizeof(buf)));
	return -e;
}

/* Why fstat() rules the file out, before any of it is read. */
static int refuse(const char *path, const struct stat *st, char *err, size_t errlen)
{
	if (S_ISDIR(st->st_mode)) {
		dw_config_error(path, err, errlen, "is a directory");
		return -EISDIR;
	}
	if (!S_ISREG(st->st_mode))
		return dw_config_error(path, err, errlen, "is not a regular file");
	dw_config_error(path, err, errlen, "file is larger than 1 MiB (%lld bytes)",
		  (long long)st->st_size);
	return -EFBIG;
}

/* Up to cap bytes of fd into buf; the count, or a negative errno. */
static ssize_t read_up_to(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	ssize_t r;

	while (n < cap) {
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		n += r;
	}
	return n;
}

/*
 * fd's content into *text (malloc'd, *len bytes). Reads up to one byte
 * past the cap rather than trusting st_size, which /proc files report as
 * 0 and which a file being written can outgrow.
 */
static int read_capped(const char *path, int fd, char **text, size_t *len, char *err,
		       size_t errlen)
{
	char *buf = malloc(DW_CONFIG_MAX_BYTES + 1);
	ssize_t n;

	if (!buf)
		return io_fail(path, ENOMEM, err, errlen);
	n = read_up_to(fd, buf, DW_CONFIG_MAX_BYTES + 1);
	if (n < 0) {
		free(buf);
		return io_fail(path, -n, err, errlen);
	}
	if (n > DW_CONFIG_MAX_BYTES) {
		free(buf);
		dw_config_error(path, err, errlen, "file is larger than 1 MiB");
		return -EFBIG;
	}
	*text = buf;
	*len = n;
	return 0;
}

/* path into *text. Only a regular file: a FIFO or a device could block or never end. */
static int read_config_file(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
	struct stat st;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return io_fail(path, errno, err, errlen);
	if (fstat(fd, &st))
		ret = io_fail(path, errno, err, errlen);
	else if (!S_ISREG(st.st_mode) || st.st_size > DW_CONFIG_MAX_BYTES)
		ret = refuse(path, &st, err, errlen);
	else
		ret = read_capped(path, fd, text, len, err, errlen);
	close(fd);
	return ret;
}

int dw_config_load(const char *path, struct dw_config *cfg, char *err, size_t errlen)
{
	char *text = NULL;	/* set on success only; gcc -O3 cannot tell */
	size_t len = 0;
	int ret;

	if (err && errlen)
		err[0] = '\0';
	ret = read_config_file(path, &text, &len, err, errlen);
	if (ret)
		return ret;
	ret = dw_config_parse(path, text, len, cfg, err, errlen);
	free(text);
	return ret;
}

/*
 * The daemon runs as root and can refuse connections on its config's say:
 * a file anyone but root could have written is refused (check agrees).
 */
static int config_trusted(const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return 0;	/* dw_config_load says why */
	if (st.st_uid != 0) {
		snprintf(err, errlen, "%s: owned by uid %u, not root: refused, since others could change what depwatch enforces",
			 path, st.st_uid);
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen, "%s: group- or world-writable (mode %04o): refused, since others could change what depwatch enforces",
			 path, st.st_mode & 07777);
		return -EPERM;
	}
	return 0;
}

int dw_config_read(const char *path, struct dw_config *cfg, char *err, size_t errlen)
{
	if (!path) {
		dw_config_defaults(cfg);
		return 0;
	}
	if (config_trusted(path, err, errlen))
		return -EPERM;
	return dw_config_load(path, cfg, err, errlen) ? -EINVAL : 0;
}
