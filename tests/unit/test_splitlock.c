/* SPDX-License-Identifier: MIT */
/*
 * The split-lock exit handlers driven through a fake KVM layer: MSR exits
 * as KVM fills the run page, and #AC exits with and without the SIGBUS.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot.h"
#include "capture.h"
#include "dump.h"
#include "event.h"
#include "fake_kvm.h"
#include "vmm_boot.h"
#include "splitlock.h"
#include "vcpu.h"
#include "vmm_msr.h"
#include "x86.h"
#include "vmm_status.h"
#include "array_size.h"

#define RAM (4ull << 20)

static struct fake_vm fv;
static uint8_t *ram;

static int setup_vm(bool enumerated)
{
	if (fake_vm_init(&fv, 2, RAM))
		return -1;
	fv.vm.split_lock_enumerated = enumerated;
	ram = fv.vm.mem;
	return 0;
}

static int setup_enumerated(void **state)
{
	(void)state;
	return setup_vm(true);
}

static int setup_not_enumerated(void **state)
{
	(void)state;
	return setup_vm(false);
}

/*
 * --split-lock=off on a split_lock_detect=fatal host: KVM still hands vmm
 * the guest's split locks, which --split-lock-ratelimit then paces.
 */
static int setup_policy_off(void **state)
{
	(void)state;
	if (setup_vm(false))
		return -1;
	fv.vm.policy = POLICY_OFF;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fake_vm_destroy(&fv);
	return 0;
}

static void rdmsr(struct vcpu *v, uint32_t index)
{
	v->run->exit_reason = KVM_EXIT_X86_RDMSR;
	v->run->msr.reason = KVM_MSR_EXIT_REASON_FILTER;
	v->run->msr.index = index;
	v->run->msr.data = 0xbad;
	v->run->msr.error = 0xff;
	splitlock_handle_rdmsr(v);
}

static void wrmsr(struct vcpu *v, uint32_t index, uint64_t data)
{
	v->run->exit_reason = KVM_EXIT_X86_WRMSR;
	v->run->msr.reason = KVM_MSR_EXIT_REASON_FILTER;
	v->run->msr.index = index;
	v->run->msr.data = data;
	v->run->msr.error = 0xff;
	splitlock_handle_wrmsr(v);
}

static void msr_exits_enumerated(void **state)
{
	struct vcpu *v0 = &fv.vm.vcpus[0], *v1 = &fv.vm.vcpus[1];

	(void)state;
	rdmsr(v0, MSR_IA32_CORE_CAPABILITIES);
	assert_int_equal(v0->run->msr.error, 0);
	assert_int_equal(v0->run->msr.data, CORE_CAP_SPLIT_LOCK_DETECT);
	wrmsr(v0, MSR_IA32_CORE_CAPABILITIES, CORE_CAP_SPLIT_LOCK_DETECT);
	assert_int_equal(v0->run->msr.error, 1);

	wrmsr(v0, MSR_TEST_CTRL, TEST_CTRL_SPLIT_LOCK_DETECT);
	assert_int_equal(v0->run->msr.error, 0);
	rdmsr(v0, MSR_TEST_CTRL);
	assert_int_equal(v0->run->msr.error, 0);
	assert_int_equal(v0->run->msr.data, TEST_CTRL_SPLIT_LOCK_DETECT);
	/* Each vCPU has its own TEST_CTRL. */
	rdmsr(v1, MSR_TEST_CTRL);
	assert_int_equal(v1->run->msr.error, 0);
	assert_int_equal(v1->run->msr.data, 0);
	wrmsr(v0, MSR_TEST_CTRL, 1ull << 31);
	assert_int_equal(v0->run->msr.error, 1);
	assert_int_equal(v0->msrs.test_ctrl, TEST_CTRL_SPLIT_LOCK_DETECT);

	assert_int_equal(v0->stats.msr_reads[STATS_MSR_TEST_CTRL], 1);
	assert_int_equal(v0->stats.msr_writes[STATS_MSR_TEST_CTRL], 2);
	assert_int_equal(v0->stats.msr_reads[STATS_MSR_CORE_CAPABILITIES], 1);
	assert_int_equal(v0->stats.msr_writes[STATS_MSR_CORE_CAPABILITIES], 1);
	assert_int_equal(v0->stats.gp_injected, 2);
	assert_int_equal(v1->stats.gp_injected, 0);
	assert_false(vm_stopping(&fv.vm));
}

static void msr_exits_not_enumerated(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	rdmsr(v, MSR_IA32_CORE_CAPABILITIES);
	assert_int_equal(v->run->msr.error, 0);
	assert_int_equal(v->run->msr.data, 0);
	rdmsr(v, MSR_TEST_CTRL);
	assert_int_equal(v->run->msr.error, 1);
	wrmsr(v, MSR_TEST_CTRL, TEST_CTRL_SPLIT_LOCK_DETECT);
	assert_int_equal(v->run->msr.error, 1);
	wrmsr(v, MSR_TEST_CTRL, 0);
	assert_int_equal(v->run->msr.error, 1);
	assert_int_equal(v->stats.gp_injected, 3);
}

static void unexpected_msr_exit_gets_gp(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	rdmsr(v, 0x10);
	assert_int_equal(v->run->msr.error, 1);
	v->run->msr.reason = KVM_MSR_EXIT_REASON_UNKNOWN;
	v->run->msr.index = MSR_TEST_CTRL;
	splitlock_handle_rdmsr(v);
	assert_int_equal(v->run->msr.error, 1);
	assert_false(vm_stopping(&fv.vm));
}

static char *caught(void (*fn)(void));
static struct vcpu *failed_msr_vcpu;

static void failed_msr_exits(void)
{
	struct vcpu *v = failed_msr_vcpu;

	v->run->exit_reason = KVM_EXIT_X86_RDMSR;
	v->run->msr.reason = KVM_MSR_EXIT_REASON_UNKNOWN;
	v->run->msr.index = 0x12345;
	v->run->msr.error = 0;
	splitlock_handle_rdmsr(v);
	assert_int_equal(v->run->msr.error, 1);
	v->run->exit_reason = KVM_EXIT_X86_WRMSR;
	v->run->msr.reason = KVM_MSR_EXIT_REASON_INVAL;
	v->run->msr.index = 0x10;	/* a known MSR, a value KVM refuses */
	v->run->msr.error = 0;
	splitlock_handle_wrmsr(v);
	assert_int_equal(v->run->msr.error, 1);
}

/*
 * Under emulate, KVM's own MSR failures come to the VMM, which answers as
 * KVM would (#GP), quietly: they are the guest's business, not a surprise.
 */
static void emulate_answers_kvm_msr_failures(void **state)
{
	char *err;

	(void)state;
	fv.vm.split_lock_emulate = true;
	failed_msr_vcpu = &fv.vm.vcpus[0];
	err = caught(failed_msr_exits);
	assert_string_equal(err, "");
	free(err);
	assert_int_equal(failed_msr_vcpu->stats.gp_injected, 0);
	assert_false(vm_stopping(&fv.vm));
	/* Without emulate nothing asked for them: a surprise, said once each. */
	fv.vm.split_lock_emulate = false;
	err = caught(failed_msr_exits);
	assert_non_null(strstr(err, "unexpected MSR exit for 0x12345 (reason"));
	free(err);
}

static void ac_exit(struct vcpu *v, uint32_t vector, bool sigbus)
{
	v->run->exit_reason = KVM_EXIT_EXCEPTION;
	v->run->ex.exception = vector;
	v->run->ex.error_code = 0;
	v->sigbus = sigbus;
	splitlock_handle_exception(v);
}

static void ac_injected_when_asked(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[1];
	struct fake_vcpu *f = fake_vcpu(v);

	(void)state;
	wrmsr(v, MSR_TEST_CTRL, TEST_CTRL_SPLIT_LOCK_DETECT);
	f->events.exception.pending = 1;	/* stale state must not survive */
	ac_exit(v, 17, true);
	assert_false(vm_stopping(&fv.vm));
	assert_int_equal(FAKE_CALLS(f, set_events), 1);
	assert_int_equal(f->events.exception.injected, 1);
	assert_int_equal(f->events.exception.pending, 0);
	assert_int_equal(f->events.exception.nr, 17);
	assert_int_equal(f->events.exception.has_error_code, 1);
	assert_int_equal(f->events.exception.error_code, 0);
	assert_int_equal(v->stats.ac_injected, 1);
	assert_int_equal(v->stats.sigbus, 1);
	assert_int_equal(v->sigbus, 0);
	/* Without the SIGBUS (a kernel that does not send it) it is the same. */
	ac_exit(v, 17, false);
	assert_int_equal(v->stats.ac_injected, 2);
	assert_int_equal(v->stats.sigbus, 1);
}

/* Runs fn with stderr caught; what it printed, to free. */
static char *caught(void (*fn)(void))
{
	struct capture c;

	assert_int_equal(capture_stderr(&c), 0);
	fn();
	assert_int_equal(capture_close(&c), 0);
	return c.buf;
}

/* lock xadd [rdi], eax with [rdi] across the line at 0x200040. */
static void place_split_xadd(struct vcpu *v, uint64_t rdi)
{
	static const uint8_t lock_xadd[] = { 0xf0, 0x0f, 0xc1, 0x07 };
	struct fake_vcpu *f = fake_vcpu(v);

	memcpy(ram + 0x101234, lock_xadd, sizeof(lock_xadd));
	f->regs.rip = 0x101234;
	f->regs.rdi = rdi;
	f->regs.rax = 5;
	f->regs.rflags = 0x2;
	if (rdi + 4 <= RAM)
		memcpy(ram + rdi, (uint32_t[]){ 0x11223344 }, 4);
}

static void ac_emulated_when_not_asked(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *f = fake_vcpu(v);
	uint32_t result;

	(void)state;
	place_split_xadd(v, 0x20003e);
	ac_exit(v, 17, true);
	assert_false(vm_stopping(&fv.vm));
	assert_int_equal(FAKE_CALLS(f, set_events), 0);
	assert_int_equal(FAKE_CALLS(f, set_regs), 1);
	memcpy(&result, ram + 0x20003e, 4);
	assert_int_equal(result, 0x11223349);
	assert_int_equal(f->regs.rax, 0x11223344);
	assert_int_equal(f->regs.rip, 0x101238);
	assert_int_equal(v->stats.split_locks_emulated, 1);
	assert_int_equal(v->stats.split_locks_detected, 0);	/* hardware caught it */
	assert_int_equal(v->stats.sigbus, 1);
}

/* Completed by the VMM in STI's shadow: the shadow ends, as the CPU's completion ends it. */
static void ac_emulated_ends_shadow(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *f = fake_vcpu(v);

	(void)state;
	place_split_xadd(v, 0x20003e);
	f->regs.rflags = 0x2 | X86_RFLAGS_IF;
	f->events.interrupt.shadow = KVM_X86_SHADOW_INT_STI;
	ac_exit(v, 17, true);
	assert_false(vm_stopping(&fv.vm));
	assert_int_equal(f->regs.rip, 0x101238);
	assert_int_equal(FAKE_CALLS(f, set_events), 1);
	assert_int_equal(f->events.interrupt.shadow, 0);
	assert_true(f->events.flags & KVM_VCPUEVENT_VALID_SHADOW);
	assert_false(f->events.exception.injected);
	assert_int_equal(v->stats.split_locks_emulated, 1);
}

/* A shadow that cannot be ended stops the VM, naming the ioctl. */
static void shadow_unwritable(void)
{
	struct vcpu *v = &fv.vm.vcpus[0];

	place_split_xadd(v, 0x20003e);
	fake_vcpu(v)->events.interrupt.shadow = KVM_X86_SHADOW_INT_MOV_SS;
	FAKE_FAIL(fake_vcpu(v), set_events) = EIO;
	ac_exit(v, 17, true);
}

static void shadow_unreadable(void)
{
	struct vcpu *v = &fv.vm.vcpus[0];

	place_split_xadd(v, 0x20003e);
	FAKE_FAIL(fake_vcpu(v), get_events) = EIO;
	ac_exit(v, 17, true);
}

static void ac_emulated_shadow_unwritable_stops(void **state)
{
	char *err;

	(void)state;
	err = caught(shadow_unwritable);
	assert_non_null(strstr(err, "vCPU 0: KVM_SET_VCPU_EVENTS (interrupt shadow) failed: Input/output error (errno 5)"));
	free(err);
	assert_true(vm_stopping(&fv.vm));
	assert_int_equal(fv.vm.vcpus[0].stats.split_locks_emulated, 0);
}

static void ac_emulated_shadow_unreadable_stops(void **state)
{
	char *err;

	(void)state;
	err = caught(shadow_unreadable);
	assert_non_null(strstr(err, "vCPU 0: KVM_GET_VCPU_EVENTS failed: Input/output error (errno 5)"));
	free(err);
	assert_true(vm_stopping(&fv.vm));
}

/*
 * --split-lock-ratelimit: within the burst a split lock waits for nothing
 * and no delay is counted; past it (10 a second, the burst of 1 spent) the
 * vCPU waits up to 100 ms, counted with its length. 100 ms is the margin:
 * the second split lock comes microseconds after the first.
 */
static void ratelimit_delays_counted(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	ratelimit_init(&fv.vm.split_lock_rate, 10, 1);
	place_split_xadd(v, 0x20003e);
	ac_exit(v, 17, true);
	assert_int_equal(v->stats.split_locks_emulated, 1);
	assert_int_equal(v->stats.split_lock_delays, 0);
	assert_int_equal(v->stats.split_lock_delay_ns, 0);
	place_split_xadd(v, 0x20003e);
	ac_exit(v, 17, true);
	assert_int_equal(v->stats.split_locks_emulated, 2);
	assert_int_equal(v->stats.split_lock_delays, 1);
	assert_true(v->stats.split_lock_delay_ns > 0);
}

static void emulated_warning(void)
{
	struct vcpu *v = &fv.vm.vcpus[0];

	place_split_xadd(v, 0x20003e);
	ac_exit(v, 17, false);
}

/* The warn-mode line names the instruction's own RIP, not the next one. */
static void emulation_warns_with_rip(void **state)
{
	char *out;

	(void)state;
	out = caught(emulated_warning);
	assert_non_null(strstr(out, "vCPU 0: split lock at RIP 0x101234 (lock xadd, 4 bytes at 0x20003e, bytes f0 0f c1 07) emulated"));
	free(out);
}

/* The 2 MiB page at 0x200000, as the boot protocol maps it, with other flags. */
static void page_flags(uint64_t la, uint64_t set, uint64_t clear)
{
	uint64_t e;

	memcpy(&e, ram + BOOT_PD_ADDR + (la >> 21) * 8, 8);
	e = (e | set) & ~clear;
	memcpy(ram + BOOT_PD_ADDR + (la >> 21) * 8, &e, 8);
}

static uint32_t operand_at(uint64_t gpa)
{
	uint32_t v;

	memcpy(&v, ram + gpa, 4);
	return v;
}

/*
 * A hardware #AC whose operand's second page is not present: without
 * split-lock detection the CPU raises #PF for the write, with CR2 at the
 * first byte of that page. The VMM gives the guest that fault instead.
 */
static void ac_becomes_the_page_fault(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *f = fake_vcpu(v);

	(void)state;
	place_split_xadd(v, RAM - 2);
	f->sregs.cr2 = 0x1234;
	ac_exit(v, 17, true);
	assert_false(vm_stopping(&fv.vm));
	/* RIP stays; RF goes into RFLAGS, so that the frame has it, as for any fault. */
	assert_int_equal(FAKE_CALLS(f, set_regs), 1);
	assert_true(f->regs.rflags & X86_RFLAGS_RF);
	assert_int_equal(FAKE_CALLS(f, set_sregs), 1);
	assert_int_equal(f->sregs.cr2, RAM);
	assert_int_equal(f->events.exception.injected, 1);
	assert_int_equal(f->events.exception.nr, 14);
	assert_int_equal(f->events.exception.has_error_code, 1);
	assert_int_equal(f->events.exception.error_code, 0x2);	/* not present, write */
	memcpy(ram + RAM - 2, "\x44\x33", 2);
	ac_exit(v, 17, false);
	assert_int_equal(ram[RAM - 2], 0x44);		/* nothing written */
	assert_int_equal(ram[RAM - 1], 0x33);
	assert_int_equal(v->stats.split_locks_emulated, 0);
	assert_int_equal(v->stats.ac_injected, 0);

	/* The first page read-only with CR0.WP: a protection fault at the operand. */
	place_split_xadd(v, 0x20003e);
	page_flags(0x200000, 0, X86_PTE_RW);
	ac_exit(v, 17, false);
	assert_int_equal(f->sregs.cr2, 0x20003e);
	assert_int_equal(f->events.exception.error_code, 0x3);
	assert_int_equal(operand_at(0x20003e), 0x11223344);
	/* Without CR0.WP, CPL0 writes through. */
	f->sregs.cr0 &= ~X86_CR0_WP;
	ac_exit(v, 17, false);
	assert_int_equal(operand_at(0x20003e), 0x11223349);
	assert_int_equal(v->stats.split_locks_emulated, 1);
	assert_false(vm_stopping(&fv.vm));
}

/* SMAP, and a non-canonical operand (#GP(0), no CR2). */
static void ac_becomes_smap_and_gp_faults(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *f = fake_vcpu(v);

	(void)state;
	place_split_xadd(v, 0x20003e);
	f->sregs.cr4 |= 1ull << 21;		/* SMAP; the page is a user page */
	ac_exit(v, 17, false);
	assert_int_equal(f->events.exception.nr, 14);
	assert_int_equal(f->events.exception.error_code, 0x3);
	assert_int_equal(operand_at(0x20003e), 0x11223344);
	f->regs.rflags |= 1ull << 18;		/* RFLAGS.AC lets CPL0 through */
	ac_exit(v, 17, false);
	assert_int_equal(operand_at(0x20003e), 0x11223349);

	place_split_xadd(v, 0x800000000000ull - 2);
	FAKE_CALLS(f, set_sregs) = 0;
	ac_exit(v, 17, false);
	assert_int_equal(f->events.exception.nr, 13);
	assert_int_equal(f->events.exception.has_error_code, 1);
	assert_int_equal(f->events.exception.error_code, 0);
	assert_int_equal(FAKE_CALLS(f, set_sregs), 0);
	assert_false(vm_stopping(&fv.vm));
}

/* Protection keys: PKRU is read from the vCPU only when CR4.PKE needs it. */
static void ac_becomes_the_key_fault(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *f = fake_vcpu(v);

	(void)state;
	place_split_xadd(v, 0x20003e);
	ac_exit(v, 17, false);
	assert_int_equal(FAKE_CALLS(f, get_pkru), 0);
	place_split_xadd(v, 0x20003e);
	f->sregs.cr4 |= 1ull << 22;		/* PKE; the page has key 0 */
	f->pkru = 2;				/* WD for key 0 */
	ac_exit(v, 17, false);
	assert_int_equal(FAKE_CALLS(f, get_pkru), 1);
	assert_int_equal(f->events.exception.nr, 14);
	assert_int_equal(f->events.exception.error_code, 0x23);	/* P W PK */
	assert_int_equal(operand_at(0x20003e), 0x11223344);
	/* Keys do not bind a supervisor write with CR0.WP clear. */
	f->sregs.cr0 &= ~X86_CR0_WP;
	ac_exit(v, 17, false);
	assert_int_equal(operand_at(0x20003e), 0x11223349);
	assert_false(vm_stopping(&fv.vm));
}

/* Reserved bits, a supervisor page at CPL3, and a fetch that faults now. */
static void ac_becomes_reserved_and_user_faults(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *f = fake_vcpu(v);

	(void)state;
	place_split_xadd(v, 0x20003e);
	page_flags(0x200000, 1ull << 46, 0);		/* MAXPHYADDR is 46 */
	ac_exit(v, 17, false);
	assert_int_equal(f->events.exception.nr, 14);
	assert_int_equal(f->events.exception.error_code, 0xb);	/* P W RSVD */
	assert_int_equal(f->sregs.cr2, 0x20003e);
	page_flags(0x200000, 0, 1ull << 46);

	/* CPL3 against a supervisor page. */
	f->sregs.cs.dpl = f->sregs.ss.dpl = 3;
	page_flags(0x200000, 0, X86_PTE_US);
	ac_exit(v, 17, false);
	assert_int_equal(f->events.exception.error_code, 0x7);	/* P W U */
	page_flags(0x200000, X86_PTE_US, 0);

	/* The code page became no-execute since the #AC: resume, the CPU says so. */
	f->sregs.cs.dpl = f->sregs.ss.dpl = 0;
	f->sregs.efer |= 1ull << 11;
	page_flags(0x101234, 1ull << 63, 0);
	FAKE_CALLS(f, set_events) = 0;
	FAKE_CALLS(f, set_regs) = 0;
	ac_exit(v, 17, false);
	assert_int_equal(FAKE_CALLS(f, set_events), 0);
	assert_int_equal(FAKE_CALLS(f, set_regs), 0);
	assert_false(vm_stopping(&fv.vm));
	assert_int_equal(operand_at(0x20003e), 0x11223344);
}

/* Compatibility mode: the segment's base, and #SS(0) past SS's limit. */
static void ac_in_compatibility_mode(void **state)
{
	static const uint8_t add_ebp[] = { 0xf0, 0x83, 0x45, 0x00, 0x01 };	/* [ebp+0] */
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *f = fake_vcpu(v);

	(void)state;
	f->sregs.cs.l = 0;
	f->sregs.cs.db = 1;
	f->sregs.ss.base = 0x200000;
	memcpy(ram + 0x101234, add_ebp, sizeof(add_ebp));
	memcpy(ram + 0x20003e, (uint32_t[]){ 0x11223344 }, 4);
	f->regs = (struct kvm_regs){ .rip = 0x101234, .rbp = 0x3e, .rflags = 0x2 };
	ac_exit(v, 17, false);
	assert_int_equal(operand_at(0x20003e), 0x11223345);
	assert_int_equal(f->regs.rip, 0x101239);
	f->regs.rip = 0x101234;
	f->sregs.ss.limit = 0x40;
	ac_exit(v, 17, false);
	assert_int_equal(f->events.exception.nr, 12);
	assert_int_equal(f->events.exception.has_error_code, 1);
	assert_int_equal(f->events.exception.error_code, 0);
	assert_int_equal(operand_at(0x20003e), 0x11223345);
	assert_false(vm_stopping(&fv.vm));
}

static void pkru_unreadable(void)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *f = fake_vcpu(v);

	place_split_xadd(v, 0x20003e);
	f->sregs.cr4 |= 1ull << 22;
	FAKE_FAIL(f, get_pkru) = 5;
	ac_exit(v, 17, false);
}

/* A PKRU KVM cannot give stops the VM: guessed keys could let a split lock through. */
static void ac_stops_when_pkru_unreadable(void **state)
{
	char *out;

	(void)state;
	out = caught(pkru_unreadable);
	assert_int_equal(fv.vm.status, VMM_EXIT_HOST);
	assert_non_null(strstr(out, "vCPU 0: reading PKRU with KVM_GET_XSAVE failed: "));
	assert_non_null(strstr(out, "(errno 5)"));
	assert_int_equal(operand_at(0x20003e), 0x11223344);
	free(out);
}

static void software_pkru_unreadable(void)
{
	struct vcpu *v = &fv.vm.vcpus[1];
	struct fake_vcpu *f = fake_vcpu(v);

	place_split_xadd(v, 0x20003e);
	f->sregs.cr4 |= 1ull << 22;
	FAKE_FAIL(f, get_pkru) = 5;
	assert_int_equal(splitlock_check(v), SPLITLOCK_STOPPED);
	assert_int_equal(FAKE_CALLS(f, get_pkru), 1);
}

/* Under emulate too: the CPU would not be left to check the keys of an undetected split lock. */
static void software_stops_when_pkru_unreadable(void **state)
{
	char *out;

	(void)state;
	out = caught(software_pkru_unreadable);
	assert_int_equal(fv.vm.status, VMM_EXIT_HOST);
	assert_non_null(strstr(out, "vCPU 1: reading PKRU with KVM_GET_XSAVE failed: "));
	assert_int_equal(operand_at(0x20003e), 0x11223344);
	assert_int_equal(fv.vm.vcpus[1].stats.split_locks_detected, 0);
	free(out);
}

/*
 * Legacy alignment checking (CPL3, CR0.AM, RFLAGS.AC) raises #AC whatever
 * TEST_CTRL says, and before any split lock: the hardware #AC is passed on,
 * and --split-lock=emulate leaves the instruction to the CPU.
 */
static void legacy_alignment_check(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *f = fake_vcpu(v);

	(void)state;
	place_split_xadd(v, 0x20003e);
	f->sregs.cs.dpl = f->sregs.ss.dpl = 3;
	f->sregs.cr0 |= X86_CR0_AM;
	f->regs.rflags |= 1ull << 18;
	ac_exit(v, 17, true);
	assert_int_equal(f->events.exception.nr, 17);
	assert_int_equal(f->events.exception.error_code, 0);
	assert_int_equal(v->stats.ac_injected, 1);
	assert_int_equal(operand_at(0x20003e), 0x11223344);
	FAKE_CALLS(f, set_events) = 0;
	assert_int_equal(splitlock_check(v), SPLITLOCK_LEFT_TO_CPU);
	assert_int_equal(FAKE_CALLS(f, set_events), 0);
	assert_int_equal(operand_at(0x20003e), 0x11223344);
	/* Without RFLAGS.AC it is a split lock again. */
	f->regs.rflags &= ~(1ull << 18);
	assert_int_equal(splitlock_check(v), SPLITLOCK_EMULATED);
	assert_int_equal(operand_at(0x20003e), 0x11223349);
	assert_false(vm_stopping(&fv.vm));
}

/* --split-lock=emulate leaves every faulting split lock to the CPU. */
static void software_leaves_faults_to_the_cpu(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[1];
	struct fake_vcpu *f = fake_vcpu(v);

	(void)state;
	place_split_xadd(v, RAM - 2);
	assert_int_equal(splitlock_check(v), SPLITLOCK_LEFT_TO_CPU);
	place_split_xadd(v, 0x20003e);
	page_flags(0x200000, 0, X86_PTE_RW);
	assert_int_equal(splitlock_check(v), SPLITLOCK_LEFT_TO_CPU);
	/* Even when the guest asked for #AC: the fault comes first. */
	wrmsr(v, MSR_TEST_CTRL, TEST_CTRL_SPLIT_LOCK_DETECT);
	assert_int_equal(splitlock_check(v), SPLITLOCK_LEFT_TO_CPU);
	assert_int_equal(FAKE_CALLS(f, set_events), 0);
	assert_int_equal(operand_at(0x20003e), 0x11223344);
	/* An instruction on a no-execute page is not even fetched. */
	page_flags(0x200000, X86_PTE_RW, 0);
	page_flags(0x101234, 1ull << 63, 0);
	f->sregs.efer |= 1ull << 11;
	wrmsr(v, MSR_TEST_CTRL, 0);
	assert_int_equal(splitlock_check(v), SPLITLOCK_NONE);
	assert_int_equal(operand_at(0x20003e), 0x11223344);
	page_flags(0x101234, 0, 1ull << 63);
	assert_int_equal(splitlock_check(v), SPLITLOCK_EMULATED);
	assert_int_equal(v->stats.split_locks_detected, 1);
	assert_false(vm_stopping(&fv.vm));
}

static void unemulatable(void)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *f = fake_vcpu(v);

	/* Page tables outside guest RAM: nothing to walk (32-bit and PAE paging are walked). */
	place_split_xadd(v, 0x20003e);
	f->sregs.cr3 = 0x7ff000000000ull;
	ac_exit(v, 17, false);
}

static void ac_stops_when_it_cannot_emulate(void **state)
{
	char *out;
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *f = fake_vcpu(v);

	(void)state;
	out = caught(unemulatable);
	assert_true(vm_stopping(&fv.vm));
	assert_int_equal(fv.vm.status, VMM_EXIT_SPLIT_LOCK);
	assert_int_equal(FAKE_CALLS(f, set_regs), 0);
	assert_int_equal(v->stats.split_lock_stops, 1);
	assert_non_null(strstr(out, "vCPU 0: split lock at RIP 0x101234 (bytes"));
	assert_non_null(strstr(out, "TEST_CTRL bit 29 is clear"));
	assert_non_null(strstr(out, "cannot complete it: "));
	assert_non_null(strstr(out, "registers:"));
	free(out);
}

static void undecodable(void)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *f = fake_vcpu(v);

	memset(ram + 0x101234, 0x90, 16);
	f->regs.rip = 0x101234;
	ac_exit(v, 17, false);
}

static void ac_on_unknown_instruction_stops(void **state)
{
	char *out;

	(void)state;
	out = caught(undecodable);
	assert_int_equal(fv.vm.status, VMM_EXIT_SPLIT_LOCK);
	assert_non_null(strstr(out, "(bytes 90 90 90"));
	assert_non_null(strstr(out, "not a locked read-modify-write"));
	/* The dump reads the bytes at RIP through the page walker, as the CPU fetches. */
	assert_non_null(strstr(out, "bytes at RIP: 90 90 90 90 90 90 90 90 90 90 90 90 90 90 90 90\n"));
	free(out);
}

/*
 * The INIT state KVM on SVM leaves after a triple fault (RIP 0xfff0, CS
 * 0xf000 based at 0xffff0000, protection off) says the registers are lost;
 * anything else differing from it is a state worth dumping.
 */
static void reset_state_recognised(void **state)
{
	struct kvm_regs r = { .rip = 0xfff0 };
	struct kvm_sregs s = { .cs = { .selector = 0xf000, .base = 0xffff0000 } };

	(void)state;
	assert_true(dump_is_reset_state(&r, &s));
	r.rip = 0xfff1;
	assert_false(dump_is_reset_state(&r, &s));
	r.rip = 0xfff0;
	s.cs.selector = 0xf001;
	assert_false(dump_is_reset_state(&r, &s));
	s.cs.selector = 0xf000;
	s.cs.base = 0xf0000;
	assert_false(dump_is_reset_state(&r, &s));
	s.cs.base = 0xffff0000;
	s.cr0 = X86_CR0_PE;
	assert_false(dump_is_reset_state(&r, &s));
}

/* The bytes at RIP as a dump shows them: all that fit, whole, or "(unreadable)". */
static void bytes_formatted(void **state)
{
	static const uint8_t ud2[] = { 0x0f, 0x0b };
	char buf[6];

	(void)state;
	dump_format_bytes(buf, sizeof(buf), ud2, 2);
	assert_string_equal(buf, "0f 0b");
	dump_format_bytes(buf, 5, ud2, 2);
	assert_string_equal(buf, "0f");
	dump_format_bytes(buf, sizeof(buf), ud2, 0);
	assert_string_equal(buf, "(unre");
}

static void registers_unreadable(void)
{
	struct vcpu *v = &fv.vm.vcpus[0];

	place_split_xadd(v, 0x20003e);
	FAKE_FAIL(fake_vcpu(v), get_sregs) = EIO;
	ac_exit(v, 17, false);
}

static void ac_stops_when_registers_unreadable(void **state)
{
	char *out;

	(void)state;
	out = caught(registers_unreadable);
	assert_int_equal(fv.vm.status, VMM_EXIT_HOST);
	assert_non_null(strstr(out, "reading registers after a split-lock #AC failed: KVM_GET_SREGS: "
				    "Input/output error (errno 5)"));
	assert_int_equal(operand_at(0x20003e), 0x11223344);
	assert_int_equal(fv.vm.vcpus[0].stats.split_locks_emulated, 0);
	free(out);
}

/* --split-lock=emulate's check before an instruction runs. */
static void software_check(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[1];
	struct fake_vcpu *f = fake_vcpu(v);
	uint32_t result;

	(void)state;
	place_split_xadd(v, 0x200000);		/* inside one line */
	assert_int_equal(splitlock_check(v), SPLITLOCK_NONE);
	memset(ram + 0x101234, 0x90, 4);	/* not a locked op */
	assert_int_equal(splitlock_check(v), SPLITLOCK_NONE);

	place_split_xadd(v, 0x20003e);
	assert_int_equal(splitlock_check(v), SPLITLOCK_EMULATED);
	memcpy(&result, ram + 0x20003e, 4);
	assert_int_equal(result, 0x11223349);
	assert_int_equal(v->stats.split_locks_detected, 1);

	wrmsr(v, MSR_TEST_CTRL, TEST_CTRL_SPLIT_LOCK_DETECT);
	place_split_xadd(v, 0x20003e);
	assert_int_equal(splitlock_check(v), SPLITLOCK_AC_INJECTED);
	assert_int_equal(f->events.exception.nr, 17);
	memcpy(&result, ram + 0x20003e, 4);
	assert_int_equal(result, 0x11223344);	/* a fault: nothing written */
	assert_int_equal(v->stats.split_locks_detected, 2);
	assert_false(vm_stopping(&fv.vm));
}

static void other_vector_stops(void)
{
	ac_exit(&fv.vm.vcpus[0], 13, false);
}

static void other_exception_is_unhandled(void **state)
{
	char *out;

	(void)state;
	out = caught(other_vector_stops);
	assert_int_equal(fv.vm.status, VMM_EXIT_UNHANDLED);
	assert_non_null(strstr(out, "exception 13"));
	free(out);
}

static void inject_fails(void)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *f = fake_vcpu(v);

	wrmsr(v, MSR_TEST_CTRL, TEST_CTRL_SPLIT_LOCK_DETECT);
	FAKE_FAIL(f, set_events) = 22;
	ac_exit(v, 17, false);
}

static void injection_failure_stops(void **state)
{
	char *out;

	(void)state;
	out = caught(inject_fails);
	assert_int_equal(fv.vm.status, VMM_EXIT_HOST);
	assert_non_null(strstr(out, "KVM_SET_VCPU_EVENTS failed"));
	assert_int_equal(fv.vm.vcpus[0].stats.ac_injected, 0);
	free(out);
}

/* event_inject: RF in RFLAGS for a fault's frame only; CR2 for a #PF; injected, not pending. */
static void injected_events(void **state)
{
	static const struct {
		struct emulate_exception ex;
		bool rf;
	} cases[] = {
		{ { .vector = X86_VEC_DB }, false },
		{ { .vector = X86_VEC_BP }, false },
		{ { .vector = X86_VEC_GP, .has_error_code = true, .error_code = 0x18 }, true },
		{ { .vector = X86_VEC_AC, .has_error_code = true }, true },
		{ { .vector = X86_VEC_PF, .has_error_code = true, .error_code = 2, .has_cr2 = true,
		    .cr2 = 0xdead000 }, true },
	};
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *f = fake_vcpu(v);

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		f->regs.rflags = X86_RFLAGS_FIXED;
		f->sregs.cr2 = 0x1234;
		f->events.exception.pending = 1;
		assert_int_equal(event_inject(v, &cases[i].ex), 0);
		if (!(f->regs.rflags & X86_RFLAGS_RF) != !cases[i].rf)
			fail_msg("vector %u: RFLAGS %#llx", cases[i].ex.vector,
				 (unsigned long long)f->regs.rflags);
		assert_int_equal(f->sregs.cr2, cases[i].ex.has_cr2 ? cases[i].ex.cr2 : 0x1234);
		assert_int_equal(f->events.exception.injected, 1);
		assert_int_equal(f->events.exception.pending, 0);
		assert_int_equal(f->events.exception.nr, cases[i].ex.vector);
		assert_int_equal(f->events.exception.has_error_code, cases[i].ex.has_error_code);
		assert_int_equal(f->events.exception.error_code, cases[i].ex.error_code);
	}
}

static void decision(void **state)
{
	struct msr_state s = { 0 };

	(void)state;
	assert_int_equal(splitlock_decide_ac(&s), SPLITLOCK_AC_EMULATE);
	s.test_ctrl = TEST_CTRL_SPLIT_LOCK_DETECT;
	assert_int_equal(splitlock_decide_ac(&s), SPLITLOCK_AC_INJECT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(decision),
		cmocka_unit_test_setup_teardown(msr_exits_enumerated, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(msr_exits_not_enumerated, setup_not_enumerated, teardown),
		cmocka_unit_test_setup_teardown(unexpected_msr_exit_gets_gp, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(emulate_answers_kvm_msr_failures, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ac_injected_when_asked, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ac_emulated_when_not_asked, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ac_emulated_ends_shadow, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ac_emulated_shadow_unwritable_stops, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ac_emulated_shadow_unreadable_stops, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ratelimit_delays_counted, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ratelimit_delays_counted, setup_policy_off, teardown),
		cmocka_unit_test_setup_teardown(emulation_warns_with_rip, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ac_stops_when_it_cannot_emulate, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ac_becomes_the_page_fault, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ac_becomes_smap_and_gp_faults, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ac_becomes_the_key_fault, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ac_stops_when_pkru_unreadable, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(software_stops_when_pkru_unreadable, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ac_becomes_reserved_and_user_faults, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ac_in_compatibility_mode, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(legacy_alignment_check, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(software_leaves_faults_to_the_cpu, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ac_on_unknown_instruction_stops, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ac_stops_when_registers_unreadable, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(software_check, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(other_exception_is_unhandled, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(injection_failure_stops, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(injected_events, setup_enumerated, teardown),
		cmocka_unit_test(reset_state_recognised),
		cmocka_unit_test(bytes_formatted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
