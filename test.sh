#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test suite:
#   build/        gcc: every suite on this machine's KVM (the VM suites skip
#                 without one), then the VM suites (e2e, bad-input,
#                 differential) again on the lab's stock KVM: tests/lab/
#                 server.py boots it in the background at the start
#   build-clang/  clang: the whole tree must build clean, unit tests
#   build-asan/   AddressSanitizer + UBSan: every suite, booting build/guest.bin
#                 (its VM suites run where this machine has a KVM)
#   mutants       vmm rebuilt with deliberate defects: the suites must fail
#   run-sh        ./run.sh as README has it (its own lab where there is no KVM)
# Ends with "tests: N passed, N failed, N skipped; VM boots: N on this
# machine's KVM, N on the lab's stock KVM", and fails when no VM was booted
# (unless VMM_TEST_ALLOW_NO_KVM=1). README.md ("Tests") and docs/lab.md
# have the details.
set -euo pipefail
cd "$(dirname "$0")"
. scripts/setup.sh
vmm_install_packages

status=0
logs=()
run_suite() { # label dir [meson test args...]
	local label=$1 dir=$2
	shift 2
	echo "== [$label] meson test -C $dir $*"
	meson test -C "$dir" --print-errorlogs --logbase "$label" "$@" || status=1
	logs+=("$label=$dir/meson-logs/$label.json")
}

vmm_build build
mkdir -p build/lab
export VMM_TEST_BOOT_LOG=$PWD/build/meson-logs/vm-boots.log
rm -f "$VMM_TEST_BOOT_LOG" build/lab/state.json

# The lab boots while the rest runs. Bounded from outside: the server's own
# deadline, then timeout's KILL; a hang is reported with its evidence. The
# deadline is 80 minutes of CI's 90: where this machine has a KVM, every VM
# suite runs on it twice (gcc, ASan) before the lab's turn, and a deadline
# of 55 minutes (3300 s) killed the lab in the middle of its suites.
lab_state=$PWD/build/lab/state.json
timeout -k 30 4800 python3 tests/lab/server.py start --build build --state "$lab_state" \
	--timeout 4700 >build/lab/server.log 2>&1 &
lab_pid=$!
stop_lab() {
	python3 tests/lab/server.py stop --state "$lab_state" >/dev/null 2>&1 &
	local stopper=$!
	# The server stops its boots within a minute; past that, kill it.
	for _ in $(seq 90); do kill -0 "$lab_pid" 2>/dev/null || break; sleep 1; done
	kill -9 "$lab_pid" 2>/dev/null || true
	wait "$stopper" 2>/dev/null || true
}
trap stop_lab EXIT

run_suite gcc build --no-suite run-sh

CC=clang vmm_build build-clang
run_suite clang build-clang --suite unit

# The guest is freestanding code and is never built with sanitizers: the
# sanitizer build boots the gcc build's guest.bin.
vmm_build build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dguest=false \
	-Dguest_image="$PWD/build/guest.bin"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	run_suite asan build-asan

echo "== the lab (tests/lab/server.py; its log: build/lab/server.log)"
lab_ok=0
python3 tests/lab/server.py wait --state "$lab_state" --timeout 900 && lab_ok=1 || {
	rc=$?
	cat build/lab/server.log >&2
	if [ "$rc" = 77 ] && [ "${VMM_TEST_ALLOW_NO_KVM:-}" = 1 ]; then
		echo "lab: cannot be had here; VMM_TEST_ALLOW_NO_KVM=1: going on without it"
	else
		echo "lab: FAIL: the lab did not come up (above); it is the stock KVM every VM suite runs on" >&2
		status=1
	fi
}
if [ $lab_ok = 1 ]; then
	# One meson per lab boot, each with its share of the tests (shards.py).
	echo "== [gcc-lab] the VM suites on the lab's boots"
	python3 tests/lab/shards.py --build build --state "$lab_state" --logbase gcc-lab \
		--setup lab --suite e2e --suite bad-input --suite differential || status=1
	logs+=("gcc-lab=build/meson-logs/gcc-lab.json")
	VMM_TEST_LAB=$lab_state python3 tests/mutants/run.py --build build || status=1
fi
trap - EXIT
stop_lab
if ! grep -q '"status": "stopped"' "$lab_state" 2>/dev/null && [ $lab_ok = 1 ]; then
	echo "lab: FAIL: a lab boot did not end cleanly:" >&2
	tail -n 60 build/lab/server.log >&2
	status=1
fi

# README's ./run.sh as a new user runs it: here it boots a lab of its own.
run_suite gcc-run-sh build --suite run-sh

python3 scripts/test-summary.py --boots "$VMM_TEST_BOOT_LOG" "${logs[@]}" || status=1
exit $status
