/* SPDX-License-Identifier: MIT */
/*
 * The raw KVM single-step round trip, with nothing of vmm's in the loop:
 * a one-vCPU guest runs "nop; jmp" under KVM_GUESTDBG_SINGLESTEP and this
 * program only calls KVM_RUN. bench/step.py holds vmm --split-lock=emulate's
 * cost per guest instruction against it, measured in the same run.
 *
 *   stepbench STEPS [sync|rearm|setdebug]    prints "raw_step_ns <ns per step>"
 *
 * With "sync", KVM also copies registers and sregs into the run page on
 * every exit, as vmm's emulate mode asks it to. "rearm" adds what emulate
 * does before every entry on top of that: writing RFLAGS back with TF set
 * through the run page, so that stock KVM cannot lose the step. "setdebug"
 * instead re-issues KVM_SET_GUEST_DEBUG before every entry, the other way
 * to re-arm stepping.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/kvm.h>

#include "boot.h"

#define RAM (4ull << 20)

static int check(int r, const char *what)
{
	if (r < 0) {
		fprintf(stderr, "stepbench: %s: %s\n", what, strerror(errno));
		exit(1);
	}
	return r;
}

int main(int argc, char **argv)
{
	static const uint8_t code[] = { 0x90, 0xeb, 0xfd };	/* 1: nop; jmp 1b */
	struct boot_layout layout = { .ram_size = RAM, .cpus = 1, .image_size = sizeof(code) };
	struct kvm_guest_debug dbg = { .control = KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_SINGLESTEP };
	long steps = argc > 1 ? atol(argv[1]) : 100000;
	const char *mode = argc > 2 ? argv[2] : "plain";
	int sync = !strcmp(mode, "sync") || !strcmp(mode, "rearm");
	int rearm = !strcmp(mode, "rearm"), setdebug = !strcmp(mode, "setdebug");
	struct kvm_userspace_memory_region region = { .memory_size = RAM };
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	struct timespec t0, t1;
	struct kvm_run *run;
	int kvm, vm, vcpu;
	uint8_t *mem;

	if (steps <= 0 || (!sync && !setdebug && strcmp(mode, "plain"))) {
		fprintf(stderr, "usage: stepbench STEPS [sync|rearm|setdebug]\n");
		return 2;
	}
	kvm = check(open("/dev/kvm", O_RDWR | O_CLOEXEC), "open /dev/kvm");
	vm = check(ioctl(kvm, KVM_CREATE_VM, 0), "KVM_CREATE_VM");
	mem = mmap(NULL, RAM, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		check(-1, "mmap");
	region.userspace_addr = (uint64_t)(uintptr_t)mem;
	check(ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region), "KVM_SET_USER_MEMORY_REGION");
	boot_setup_memory(mem, &layout);
	memcpy(mem + BOOT_IMAGE_ADDR, code, sizeof(code));
	vcpu = check(ioctl(vm, KVM_CREATE_VCPU, 0), "KVM_CREATE_VCPU");
	run = mmap(NULL, (size_t)check(ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0), "KVM_GET_VCPU_MMAP_SIZE"),
		   PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
	if (run == MAP_FAILED)
		check(-1, "mmap of the run page");
	check(ioctl(vcpu, KVM_GET_SREGS, &sregs), "KVM_GET_SREGS");
	boot_init_sregs(&sregs);
	check(ioctl(vcpu, KVM_SET_SREGS, &sregs), "KVM_SET_SREGS");
	boot_init_regs(&regs, &layout, 0);
	check(ioctl(vcpu, KVM_SET_REGS, &regs), "KVM_SET_REGS");
	check(ioctl(vcpu, KVM_SET_GUEST_DEBUG, &dbg), "KVM_SET_GUEST_DEBUG");
	if (sync)
		run->kvm_valid_regs = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < steps; i++) {
		if (rearm && i) {	/* the run page holds registers once KVM_RUN has exited */
			run->s.regs.regs.rflags |= 0x100;
			run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
		}
		if (setdebug)
			check(ioctl(vcpu, KVM_SET_GUEST_DEBUG, &dbg), "KVM_SET_GUEST_DEBUG");
		check(ioctl(vcpu, KVM_RUN, 0), "KVM_RUN");
		if (run->exit_reason != KVM_EXIT_DEBUG) {
			fprintf(stderr, "stepbench: exit %u, expected KVM_EXIT_DEBUG\n", run->exit_reason);
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("raw_step_ns %.1f\n",
	       ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (double)steps);
	return 0;
}
