#!/usr/bin/env bash
# Benchmarks, run by hand (./test.sh never runs them): self-test start-to-exit
# time, and exit round trips measured inside one guest run. bench/README.md
# explains the numbers. Exits non-zero only when something failed to run; a
# missed target is reported, not failed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
build=${BUILD_DIR:-build}

usage() {
	cat <<EOF
usage: bench/run.sh [-n RUNS] [-i ITERS] [-g GP_ITERS] [-r ROUNDS]

  -n RUNS      self-test boots to time (default 10)
  -i ITERS     guest loop iterations per op and round (default: the guest's, 5000)
  -g GP_ITERS  iterations for the loops that take #GP (default: ITERS / 10)
  -r ROUNDS    rounds; each round times every op once (default 5)

BUILD_DIR (default "build") picks the meson build directory; it is set up
if missing, and vmm and guest.bin in it are brought up to date with
"meson compile".
EOF
}

args=()
while getopts "n:i:g:r:h" opt; do
	case $opt in
	n) args+=(--runs "$OPTARG") ;;
	i) args+=(--iters "$OPTARG") ;;
	g) args+=(--gp-iters "$OPTARG") ;;
	r) args+=(--rounds "$OPTARG") ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ $# -ne 0 ]; then
	usage >&2
	exit 2
fi

cd "$root"
for tool in meson python3; do
	if ! command -v "$tool" >/dev/null; then
		echo "bench: error: $tool is not installed (./run.sh installs what the build needs)" >&2
		exit 1
	fi
done
if [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
	echo "bench: error: /dev/kvm is missing or not read-writable by $(id -un)" >&2
	exit 1
fi

# The build log only matters when it fails; on success it would bury the table.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if [ ! -f "$build/build.ninja" ] && ! meson setup "$build" >"$log" 2>&1; then
	cat "$log" >&2
	echo "bench: error: meson setup $build failed" >&2
	exit 1
fi
# Only what the bench runs: a broken unit test elsewhere should not stop it.
if ! meson compile -C "$build" vmm guest.bin >"$log" 2>&1; then
	cat "$log" >&2
	echo "bench: error: meson compile -C $build vmm guest.bin failed" >&2
	exit 1
fi

exec python3 "$here/bench.py" --vmm "$build/vmm" --guest "$build/guest.bin" "${args[@]}"
