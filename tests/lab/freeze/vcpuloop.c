/* SPDX-License-Identifier: MIT */
/*
 * Freeze experiment (docs/lab.md): creates and destroys a KVM VM with one
 * vCPU and no in-kernel irqchip, N times, and runs no guest code at all.
 * On Linux 6.1 each time flips the static key kvm_has_noapic_vcpu, i.e.
 * patches L1's kernel text with text_poke_bp (INT3, then IPIs to every CPU).
 * If this alone freezes the lab, the freeze is QEMU's or KVM's, whatever a
 * VMM does.
 *
 * KVM_CREATE_VM also turns on the scheduler's preempt-notifier static key
 * (kvm_create_vm -> preempt_notifier_inc) and destroying the last VM turns
 * it off: __schedule's hot path is patched both times.
 *
 *   vcpuloop N [irqchip]     prints "vcpuloop i" every 25 iterations
 *   vcpuloop 0 hold          creates one VM and vCPU and keeps them: while it
 *                            runs, the keys stay on and later VMs patch nothing
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/kvm.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100;
	int irqchip = argc > 2 && !strcmp(argv[2], "irqchip");
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);

	if (kvm < 0) {
		perror("vcpuloop: open /dev/kvm");
		return 1;
	}
	for (long i = 1; i <= (n ? n : 1); i++) {
		int vm = ioctl(kvm, KVM_CREATE_VM, 0), vcpu;

		if (vm < 0) {
			perror("vcpuloop: KVM_CREATE_VM");
			return 1;
		}
		if (irqchip && ioctl(vm, KVM_CREATE_IRQCHIP, 0) < 0) {
			perror("vcpuloop: KVM_CREATE_IRQCHIP");
			return 1;
		}
		vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
		if (vcpu < 0) {
			perror("vcpuloop: KVM_CREATE_VCPU");
			return 1;
		}
		if (n == 0 && argc > 2 && !strcmp(argv[2], "hold")) {
			printf("vcpuloop holding a VM\n");
			fflush(stdout);
			pause();
		}
		close(vcpu);
		close(vm);
		if (i % 25 == 0) {
			printf("vcpuloop %ld\n", i);
			fflush(stdout);
		}
	}
	return 0;
}
