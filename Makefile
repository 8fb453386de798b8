# rust-mm: a Rust-in-mm patch series on Linux 6.12 (Debian linux-source-6.12).
#
#   make run     the main job: install the toolchain (first time), prepare the
#                pinned tree, build the patched kernel, boot it under QEMU,
#                run our KUnit suites and print a report
#   make test    every test (host cargo tests, series checks, KUnit), ending
#                with one line 'N passed, N failed'
#   make test-all
#                make test, then what does not fit CI's time (every prefix
#                of the stack builds); same last line
#
# Other targets: setup doctor prepare kunit kcsan bisect userspace userspace-off
# userspace-base bench profile series subid-tables
# docs-tables bench-seqcount rust-project lint refresh-patches clean.
# run, kunit, userspace, userspace-off and userspace-base take ARCH=x86_64
# (default) or ARCH=arm64 [GRANULE=4k|16k|64k] (docs/arm64.md).
# See README.md.

SHELL := /bin/bash
S := scripts
SERIES_DIR ?= build/series

TOPICS ?=

.PHONY: all run test test-all bisect setup doctor prepare series subid-tables docs-tables \
	rust-project lint host-test kunit kcsan userspace userspace-off \
	userspace-base bench profile bench-seqcount \
	refresh-patches clean

all: run

setup:
	@bash $(S)/setup.sh

doctor:
	@bash $(S)/setup.sh --doctor

prepare: setup
	@bash $(S)/prepare-tree.sh

run: prepare
	@bash $(S)/run.sh

test:
	@bash $(S)/test.sh

test-all:
	@bash $(S)/test-all.sh

# Every prefix of the stack builds (part of test-all).
bisect: kunit
	@bash $(S)/bisect-build.sh

host-test: setup
	@cd rust/mm && CARGO_TARGET_DIR=$(CURDIR)/build/cargo /usr/bin/cargo test --locked

kunit: prepare
	@bash $(S)/run-kunit.sh

kcsan: prepare
	@bash $(S)/run-kcsan.sh

userspace: kunit
	@bash $(S)/run-userspace.sh

# The same userspace tests on CONFIG_MM_RMAP_ID=n and on the unpatched tree.
userspace-off: prepare
	@bash $(S)/run-variant.sh off

userspace-base: prepare
	@bash $(S)/run-variant.sh base

# Base 6.12 vs patched, under QEMU -icount shift=0: docs/benchmarks.*
bench:
	@bash $(S)/bench.sh

# Instructions per kernel function in a benchmark case, base vs patched.
profile:
	@bash $(S)/profile.sh

bench-seqcount: setup
	@bash $(S)/bench-seqcount.sh

# One directory per topic (cover letter, signed-off patches, quilt series);
# TOPICS="a b" exports only those (refused unless the topics they depend on
# are among them).
series: prepare
	@bash $(S)/series.sh export $(abspath $(SERIES_DIR)) $(TOPICS)

refresh-patches:
	@bash $(S)/series.sh refresh

# Per arch and page size: which folio order maps to which class (default);
# SUBID_FORMAT=json: every class and table; SUBID_FORMAT=markdown: docs/subid.md.
SUBID_FORMAT ?= targets
subid-tables: setup
	@cd rust/mm && CARGO_TARGET_DIR=$(CURDIR)/build/cargo /usr/bin/cargo run -q --locked --bin subid-tables -- --$(SUBID_FORMAT)

docs-tables: setup
	@bash $(S)/docs-tables.sh

rust-project: prepare
	@bash $(S)/rust-project.sh

lint: prepare
	@bash $(S)/lint.sh

clean:
	rm -rf build rust/mm/target
