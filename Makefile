# depwatch — build, test, run. `make V=1` shows the commands.
.DELETE_ON_ERROR:

# One job per CPU; a -j on the command line wins (issue 45: `make test` built its 40 unit tests,
# fuzzers and Go programs one at a time on a fresh clone; the rules were already -j safe).
MAKEFLAGS += -j$(shell nproc)

OUT := build
BPFTOOL ?= $(or $(shell command -v bpftool 2>/dev/null),/usr/sbin/bpftool)
CLANG ?= clang
CC ?= cc
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/;s/ppc64le/powerpc/;s/s390x/s390/')

WARN := -Wall -Wextra -Werror
CFLAGS ?= -O2 -g
CFLAGS += $(WARN) -std=gnu11 -I$(OUT) -Ibpf -Iuser -D_GNU_SOURCE
# The version: debian/changelog's first entry is the one source (a native package, so
# no Debian revision); `depwatch --version` and `make deb` take it from there.
VERSION := $(shell sed -n '1s/^depwatch (\([0-9A-Za-z.+~]*\)) .*/\1/p' debian/changelog 2>/dev/null)
ifeq ($(VERSION),)
$(error cannot read the version from debian/changelog's first line)
endif
# -lcapstone: the Go RET finder (user/logic/discovery/goret.c); -ldw: Go struct offsets from DWARF
# (user/discovery/golang/); -lnghttp2: the HPACK inflater of HTTP/2 answers (user/logic/outcome/h2answer.c).
LDLIBS := -lbpf -lelf -lz -lmicrohttpd -lncursesw -lm -lcapstone -ldw -lnghttp2
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

# Pure logic: no I/O, unit-tested on its own (user/logic/, a folder a concept: doc/architecture.md).
LOGIC_SRCS := $(wildcard user/logic/*/*.c)
LOGIC_HDRS := $(wildcard user/logic/*/*.h)
# The daemon and CLI: every other folder of user/ (discovery/ has tls/ and golang/ below it).
APP_SRCS := $(filter-out user/logic/%,$(wildcard user/*/*.c user/*/*/*.c))
# One .bpf.c per group of programs, in its concept's folder of bpf/ (doc/architecture.md), linked
# into one object (one set of maps: each folder's maps.bpf.h, __weak).
BPF_SRCS := $(wildcard bpf/*/*.bpf.c bpf/*/*/*.bpf.c)
BPF_HDRS := $(wildcard bpf/*.h bpf/*/*.h bpf/*/*/*.h)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUT)/bpf/%.bpf.o,$(BPF_SRCS))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUT)/tests/%,$(UNIT_SRCS))

# One object per source, with its header dependencies (-MMD -MP, the .d files are
# included below): touching a .c rebuilds its object, touching a header only its
# includers. The unit tests link the logic built again under ASan/UBSan, in obj-san/.
DEPFLAGS = -MMD -MP
APP_OBJS := $(patsubst %.c,$(OUT)/obj/%.o,$(APP_SRCS))
LOGIC_OBJS := $(patsubst %.c,$(OUT)/obj/%.o,$(LOGIC_SRCS))
SAN_LOGIC_OBJS := $(patsubst %.c,$(OUT)/obj-san/%.o,$(LOGIC_SRCS))
UNIT_OBJS := $(patsubst %.c,$(OUT)/obj-san/%.o,$(UNIT_SRCS))

# Building needs no root: a plain `make` only checks the tools are there. The targets
# that run things as root install what is missing first (scripts/deps.sh): for them,
# every step that uses a tool waits for `deps`.
# NODEPS=1 (debian/rules: a package build, whose Build-Depends dpkg-buildpackage checked) never
# runs it.
DEPS_GOALS := deps run test test-kernels itest demo integration bench install deb
DEPS_FIRST := $(if $(NODEPS),,$(if $(filter $(DEPS_GOALS),$(MAKECMDGOALS)),deps))
# Which of scripts/deps.sh's sets the goals need (issue 45: `make run` gets the run set only, never
# the test lab): run for run and install (and `make deps` alone), deb, test, demo, bench.
DEPS_SETS := run $(if $(filter install,$(MAKECMDGOALS)),install) $(if $(filter deb,$(MAKECMDGOALS)),deb) \
	$(if $(filter test test-kernels itest integration,$(MAKECMDGOALS)),test) \
	$(if $(filter demo,$(MAKECMDGOALS)),demo) $(if $(filter bench,$(MAKECMDGOALS)),bench)
need = command -v $(1) >/dev/null 2>&1 || { echo "missing $(2): run \`make deps\` as root" >&2; exit 1; }

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

.PHONY: all deps test test-kernels itest unit integration run demo fuzz check clean bench install uninstall deb mixin
all: $(OUT)/depwatch

# Installs what a fresh machine lacks; a quick no-op when everything is there.
deps:
	$(Q)bash scripts/deps.sh $(DEPS_SETS)

# These run (or install) as root: they install what is missing first, as `run` and `test`.
ifeq ($(NODEPS),)
demo integration bench install deb: | deps
endif

$(OUT):
	$(Q)mkdir -p $(OUT) $(OUT)/tests

$(OUT)/vmlinux.h: | $(DEPS_FIRST) $(OUT)
	$(call msg,VMLINUX,$@)
	$(Q)$(call need,$(BPFTOOL),bpftool)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@

$(OUT)/bpf/%.bpf.o: bpf/%.bpf.c $(BPF_HDRS) $(OUT)/vmlinux.h | $(OUT)
	$(call msg,BPF,$@)
	$(Q)$(call need,$(CLANG),clang)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) $(WARN) -Wno-unused-parameter -I$(OUT) -Ibpf -c $< -o $@

# The programs' objects linked into one (libbpf's static linker): the maps, __weak in each, become one set.
$(OUT)/depwatch.bpf.o: $(BPF_OBJS)
	$(call msg,BPF-LINK,$@)
	$(Q)$(call need,$(BPFTOOL),bpftool)
	$(Q)$(BPFTOOL) gen object $@ $^
	$(Q)llvm-strip -g $@ 2>/dev/null || true

$(OUT)/depwatch.skel.h: $(OUT)/depwatch.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(call need,$(BPFTOOL),bpftool)
	$(Q)$(BPFTOOL) gen skeleton $< name depwatch_bpf > $@

$(OUT)/obj/%.o: %.c | $(DEPS_FIRST)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

# `depwatch --version`: main.o alone carries the version, rebuilt when the changelog changes.
$(OUT)/obj/user/cli/main.o: private CFLAGS += -DDW_VERSION='"$(VERSION)"'
$(OUT)/obj/user/cli/main.o: debian/changelog

# The skeleton is generated before any daemon object (the .d files then name it
# for those that include it); the logic does not include it.
$(APP_OBJS): | $(OUT)/depwatch.skel.h

$(OUT)/depwatch: $(APP_OBJS) $(LOGIC_OBJS)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

# Unit tests: cmocka, under ASan and UBSan (test and logic objects in obj-san/).
$(OUT)/obj-san/%.o: %.c | $(DEPS_FIRST)
	$(call msg,CC-SAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(SAN) $(DEPFLAGS) -c $< -o $@

$(UNIT_BINS): $(OUT)/tests/%: $(OUT)/obj-san/tests/unit/%.o $(SAN_LOGIC_OBJS) | $(OUT)
	$(call msg,UNIT,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(SAN) $(LDFLAGS) $^ -lcmocka -lcapstone -lnghttp2 $(UNIT_LIBS) -lm -o $@

# Tests of a daemon file that does no more I/O than a test can (no BPF, no root needed) link it too.
$(OUT)/tests/test_config_file: $(OUT)/obj-san/user/host/config_file.o

-include $(wildcard $(patsubst %.o,%.d,$(APP_OBJS) $(LOGIC_OBJS) $(SAN_LOGIC_OBJS) $(UNIT_OBJS)))

# The cgroup resolver's test also links its I/O unit, user/host/cgroups.c (not in user/logic).
$(OUT)/tests/test_cgroups: $(OUT)/obj-san/user/host/cgroups.o
-include $(wildcard $(OUT)/obj-san/user/host/cgroups.d)

# kstate's test also links its writer, user/kernel/kstate.c, against maps in memory (the test's own
# bpf_map_* and loader functions): a reload takes whole or not at all.
$(OUT)/tests/test_kstate: $(OUT)/obj-san/user/kernel/kstate.o
-include $(wildcard $(OUT)/obj-san/user/kernel/kstate.d)

# The control socket's test also links its I/O unit, user/control/control.c, on sockets of its own.
$(OUT)/tests/test_control: $(OUT)/obj-san/user/control/control.o
-include $(wildcard $(OUT)/obj-san/user/control/control.d)

# The table of hooks (user/kernel/hooks.c): every hook's loss, looked up by name.
$(OUT)/tests/test_hooks: $(OUT)/obj-san/user/kernel/hooks.o
-include $(wildcard $(OUT)/obj-san/user/kernel/hooks.d)

# sock_diag's requests and answers (user/kernel/sockdiag.c): the pure half, no socket opened.
$(OUT)/tests/test_sockdiag: $(OUT)/obj-san/user/kernel/sockdiag.o
-include $(wildcard $(OUT)/obj-san/user/kernel/sockdiag.d)

# Go programs the Go probe tests read (tests/go/, standard library only, built offline with Debian's
# golang-go): plain, stripped (-s -w), -trimpath, and both, PIE and PIE stripped; and one without crypto/tls. Without
# `go` nothing is built and the tests that need them skip, saying so.
GO ?= go
GOBIN_DIR := $(OUT)/go
GO_ENV = GOCACHE=$(abspath $(OUT))/gocache GOPATH=$(abspath $(OUT))/gopath GOFLAGS=-buildvcs=false GOPROXY=off GO111MODULE=auto
GO_BINS := $(GOBIN_DIR)/gotls $(GOBIN_DIR)/gotls-stripped $(GOBIN_DIR)/gotls-trimpath $(GOBIN_DIR)/gotls-stripped-trimpath \
	$(GOBIN_DIR)/gotls-pie $(GOBIN_DIR)/gotls-pie-stripped $(GOBIN_DIR)/goplain
go_build = if command -v $(GO) >/dev/null 2>&1; then mkdir -p $(GOBIN_DIR) && $(GO_ENV) $(GO) build $(1) -o $@ ./$<; else echo "  go absent: $@ not built (the Go probe tests skip; scripts/deps.sh installs golang-go)"; fi
$(GOBIN_DIR)/gotls: tests/go/gotls/main.go | $(OUT)
	$(call msg,GO,$@)
	$(Q)$(call go_build,)
$(GOBIN_DIR)/gotls-stripped: tests/go/gotls/main.go | $(OUT)
	$(call msg,GO,$@)
	$(Q)$(call go_build,-ldflags='-s -w')
$(GOBIN_DIR)/gotls-trimpath: tests/go/gotls/main.go | $(OUT)
	$(call msg,GO,$@)
	$(Q)$(call go_build,-trimpath)
# Debian's Go ships its standard library compiled, but not for -trimpath or PIE: those builds compile
# it into GOCACHE (about 20 s of both CPUs each). A stripped twin waits for its unstripped one and
# finds it there; started together on a fresh clone they compiled it twice each (gobins 81 s).
$(GOBIN_DIR)/gotls-stripped-trimpath: tests/go/gotls/main.go | $(OUT) $(GOBIN_DIR)/gotls-trimpath
	$(call msg,GO,$@)
	$(Q)$(call go_build,-trimpath -ldflags='-s -w')
$(GOBIN_DIR)/gotls-pie: tests/go/gotls/main.go | $(OUT)
	$(call msg,GO,$@)
	$(Q)$(call go_build,-buildmode=pie)
$(GOBIN_DIR)/gotls-pie-stripped: tests/go/gotls/main.go | $(OUT) $(GOBIN_DIR)/gotls-pie
	$(call msg,GO,$@)
	$(Q)$(call go_build,-buildmode=pie -ldflags='-s -w')
$(GOBIN_DIR)/goplain: tests/go/goplain/main.go | $(OUT)
	$(call msg,GO,$@)
	$(Q)$(call go_build,)
.PHONY: gobins
gobins: $(GO_BINS)

# The Go TLS probe on the real kernel (root): tests/go/goattach.c attaches bpf/tls/go/gotls.bpf.c's
# dw_go_tls_write to build/go/gotls and checks the fds it reads against the program's own.
$(OUT)/goattach: tests/go/goattach.c $(OUT)/obj/user/discovery/golang/goprobe.o $(OUT)/obj/user/discovery/golang/godwarf.o $(LOGIC_OBJS) | $(OUT)/depwatch.skel.h
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@
integration: $(OUT)/goattach $(GO_BINS)

# The Go probe finder's test reads those binaries and links the I/O half (user/discovery/golang/, libdw).
$(OUT)/obj-san/tests/unit/test_goprobe.o: private CFLAGS += -DDW_GOBIN_DIR='"$(abspath $(GOBIN_DIR))"'
$(OUT)/tests/test_goprobe: $(OUT)/obj-san/user/discovery/golang/goprobe.o $(OUT)/obj-san/user/discovery/golang/godwarf.o | $(GO_BINS)
$(OUT)/tests/test_goprobe: private UNIT_LIBS += -ldw
-include $(wildcard $(OUT)/obj-san/user/discovery/golang/*.d)

# OpenSSL's inner functions (user/logic/discovery/sslinner.c) on Debian's libssl, through the symbol
# reader (user/discovery/tls/elfsyms.c, libelf), against objdump.
$(OUT)/tests/test_sslinner: $(OUT)/obj-san/user/discovery/tls/elfsyms.o
$(OUT)/tests/test_sslinner: private UNIT_LIBS += -lelf
-include $(wildcard $(OUT)/obj-san/user/discovery/tls/elfsyms.d)

unit: $(UNIT_BINS)
	$(Q)bash tests/run-unit.sh $(UNIT_BINS)

integration: $(OUT)/depwatch
	$(Q)python3 tests/integration/run.py

# libFuzzer (clang) over the config parser and the HTTP/1 status-line reader; `make fuzz FUZZ_SECONDS=600` for a long run.
FUZZ_SECONDS ?= 60
# Compiled from the sources in one call (its own flags: -O1, libFuzzer).
$(OUT)/fuzz_config: tests/fuzz/fuzz_config.c $(LOGIC_SRCS) $(LOGIC_HDRS) bpf/depwatch.h | $(DEPS_FIRST) $(OUT)
	$(call msg,FUZZ,$@)
	$(Q)$(call need,$(CLANG),clang)
	$(Q)$(CLANG) -g -O1 -std=gnu11 -D_GNU_SOURCE -Ibpf -Iuser $(WARN) \
		-fsanitize=fuzzer,address,undefined $< $(LOGIC_SRCS) -lcapstone -lnghttp2 -lm -o $@

# The HTTP/1 status-line reader (bpf/answer/http1.h), pure: the header alone.
$(OUT)/fuzz_http1: tests/fuzz/fuzz_http1.c bpf/answer/http1.h bpf/depwatch.h | $(DEPS_FIRST) $(OUT)
	$(call msg,FUZZ,$@)
	$(Q)$(call need,$(CLANG),clang)
	$(Q)$(CLANG) -g -O1 -std=gnu11 -D_GNU_SOURCE -Ibpf -Iuser $(WARN) \
		-fsanitize=fuzzer,address,undefined $< -o $@

# The same over the Go probe finder's parsers (ELF, .gopclntab, build info, Capstone's RETs).
$(OUT)/fuzz_goelf: tests/fuzz/fuzz_goelf.c $(LOGIC_SRCS) $(LOGIC_HDRS) | $(DEPS_FIRST) $(OUT)
	$(call msg,FUZZ,$@)
	$(Q)$(call need,$(CLANG),clang)
	$(Q)$(CLANG) -g -O1 -std=gnu11 -D_GNU_SOURCE -Ibpf -Iuser $(WARN) \
		-fsanitize=fuzzer,address,undefined $< $(LOGIC_SRCS) -lcapstone -lnghttp2 -lm -o $@

# The header-block reader of HTTP/2 answers (user/logic/outcome/h2answer.c: records put together, HPACK).
$(OUT)/fuzz_hblock: tests/fuzz/fuzz_hblock.c $(LOGIC_SRCS) $(LOGIC_HDRS) bpf/h2/hblock.h | $(DEPS_FIRST) $(OUT)
	$(call msg,FUZZ,$@)
	$(Q)$(call need,$(CLANG),clang)
	$(Q)$(CLANG) -g -O1 -std=gnu11 -D_GNU_SOURCE -Ibpf -Iuser $(WARN) \
		-fsanitize=fuzzer,address,undefined $< $(LOGIC_SRCS) -lcapstone -lnghttp2 -lm -o $@

# Every libFuzzer target (tests/fuzz/run.sh runs each).
FUZZ_BINS := $(OUT)/fuzz_config $(OUT)/fuzz_http1 $(OUT)/fuzz_goelf $(OUT)/fuzz_hblock

fuzz: $(FUZZ_BINS)
	$(Q)OUT=$(OUT) bash tests/fuzz/run.sh $(FUZZ_SECONDS)

# The edit-build-test loop (issue 36): the include graphs first (user/'s: no circle, no arrow back
# up, scripts/includes.py; bpf/'s: no circle, no chain over 6, no file over 500,
# scripts/bpf-includes.py; doc/architecture.md), then the unit suites under ASan/UBSan and the
# fuzzers' short runs, as make test runs them, in under 3 minutes from a clean tree; no root, no
# BPF, no deps.
check: $(UNIT_BINS) $(FUZZ_BINS)
	$(Q)python3 scripts/includes.py -q
	$(Q)python3 scripts/bpf-includes.py
	$(Q)bash tests/run-unit.sh $(UNIT_BINS)
	$(Q)OUT=$(OUT) bash tests/fuzz/run.sh 15

# An HTTPS client with a BIO of its own (tests/tls/bioclient.c, test_tls.py: issue 48).
$(OUT)/bioclient: tests/tls/bioclient.c | $(OUT)
	$(call msg,BIOCLIENT,$@)
	$(Q)$(CC) $(CFLAGS) $< -o $@ -lssl -lcrypto

integration: $(OUT)/bioclient

# The load generator of the integration suite's load test (tests/integration/test_load.py).
$(OUT)/loadgen: tests/load/loadgen.c | $(OUT)
	$(call msg,LOADGEN,$@)
	$(Q)$(CC) $(CFLAGS) $< -o $@

integration: $(OUT)/loadgen

# Everything, as CI runs it (root, real kernel).
# The Debian package is built once (tests/run-all.sh, beside the unit tests and fuzzers; nocheck:
# the unit tests run there) for both backend runs of tests/integration/test_deb.py (DW_DEB); if it
# fails to build, the test builds it again and says why.
DEB_FILE = $(DEB_DIR)/depwatch_$(VERSION)_$(DEB_ARCH).deb
test: $(OUT)/depwatch $(UNIT_BINS) $(FUZZ_BINS) $(OUT)/loadgen $(OUT)/bioclient $(OUT)/goattach $(GO_BINS) | deps
	$(Q)OUT=$(OUT) DW_DEB_FILE=$(DEB_FILE) bash tests/run-all.sh $(UNIT_BINS)

# The kernel stage alone (make test runs it too): the kernel-facing integration tests on each
# Debian kernel package of KERNELS (metapackages resolved at each run), booted under qemu
# (tests/vm/vm.py; fetched with apt-get download into $(OUT)/kernels, never installed).
# KERNELS="linux-image-amd64 linux-image-rt-amd64" adds the PREEMPT_RT flavour.
KERNELS ?= linux-image-amd64
export KERNELS
test-kernels: $(OUT)/depwatch $(OUT)/loadgen $(OUT)/bioclient $(OUT)/goattach $(GO_BINS) | deps
	$(Q)OUT=$(OUT) bash tests/vm/kernels.sh

# The edit-build-test loop's focused run (issue 45): the integration tests whose name contains K
# (a substring, run.py -k; K="a b" for several), on both backends, then with KERNELS=... on the
# kernel stage's guest too. `make itest K=test_dns`, `make itest K=Test03 KERNELS=linux-image-amd64`.
itest: $(OUT)/depwatch $(OUT)/loadgen $(OUT)/bioclient $(OUT)/goattach $(GO_BINS) | deps
	$(Q)OUT=$(OUT) K="$(K)" ITEST_KERNELS="$(if $(filter file,$(origin KERNELS)),,$(KERNELS))" bash tests/itest.sh

# Build, install what is missing, start the daemon on its embedded default config.
run: $(OUT)/depwatch | deps
	$(OUT)/depwatch run

# The slow-dependency story on loopback, about 40 s (root).
demo: $(OUT)/depwatch
	python3 scripts/demo.py

clean:
	rm -rf $(OUT)

# The monitoring mixin (mixin/, doc/fleet.md): its rules, alerts, Alertmanager inhibit_rules snippet
# and dashboards rendered by Debian's jsonnet into $(OUT)/mixin/ (prometheus_alerts.yaml,
# prometheus_rules.yaml, alertmanager_inhibit_rules.yaml, dashboards/*.json), with the promtool unit
# tests beside them (`promtool test rules $(OUT)/mixin/tests.yaml`). Not part of a plain `make`.
JSONNET ?= jsonnet
MIXIN_SRCS := $(wildcard mixin/*.libsonnet mixin/*.jsonnet mixin/dashboards/*.libsonnet) mixin/tests.yaml
MIXIN_OUT := $(OUT)/mixin/prometheus_alerts.yaml
mixin: $(MIXIN_OUT)
$(MIXIN_OUT): $(MIXIN_SRCS) | $(DEPS_FIRST) $(OUT)
	$(call msg,JSONNET,$(OUT)/mixin)
	$(Q)$(call need,$(JSONNET),jsonnet)
	$(Q)# a directory of this make's own, renamed into place: two makes at once (make test's runners
	$(Q)# each install) never write into one another's, and a reader never sees a half-rendered one
	$(Q)tmp=$$(mktemp -d $(OUT)/mixin.tmp.XXXXXX) && mkdir -p $$tmp/dashboards && \
	$(JSONNET) -S -m $$tmp mixin/render.jsonnet >/dev/null && cp mixin/tests.yaml $$tmp/tests.yaml && \
	chmod 755 $$tmp && rm -rf $(OUT)/mixin.old.$$$$ && \
	{ ! [ -e $(OUT)/mixin ] || mv -T $(OUT)/mixin $(OUT)/mixin.old.$$$$; } && \
	{ mv -T $$tmp $(OUT)/mixin || rm -rf $$tmp; } && rm -rf $(OUT)/mixin.old.$$$$

# `make install [PREFIX=/usr/local] [DESTDIR=...]`: the binary, depwatch(8), the
# systemd unit, an example config in /etc/depwatch (0644 root: the daemon refuses
# a config others could write), never over an existing one, the mixin and its runbooks.
PREFIX ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
MANDIR ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc
UNITDIR ?= $(PREFIX)/lib/systemd/system
# The mixin's rendered rules (configuration an operator may edit) and dashboards, where Debian's
# monitoring packages put theirs.
PROMRULESDIR ?= $(SYSCONFDIR)/prometheus/depwatch
DASHBOARDDIR ?= $(PREFIX)/share/depwatch/dashboards
MIXIN_ETC := prometheus_alerts.yaml prometheus_rules.yaml alertmanager_inhibit_rules.yaml
# doc/runbooks.md, which every alert's runbook_url opens. The mixin's default runbookBase
# (mixin/config.libsonnet) is the Debian package's copy (PREFIX=/usr); the rules make install
# writes point at the copy it installs.
DOCDIR ?= $(PREFIX)/share/doc/depwatch
RUNBOOKS_DEFAULT := file:///usr/share/doc/depwatch/runbooks.md\#
RUNBOOKS_HERE := file://$(DOCDIR)/runbooks.md\#
# The config's owner; debian/rules empties it (a package build is not root: dpkg-deb makes
# every file root's).
INSTALL_OWNER ?= -o 0 -g 0

$(OUT)/depwatch.service: dist/depwatch.service.in | $(OUT)
	$(call msg,GEN,$@)
	$(Q)sed 's|@SBINDIR@|$(SBINDIR)|g' $< > $@

install: $(OUT)/depwatch $(OUT)/depwatch.service $(MIXIN_OUT)
	install -d -m 0755 $(DESTDIR)$(SBINDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)/depwatch
	install -d -m 0755 $(DESTDIR)$(PROMRULESDIR) $(DESTDIR)$(DASHBOARDDIR) $(DESTDIR)$(DOCDIR)
	install -m 0644 $(OUT)/mixin/dashboards/*.json $(DESTDIR)$(DASHBOARDDIR)/
	install -m 0644 doc/runbooks.md $(DESTDIR)$(DOCDIR)/runbooks.md
	$(Q)rm -rf $(OUT)/mixin-install && mkdir -p $(OUT)/mixin-install
	$(Q)for f in $(MIXIN_ETC); do \
		sed 's|$(RUNBOOKS_DEFAULT)|$(RUNBOOKS_HERE)|' $(OUT)/mixin/$$f > $(OUT)/mixin-install/$$f || exit 1; \
		if [ -e $(DESTDIR)$(PROMRULESDIR)/$$f ] && ! cmp -s $(OUT)/mixin-install/$$f $(DESTDIR)$(PROMRULESDIR)/$$f; then \
			install -m 0644 $(INSTALL_OWNER) $(OUT)/mixin-install/$$f $(DESTDIR)$(PROMRULESDIR)/$$f.new; \
			echo "  kept $(DESTDIR)$(PROMRULESDIR)/$$f (edited; the new rendering is $$f.new)"; \
		else \
			install -m 0644 $(INSTALL_OWNER) $(OUT)/mixin-install/$$f $(DESTDIR)$(PROMRULESDIR)/$$f; \
		fi; \
	done
	install -m 0755 $(OUT)/depwatch $(DESTDIR)$(SBINDIR)/depwatch
	install -m 0644 doc/depwatch.8 $(DESTDIR)$(MANDIR)/man8/depwatch.8
	install -m 0644 $(OUT)/depwatch.service $(DESTDIR)$(UNITDIR)/depwatch.service
	$(Q)if [ -e $(DESTDIR)$(SYSCONFDIR)/depwatch/depwatch.conf ]; then \
		echo "  kept $(DESTDIR)$(SYSCONFDIR)/depwatch/depwatch.conf (exists; the example is examples/depwatch.conf)"; \
	else \
		install -m 0644 $(INSTALL_OWNER) examples/depwatch.conf $(DESTDIR)$(SYSCONFDIR)/depwatch/depwatch.conf; \
	fi

# The Debian package, $(OUT)/depwatch_$(VERSION)_$(DEB_ARCH).deb (and depwatch-dbgsym_*.deb,
# .buildinfo, .changes): dpkg-buildpackage from this tree, built in debian/build with
# Debian's build flags, unsigned, its log in $(OUT)/deb.log; the tree is left as it was
# (--post-clean). Its unit tests run unless DEB_BUILD_OPTIONS=nocheck. doc/install.md.
DEB_ARCH = $(shell dpkg --print-architecture)
DEB_DIR = $(abspath $(OUT))
deb: | $(OUT)
	$(call msg,DEB,$(OUT)/depwatch_$(VERSION)_$(DEB_ARCH).deb)
	$(Q)$(call need,dpkg-buildpackage,dpkg-dev)
	$(Q)rm -f $(DEB_FILE) $(DEB_DIR)/depwatch-dbgsym_$(VERSION)_$(DEB_ARCH).deb
	$(Q)DW_DEB_DIR=$(DEB_DIR) dpkg-buildpackage -b -us -uc --post-clean \
		--buildinfo-option=-u$(DEB_DIR) --changes-option=-u$(DEB_DIR) \
		--buildinfo-file=$(DEB_DIR)/depwatch_$(VERSION)_$(DEB_ARCH).buildinfo \
		--changes-file=$(DEB_DIR)/depwatch_$(VERSION)_$(DEB_ARCH).changes \
		$(if $(filter 1,$(V)),,>$(OUT)/deb.log 2>&1 || { tail -n 40 $(OUT)/deb.log; echo "make deb: failed, the whole log is $(OUT)/deb.log" >&2; exit 1; })

# Leaves the config and the rules in $(PROMRULESDIR): they are the admin's now.
uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/depwatch $(DESTDIR)$(MANDIR)/man8/depwatch.8 $(DESTDIR)$(UNITDIR)/depwatch.service
	rm -rf $(DESTDIR)$(DASHBOARDDIR)
	rm -f $(DESTDIR)$(DOCDIR)/runbooks.md
	rmdir $(DESTDIR)$(PREFIX)/share/depwatch $(DESTDIR)$(DOCDIR) 2>/dev/null || true

# --- Benchmark (bench/): overhead A/F/B/H/S/C (baseline, the floor of issue 17, depwatch, depwatch
# with its daemon stopped, the syscalls backend, bpftrace peer), decision
# speed, the daemon's cost at 1 000 x 10 000 and 10 000 x 50 000, connection churn (issue 13),
# HTTP/2 (issue 23: h2load -m 10 against nghttpd, H2=0 to skip), and with BEFORE=old-binary an arm for the old build (bench-before below). Not part of
# `make test`. `make bench` needs root and takes about 20 minutes (up to 30 on a busy machine); it
# prints Markdown tables and writes bench/RESULTS.md. `BENCH_QUICK=1 make bench`: a
# smoke run of a few minutes, written to $(OUT)/bench-quick.md. Knobs: bench/run.sh.
$(OUT)/pingpong: bench/pingpong.c | $(OUT)
	$(call msg,BENCH,$@)
	$(Q)$(CC) $(CFLAGS) -O2 -pthread $< -o $@

# UDP round trips (issue 35): a ping-pong on a port that is no DNS port, or queries to a resolver.
# Not in make bench: bench/dns.py runs it, bench/RESULTS.md says how.
$(OUT)/udpping: bench/udpping.c | $(OUT)
	$(call msg,BENCH,$@)
	$(Q)$(CC) $(CFLAGS) -O2 -pthread $< -o $@

# A unix socket pair's 1-byte write and read in a loop (issue 23): what the receive-copy hook
# costs reads depwatch does not watch. Not in make bench: bench/RESULTS.md says how it was run.
$(OUT)/copyloop: bench/copyloop.c | $(OUT)
	$(call msg,BENCH,$@)
	$(Q)$(CC) $(CFLAGS) -O2 $< -o $@

# The floor (issue 17): trivial programs on depwatch's hooks and their loader.
$(OUT)/floor.bpf.o: bench/floor.bpf.c $(OUT)/vmlinux.h | $(OUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) $(WARN) $(FLOOR_CFLAGS) -Wno-unused-parameter -I$(OUT) -c $< -o $@
	$(Q)llvm-strip -g $@ 2>/dev/null || true

$(OUT)/floor.skel.h: $(OUT)/floor.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name floor_bpf > $@

$(OUT)/floor: bench/floor.c $(OUT)/floor.skel.h | $(OUT)
	$(call msg,BENCH,$@)
	$(Q)$(CC) $(CFLAGS) $< -lbpf -lelf -lz -o $@

bench: $(OUT)/pingpong $(OUT)/depwatch $(OUT)/floor $(GOBIN_DIR)/gotls-stripped-trimpath
	$(Q)OUT=$(OUT) bash bench/run.sh

# The old daemon of make bench's before/after arm (BEFORE=$(OUT)/depwatch-before), built
# from BEFORE_REV in a temporary git worktree (removed after): the working tree is untouched.
BEFORE_REV ?= f9826fc
.PHONY: bench-before
bench-before: | $(OUT)
	$(Q)bash bench/build-before.sh $(BEFORE_REV) $(OUT)/depwatch-before

# An experiment variant for the same arm (BEFORE=$(OUT)/depwatch-$(VARIANT)): this commit with
# bench/variants/$(VARIANT).patch applied (issue 17: percpu, nopend, nostack, nocount, nocallers, noclock, nosender, noretry, bare; issue 23: noh2, sysone, syssmall; bench/README.md), built likewise.
VARIANT ?= percpu
.PHONY: bench-variant
bench-variant: | $(OUT)
	$(Q)bash bench/build-before.sh HEAD $(OUT)/depwatch-$(VARIANT) bench/variants/$(VARIANT).patch
