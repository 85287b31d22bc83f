// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The Go TLS probes on the real kernel (root): finds a Go program's probe points with
 * dw_go_probe_points, loads depwatch's BPF object with only the dw_go_* programs, attaches
 * them at crypto/tls.(*Conn).Write's and Read's entries and every RET (file offsets, the
 * layout's index as cookie), runs the program
 * (which prints its TLS sockets' fds: "fd client N", "fd server N"), and checks the
 * kernel's view against it:
 *   - every goroutine the probe saw wrote on one of the program's own TLS sockets' fds
 *     (the offset chain is right), the client's and the server's both seen;
 *   - go_tls_writes (the counter) equals the writes the goroutine entries add up to; with
 *     -h1 (HTTP/1.1) exactly twice the requests (Go flushes each request and each answer in
 *     one Write), over HTTP/2 (frames of several streams share a flush) at least one a side;
 *   - each goroutine returned through one of the RETs the finder listed (dw_go_tls_write_ret)
 *     as often as it entered (but for one Write still running when the process exited), and
 *     n at the RETs adds up to the lengths at the entries;
 *   - Read likewise (but for one parked in it at exit), go_tls_reads its entries, and the
 *     bytes its RETs returned no more than those written, over HTTP/1.1 exactly as many;
 *   - an entry seen again with the goroutine still inside (a signal during the probe's
 *     single-step re-runs it; bpf/tls/go/gotls.h) is counted apart, and rare: at most 2%;
 *   - go_tls_fd_unread stays 0 (a closed conn's fd, -1, is read, not unread); the program
 *     answered every request.
 * Prints one line of figures; exit 0 on success, 1 on a wrong answer, 77 when it cannot run.
 *   goattach GO_BINARY REQUESTS [gotls options...]
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "depwatch.skel.h"
#include "discovery/golang/goprobe.h"
#include "depwatch.h"
#include "tls/go/gotls.h"

#define MAX_FDS 16

static int libbpf_quiet(enum libbpf_print_level lvl, const char *fmt, va_list ap)
{
	return lvl == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

/* The sum over CPUs of a global counter (struct dw_global_stats, per-CPU). */
static __u64 global(struct depwatch_bpf *s, size_t field_off)
{
	int n = libbpf_num_possible_cpus();
	struct dw_global_stats *v = calloc((size_t)n, sizeof(*v));
	__u32 zero = 0;
	__u64 sum = 0;

	if (v && bpf_map_lookup_elem(bpf_map__fd(s->maps.globals), &zero, v) == 0)
		for (int i = 0; i < n; i++)
			sum += *(__u64 *)((char *)&v[i] + field_off);
	free(v);
	return sum;
}

int main(int argc, char **argv)
{
	struct dw_go_probes p;
	char why[256], line[256];
	struct depwatch_bpf *s;
	struct bpf_program *prog;
	struct dw_go_layout lay = { .valid = 1 };
	__u32 zero = 0;
	int to[2], from[2], fds[MAX_FDS], client[MAX_FDS], nfds = 0, seen_client = 0, seen_server = 0, bad = 0;
	long requests = -1, want;
	int h1 = 0;
	__u64 gsum = 0, ngor = 0, rsum = 0, asked = 0, written = 0, short_one = 0;
	__u64 reads = 0, rrets = 0, bread = 0, parked = 0, wrep = 0, rrep = 0;
	FILE *out;
	pid_t pid;

	if (argc < 3) {
		fprintf(stderr, "usage: goattach GO_BINARY REQUESTS [options]\n");
		return 2;
	}
	want = atol(argv[2]);
	for (int i = 3; i < argc; i++)
		h1 |= !strcmp(argv[i], "-h1");
	libbpf_set_print(libbpf_quiet);
	if (dw_go_probe_points(argv[1], &p, why, sizeof(why)) < 0) {
		fprintf(stderr, "goattach: %s: not probed: %s\n", argv[1], why);
		return 1;
	}
	lay.conn_iface = p.fd.conn_iface;
	lay.conn_fd = p.fd.conn_fd;
	lay.pfd_sysfd = p.fd.netfd_pfd + p.fd.pfd_sysfd;
	s = depwatch_bpf__open();
	if (!s) {
		fprintf(stderr, "goattach: cannot open the BPF object: %s\n", strerror(errno));
		return 77;
	}
	bpf_object__for_each_program(prog, s->obj)
		bpf_program__set_autoload(prog, !strncmp(bpf_program__name(prog), "dw_go_", 6));
	if (depwatch_bpf__load(s)) {
		fprintf(stderr, "goattach: load failed: %s (root? uprobes?)\n", strerror(errno));
		return 77;
	}
	if (bpf_map_update_elem(bpf_map__fd(s->maps.go_layouts), &zero, &lay, BPF_ANY)) {
		fprintf(stderr, "goattach: go_layouts: %s\n", strerror(errno));
		return 1;
	}
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = 0);
	if (!bpf_program__attach_uprobe_opts(s->progs.dw_go_tls_write, -1, argv[1], (size_t)p.write.probe_off, &uo)) {
		fprintf(stderr, "goattach: attach at %s+0x%llx: %s\n", argv[1], (unsigned long long)p.write.off,
			strerror(errno));
		return 77;
	}
	/* the return at each RET, never a uretprobe (Go moves stacks) */
	for (unsigned i = 0; i < p.write.nret; i++)
		if (!bpf_program__attach_uprobe_opts(s->progs.dw_go_tls_write_ret, -1, argv[1],
						     (size_t)p.write.ret_off[i], &uo)) {
			fprintf(stderr, "goattach: attach at RET %s+0x%llx: %s\n", argv[1],
				(unsigned long long)p.write.ret_off[i], strerror(errno));
			return 77;
		}
	if (!bpf_program__attach_uprobe_opts(s->progs.dw_go_tls_read, -1, argv[1], (size_t)p.read.probe_off, &uo)) {
		fprintf(stderr, "goattach: attach at %s+0x%llx: %s\n", argv[1], (unsigned long long)p.read.off,
			strerror(errno));
		return 77;
	}
	for (unsigned i = 0; i < p.read.nret; i++)
		if (!bpf_program__attach_uprobe_opts(s->progs.dw_go_tls_read_ret, -1, argv[1],
						     (size_t)p.read.ret_off[i], &uo)) {
			fprintf(stderr, "goattach: attach at RET %s+0x%llx: %s\n", argv[1],
				(unsigned long long)p.read.ret_off[i], strerror(errno));
			return 77;
		}
	if (pipe(to) || pipe(from))
		return 1;
	pid = fork();
	if (pid == 0) {
		char *av[16] = { argv[1], "-wait", "-n", argv[2] };
		int k = 4;

		for (int i = 3; i < argc && k < 15; i++)
			av[k++] = argv[i];
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[1]);
		close(from[0]);
		execv(argv[1], av);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	out = fdopen(from[0], "r");
	while (fgets(line, sizeof(line), out)) {
		char side[16];
		int fd;

		if (!strncmp(line, "ready", 5)) {
			if (write(to[1], "\n", 1) != 1)
				return 1;
		} else if (sscanf(line, "fd %15s %d", side, &fd) == 2 && nfds < MAX_FDS) {
			client[nfds] = !strcmp(side, "client");
			fds[nfds++] = fd;
		} else if (sscanf(line, "requests %ld", &requests) == 1) {
			;
		}
		fputs(line, stderr);
	}
	waitpid(pid, NULL, 0);
	if (requests != want) {
		fprintf(stderr, "goattach: the program answered %ld of %ld requests\n", requests, want);
		return 1;
	}
	/* every goroutine entry of this process: its fd is one of the program's sockets */
	{
		struct dw_go_gkey k, nk, *kp = NULL;
		struct dw_go_gstate v;
		int gm = bpf_map__fd(s->maps.go_goroutines);

		while (bpf_map_get_next_key(gm, kp, &nk) == 0) {
			k = nk;
			kp = &k;
			if (k.tgid != (__u32)pid || bpf_map_lookup_elem(gm, &k, &v))
				continue;
			ngor++;
			/* the process may exit with a goroutine still inside its last Write (its bytes sent,
			 * its RET not reached): one short at most, with that write's bytes */
			/* entries seen again while inside are no calls (gotls.h): counted, and bounded below */
			wrep += v.write_repeats;
			rrep += v.read_repeats;
			v.writes -= v.write_repeats;
			v.reads -= v.read_repeats;
			gsum += v.writes;	/* the calls: entries less repeats, as the reads below */
			if (v.in_write && v.returns + 1 == v.writes) {
				v.returns++;
				v.bytes_written += v.write_len;
				short_one++;
			}
			/*
			 * HTTP/2 only: a goroutine's last Write may fail at exit, returning 0 (a frame to
			 * a connection the other end has closed: a PING's ack, a GOAWAY; 17 bytes asked,
			 * none written, once in a sock pass on 2026-12-06): that write's bytes, and no other.
			 */
			if (!h1 && v.write_len && v.returns == v.writes &&
			    v.bytes_asked - v.bytes_written == v.write_len) {
				fprintf(stderr, "goattach: goroutine g=0x%llx: its last Write (%llu bytes) wrote nothing (the connection closing)\n",
					(unsigned long long)k.g, (unsigned long long)v.write_len);
				v.bytes_written += v.write_len;
			}
			/* ... or parked in a Read (nothing read yet) */
			if (v.in_read && v.read_returns + 1 == v.reads) {
				v.read_returns++;
				parked++;
			}
			reads += v.reads;
			rrets += v.read_returns;
			bread += v.bytes_read;
			if (v.read_returns != v.reads) {
				fprintf(stderr, "goattach: goroutine g=0x%llx: %llu reads, %llu returns\n",
					(unsigned long long)k.g, (unsigned long long)v.reads,
					(unsigned long long)v.read_returns);
				bad = 1;
			}
			rsum += v.returns;
			asked += v.bytes_asked;
			written += v.bytes_written;
			if (v.returns != v.writes)
				fprintf(stderr, "goattach: goroutine g=0x%llx: %llu writes, %llu returns\n",
					(unsigned long long)k.g, (unsigned long long)v.writes,
					(unsigned long long)v.returns);
			int ok = 0;
			for (int i = 0; i < nfds; i++)
				if (fds[i] == v.fd) {
					ok = 1;
					(*(client[i] ? &seen_client : &seen_server))++;
				}
			/* its last entry after its conn's Close (HTTP/2's frame writers at shutdown): the
			 * chain read Sysfd -1 (gotls.h), no socket, no call: one of the program's conns too */
			if (!ok && v.fd == -1) {
				fprintf(stderr, "goattach: goroutine g=0x%llx: its last entry was on a closed conn (fd -1)\n",
					(unsigned long long)k.g);
				ok = 1;
			}
			if (!ok) {
				fprintf(stderr, "goattach: goroutine g=0x%llx wrote on fd %lld, not one of the program's TLS sockets\n",
					(unsigned long long)k.g, (long long)v.fd);
				bad = 1;
			}
		}
	}
	{
		__u64 writes = global(s, offsetof(struct dw_global_stats, go_tls_writes));
		__u64 unread = global(s, offsetof(struct dw_global_stats, go_tls_fd_unread));

		__u64 kreads = global(s, offsetof(struct dw_global_stats, go_tls_reads));

		printf("goattach: %s (%s): Write at +0x%llx (probed +%llu), %u RETs, Read at +0x%llx (probed +%llu), %u RETs, fd chain from %s; "
		       "%ld requests; go_tls_writes %llu, "
		       "%llu goroutines' writes %llu, returns %llu, bytes asked %llu written %llu, go_tls_fd_unread %llu, %llu inside Write at exit, "
		       "go_tls_reads %llu, reads %llu, returns %llu (%llu parked at exit), bytes read %llu, "
		       "entries repeated %llu (writes) %llu (reads), fds",
		       argv[1], p.build.version, (unsigned long long)p.write.off,
		       (unsigned long long)(p.write.probe_off - p.write.off), p.write.nret,
		       (unsigned long long)p.read.off, (unsigned long long)(p.read.probe_off - p.read.off), p.read.nret,
		       p.fd_source == DW_GO_FD_DWARF ? "DWARF" : "the table", requests, (unsigned long long)writes,
		       (unsigned long long)ngor, (unsigned long long)gsum, (unsigned long long)rsum,
		       (unsigned long long)asked, (unsigned long long)written, (unsigned long long)unread,
		       (unsigned long long)short_one, (unsigned long long)kreads, (unsigned long long)reads,
		       (unsigned long long)rrets, (unsigned long long)parked, (unsigned long long)bread,
		       (unsigned long long)wrep, (unsigned long long)rrep);
		for (int i = 0; i < nfds; i++)
			printf(" %d", fds[i]);
		printf("\n");
		if (h1 && writes - wrep != (__u64)(2 * want)) {
			fprintf(stderr, "goattach: HTTP/1.1: %llu writes, want 2 x %ld requests\n",
				(unsigned long long)writes, want);
			bad = 1;
		}
		/* every entry returned through a probed RET, with all it was asked to write */
		if (rsum != gsum || written != asked || asked == 0)
			bad = 1;
		/* one process, both ends: what was written was read (HTTP/2's last frames, GOAWAY, may
		 * still be unread at exit; HTTP/1.1 writes nothing at shutdown) */
		if (kreads != reads + rrep || bread > written || (h1 && bread != written))
			bad = 1;
		/* repeats are rare events (a signal in a single-step): at most 2% of the entries */
		if (50 * (wrep + rrep) > writes + kreads)
			bad = 1;
		if (writes != gsum + wrep || unread || nfds < 2 || !seen_client || !seen_server)
			bad = 1;
	}
	depwatch_bpf__destroy(s);
	return bad;
}
