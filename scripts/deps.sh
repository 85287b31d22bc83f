#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks for the commands named (issue 45: each command
# installs its own set, nothing more), and mounts the kernel filesystems depwatch needs.
# Idempotent: a no-op when all is there.
#
#   scripts/deps.sh [run|install|deb|test|demo|bench]...    (no argument: run)
#
#   run      build and run the daemon: make, make run (what a production host gets)
#   install  run + jsonnet, which renders the monitoring mixin (mixin/): make install
#   deb      install + what dpkg-buildpackage needs: make deb
#   test     deb + the test lab: make test, make test-kernels, make itest
#   demo     run + python3: make demo
#   bench    run + the benchmark's servers, clients and plot: make bench
#
# A server of the test lab (nginx, redis, haproxy, unbound, prometheus, ...) is installed, never
# started or enabled: a policy-rc.d refuses every start during the install, and the units and
# init scripts of the packages this run installed are disabled after it (the tests start their
# own servers on loopback high ports). Packages that were there before are left as they were.
set -euo pipefail

# What building and running the daemon needs: the compilers (clang for the BPF objects, llvm's
# llvm-strip), libbpf and bpftool (the skeleton), and the libraries the daemon links. make too:
# a fresh Debian 12 has none, so `make run` cannot be its first command; `bash scripts/deps.sh` can.
RUN_PKGS=(make gcc clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev libmicrohttpd-dev
	libncurses-dev libcapstone-dev libdw-dev libnghttp2-dev)
# make install: the monitoring mixin's rules and dashboards are rendered by jsonnet (doc/fleet.md).
INSTALL_PKGS=(jsonnet)
# make deb: the package build (dpkg-buildpackage, dh) and its unit tests (cmocka).
DEB_PKGS=(jsonnet debhelper dpkg-dev fakeroot libcmocka-dev)
# make demo: its driver and the stand-in dependency are Python.
DEMO_PKGS=(python3)
# make bench: the servers and clients it measures, the bpftrace peer, the plot (bench/README.md).
BENCH_PKGS=(python3 iproute2 nginx-light wrk nghttp2-client nghttp2-server bpftrace gnuplot-nox openssl golang-go)
# make test: the unit tests (cmocka, the fuzzers' sanitizer runtime), the real servers and clients
# of the integration suite, the tools its tests drive (rsyslogd, promtool and prometheus, tmux,
# valgrind, man, systemd-analyze, lintian), Alertmanager for the fleet pipeline, MariaDB and memcached for the goodbyes, PostgreSQL and libssl-dev for TLS behind a client's own BIO, Go for the Go programs it probes, and the kernel
# stage's VM (qemu, busybox-static, cpio).
TEST_PKGS=(libcmocka-dev libclang-rt-dev pkg-config python3 iproute2 util-linux rsyslog prometheus
	tmux bpftrace valgrind man-db groff-base systemd nginx-light wrk apache2-utils redis-server
	redis-tools nghttp2-client nghttp2-server python3-grpcio haproxy openssl gnutls-bin lintian
	qemu-system-x86 busybox-static cpio unbound bind9-dnsutils golang-go
	prometheus-alertmanager mariadb-server mariadb-client memcached
	postgresql postgresql-client libssl-dev)

sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(run)
PKGS=("${RUN_PKGS[@]}")
for s in "${sets[@]}"; do
	case "$s" in
	run) ;;
	install) PKGS+=("${INSTALL_PKGS[@]}") ;;
	deb) PKGS+=("${DEB_PKGS[@]}") ;;
	test) PKGS+=("${DEB_PKGS[@]}" "${TEST_PKGS[@]}") ;;
	demo) PKGS+=("${DEMO_PKGS[@]}") ;;
	bench) PKGS+=("${BENCH_PKGS[@]}") ;;
	*)
		echo "scripts/deps.sh: unknown set '$s' (run, install, deb, test, demo, bench)" >&2
		exit 2
		;;
	esac
done

missing=()
for p in $(printf '%s\n' "${PKGS[@]}" | sort -u); do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

installed() { dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' | awk '$1 == "ii" { print $2 }' | sort; }

# Every unit and init script of the packages installed just now (theirs and their dependencies'), disabled: a test server must not
# come up at the next boot either (on systemd hosts dh_installsystemd enables what it installs).
disable_services() {
	local p f unit
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || continue
		for f in $(dpkg -L "$p" 2>/dev/null | grep -E '^(/usr)?/lib/systemd/system/[^/@]+\.(service|socket|timer)$' || true); do
			unit=$(basename "$f")
			if command -v deb-systemd-helper >/dev/null; then
				deb-systemd-helper disable "$unit" >/dev/null 2>&1 || true
			fi
			if [ -d /run/systemd/system ]; then
				systemctl disable --now "$unit" >/dev/null 2>&1 || true
			fi
		done
		for f in $(dpkg -L "$p" 2>/dev/null | grep -E '^/etc/init\.d/[^/]+$' || true); do
			update-rc.d "$(basename "$f")" disable >/dev/null 2>&1 || true
		done
	done
}

if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "depwatch: missing packages: ${missing[*]} (run as root to install them)" >&2
		exit 1
	fi
	echo "depwatch: installing (${sets[*]}) ${missing[*]}" >&2
	# No service starts while apt installs (invoke-rc.d and deb-systemd-invoke ask policy-rc.d);
	# an admin's own policy-rc.d is put back after.
	policy=/usr/sbin/policy-rc.d
	saved=""
	if [ -e "$policy" ]; then
		saved=$(mktemp)
		cp -p "$policy" "$saved"
	fi
	restore() {
		if [ -n "$saved" ]; then mv -f "$saved" "$policy"; else rm -f "$policy"; fi
	}
	trap restore EXIT
	printf '#!/bin/sh\n# scripts/deps.sh (depwatch): no service starts while it installs\nexit 101\n' > "$policy"
	chmod 0755 "$policy"
	export DEBIAN_FRONTEND=noninteractive
	before=$(mktemp)
	installed > "$before"
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	# shellcheck disable=SC2046 # one package name a word
	disable_services $(installed | comm -13 "$before" -)
	rm -f "$before"
	restore
	trap - EXIT
fi

# bpftool is in /usr/sbin, which a non-login root shell may not have on PATH.
command -v bpftool >/dev/null || [ -x /usr/sbin/bpftool ] || { echo "depwatch: bpftool not found" >&2; exit 1; }

if [ "$(id -u)" -eq 0 ]; then
	mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
	mountpoint -q /sys/kernel/tracing || mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null || true
fi
exit 0
