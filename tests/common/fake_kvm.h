/* SPDX-License-Identifier: MIT */
/*
 * A VM whose vCPUs talk to a fake KVM, for the unit tests and the fuzz
 * harnesses that drive exit handlers: real guest RAM with the boot
 * protocol's page tables, a real struct vm (vm_init_common(), console on
 * /dev/null), and one struct vcpu_ops that keeps each vCPU's registers,
 * special registers, events, PKRU, guest debug, debug registers and a few
 * MSRs, counts every call and fails any op
 * with the errno a test asks for. Guest-virtual reads go through the page
 * walker on that RAM, as the CPU would fetch.
 */
#ifndef VMM_TEST_FAKE_KVM_H
#define VMM_TEST_FAKE_KVM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "vcpu.h"

/*
 * An op's slot in struct vcpu_ops, e.g. FAKE_OP(set_events): the index of
 * its call counter and of its injected error. A member vm.h gains gets a
 * slot, a counter and an error by itself; its fake is one FAKE_GET or
 * FAKE_SET line (or a function) and one line in fake_ops, both in
 * fake_kvm.c, plus a field below for state it keeps. Until then
 * fake_vm_init() refuses to run and says which member lacks a fake.
 */
typedef void (*fake_fn)(void);
#define FAKE_OP(op) (offsetof(struct vcpu_ops, op) / sizeof(fake_fn))
#define FAKE_NOPS (sizeof(struct vcpu_ops) / sizeof(fake_fn))

#define FAKE_NMSRS 4

struct fake_vcpu {
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	struct kvm_vcpu_events events;
	uint32_t pkru;
	struct kvm_guest_debug debug;        /* the last KVM_SET_GUEST_DEBUG */
	struct kvm_debugregs debugregs;
	struct {
		bool valid;
		uint32_t index;
		uint64_t value;
	} msrs[FAKE_NMSRS];                  /* what get_msr reads */
	unsigned calls[FAKE_NOPS];   /* every call, failed ones included */
	int fail[FAKE_NOPS];         /* > 0: the op fails with -fail and changes nothing */
};

#define FAKE_CALLS(fc, op) ((fc)->calls[FAKE_OP(op)])
#define FAKE_FAIL(fc, op) ((fc)->fail[FAKE_OP(op)])

struct fake_vm {
	struct vm vm;
	struct cli_options opts;
	struct kvm_run *runs;        /* one run page per vCPU */
	struct fake_vcpu *cpus;
	int console_fd;
};

/*
 * A VM of ncpus vCPUs and ram_size bytes of zeroed RAM (none when 0) with
 * the boot protocol's identity map. Each vCPU starts as vmm boots it: long
 * mode at CPL0 (boot_init_sregs), RFLAGS 0x2, TEST_CTRL reset, MAXPHYADDR
 * 46; its "split lock emulated" lines are not rate-limited, so that what a
 * handler prints does not depend on the time. The VM enumerates split-lock
 * detection; clear vm.split_lock_enumerated for one that does not.
 * 0, or -1 (out of memory, no /dev/null, an op without a fake).
 */
int fake_vm_init(struct fake_vm *f, unsigned ncpus, uint64_t ram_size);
void fake_vm_destroy(struct fake_vm *f);
/* The fake state behind one of f's vCPUs. */
struct fake_vcpu *fake_vcpu(struct vcpu *v);

#endif
