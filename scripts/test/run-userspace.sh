#!/usr/bin/env bash
# Boot the patched kernel under QEMU as a small machine (ARCH x86_64 or
# arm64, TCG, 3 vCPUs, 4 GiB of RAM, two NUMA nodes -- numa=fake=2 on
# x86_64, QEMU's -numa through the device tree on arm64 --, 512 MiB of zram
# swap and 64 hugetlb pages set up by init; x86_64 also has 2 GiB of
# legacy pmem for the device-dax test; docs/test-guests.md) with an
# initramfs of
# static test programs -- ours (tests/userspace/*.c, as /tests/rustmm_*)
# and the tree's mm selftests listed in tests/userspace/ksft.list (as
# /tests/ksft_mm_*) -- and read their results from the serial console.
# Uses the KUnit build's image, booted with kunit.enable=0. Prints one
# line per test of ours and per non-passing selftest case, the guest time
# of each program, then 'userspace: N passed, N failed, N skipped'. The
# results are judged by scripts/lib/results.py console against each
# program's plan and init's order: a planned case without a result, a
# result nobody planned, an undeclared skip, a program that did not run or
# end, a guest that hangs (time limit), panics or stops before
# "RUSTMM-DONE", kernel warnings/BUGs/lockdep reports anywhere in the
# console (result lines included), OOM kills and failed set-up steps are
# failures, each named.
#   USERSPACE_TIMEOUT   seconds before the guest counts as hung (default 5400)
#   USERSPACE_BUILD     kernel build directory to boot (default: the KUnit
#                       build); its .config says whether COW reuse is
#                       expected (CONFIG_MM_RMAP_ID=y) or the base behaviour
#   USERSPACE_LOG       console log (default build/userspace.log)
#   USERSPACE_NAME      name of the initramfs under build/ (default userspace)
#   USERSPACE_KSFT_SETS which selftests (ksft.list sets; default "all patched")
#   USERSPACE_MTHP_KB   mTHP sizes (KiB) to run cow_isolation and cow_reuse
#                       on besides the PMD size (default 64; "" for none)
#   USERSPACE_OURS      0: the selftests of USERSPACE_KSFT_SETS only, none
#                       of our programs (default 1)
#   USERSPACE_PARITY    selftest programs (ksft_mm_<name>, space separated)
#                       whose cases a parity stage compares with another
#                       kernel's and counts: reported, not counted here
#
# run-userspace.sh --selfcheck instead builds cow_isolation and vma_lock with
# -DSELFCHECK_SHARED (MAP_SHARED memory: every write is a "leak"; vma_lock's
# scenarios also get an order that breaks what they check) and runs them on
# the host, where every scenario must report FAIL; it prints
# 'selfcheck: N passed, N failed' counting each scenario that caught it.
set -uo pipefail
# shellcheck source=scripts/lib/env.sh
. "$(dirname "$0")/../lib/env.sh"

cflags=(-O2 -Wall -Wextra -Werror -static)
if [ "${1:-}" = --selfcheck ]; then
	mkdir -p "$BUILD_DIR"
	out=""
	for prog in cow_isolation vma_lock; do
		bin="$BUILD_DIR/${prog}_selfcheck"
		gcc "${cflags[@]}" -DSELFCHECK_SHARED -o "$bin" "$RUST_MM_TOP/tests/userspace/$prog.c" -lpthread ||
			die "cannot build the $prog self-check"
		out+="$(timeout 600 "$bin")"$'\n'
	done
	# Every case of the programs' plans must report FAIL here.
	planned=$(grep -c '^RUSTMM-CASE ' <<<"$out")
	caught=0
	while read -r case; do
		grep -q "^RUSTMM-TEST $case FAIL" <<<"$out" && caught=$((caught + 1))
	done < <(sed -n 's/^RUSTMM-CASE \([^ ]*\).*/\1/p' <<<"$out")
	grep '^RUSTMM-TEST ' <<<"$out" | sed 's/^RUSTMM-TEST /  /'
	[ "$planned" -gt 0 ] || echo "rust-mm: the self-check programs printed no plan"
	echo "selfcheck: $caught passed, $((planned - caught + (planned == 0))) failed (a planned case passes here if it caught the shared-memory leak)"
	[ "$caught" -eq "$planned" ] && [ "$planned" -gt 0 ]
	exit
fi

KOUT="${USERSPACE_BUILD:-$KUNIT_OUT}"
KERNEL="$KOUT/$KIMAGE"
NAME="${USERSPACE_NAME:-userspace$TSUFFIX}"
ROOT="$BUILD_DIR/initramfs-$NAME"
CPIO="$BUILD_DIR/initramfs-$NAME.cpio"
LOG="${USERSPACE_LOG:-$BUILD_DIR/userspace$TSUFFIX.log}"
TIMEOUT="${USERSPACE_TIMEOUT:-5400}"
SETS="${USERSPACE_KSFT_SETS:-all patched}"

[ -f "$KERNEL" ] || die "no kernel at $KERNEL (run: make kunit${ARCH:+ ARCH=$ARCH})"
need_qemu
need_ucc
needs=(BLK_DEV_INITRD DEVTMPFS ZRAM HUGETLBFS NUMA PRINTK_TIME)
[ "$KARCH" = x86_64 ] && needs+=(NUMA_EMU X86_PMEM_LEGACY ZONE_DEVICE DEV_DAX_PMEM)
for c in "${needs[@]}"; do
	grep -q "^CONFIG_$c=y" "$KOUT/.config" ||
		die "the kernel in $KOUT lacks CONFIG_$c (tests/kunit/*.kunitconfig have it)"
done
# Passed to init's environment by the kernel (an unknown NAME=value).
if grep -q '^CONFIG_MM_RMAP_ID=y' "$KOUT/.config"; then reuse=1; else reuse=0; fi
if grep -q '^CONFIG_DEBUG_MM_RMAP_ID=y' "$KOUT/.config"; then verify=1; else verify=0; fi
# The kernel counts contpte folds and unfolds (tests/userspace/contpte.c):
# the counters' own option on 7.3 (on in the patched and the option-off
# kernel), the topic's option on 6.12.
if grep -qE '^(# )?CONFIG_ARM64_CONTPTE_STATS[= ]' "$KOUT/.config"; then
	cstat_opt=CONFIG_ARM64_CONTPTE_STATS
else
	cstat_opt=CONFIG_ARM64_CONTPTE_RUST
fi
if grep -q "^$cstat_opt=y" "$KOUT/.config"; then cstats=1; else cstats=0; fi
# pagemap reports where swapped-out shared pages are, for readers that ask
# (tests/userspace/pagemap_swap.c).
if grep -q '^CONFIG_PAGEMAP_SHARED_SWAP=y' "$KOUT/.config"; then pswap=1; else pswap=0; fi
# Compound pagemaps' vmemmap as Rust plans it: devdax's expected values
# are the same either way; its lines say which code ran.
if grep -q '^CONFIG_COMPOUND_PAGEMAPS_RUST=y' "$KOUT/.config"; then cpgmap=1; else cpgmap=0; fi

rm -rf "$ROOT" && mkdir -p "$ROOT/tests"
"$UCC" "${cflags[@]}" -o "$ROOT/init" "$RUST_MM_TOP/tests/userspace/init.c" ||
	die "cannot build tests/userspace/init.c ($UCC with static libc needed: $UCC_PKG)"
: > "$ROOT/tests/order"
# Our programs: every topic's that runs on this arch (Programs: of
# kernel-patches/*/topic; devdax is x86_64's: it needs the legacy pmem of
# memmap=! below and the compound vmemmap, which arm64 does not
# select), in name order.
progs="$(python3 "$RUST_MM_TOP/scripts/lib/topics.py" programs "$KARCH" | sort)" ||
	die "cannot read the topics' programs (scripts/lib/topics.py programs $KARCH)"
[ "${USERSPACE_OURS:-1}" = 0 ] && progs=""
for name in $progs; do
	src="$RUST_MM_TOP/tests/userspace/$name.c"
	"$UCC" "${cflags[@]}" -o "$ROOT/tests/rustmm_$name" "$src" || die "cannot build $src"
	echo "rustmm_$name" >> "$ROOT/tests/order"
done
# devdax reports an unbind still blocked after 300 s itself (a dev_pagemap
# reference never dropped: memunmap_pages() waits for all of them); this
# is init's limit for the whole program (a minute or two under TCG).
[ -f "$ROOT/tests/rustmm_devdax" ] && echo 900 > "$ROOT/tests/rustmm_devdax.timeout"
# The COW isolation and reuse scenarios once more on each mTHP size of
# USERSPACE_MTHP_KB (default 64: one arm64 contpte block), the only anon THP
# size while they run (thp_test.h, --thp-kb=N).
[ "${USERSPACE_OURS:-1}" = 0 ] && USERSPACE_MTHP_KB=""
for kb in ${USERSPACE_MTHP_KB-64}; do
	for name in cow_isolation cow_reuse; do
		cp "$ROOT/tests/rustmm_$name" "$ROOT/tests/rustmm_${name}_${kb}k"
		echo "--thp-kb=$kb" > "$ROOT/tests/rustmm_${name}_${kb}k.args"
		echo "rustmm_${name}_${kb}k" >> "$ROOT/tests/order"
	done
done

# The tree's own mm selftests (tests/userspace/ksft.list), static-pie (some
# use fixed low addresses a non-PIE static heap can collide with), against
# the tree's uapi headers, compiled from inside the selftests directory so
# that __FILE__ (which pagemap_ioctl and gup_longterm use for scratch file
# names) is relative to the program's working directory.
uapi="$BUILD_DIR/uapi-$KARCH"
stamp="$uapi/.tree-$(git -C "$KSRC" rev-parse HEAD)"
if [ ! -f "$stamp" ]; then
	rm -rf "$uapi"
	make -s -C "$KSRC" ARCH="$KARCH" O="$BUILD_DIR/uapi-obj-$KARCH" LLVM=1 headers_install \
		INSTALL_HDR_PATH="$uapi" || die "make headers_install failed"
	touch "$stamp"
fi
mm="$KSRC/tools/testing/selftests/mm"
cfg="$BUILD_DIR/ksft"
mkdir -p "$cfg/plain" "$cfg/uring"
# What check_config.sh would write (local_config.h on 6.12, local_config.h_gen
# on 7.x), the helpers' file (thp_settings.c on 6.12, hugepage_settings.c on
# 7.x) and lib.mk's -D_GNU_SOURCE where the tree's lib.mk has it (7.x's
# sources rely on it).
for f in local_config.h local_config.h_gen; do
	echo '/* rust-mm: built without liburing */' > "$cfg/plain/$f"
	echo '#define LOCAL_CONFIG_HAVE_LIBURING 1' > "$cfg/uring/$f"
done
settings_c=thp_settings.c
[ -f "$mm/hugepage_settings.c" ] && settings_c=hugepage_settings.c
gnu=()
grep -q -- '-D_GNU_SOURCE=' "$KSRC/tools/testing/selftests/lib.mk" && gnu=(-D_GNU_SOURCE=)
nksft=0
while read -r name src args timeout sysctl build set; do
	case "$name" in ''|'#'*) continue ;; esac
	[[ " $SETS " == *" $set "* ]] || continue
	extra=() libs=() inc="$cfg/plain" srcs=("$src" vm_util.c "$settings_c")
	for b in ${build//,/ }; do
		case "$b" in
		-) ;;
		uring) inc="$cfg/uring"; libs+=(-luring) ;;
		numa) libs+=(-lnuma) ;;
		uffd) srcs+=(uffd-common.c) ;;
		ksmfix) extra+=(-include "$RUST_MM_TOP/tests/userspace/ksft/ksm_execv_fix.h") ;;
		skipdef) extra+=(-DKSFT_SKIP=4) ;;
		*) die "tests/userspace/ksft.list: unknown build option $b for $name" ;;
		esac
	done
	(cd "$mm" && "$UCC" -O2 -static-pie -U_FORTIFY_SOURCE "${gnu[@]}" -isystem "$uapi/include" -I "$inc" \
		-I . -I .. "${extra[@]}" -o "$ROOT/tests/ksft_mm_$name" "${srcs[@]}" \
		"${libs[@]}" -lrt -lpthread -lm 2> "$BUILD_DIR/ksft-$name.build.log") ||
		{ cat "$BUILD_DIR/ksft-$name.build.log"; die "cannot build tools/testing/selftests/mm/$src ($name)"; }
	[ "$args" = - ] || tr ',' '\n' <<<"$args" > "$ROOT/tests/ksft_mm_$name.args"
	echo "$timeout" > "$ROOT/tests/ksft_mm_$name.timeout"
	[ "$sysctl" = - ] || tr ',' '\n' <<<"$sysctl" > "$ROOT/tests/ksft_mm_$name.sysctl"
	echo "ksft_mm_$name" >> "$ROOT/tests/order"
	nksft=$((nksft + 1))
done < "$RUST_MM_TOP/tests/userspace/ksft.list"
(cd "$ROOT" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) > "$CPIO" ||
	die "cannot build $CPIO"

# A machine, not a bare VM: 3 vCPUs (selftests/mm/migration needs 3), two
# NUMA nodes, 4 GiB of RAM (2 GiB per node: khugepaged's
# collapse_compound_extreme holds 512 PMD THPs, 1 GiB, while it allocates
# one more on their node), 512 MiB of zram swap and 64 hugetlb
# pages, set up by init. x86_64 splits its memory into nodes with
# numa=fake=2 (qboot passes no topology); arm64's -machine virt puts
# QEMU's -numa nodes into the device tree.
#
# x86_64 also has 2 GiB of legacy pmem for tests/userspace/devdax.c (a
# device-dax with 2 MiB and 1 GiB compound pages). memmap=nn!ss marks
# existing RAM as e820 type 12 (persistent, not RAM), so the guest gets
# 6 GiB: QEMU's pc machine keeps 3 GiB below 4 GiB when the RAM does not
# fit under 3.5 GiB and puts the rest at 4 GiB, i.e. RAM [0, 3G) and
# [4G, 7G). memmap=2G!4G takes [4G, 6G): RAM stays [0, 3G) + [6G, 7G),
# 4 GiB as before (numa=fake=2 splits RAM, not the pmem hole), and the
# region is 1 GiB-aligned (one 1 GiB compound per GiB) and shares no
# 128 MiB section with RAM (its struct pages come from ZONE_DEVICE
# hotplug only, never from the boot memmap). +pdpe1gb: the 1 GiB case maps
# PUD leaves, which TCG's default qemu64 CPU lacks (a reserved-bit fault);
# it also gives the kernel a 1 GiB hugetlb size, reserved by nobody.
#
# proc_mem.force_override=always: cow_reuse's forced write and the mm
# selftests (mkdirty) write read-only mappings through /proc/self/mem
# (FOLL_FORCE), as a debugger does; 7.x's default (PROC_MEM_FORCE_PTRACE)
# allows that only to a ptracer, 6.12's to anyone.
append="console=$CONSOLE panic=-1 kunit.enable=0 rdinit=/init proc_mem.force_override=always RUSTMM_SWAP_MIB=512 RUSTMM_HUGEPAGES=64 RUSTMM_COW_REUSE=$reuse RUSTMM_RMAP_VERIFY=$verify RUSTMM_CONTPTE_STATS=$cstats RUSTMM_PAGEMAP_SWAP=$pswap RUSTMM_COMPOUND_PAGEMAPS=$cpgmap"
numa=() mem=4096 cpu=()
case "$KARCH" in
x86_64) append="$append numa=fake=2 memmap=2G!4G" mem=6144 cpu=(-cpu qemu64,+pdpe1gb) ;;
arm64) numa=(-object memory-backend-ram,id=m0,size=2G -object memory-backend-ram,id=m1,size=2G
	     -numa node,nodeid=0,cpus=0-1,memdev=m0 -numa node,nodeid=1,cpus=2,memdev=m1)
	# arm64 4K offers hugetlb pages of 64K and 32M (contiguous PTEs and
	# PMDs) beside 2M and 1G; cow and gup_longterm test each size with two
	# pages. 32M is above MAX_PAGE_ORDER, so its pages are reserved at boot
	# (init checks the count); 1G pages (2 GiB of a 4 GiB guest) are not
	# reserved: their cases skip on every kernel alike (docs/arm64.md).
	[ "$GRANULE" = 4k ] &&
		append="$append hugepagesz=32M hugepages=4 RUSTMM_HUGEPAGES_MORE=64:16,32768:4" ;;
esac
say "booting $KERNEL ($TARGET; COW reuse expected: $reuse, rmap recounts: $verify) with $(grep -c . "$ROOT/tests/order") test program(s) ($nksft mm selftests); console: $LOG"
timeout "$TIMEOUT" "$QEMU" -nodefaults "${QEMU_ARGS[@]}" "${cpu[@]}" -m "$mem" -smp 3 "${numa[@]}" \
	-kernel "$KERNEL" -initrd "$CPIO" -append "$append" \
	-no-reboot -nographic -serial stdio < /dev/null > "$LOG" 2>&1
rc=$?
tr -d '\r' < "$LOG" > "$LOG.txt"

broken="$(guest_broken "$rc" "$LOG.txt" "$TIMEOUT")"
# Every result against the plans and the order (scripts/lib/results.py);
# the selftests of USERSPACE_PARITY are left to the parity stage.
parity="$(tr ' ' ',' <<<"${USERSPACE_PARITY:-}" | sed 's/^,*//; s/,*$//')"
summary="$(python3 "$RUST_MM_TOP/scripts/lib/results.py" console "$LOG.txt" \
	--order "$ROOT/tests/order" --parity "$parity")"
grep -v '^userspace: ' <<<"$summary"
[[ "$(tail -n 1 <<<"$summary")" =~ ^userspace:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped ]] ||
	die "cannot count the results in $LOG.txt"
pass=${BASH_REMATCH[1]} fail=${BASH_REMATCH[2]} skip=${BASH_REMATCH[3]}
if [ -n "$broken" ]; then
	echo "rust-mm: $broken; console tail:"
	tail -n 30 "$LOG.txt" | sed 's/^/  | /'
	fail=$((fail + 1))
fi
echo "userspace: $pass passed, $fail failed, $skip skipped (reported above, not counted)"
[ "$fail" -eq 0 ]
