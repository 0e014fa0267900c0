#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test suite:
#   build/        gcc: unit, end-to-end and bad-input tests, then the lab
#                 (vmm on stock KVM inside QEMU: tests/lab/README.md)
#   build-clang/  clang: the whole tree must build clean, unit tests
#   build-asan/   AddressSanitizer + UBSan: every suite, booting build/guest.bin
# Ends with one line "tests: N passed, N failed, N skipped".
set -euo pipefail
cd "$(dirname "$0")"
. scripts/setup.sh
vmm_install_packages

status=0
run_suite() { # dir [meson test args...]
	local dir=$1
	shift
	echo "== meson test -C $dir $*"
	meson test -C "$dir" --print-errorlogs "$@" || status=1
}

vmm_build build
run_suite build
# The stock-KVM lab (tests/lab/README.md), excluded from a bare `meson test`;
# its own log name, so that it does not replace the run above's testlog.json.
run_suite build --suite lab --logbase lab

CC=clang vmm_build build-clang
run_suite build-clang --suite unit

# The guest is freestanding code and is never built with sanitizers: the
# sanitizer build boots the gcc build's guest.bin.
vmm_build build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dguest=false \
	-Dguest_image="$PWD/build/guest.bin"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	run_suite build-asan

python3 scripts/test-summary.py build build/meson-logs/lab.json build-clang build-asan || status=1
exit $status
