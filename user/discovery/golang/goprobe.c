// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The Go probe points of a file (goprobe.h): map it, find, add the offsets. */
#include "discovery/golang/goprobe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "discovery/golang/godwarf.h"

/* A Go binary is tens of MB; one much larger is no program worth mapping to look at. */
#define MAX_FILE (2ULL << 30)

int dw_go_probe_points(const char *path, struct dw_go_probes *out, char *why, size_t whylen)
{
	struct dw_go_fdchain dc;
	char d[200], tw[200];
	struct stat st;
	void *map;
	int fd, rc;

	memset(out, 0, sizeof(*out));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    (unsigned long long)st.st_size > MAX_FILE) {
		snprintf(why, whylen, "%s: not a regular file of a readable size", path);
		close(fd);
		return -1;
	}
	/*
	 * MAP_SHARED, not MAP_PRIVATE: the kernel puts every registered uprobe's INT3 into each
	 * private mapping of a probed file that could be executable (uprobe_mmap's valid_vma), so
	 * a private map of a binary another tracer probes (bpftrace, a second depwatch) shows 0xCC
	 * where its RETs are and the RET finder finds none; a shared mapping is never patched.
	 * Read-only either way.
	 */
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		snprintf(why, whylen, "%s: mmap: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	rc = dw_go_probes_image(map, (size_t)st.st_size, out, why, whylen);
	munmap(map, (size_t)st.st_size);
	if (rc == 0) {
		/* The binary's own DWARF wins over the table: it describes this very build. */
		if (dw_go_dwarf_fdchain(fd, &dc, d, sizeof(d)) == 0) {
			out->fd = dc;
			out->fd_source = DW_GO_FD_DWARF;
		} else if (out->fd_source == DW_GO_FD_NONE) {
			snprintf(tw, sizeof(tw), "%s", d);
			snprintf(why, whylen, "%s: its struct layout is unknown (%s, and no table row for Go %d.%d)",
				 out->build.version, tw, out->build.major, out->build.minor);
			rc = -1;
		}
	}
	close(fd);
	return rc;
}
