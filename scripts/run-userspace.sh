#!/usr/bin/env bash
# Boot the patched kernel under QEMU (x86_64, TCG, 2 vCPUs) with an
# initramfs of static test programs -- ours (tests/userspace/*.c, as
# /tests/rustmm_*) and the tree's selftests/mm/cow (/tests/ksft_mm_cow) --
# and read their results from the serial console.  Uses the KUnit build's bzImage, booted
# with kunit.enable=0.  Prints one line per test, then
# 'userspace: N passed, N failed, N skipped'.  A guest that hangs (time
# limit), panics or stops before "RUSTMM-DONE" fails the run with the tail
# of its console.
#   USERSPACE_TIMEOUT   seconds before the guest counts as hung (default 1500)
#   USERSPACE_BUILD     kernel build directory to boot (default: the KUnit
#                       build); its .config says whether COW reuse is
#                       expected (CONFIG_MM_RMAP_ID=y) or the base behaviour
#   USERSPACE_LOG       console log (default build/userspace.log)
#
# run-userspace.sh --selfcheck instead builds cow_isolation with
# -DSELFCHECK_SHARED (MAP_SHARED memory: every write is a "leak") and runs
# it on the host, where every scenario must report FAIL; it prints
# 'selfcheck: N passed, N failed' counting each scenario that caught it.
set -uo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "$0")/env.sh"

cflags=(-O2 -Wall -Wextra -Werror -static)
if [ "${1:-}" = --selfcheck ]; then
	mkdir -p "$BUILD_DIR"
	bin="$BUILD_DIR/cow_isolation_selfcheck"
	gcc "${cflags[@]}" -DSELFCHECK_SHARED -o "$bin" "$RUST_MM_TOP/tests/userspace/cow_isolation.c" ||
		die "cannot build the cow_isolation self-check"
	out="$("$bin")"
	caught=$(grep -c '^RUSTMM-TEST [^ ]* FAIL' <<<"$out")
	total=$(grep -c '^RUSTMM-TEST ' <<<"$out")
	sed 's/^RUSTMM-TEST /  /' <<<"$out"
	echo "selfcheck: $caught passed, $((total - caught)) failed (a scenario passes here if it caught the shared-memory leak)"
	[ "$caught" -eq "$total" ] && [ "$total" -gt 0 ]
	exit
fi

KOUT="${USERSPACE_BUILD:-$KUNIT_OUT}"
KERNEL="$KOUT/arch/x86/boot/bzImage"
ROOT="$BUILD_DIR/initramfs"
CPIO="$BUILD_DIR/initramfs.cpio"
LOG="${USERSPACE_LOG:-$BUILD_DIR/userspace.log}"
TIMEOUT="${USERSPACE_TIMEOUT:-1500}"

[ -f "$KERNEL" ] || die "no kernel at $KERNEL (run: make kunit)"
grep -q '^CONFIG_BLK_DEV_INITRD=y' "$KOUT/.config" ||
	die "the kernel in $KOUT has no initramfs support (CONFIG_BLK_DEV_INITRD)"
# Passed to init's environment by the kernel (an unknown NAME=value).
if grep -q '^CONFIG_MM_RMAP_ID=y' "$KOUT/.config"; then reuse=1; else reuse=0; fi
if grep -q '^CONFIG_DEBUG_MM_RMAP_ID=y' "$KOUT/.config"; then verify=1; else verify=0; fi

rm -rf "$ROOT" && mkdir -p "$ROOT/tests"
gcc "${cflags[@]}" -o "$ROOT/init" "$RUST_MM_TOP/tests/userspace/init.c" ||
	die "cannot build tests/userspace/init.c (gcc with static libc needed)"
for src in "$RUST_MM_TOP"/tests/userspace/*.c; do
	name="$(basename "$src" .c)"
	[ "$name" = init ] && continue
	gcc "${cflags[@]}" -o "$ROOT/tests/rustmm_$name" "$src" || die "cannot build $src"
done

# The tree's own tools/testing/selftests/mm/cow, static, against the tree's
# uapi headers (no liburing: its io_uring cases skip, on every kernel).
uapi="$BUILD_DIR/uapi"
stamp="$uapi/.tree-$(git -C "$KSRC" rev-parse HEAD)"
if [ ! -f "$stamp" ]; then
	rm -rf "$uapi"
	make -s -C "$KSRC" ARCH=x86_64 O="$BUILD_DIR/uapi-obj" LLVM=1 headers_install \
		INSTALL_HDR_PATH="$uapi" || die "make headers_install failed"
	touch "$stamp"
fi
mm="$KSRC/tools/testing/selftests/mm"
mkdir -p "$BUILD_DIR/ksft"
echo '/* rust-mm: built without liburing */' > "$BUILD_DIR/ksft/local_config.h"
gcc -O2 -static -isystem "$uapi/include" -I "$BUILD_DIR/ksft" -I "$mm" -I "$mm/.." \
	-o "$ROOT/tests/ksft_mm_cow" "$mm/cow.c" "$mm/vm_util.c" "$mm/thp_settings.c" ||
	die "cannot build tools/testing/selftests/mm/cow"
(cd "$ROOT" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) > "$CPIO" ||
	die "cannot build $CPIO"

say "booting $KERNEL (COW reuse expected: $reuse, rmap recounts: $verify) with $(ls "$ROOT/tests" | wc -l) test program(s); console: $LOG"
timeout "$TIMEOUT" qemu-system-x86_64 -nodefaults -m 1024 -smp 2 \
	-kernel "$KERNEL" -initrd "$CPIO" \
	-append "console=ttyS0 panic=-1 kunit.enable=0 rdinit=/init RUSTMM_COW_REUSE=$reuse RUSTMM_RMAP_VERIFY=$verify" \
	-no-reboot -nographic -serial stdio -bios qboot.rom < /dev/null > "$LOG" 2>&1
rc=$?
tr -d '\r' < "$LOG" > "$LOG.txt"

broken=""
if [ "$rc" -eq 124 ]; then
	broken="the guest did not finish within ${TIMEOUT}s (hung)"
elif grep -q 'Kernel panic' "$LOG.txt"; then
	broken="the guest kernel panicked"
elif ! grep -q '^RUSTMM-DONE' "$LOG.txt"; then
	broken="the guest stopped before the tests finished (qemu exit $rc)"
fi
summary="$(python3 "$RUST_MM_TOP/scripts/userspace-count.py" "$LOG.txt")"
grep -v '^userspace: ' <<<"$summary"
[[ "$(tail -n 1 <<<"$summary")" =~ ^userspace:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped ]] ||
	die "cannot count the results in $LOG.txt"
pass=${BASH_REMATCH[1]} fail=${BASH_REMATCH[2]} skip=${BASH_REMATCH[3]}
if [ -n "$broken" ]; then
	echo "rust-mm: $broken; console tail:"
	tail -n 30 "$LOG.txt" | sed 's/^/  | /'
	fail=$((fail + 1))
fi
echo "userspace: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
