# Inside the lab: what froze L1 in the first lab boots (docs/lab.md), in a
# loop: vmm --host-info, then the self-test under each policy on 1 and 2
# vCPUs. ROUNDS (default 4) from /extra/rounds if present.
rounds=4
[ -f /extra/rounds ] && rounds=$(cat /extra/rounds)
i=0
while [ $i -lt "$rounds" ]; do
	i=$((i + 1))
	for h in 1 2 3; do
		lab-step "round $i host-info $h"
		vmm --host-info >/dev/null || echo "round $i host-info $h: exit $?"
	done
	for p in emulate off inherit; do
		for c in 1 2; do
			lab-step "round $i $p ${c}cpu"
			t0=$(cut -d' ' -f1 /proc/uptime)
			w=""
			[ "$p" = emulate ] && w=--split-lock-watch=all	# stepped throughout, as it froze
			vmm -q --split-lock=$p $w -c $c --timeout 60 /lab/guest.bin >/tmp/out 2>&1
			rc=$?
			echo "round $i $p ${c}cpu: exit $rc, $(grep -c '^not ok' /tmp/out) not ok, $t0 -> $(cut -d' ' -f1 /proc/uptime)"
		done
	done
done
echo "done $rounds rounds"
