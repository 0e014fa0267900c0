#!/bin/sh
# tests/lab/freeze/repeat.sh BOOTS ROUNDS: boots the lab BOOTS times with
# stress.sh (ROUNDS rounds each) under the VMM_LAB_* settings in force, and
# prints one line per boot: finished, or froze with the last step.
# docs/lab.md has what it found.
boots=${1:-3}
rounds=${2:-15}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
cp "$here/stress.sh" "$dir/" && echo "$rounds" >"$dir/rounds"
i=0
while [ $i -lt "$boots" ]; do
	i=$((i + 1))
	log=$dir/boot$i.log
	start=$(date +%s)
	"$here/../lab.sh" run --timeout 900 "$dir" "$dir/stress.sh" >"$log" 2>&1
	rc=$?
	runs=$(grep -c ': exit ' "$log")
	echo "cpu=${VMM_LAB_CPU:-max} smp=${VMM_LAB_SMP:-2} accel=${VMM_LAB_ACCEL:-tcg} kernel=${VMM_LAB_KERNEL_META:-linux-image-amd64} boot $i: status $rc after $(($(date +%s) - start)) s, $runs vmm runs, $(grep -o 'last step reached: .*' "$log" || echo finished)"
	[ $rc -eq 124 ] && sed -n '/QEMU.s view/,$p' "$log" | grep -E 'RIP|later'
done
rm -rf "$dir"
