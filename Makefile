# rust-mm: a Rust-in-mm patch series on Linux 7.3 (Debian linux-source-7.3,
# downloaded; RUST_MM_BASE=6.12: the 6.12 release's series, kernel-patches-6.12/).
# `make help` lists every target by group; README.md says what they print.
# Targets that build or boot a kernel take ARCH=x86_64 (default) or
# ARCH=arm64 [GRANULE=4k|16k|64k] (docs/arm64.md).
#
# Each target's line "## group: description" is what `make help` prints.

SHELL := /bin/bash
S := scripts
SERIES_DIR ?= build/series
TOPICS ?=

.PHONY: all help run test test-all bisect setup doctor prepare series subid-tables \
	docs-tables readme rust-project lint host-test kunit kcsan userspace userspace-off \
	userspace-base repro bench profile bench-seqcount refresh-patches clean

all: run

help: ## main: this list
	@awk -F'## ' '/^[a-z-]+:.*## / { split($$1, t, ":"); split($$2, d, ": ");      \
		g = d[1]; sub(/^[^:]*: /, "", $$2);                                        \
		if (!(g in seen)) { order[++n] = g; seen[g] = 1 }                           \
		line[g] = line[g] sprintf("  make %-16s %s\n", t[1], $$2) }                 \
		END { for (i = 1; i <= n; i++) printf "%s:\n%s", order[i], line[order[i]] }' $(MAKEFILE_LIST)

run: prepare ## main: install (first time), prepare the tree, build, boot, run the suites, print a report
	@bash $(S)/test/run.sh

test: ## main: every test CI runs; ends with one line 'N passed, N failed'
	@bash $(S)/test/test.sh

test-all: ## main: make test, then what does not fit CI's time (KCSAN, granules, full selftests, bisect)
	@bash $(S)/test/test-all.sh

setup: ## setup: install the toolchain (idempotent; names what is missing)
	@bash $(S)/setup/setup.sh

doctor: ## setup: print every tool's version and what is missing
	@bash $(S)/setup/setup.sh --doctor

prepare: setup ## setup: extract the pinned tree and apply the series (no fuzz)
	@bash $(S)/setup/prepare-tree.sh

rust-project: prepare ## setup: regenerate rust-project.json for rust-analyzer (after make run)
	@bash $(S)/setup/rust-project.sh

host-test: setup ## tests: cargo test of the kernel-independent core on the host
	@cd rust/mm && CARGO_TARGET_DIR=$(CURDIR)/build/cargo /usr/bin/cargo test --locked

kunit: prepare ## tests: build the test kernel and run our KUnit suites under QEMU
	@bash $(S)/test/run-kunit.sh

kcsan: prepare ## tests: our KUnit suites in a CONFIG_KCSAN=y build (x86_64; ARCH=arm64: arm64 4K), no report from our code
	@bash $(S)/test/run-kcsan.sh

userspace: kunit ## tests: our userspace programs and mm selftests booted in QEMU
	@bash $(S)/test/run-userspace.sh

userspace-off: prepare ## tests: the same on the patched tree with every option of ours off
	@bash $(S)/test/run-variant.sh off

userspace-base: prepare ## tests: the same on the unpatched tree
	@bash $(S)/test/run-variant.sh base

# REPRO="name[:arg,arg] ..." of tests/repro/ (default: every one, no
# arguments); REPRO_KERNEL=<build dir> boots another kernel than the
# unpatched one of make userspace-base.
REPRO ?=
repro: ## tests: reproducers of upstream problems (tests/repro) in one QEMU boot (REPRO=, REPRO_KERNEL=)
	@bash $(S)/test/run-repro.sh $(REPRO)

bisect: kunit ## tests: every prefix of the stack builds (part of test-all; hours)
	@bash $(S)/test/bisect-build.sh

lint: prepare ## tests: checkpatch --strict, rustfmt, clippy (after make run)
	@bash $(S)/test/lint.sh

bench: ## bench: base vs patched under QEMU -icount (BENCH_SYSTEM=, BENCH_LTO=1; docs/benchmarks.md)
	@bash $(S)/bench/bench.sh

profile: ## bench: instructions per kernel function of a benchmark case, base vs patched
	@bash $(S)/bench/profile.sh

bench-seqcount: setup ## bench: host micro benchmark of a seqcount write section
	@bash $(S)/bench/bench-seqcount.sh

# One directory per topic (cover letter, signed-off patches, quilt series);
# TOPICS="a b" exports only those (refused unless the topics they depend on
# are among them).
series: prepare ## series: export each topic as it is mailed (SERIES_DIR=, TOPICS=)
	@bash $(S)/series/series.sh export $(abspath $(SERIES_DIR)) $(TOPICS)

refresh-patches: ## series: write commits of the prepared tree back to kernel-patches/
	@bash $(S)/series/series.sh refresh

# Per arch and page size: which folio order maps to which class (default);
# SUBID_FORMAT=json: every class and table; SUBID_FORMAT=markdown: docs/subid.md.
SUBID_FORMAT ?= targets
subid-tables: setup ## docs: which folio order uses which sub-ID class (SUBID_FORMAT=json|markdown)
	@cd rust/mm && CARGO_TARGET_DIR=$(CURDIR)/build/cargo /usr/bin/cargo run -q --locked --bin subid-tables -- --$(SUBID_FORMAT)

docs-tables: setup ## docs: regenerate the capacity table in docs/ from the code
	@bash $(S)/docs/docs-tables.sh

readme: ## docs: regenerate README.md's results table from the benchmark reports
	@python3 $(S)/docs/readme-table.py --write

clean: ## main: remove build/ (kernels, trees, logs)
	rm -rf build rust/mm/target
