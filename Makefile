# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# mroce top-level Makefile. Out-of-tree build into $(BUILD); quiet unless V=1.
# Each directory declares what it contains in its module.mk (sources, tools,
# tests, fuzzers, BPF objects); the rules live here once.
#
#   make            build everything (library, tools, BPF objects, man pages)
#   make check      install deps, build with sanitizers, run all tests
#   make install    install into $(DESTDIR)$(PREFIX) (make help: the dirs)
#   make help       list the targets

SHELL := /bin/bash
BUILD ?= build
V ?= 0
ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-8s %s\n' $(1) $(2)
endif

CC ?= gcc
ifeq ($(origin CC),default)
CC := gcc
endif
CLANG ?= clang
BPFTOOL ?= bpftool
PKG_CONFIG ?= pkg-config
OBJCOPY ?= objcopy
HELP2MAN_SH := scripts/manpage.sh

# The one version is include/mroce/version.h's; the soname follows MAJOR.
version_def = $(shell sed -n 's/^.define MROCE_VERSION$(1)  *//p' \
	include/mroce/version.h)
VERSION := $(subst ",,$(call version_def,))
SOVERSION := $(call version_def,_MAJOR)
ifneq ($(VERSION),$(SOVERSION).$(call version_def,_MINOR).$(call version_def,_PATCH))
$(error include/mroce/version.h: MROCE_VERSION "$(VERSION)" is not MAJOR.MINOR.PATCH)
endif

# Where `make install` puts things (GNU names; DESTDIR for staging).
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
DOCDIR ?= $(DATADIR)/doc/mroce
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
UNITDIR ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
SYSCONFDIR ?= /etc
ARCH_INC := /usr/include/$(shell $(CC) -dumpmachine 2>/dev/null)

WARN := -Wall -Wextra -Werror -Wno-unused-parameter
CPPFLAGS_ALL := -Iinclude -I$(BUILD)/include -D_GNU_SOURCE
CFLAGS_REL := -std=gnu11 -O2 -g $(WARN) -MMD -MP
CFLAGS_SAN := -std=gnu11 -O1 -g $(WARN) -MMD -MP -fno-omit-frame-pointer \
	-fsanitize=address,undefined -fno-sanitize-recover=undefined
LDFLAGS_SAN := -fsanitize=address,undefined
CFLAGS_FUZZ := -std=gnu11 -O1 -g -Wall -Wextra -Wno-unused-parameter -MMD -MP \
	-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
BPF_CFLAGS := -g -O2 -target bpf -Wall -Werror -Wno-unused-function \
	-Iinclude -I$(BUILD)/include -I$(ARCH_INC) -MMD -MP

# Libraries (resolved after `make deps`; empty values fail in config-check).
PC_LIBS := libbpf libxdp json-c
LIBS_PC = $(shell $(PKG_CONFIG) --libs $(PC_LIBS) 2>/dev/null)
CHECK_LIBS = $(shell $(PKG_CONFIG) --libs check 2>/dev/null)

# Filled in by the module.mk files.
LIB_SRCS :=		# linked into libmroce.a (and its sanitizer twin)
ILIBS :=		# internal static libraries: <name>_ILIB_SRCS ->
			# build/lib/libmroce-<name>.a (+ sanitizer twin);
			# a tool or test helper links those in <x>_ILIBS,
			# the Check runner links every one
TOOLS :=		# build/bin/<tool>; <tool>_SRCS, <tool>_LDLIBS
TEST_SRCS :=		# Check suites, linked into build/tests/mroce_check
TEST_BINS :=		# helper programs tests run: <name>_SRCS (sanitized)
FUZZERS :=		# build/fuzz/<name>; <name>_SRC; corpus tests/fuzz/corpus/<name>
BPF_SRCS :=		# bpf/*.bpf.c -> build/bpf/*.bpf.o + build/include/*.skel.h

MODULES := $(sort $(wildcard */module.mk */*/module.mk))
include $(MODULES)

MK_DEPS := Makefile $(MODULES)

obj_rel = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
obj_san = $(patsubst %.c,$(BUILD)/san/%.o,$(1))
obj_fuzz = $(patsubst %.c,$(BUILD)/fuzzobj/%.o,$(1))

LIB_A := $(BUILD)/libmroce.a
LIB_SAN_A := $(BUILD)/libmroce-san.a
LIB_FUZZ_A := $(BUILD)/libmroce-fuzz.a
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.bpf.o,$(BPF_SRCS))
BPF_SKELS := $(patsubst bpf/%.bpf.c,$(BUILD)/include/%.skel.h,$(BPF_SRCS))
TOOL_BINS := $(addprefix $(BUILD)/bin/,$(TOOLS))
TEST_HELPER_BINS := $(addprefix $(BUILD)/tests/,$(TEST_BINS))
FUZZ_BINS := $(addprefix $(BUILD)/fuzz/,$(FUZZERS))
ilib_rel = $(foreach l,$(1),$(BUILD)/lib/libmroce-$(l).a)
ilib_san = $(foreach l,$(1),$(BUILD)/lib/libmroce-$(l)-san.a)
ILIB_ALL_SRCS := $(foreach l,$(ILIBS),$($(l)_ILIB_SRCS))
CHECK_BIN := $(BUILD)/tests/mroce_check

# What `make install` ships (see "install" below). libmroce for programs
# is built a second time from position-independent objects (build/pic/):
# the shared library and build/dist/libmroce.a both show only the API that
# user/lib/libmroce.map lists. Tools and tests keep linking the internal
# archive $(LIB_A), whose every symbol is global.
LIB_MAP := user/lib/libmroce.map
PIC_OBJS := $(patsubst %.c,$(BUILD)/pic/%.o,$(LIB_SRCS))
SO_NAME := libmroce.so.$(SOVERSION)
SO_REAL := libmroce.so.$(VERSION)
DIST_SO := $(BUILD)/dist/$(SO_REAL)
DIST_A := $(BUILD)/dist/libmroce.a
SO_LIBS = $(shell $(PKG_CONFIG) --libs libbpf libxdp 2>/dev/null) -lm
SBIN_TOOLS := mroced			# daemons: sbin, man section 8
NOINST_TOOLS := mroce_example		# user/examples: installed as source
BIN_TOOLS := $(filter-out $(SBIN_TOOLS) $(NOINST_TOOLS),$(TOOLS))
MAN_PAGES := $(patsubst %,$(BUILD)/man/%.1,$(BIN_TOOLS)) \
	$(patsubst %,$(BUILD)/man/%.8,$(SBIN_TOOLS))

# Objects reached only through pattern rules are intermediates to make,
# which would delete them after each build and rebuild them next time.
.SECONDARY: $(BPF_OBJS) \
	$(call obj_rel,$(ILIB_ALL_SRCS)) $(call obj_san,$(ILIB_ALL_SRCS)) \
	$(call obj_rel,$(foreach t,$(TOOLS),$($(t)_SRCS))) \
	$(call obj_san,$(foreach t,$(TEST_BINS),$($(t)_SRCS))) \
	$(call obj_fuzz,$(foreach t,$(FUZZERS),$($(t)_SRC)))

.PHONY: all check deps fuzz help clean config-check tests-build demo \
	dist man install uninstall
.DEFAULT_GOAL := all

all: config-check $(BPF_SKELS) $(LIB_A) $(call ilib_rel,$(ILIBS)) $(TOOL_BINS) \
	dist man

help:
	@echo 'mroce make targets:'
	@echo '  all        (default) build libmroce, tools, BPF objects and man pages'
	@echo '             into $(BUILD)/'
	@echo '  check      install missing deps, build with ASan/UBSan, run every test'
	@echo '             (Check suites, BPF tests, namespace tests, fuzz corpus replay,'
	@echo '             make install into a temporary DESTDIR)'
	@echo '  demo       install missing deps, build, run the MetaRoCE vs RoCEv2 demo'
	@echo '  deps       install build/test dependencies from Debian 12 (apt-get)'
	@echo '  fuzz       run every libFuzzer target for FUZZ_SECONDS (default 60) each'
	@echo '  clean      remove $(BUILD)/'
	@echo '  dist       libmroce.so.$(VERSION) and libmroce.a for programs ($(BUILD)/dist/)'
	@echo '  man        man pages from each tool'"'"'s --help (help2man, $(BUILD)/man/)'
	@echo '  install    build, then install libmroce (shared, static, header, mroce.pc),'
	@echo '             the tools, their man pages, the mroced systemd unit and'
	@echo '             sysusers.d group, README and LICENSES'
	@echo '  uninstall  remove exactly what install installed'
	@echo 'Variables: V=1 (show commands), BUILD=dir, FUZZ_SECONDS=n,'
	@echo '           CK_RUN_SUITE=name / CK_RUN_CASE=name (run a subset of tests)'
	@echo 'Install variables (current value):'
	@echo '  DESTDIR=$(DESTDIR)  (staging root, e.g. for packages)'
	@echo '  PREFIX=$(PREFIX)  BINDIR=$(BINDIR)  SBINDIR=$(SBINDIR)'
	@echo '  LIBDIR=$(LIBDIR)  INCLUDEDIR=$(INCLUDEDIR)'
	@echo '  PKGCONFIGDIR=$(PKGCONFIGDIR)  MANDIR=$(MANDIR)  DOCDIR=$(DOCDIR)'
	@echo '  UNITDIR=$(UNITDIR)  SYSUSERSDIR=$(SYSUSERSDIR)'
	@echo '  SYSCONFDIR=$(SYSCONFDIR)  (the unit reads SYSCONFDIR/default/mroced)'

deps:
	$(Q)bash scripts/deps.sh

# Fail early with one clear message naming the Debian package.
config-check:
	$(Q)bash scripts/deps.sh --check

# ---------------------------------------------------------------- objects
$(BUILD)/obj/%.o: %.c $(MK_DEPS) | $(BPF_SKELS)
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CFLAGS_REL) -c $< -o $@

$(BUILD)/san/%.o: %.c $(MK_DEPS) | $(BPF_SKELS)
	$(call msg,CC-SAN,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CFLAGS_SAN) -c $< -o $@

$(BUILD)/pic/%.o: %.c $(MK_DEPS) | $(BPF_SKELS)
	$(call msg,CC-PIC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CFLAGS_REL) -fPIC -c $< -o $@

$(BUILD)/fuzzobj/%.o: %.c $(MK_DEPS)
	$(call msg,CC-FUZZ,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(CPPFLAGS_ALL) $(CFLAGS_FUZZ) -DMROCE_FUZZ_MAIN -c $< -o $@

$(LIB_A): $(call obj_rel,$(LIB_SRCS))
	$(call msg,AR,$@)
	$(Q)mkdir -p $(@D) && rm -f $@ && if [ -n "$^" ]; then ar rcs $@ $^; else printf '!<arch>\n' > $@; fi

$(LIB_SAN_A): $(call obj_san,$(LIB_SRCS))
	$(call msg,AR,$@)
	$(Q)mkdir -p $(@D) && rm -f $@ && if [ -n "$^" ]; then ar rcs $@ $^; else printf '!<arch>\n' > $@; fi

$(LIB_FUZZ_A): $(call obj_fuzz,$(LIB_SRCS))
	$(call msg,AR,$@)
	$(Q)mkdir -p $(@D) && rm -f $@ && if [ -n "$^" ]; then ar rcs $@ $^; else printf '!<arch>\n' > $@; fi

# Internal libraries: one rule pair each, made from the ILIBS list.
define ILIB_RULES
$(BUILD)/lib/libmroce-$(1).a: $(call obj_rel,$($(1)_ILIB_SRCS))
	$$(call msg,AR,$$@)
	$(Q)mkdir -p $$(@D) && rm -f $$@ && ar rcs $$@ $$^
$(BUILD)/lib/libmroce-$(1)-san.a: $(call obj_san,$($(1)_ILIB_SRCS))
	$$(call msg,AR,$$@)
	$(Q)mkdir -p $$(@D) && rm -f $$@ && ar rcs $$@ $$^
endef
$(foreach l,$(ILIBS),$(eval $(call ILIB_RULES,$(l))))

# ---------------------------------------------------------------- dist
# libmroce for programs: the shared library (soname libmroce.so.MAJOR,
# linked against what it uses, every symbol resolved: -z defs), and the
# static one as a single object whose only global definitions are the
# map's (ld -r, then objcopy localizes the rest).
dist: $(DIST_SO) $(DIST_A)

$(DIST_SO): $(PIC_OBJS) $(LIB_MAP)
	$(call msg,LINK-SO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -shared -o $@ $(PIC_OBJS) -Wl,-soname,$(SO_NAME) \
		-Wl,--version-script=$(LIB_MAP) -Wl,-z,defs -Wl,--as-needed \
		$(SO_LIBS)
	$(Q)ln -sf $(SO_REAL) $(@D)/$(SO_NAME) && ln -sf $(SO_NAME) $(@D)/libmroce.so

$(DIST_A): $(PIC_OBJS) $(LIB_MAP)
	$(call msg,AR,$@)
	$(Q)mkdir -p $(@D) && rm -f $@ $(@D)/libmroce.o
	$(Q)sed -n 's/^[[:space:]]*\([A-Za-z_][A-Za-z0-9_]*\);$$/\1/p' $(LIB_MAP) > $(@D)/libmroce.syms
	$(Q)$(LD) -r -o $(@D)/libmroce.o $(PIC_OBJS)
	$(Q)$(OBJCOPY) --keep-global-symbols=$(@D)/libmroce.syms $(@D)/libmroce.o
	$(Q)ar rcs $@ $(@D)/libmroce.o && rm -f $(@D)/libmroce.o

# Man pages from each installed tool's --help (scripts/manpage.sh).
man: $(MAN_PAGES)

$(BUILD)/man/%.1: $(BUILD)/bin/% $(HELP2MAN_SH)
	$(call msg,MAN,$@)
	$(Q)mkdir -p $(@D) && bash $(HELP2MAN_SH) $< 1 $(VERSION) $@

$(BUILD)/man/%.8: $(BUILD)/bin/% $(HELP2MAN_SH)
	$(call msg,MAN,$@)
	$(Q)mkdir -p $(@D) && bash $(HELP2MAN_SH) $< 8 $(VERSION) $@

# ---------------------------------------------------------------- BPF
$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(MK_DEPS)
	$(call msg,BPF,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/include/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*) > $@.tmp && mv $@.tmp $@

# ---------------------------------------------------------------- tools
.SECONDEXPANSION:
$(BUILD)/bin/%: $$(call obj_rel,$$($$*_SRCS)) $$(call ilib_rel,$$($$*_ILIBS)) $(LIB_A)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -o $@ $(filter %.o,$^) $(call ilib_rel,$($*_ILIBS)) $(LIB_A) $($*_LDLIBS) $(LIBS_PC) -lm

$(BUILD)/tests/%: $$(call obj_san,$$($$*_SRCS)) $$(call ilib_san,$$($$*_ILIBS)) $(LIB_SAN_A)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS_SAN) -o $@ $(filter %.o,$^) $(call ilib_san,$($*_ILIBS)) $(LIB_SAN_A) $($*_LDLIBS) $(LIBS_PC) -lm

$(CHECK_BIN): $(call obj_san,$(TEST_SRCS)) $(call ilib_san,$(ILIBS)) $(LIB_SAN_A)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LDFLAGS_SAN) -o $@ $(filter %.o,$^) $(call ilib_san,$(ILIBS)) $(LIB_SAN_A) $(LIBS_PC) $(CHECK_LIBS) -lm

$(BUILD)/fuzz/%: $$(call obj_fuzz,$$($$*_SRC)) $(LIB_FUZZ_A)
	$(call msg,FUZZ-LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) -fsanitize=fuzzer,address,undefined -o $@ $(filter %.o,$^) $(LIB_FUZZ_A) -lm

# ---------------------------------------------------------------- check
tests-build: config-check $(BPF_SKELS) $(LIB_A) $(TOOL_BINS) $(TEST_HELPER_BINS) $(CHECK_BIN) \
	dist man

# The README's test command. Installs what is missing, then runs one Check
# runner holding every suite; its summary line is the last thing printed.
check:
	$(Q)bash scripts/deps.sh
	$(Q)$(MAKE) --no-print-directory tests-build
	$(Q)MROCE_BUILD=$(abspath $(BUILD)) MROCE_SRC=$(CURDIR) $(CHECK_BIN)

# The README's main demo: installs what is missing, builds, runs.
demo:
	$(Q)bash scripts/deps.sh
	$(Q)$(MAKE) --no-print-directory all
	$(Q)MROCE_BUILD=$(BUILD) bash scripts/demo.sh

# ---------------------------------------------------------------- install
# Every file install puts in place, listed once: uninstall removes exactly
# these, then the directories that are mroce's own if empty. The tools link
# libmroce statically (they use internal layers); the BPF programs they load
# are inside them (bpftool skeletons), so no .bpf.o is installed.
PUBLIC_HEADERS := include/mroce/mroce.h include/mroce/version.h
LICENSE_FILES := $(sort $(wildcard LICENSES/*))
INST_BIN := $(addprefix $(BINDIR)/,$(BIN_TOOLS))
INST_SBIN := $(addprefix $(SBINDIR)/,$(SBIN_TOOLS))
INST_LIB := $(addprefix $(LIBDIR)/,$(SO_REAL) $(SO_NAME) libmroce.so libmroce.a)
INST_HDR := $(patsubst include/%,$(INCLUDEDIR)/%,$(PUBLIC_HEADERS))
INST_MAN := $(patsubst %,$(MANDIR)/man1/%.1,$(BIN_TOOLS)) \
	$(patsubst %,$(MANDIR)/man8/%.8,$(SBIN_TOOLS))
INST_DOC := $(addprefix $(DOCDIR)/,README.md $(LICENSE_FILES) \
	mroced.default examples/example.c)
INST_CONF := $(PKGCONFIGDIR)/mroce.pc $(UNITDIR)/mroced.service \
	$(SYSUSERSDIR)/mroce.conf
INSTALLED := $(INST_BIN) $(INST_SBIN) $(INST_LIB) $(INST_HDR) $(INST_MAN) \
	$(INST_DOC) $(INST_CONF)
OWN_DIRS := $(DOCDIR)/examples $(DOCDIR)/LICENSES $(DOCDIR) $(INCLUDEDIR)/mroce

# mroce.pc names its directories relative to ${prefix} where it can.
pc_dir = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))
SUBST_DIRS = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' \
	-e 's|@LIBDIR@|$(call pc_dir,$(LIBDIR))|g' \
	-e 's|@INCLUDEDIR@|$(call pc_dir,$(INCLUDEDIR))|g' \
	-e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g'

install: all
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)set -e; D='$(DESTDIR)'; \
	install -d $(addprefix $$D,$(sort $(dir $(INSTALLED)))); \
	install -m 0755 $(addprefix $(BUILD)/bin/,$(BIN_TOOLS)) $$D$(BINDIR)/; \
	install -m 0755 $(addprefix $(BUILD)/bin/,$(SBIN_TOOLS)) $$D$(SBINDIR)/; \
	install -m 0644 $(DIST_SO) $(DIST_A) $$D$(LIBDIR)/; \
	ln -sfn $(SO_REAL) $$D$(LIBDIR)/$(SO_NAME); \
	ln -sfn $(SO_NAME) $$D$(LIBDIR)/libmroce.so; \
	install -m 0644 $(PUBLIC_HEADERS) $$D$(INCLUDEDIR)/mroce/; \
	install -m 0644 $(filter %.1,$(MAN_PAGES)) $$D$(MANDIR)/man1/; \
	install -m 0644 $(filter %.8,$(MAN_PAGES)) $$D$(MANDIR)/man8/; \
	install -m 0644 README.md user/mroced/mroced.default $$D$(DOCDIR)/; \
	install -m 0644 $(LICENSE_FILES) $$D$(DOCDIR)/LICENSES/; \
	install -m 0644 user/examples/example.c $$D$(DOCDIR)/examples/; \
	$(SUBST_DIRS) user/lib/mroce.pc.in > $$D$(PKGCONFIGDIR)/mroce.pc; \
	$(SUBST_DIRS) user/mroced/mroced.service.in > $$D$(UNITDIR)/mroced.service; \
	install -m 0644 user/mroced/mroced.sysusers $$D$(SYSUSERSDIR)/mroce.conf; \
	chmod 0644 $$D$(PKGCONFIGDIR)/mroce.pc $$D$(UNITDIR)/mroced.service; \
	if [ -z "$$D" ] && [ "$$(id -u)" = 0 ]; then PATH=$$PATH:/sbin ldconfig; fi

uninstall:
	$(call msg,UNINSTALL,$(DESTDIR)$(PREFIX))
	$(Q)rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	$(Q)for d in $(addprefix $(DESTDIR),$(OWN_DIRS)); do \
		[ ! -d "$$d" ] || rmdir --ignore-fail-on-non-empty "$$d"; done
	$(Q)if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then PATH=$$PATH:/sbin ldconfig; fi

FUZZ_SECONDS ?= 60
fuzz: config-check $(FUZZ_BINS)
	$(Q)set -e; for f in $(FUZZERS); do \
		mkdir -p $(BUILD)/fuzz-corpus/$$f; \
		echo "== fuzz $$f for $(FUZZ_SECONDS)s"; \
		$(BUILD)/fuzz/$$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			-artifact_prefix=$(BUILD)/fuzz/$$f- \
			$(BUILD)/fuzz-corpus/$$f tests/fuzz/corpus/$${f#fuzz_} 2>&1 | \
			grep -E 'stat::number_of_executed_units|stat::peak_rss|ERROR|SUMMARY|Done' ; \
		test $${PIPESTATUS[0]} -eq 0; \
	done

clean:
	$(call msg,CLEAN,$(BUILD))
	$(Q)rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
