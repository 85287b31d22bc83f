// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include "host/log.h"
#include "host/privs.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

int dw_drop_privileges(bool netns, bool net_admin, bool tls)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];
	__u64 keep = (1ULL << CAP_BPF) | (1ULL << CAP_PERFMON), extra = 0;

	if (netns)
		extra |= (1ULL << CAP_SYS_ADMIN) | (1ULL << CAP_SYS_PTRACE);
	if (net_admin)
		extra |= 1ULL << CAP_NET_ADMIN;
	/* the TLS discovery after start: other processes' maps and files, and uprobes (perf_event_open) */
	if (tls)
		extra |= (1ULL << CAP_SYS_ADMIN) | (1ULL << CAP_SYS_PTRACE);
	if (extra) {
		/* only what it has: without them, the namespaces it can enter, the aborts it can do */
		if (syscall(SYS_capget, &hdr, data))
			return -errno;
		keep |= extra & (data[0].permitted | (__u64)data[1].permitted << 32);
	}
	for (int cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
		if (!(keep & (1ULL << cap)) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) &&
		    errno != EINVAL)
			return -errno;
	memset(data, 0, sizeof(data));
	data[0].effective = data[0].permitted = (__u32)keep;
	data[1].effective = data[1].permitted = (__u32)(keep >> 32);
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	return 0;
}

int dw_own_path(int dirfd, const char *name, const char *shown, int group, mode_t root_mode,
		mode_t group_mode)
{
	gid_t gid = group >= 0 ? (gid_t)group : 0;
	mode_t mode = group >= 0 ? group_mode : root_mode;
	int err;

	if (name)
		err = fchownat(dirfd, name, 0, gid, AT_SYMLINK_NOFOLLOW) || fchmodat(dirfd, name, mode, 0);
	else
		err = fchown(dirfd, 0, gid) || fchmod(dirfd, mode);
	if (err) {
		int saved = errno;

		dw_err("cannot make %s owned by root:%u with mode %04o: %s", shown, gid, mode, strerror(errno));
		errno = saved;
		return -1;
	}
	return 0;
}

int dw_group_parse(const char *name)
{
	struct group *gr;
	char *end;
	unsigned long n;

	errno = 0;
	gr = getgrnam(name);
	if (gr)
		return gr->gr_gid;
	n = strtoul(name, &end, 10);
	if (*name && !*end && n < 0x7fffffff && getgrgid(n))
		return n;
	return -1;
}
