#!/usr/bin/env bash
# Runs every libFuzzer harness for a bounded time, merges what it found into
# the committed corpus (minimised), keeps one input per distinct crash under
# tests/fuzz/crashes/NAME/, and writes tests/fuzz/results.md.
#
#   tests/fuzz/run.sh [SECONDS] [NAME...]     (default 60 s each, every harness)
#
# Builds build-fuzz/ with clang and -Dfuzz=true. Environment:
#   FUZZ_JOBS=N   parallel fuzzing processes per harness (default 1)
#   FUZZ_FORK=0   classic single-process mode: stops at the first crash
#                 (default: fork mode, which goes on past crashes)
# Exit status: 0, or 1 when a crash not already under crashes/ was found.
# See tests/fuzz/README.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
secs=${1:-60}
[ $# -gt 0 ] && shift
jobs=${FUZZ_JOBS:-1}
fork=${FUZZ_FORK:-1}
fuzzdir=tests/fuzz
build=build-fuzz

. scripts/setup.sh
vmm_install_packages
[ -f "$build/build.ninja" ] && meson configure "$build" -Dfuzz=true >/dev/null
CC=clang vmm_build "$build" -Dfuzz=true -Dguest=false

if [ $# -gt 0 ]; then
	names=("$@")
else
	names=()
	for f in "$build/$fuzzdir"/fuzz-*; do
		n=${f##*/fuzz-}
		[ -x "$f" ] && [ -f "$f" ] && [[ $n != replay-* ]] && names+=("$n")
	done
fi
[ ${#names[@]} -gt 0 ] || { echo "run.sh: no fuzz binaries in $build/$fuzzdir" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
hashname='^[0-9a-f]{40}$'

# The longest input each harness needs (hostinfo takes whole /proc files).
max_len() {
	case $1 in
	hostinfo) echo 8192 ;;
	loader) echo 4096 ;;
	*) echo 1024 ;;
	esac
}

count_files() { find "$1" -maxdepth 1 -type f ! -name '.*' 2>/dev/null | wc -l; }
count_bytes() { find "$1" -maxdepth 1 -type f ! -name '.*' -printf '%s\n' 2>/dev/null | awk '{s+=$1} END {print s+0}'; }

# One line naming a crash: the failed check, the sanitizer report and where.
signature() { # binary input
	local out s frame
	out=$("$1" -runs=1 -artifact_prefix="$tmp/rerun-" "$2" 2>&1 || true)
	s=$(grep -m1 -oE '[A-Za-z0-9_.-]+\.c:[0-9]+: check failed' <<<"$out" || true)
	[ -n "$s" ] || s=$(grep -m1 -oE '[A-Za-z0-9_.-]+\.c:[0-9]+:[0-9]+: runtime error: [a-z ]+' <<<"$out" || true)
	if [ -z "$s" ]; then
		s=$(grep -m1 -oE '(AddressSanitizer|LeakSanitizer|libFuzzer): [a-z-]+' <<<"$out" || true)
		frame=$(grep -m1 -oE 'in [A-Za-z_0-9]+ [^ ]*(src/vmm|tests/fuzz)/[^ ]+' <<<"$out" || true)
		[ -n "$frame" ] && s="$s $(awk '{print $1, $2}' <<<"$frame") ${frame##*/}"
	fi
	s=$(sed 's/ *$//' <<<"$s")
	echo "${s:-unknown crash}"
}

rows=()
new_crashes=0
for name in "${names[@]}"; do
	bin=$build/$fuzzdir/fuzz-$name
	corpus=$fuzzdir/corpus/$name
	crashes=$fuzzdir/crashes/$name
	dict=$fuzzdir/dict/$name.dict
	work=$tmp/$name-work
	art=$tmp/$name-artifacts
	log=$tmp/$name.log
	mkdir -p "$corpus" "$work" "$art"
	before=$(count_files "$corpus")
	opts=(-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len="$(max_len "$name")"
	      -print_final_stats=1 -artifact_prefix="$art/")
	[ -f "$dict" ] && opts+=(-dict="$dict")
	[ "$fork" != 0 ] && opts+=(-fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)

	echo "== fuzz-$name: $secs s, corpus $before files"
	"$bin" "${opts[@]}" "$work" "$corpus" >"$log" 2>&1 || true

	# "Done N runs in S second(s)" in classic mode; fork mode reports
	# "#N: cov: ..." lines and "INFO: exiting: RC time: Ss".
	if grep -q '^Done [0-9]* runs in' "$log"; then
		read -r execs took < <(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1 \2/p' "$log" | tail -1)
	else
		execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
		took=$(sed -n 's/^INFO: exiting: [0-9-]* time: \([0-9]*\)s.*/\1/p' "$log" | tail -1)
		[ -n "$execs" ] || execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
	fi
	execs=${execs:-0}
	took=${took:-$secs}

	# Minimise: named inputs (seeds, regressions) always stay; of the
	# libFuzzer-named ones only those that add coverage to them.
	final=$tmp/$name-final
	mkdir -p "$final"
	{ find "$corpus" -maxdepth 1 -type f ! -name '.*' -printf '%f\n' | grep -vE "$hashname" || true; } |
		while read -r f; do cp "$corpus/$f" "$final/"; done
	"$bin" -merge=1 -timeout=10 -rss_limit_mb=2048 -max_len="$(max_len "$name")" \
		"$final" "$corpus" "$work" >"$tmp/$name-merge.log" 2>&1 ||
		{ echo "run.sh: merging fuzz-$name's corpus failed:" >&2; tail -20 "$tmp/$name-merge.log" >&2; exit 1; }
	find "$corpus" -maxdepth 1 -type f -regextype posix-extended -regex ".*/[0-9a-f]{40}" -delete
	{ find "$final" -maxdepth 1 -type f -printf '%f\n' | grep -E "$hashname" || true; } |
		while read -r f; do cp "$final/$f" "$corpus/"; done
	after=$(count_files "$corpus")

	# Crashes: one input (the smallest) per signature not seen before.
	known=$tmp/$name-known
	: >"$known"
	if [ -d "$crashes" ]; then
		for f in "$crashes"/*; do
			[ -f "$f" ] && signature "$bin" "$f" >>"$known"
		done
	fi
	found=0
	sigs=()
	while read -r f; do
		sig=$(signature "$bin" "$f")
		grep -qxF "$sig" "$known" && continue
		echo "$sig" >>"$known"
		mkdir -p "$crashes"
		cp "$f" "$crashes/"
		echo "   new crash: $sig -> $crashes/${f##*/}"
		sigs+=("$sig")
		found=$((found + 1))
	done < <(find "$art" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
		-o -name 'oom-*' \) -printf '%s %p\n' | sort -n | cut -d' ' -f2-)
	hits=$(find "$art" -maxdepth 1 -type f | wc -l)
	new_crashes=$((new_crashes + found))
	known_n=$(($(wc -l <"$known") - found))

	rate=$((took > 0 ? execs / took : execs))
	echo "   $execs executions in $took s ($rate/s); corpus $before -> $after files; new crashes: $found"
	sigtext=$(IFS='; '; echo "${sigs[*]:-}")
	rows+=("| $name | $(date -u +%Y-%m-%d) | $took | $execs | $rate | $before → $after | $(count_bytes "$corpus") | $hits | $found | $known_n | ${sigtext:-} |")
done

# The minimised corpus must replay clean under the sanitizers before anyone commits it.
for name in "${names[@]}"; do
	if ! "$build/$fuzzdir/fuzz-$name" -runs=0 -artifact_prefix="$tmp/" "$fuzzdir/corpus/$name" \
		>"$tmp/$name-check.log" 2>&1; then
		echo "run.sh: the merged corpus of fuzz-$name does not replay cleanly:" >&2
		tail -30 "$tmp/$name-check.log" >&2
		exit 1
	fi
done

# One row per harness: this run's replace earlier ones, the others stay.
results=$fuzzdir/results.md
if [ -f "$results" ]; then
	while IFS= read -r line; do
		n=$(awk -F'|' '{gsub(/ /, "", $2); print $2}' <<<"$line")
		keep=1
		for m in "${names[@]}"; do [ "$m" = "$n" ] && keep=0; done
		[ $keep = 0 ] || rows+=("$line")
	done < <(grep -E '^\| [a-z0-9_]+ \| [0-9]{4}-' "$results")
fi
{
	echo "# Fuzzing results"
	echo
	echo "Last written by \`tests/fuzz/run.sh $secs${*:+ $*}\` on $(date -u '+%Y-%m-%d %H:%M UTC'):"
	echo "$(clang --version | head -1), $(nproc) CPU(s), $([ "$fork" != 0 ] && echo "fork mode, $jobs job(s)" || echo "classic mode") per harness."
	echo
	echo "| harness | date | seconds | executions | exec/s | corpus files | corpus bytes | crashing inputs | new crashes | known crashes | new crash signatures |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}" | sort -t'|' -k2,2
	echo
	echo "Crashing inputs: how many the run hit (fork mode goes on past them), known bugs"
	echo "included; new crashes: distinct signatures not already under \`crashes/NAME/\`, one"
	echo "input each copied there. Known crashes are not replayed by \`./test.sh\` until"
	echo "their fix lands (see README.md)."
} >"$results.new"
mv "$results.new" "$results"
echo "== results in $fuzzdir/results.md"
[ "$new_crashes" -eq 0 ]
