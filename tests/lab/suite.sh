# The lab suite's inside half (busybox sh, run by tests/lab/lab.sh in /extra).
# Runs the cases named in /extra/cases, one a line, and frames each one's
# raw results for tests/lab/lab_test.py, which judges them on the host:
#   @@CASE name / @@PART what / ... / @@END name
# Every vmm run is bounded here too (busybox timeout), so that a vmm that
# hangs while L1 is alive shows as that case's failure, not as a lab hang.
guest=/lab/guest.bin
limit=90

part() {
	echo "@@PART $1"
	[ -n "$2" ] && cat "$2" 2>/dev/null
	echo
}

up() { cut -d' ' -f1 /proc/uptime; }

# vmm_run TAG ARGS...: runs vmm in the background with --stats, output to
# /tmp/TAG.*; bounded by vmm's --timeout $vmm_timeout and busybox's KILL at
# $limit seconds.
vmm_timeout=60
vmm_run() {
	tag=$1
	shift
	rm -f /tmp/$tag.*
	(
		timeout -s KILL $limit vmm --stats=/tmp/$tag.stats --timeout $vmm_timeout "$@" \
			>/tmp/$tag.out 2>/tmp/$tag.err
		echo "$? $(up)" >/tmp/$tag.rc
	) &
}

vmm_report() { # TAG PID START
	wait "$2"
	echo "@@RC $1 $(cat /tmp/$1.rc) $3"
	part "$1.stdout" /tmp/$1.out
	part "$1.stderr" /tmp/$1.err
	part "$1.stats" /tmp/$1.stats
}

case_host_info() {
	vmm --host-info --json >/tmp/hi.out 2>/tmp/hi.err
	echo "@@RC hi $? $(up)"
	part hi.stdout /tmp/hi.out
	part hi.stderr /tmp/hi.err
}

case_probe_ac() {
	/extra/lab-acprobe >/tmp/ac.out 2>&1
	echo "@@RC ac $? $(up)"
	part ac.stdout /tmp/ac.out
}

case_probe_sld() {
	grep -m1 '^flags' /proc/cpuinfo >/tmp/flags
	grep -m1 '^model name' /proc/cpuinfo >>/tmp/flags
	echo "@@RC sld 0 $(up)"
	part sld.cpuinfo /tmp/flags
}

case_probe_icebp() {
	/extra/lab-icebpprobe >/tmp/icebp.out 2>&1
	echo "@@RC icebp $? $(up)"
	part icebp.stdout /tmp/icebp.out
}

# missing NEED: true when this boot measured NEED (a --needs word of
# tests/differential/meson.build) absent: the vmm --host-info --json probe of
# that name said false, or ICEBP raised no #DB in probe-icebp.
missing() {
	case $1 in
	icebp) ! grep -q '^icebp=sigtrap$' /tmp/icebp.out 2>/dev/null ;;
	*) grep -q "\"$1\":false" /tmp/hi.out 2>/dev/null ;;
	esac
}

# A differential case (tests/differential/difftest.py): inherit (the oracle),
# then emulate, one after the other; the host compares them. A case whose
# NEEDS (comma-separated, "-" for none) this boot measured missing still
# runs (where it agrees it passes), with a --timeout of $short_timeout s:
# without the feature emulate tends to spin until killed (without working
# hardware breakpoints, step-dr0-exec-breakpoint re-enters its #DB handler
# for the whole --timeout), and the host judges that divergence a SKIP with
# the measured reason anyway.
short_timeout=10
case_diff() { # NAME CPUS TIMEOUT NEEDS
	vmm_timeout=$3
	for need in $(echo "$4" | tr , ' '); do
		[ "$need" != - ] && missing "$need" && vmm_timeout=$short_timeout
	done
	limit=$(($3 + 30))
	for p in inherit emulate; do
		t0=$(up)
		vmm_run $p --split-lock=$p -c $2 --append case=$1 /extra/diffguest.bin
		vmm_report $p $! $t0
	done
	vmm_timeout=60
	limit=90
}

# The generator's batch, built on the host (tests/differential/gen.py).
case_gen() { # TIMEOUT
	vmm_timeout=$1
	limit=$(($1 + 30))
	for p in inherit emulate; do
		t0=$(up)
		vmm_run $p --split-lock=$p --append case=gen /extra/gen.bin
		vmm_report $p $! $t0
	done
	vmm_timeout=60
	limit=90
}

case_selftest() { # POLICY CPUS
	t0=$(up)
	vmm_run vm --split-lock=$1 -c $2 $guest
	vmm_report vm $! $t0
}

case_concurrent() { # POLICY... : one 2-vCPU VM each, all at once
	t0=$(up)
	pids=
	n=0
	for p in "$@"; do
		n=$((n + 1))
		vmm_run vm$n --split-lock=$p -c 2 $guest
		pids="$pids $!"
	done
	n=0
	for pid in $pids; do
		n=$((n + 1))
		vmm_report vm$n $pid $t0
	done
}

while read -r name args; do
	[ -z "$name" ] && continue
	lab-step "$name"
	echo "@@CASE $name $(up)"
	case $name in
	host-info) case_host_info ;;
	probe-ac) case_probe_ac ;;
	probe-split-lock-detect) case_probe_sld ;;
	probe-icebp) case_probe_icebp ;;
	diff-gen-*) case_gen $args ;;
	diff-*) case_diff $args ;;
	selftest-*) case_selftest $args ;;
	concurrent-*) case_concurrent $args ;;
	*) echo "@@RC unknown 2 $(up)" ;;
	esac
	echo "@@END $name $(up)"
done </extra/cases
