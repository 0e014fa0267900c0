#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test suite, each phase
# once (docs/testing.md, "What ./test.sh runs where", says why):
#   gcc      build/: every suite on this machine's KVM (the VM suites skip
#            without one)
#   clang    build-clang/: the whole tree must build clean; unit tests
#   asan     build-asan/: AddressSanitizer + UBSan, every suite, booting
#            build/guest.bin (its VM suites skip without a KVM here)
#   lab      tests/lab/server.py boots a stock KVM inside QEMU in the
#            background at the start. With a KVM here it runs only what
#            this KVM could not judge (its skips, CPL3 stepping, the
#            self-test under each policy), Linux under inherit and
#            emulate; without one, every VM suite (of Linux, those two)
#   mutants  vmm rebuilt with deliberate defects: the suites must fail. On
#            this machine's KVM where there is one (those it cannot judge
#            then go to the lab), else on the lab
#   run-sh   ./run.sh as README has it (its own lab where there is no KVM)
# Ends with a table of each phase's time and "tests: N passed, N failed,
# N skipped; mutants: ...; VM boots: ..."; every failure of the run
# (tests, mutants not killed, phases) is counted in "failed". Fails when
# no VM was booted (unless VMM_TEST_ALLOW_NO_KVM=1).
set -euo pipefail
cd "$(dirname "$0")"
t_setup=$SECONDS
. scripts/setup.sh
vmm_install_packages
vmm_build build

logs=()
mkdir -p build/lab build/meson-logs
phases=$PWD/build/meson-logs/phases.tsv
printf 'setup and gcc build\t%d\t0\n' $((SECONDS - t_setup)) >"$phases"
export VMM_TEST_BOOT_LOG=$PWD/build/meson-logs/vm-boots.log
rm -f "$VMM_TEST_BOOT_LOG" build/lab/state.json build/meson-logs/mutants*.json

# phase NAME CMD...: runs CMD, records its time and status; never stops the run.
phase() {
	local name=$1 t0=$SECONDS rc=0
	shift
	echo "== [$name] $*"
	"$@" || rc=$?
	printf '%s\t%d\t%d\n' "$name" $((SECONDS - t0)) "$rc" >>"$phases"
	return 0
}
suite() { # label dir [meson test args...]
	local label=$1 dir=$2
	shift 2
	logs+=("$label=$dir/meson-logs/$label.json")
	meson test -C "$dir" --print-errorlogs --logbase "$label" "$@"
}
# A usable /dev/kvm, judged as the tests and run.sh judge it.
kvm_here=0
python3 -c 'import os; os.close(os.open("/dev/kvm", os.O_RDWR))' 2>/dev/null && kvm_here=1

# The lab boots while the rest runs. Bounded from outside: the server's own
# deadline, then timeout's KILL; a hang is reported with its evidence.
lab_state=$PWD/build/lab/state.json
timeout -k 30 3000 python3 tests/lab/server.py start --build build --state "$lab_state" \
	--timeout 2900 >build/lab/server.log 2>&1 &
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

phase gcc suite gcc build --no-suite run-sh

clang_build() { CC=clang vmm_build build-clang; }
phase "clang build" clang_build
phase clang suite clang build-clang --suite unit

# The guest is freestanding code and is never built with sanitizers: the
# sanitizer build boots the gcc build's guest.bin, every suite on this
# machine's KVM (about as long as gcc's). Never in the lab: a sanitizer
# runtime adds nothing to what a stock KVM tells, and minutes under TCG.
phase "asan build" vmm_build build-asan -Db_sanitize=address,undefined -Db_lundef=false \
	-Dguest=false -Dguest_image="$PWD/build/guest.bin"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	phase asan suite asan build-asan

# mutants WHERE JSON [run.py args...]: run.py on this machine's KVM (here)
# or the lab's, its verdicts in JSON. test-summary.py counts each mutant by
# its last verdict, so the phase fails only where run.py wrote none.
mutants() {
	local lab=() json=$2
	[ "$1" = lab ] && lab=(env "VMM_TEST_LAB=$lab_state")
	"${lab[@]}" python3 tests/mutants/run.py --build build --json "$json" "${@:3}" ||
		[ -s "$json" ]
}
# Where mutants run fastest: this machine's KVM, before the lab's turn.
# Those it does not kill go to the lab.
if [ $kvm_here = 1 ]; then
	phase "mutants (this KVM)" mutants here build/meson-logs/mutants.json
fi

lab_up() {
	python3 tests/lab/server.py wait --state "$lab_state" --timeout 900 && return 0
	local rc=$?
	cat build/lab/server.log >&2
	if [ "$rc" = 77 ] && [ "${VMM_TEST_ALLOW_NO_KVM:-}" = 1 ]; then
		echo "lab: cannot be had here; VMM_TEST_ALLOW_NO_KVM=1: going on without it"
		return 77
	fi
	echo "lab: FAIL: the lab did not come up (above); it is the stock KVM of this run" >&2
	return 1
}
lab_suites() {
	local judge=()
	[ $kvm_here = 1 ] && judge=(--judge-after build/meson-logs/gcc.json)
	python3 tests/lab/shards.py --build build --state "$lab_state" --logbase gcc-lab \
		--setup lab --suite e2e --suite bad-input --suite differential --suite linux "${judge[@]}"
}
phase "lab up" lab_up
lab_ok=0
grep -q '"status": "ready"' "$lab_state" 2>/dev/null && lab_ok=1
if [ $lab_ok = 1 ]; then
	logs+=("gcc-lab=build/meson-logs/gcc-lab.json")
	phase gcc-lab lab_suites
	if [ $kvm_here = 1 ]; then
		phase "mutants (lab)" mutants lab build/meson-logs/mutants-lab.json \
			--not-killed-in build/meson-logs/mutants.json
	else
		phase "mutants (lab)" mutants lab build/meson-logs/mutants.json
	fi
fi
trap - EXIT
lab_clean() {
	stop_lab
	[ $lab_ok = 1 ] || return 0
	grep -q '"status": "stopped"' "$lab_state" 2>/dev/null && return 0
	echo "lab: FAIL: a lab boot did not end cleanly:" >&2
	tail -n 60 build/lab/server.log >&2
	return 1
}
phase "lab stop" lab_clean

# README's ./run.sh as a new user runs it: where there is no KVM here, it
# boots a lab of its own.
phase gcc-run-sh suite gcc-run-sh build --suite run-sh

python3 scripts/test-summary.py --boots "$VMM_TEST_BOOT_LOG" --phases "$phases" \
	--mutants build/meson-logs/mutants.json --mutants build/meson-logs/mutants-lab.json \
	"${logs[@]}"
