#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build, run and test depwatch
# (qemu-system-x86, busybox-static and cpio: tests/vm/vm.py boots other kernels),
# and mounts the kernel filesystems depwatch needs. Idempotent: a no-op when all is there.
set -euo pipefail

PKGS=(clang libclang-rt-dev llvm gnuplot-nox libbpf-dev bpftool libelf-dev zlib1g-dev libcmocka-dev pkg-config make gcc python3 iproute2 rsyslog util-linux libmicrohttpd-dev prometheus libncurses-dev tmux bpftrace valgrind man-db groff-base systemd nginx-light wrk apache2-utils redis-server redis-tools nghttp2-client nghttp2-server python3-grpcio haproxy openssl gnutls-bin debhelper dpkg-dev fakeroot lintian qemu-system-x86 busybox-static cpio unbound bind9-dnsutils golang-go libcapstone-dev libdw-dev libnghttp2-dev)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "depwatch: missing packages: ${missing[*]} (run as root to install them)" >&2
		exit 1
	fi
	echo "depwatch: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ---- TEST_PKGS_GOODBYE (issue 50, tests/integration/test_goodbye.py): Debian's MariaDB and memcached,
# which the test starts itself on loopback high ports in temp dirs. Installed with a policy-rc.d that
# answers 101, so neither starts as a system service (one already there is left as it is).
# Kept apart for the run/test split of this file.
TEST_PKGS_GOODBYE=(mariadb-server mariadb-client memcached)
missing=()
for p in "${TEST_PKGS_GOODBYE[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "depwatch: missing packages: ${missing[*]} (run as root to install them)" >&2
		exit 1
	fi
	echo "depwatch: installing ${missing[*]} (no service started)" >&2
	export DEBIAN_FRONTEND=noninteractive
	policy=/usr/sbin/policy-rc.d
	own_policy=0
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\n# depwatch scripts/deps.sh: no service starts while its test servers install\nexit 101\n' >"$policy"
		chmod 755 "$policy"
		own_policy=1
	fi
	apt-get update -qq
	rc=0
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || rc=$?
	[ "$own_policy" -eq 0 ] || rm -f "$policy"
	[ "$rc" -eq 0 ] || exit "$rc"
fi
# ---- end of TEST_PKGS_GOODBYE

# bpftool is in /usr/sbin, which a non-login root shell may not have on PATH.
command -v bpftool >/dev/null || [ -x /usr/sbin/bpftool ] || { echo "depwatch: bpftool not found" >&2; exit 1; }

if [ "$(id -u)" -eq 0 ]; then
	mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
	mountpoint -q /sys/kernel/tracing || mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null || true
fi
exit 0
