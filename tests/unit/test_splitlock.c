/* SPDX-License-Identifier: MIT */
/*
 * The split-lock exit handlers driven through a fake KVM layer: MSR exits
 * as KVM fills the run page, and #AC exits with and without the SIGBUS.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot.h"
#include "vmm_boot.h"
#include "splitlock.h"
#include "vm.h"
#include "vmm_msr.h"
#include "vmm_status.h"

/* ---- fake KVM: records what the handler asked of it */
static struct {
	struct kvm_vcpu_events events;
	int set_events_calls;
	int set_events_error;
	int set_regs_calls;
	int set_sregs_calls;
	int get_pkru_calls;
	int get_pkru_error;
	uint32_t pkru;
	struct kvm_regs regs;
	struct kvm_sregs sregs;
} fake;

#define RAM (4ull << 20)
static uint8_t *ram;

static int fake_get_regs(struct vcpu *v, struct kvm_regs *r)
{
	(void)v;
	*r = fake.regs;
	return 0;
}

static int fake_get_sregs(struct vcpu *v, struct kvm_sregs *s)
{
	(void)v;
	*s = fake.sregs;
	return 0;
}

static int fake_set_regs(struct vcpu *v, const struct kvm_regs *r)
{
	(void)v;
	fake.set_regs_calls++;
	fake.regs = *r;
	return 0;
}

static int fake_set_sregs(struct vcpu *v, const struct kvm_sregs *s)
{
	(void)v;
	fake.set_sregs_calls++;
	fake.sregs = *s;
	return 0;
}

static int fake_get_pkru(struct vcpu *v, uint32_t *pkru)
{
	(void)v;
	fake.get_pkru_calls++;
	*pkru = fake.pkru;
	return -fake.get_pkru_error;
}

static int fake_get_events(struct vcpu *v, struct kvm_vcpu_events *ev)
{
	(void)v;
	*ev = fake.events;
	return 0;
}

static int fake_set_events(struct vcpu *v, const struct kvm_vcpu_events *ev)
{
	(void)v;
	fake.set_events_calls++;
	if (fake.set_events_error)
		return -fake.set_events_error;
	fake.events = *ev;
	return 0;
}

/* The boot protocol's identity map: virtual is physical below RAM's end. */
static size_t fake_read_virt(struct vcpu *v, uint64_t gva, uint8_t *buf, size_t len)
{
	(void)v;
	if (gva >= RAM)
		return 0;
	if (len > RAM - gva)
		len = RAM - gva;
	memcpy(buf, ram + gva, len);
	return len;
}

static const struct vcpu_ops fake_ops = {
	.get_regs = fake_get_regs,
	.get_sregs = fake_get_sregs,
	.get_events = fake_get_events,
	.set_events = fake_set_events,
	.set_regs = fake_set_regs,
	.set_sregs = fake_set_sregs,
	.get_pkru = fake_get_pkru,
	.read_virt = fake_read_virt,
};

static struct vmm_options opts;
static struct vm vm;
static struct kvm_run runs[2];

static int setup_vm(bool enumerated)
{
	int devnull = open("/dev/null", O_WRONLY);

	memset(&fake, 0, sizeof(fake));
	memset(runs, 0, sizeof(runs));
	if (devnull < 0 || vm_init_common(&vm, &opts, 2, devnull))
		return -1;
	ram = calloc(1, RAM);
	if (!ram)
		return -1;
	boot_build_page_tables(ram, RAM);
	boot_init_sregs(&fake.sregs);
	vm.mem = ram;
	vm.ram_size = RAM;
	vm.split_lock_enumerated = enumerated;
	vm.host_mode = "fatal";
	for (unsigned i = 0; i < 2; i++) {
		vm.vcpus[i].maxphyaddr = 46;
		vm.vcpus[i].run = &runs[i];
		vm.vcpus[i].ops = &fake_ops;
		msr_reset(&vm.vcpus[i].msrs);
	}
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

static int teardown(void **state)
{
	(void)state;
	close(vm.serial.fd);
	vm_destroy_common(&vm);
	free(ram);
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
	struct vcpu *v0 = &vm.vcpus[0], *v1 = &vm.vcpus[1];

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
	assert_false(vm_stopping(&vm));
}

static void msr_exits_not_enumerated(void **state)
{
	struct vcpu *v = &vm.vcpus[0];

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
	struct vcpu *v = &vm.vcpus[0];

	(void)state;
	rdmsr(v, 0x10);
	assert_int_equal(v->run->msr.error, 1);
	v->run->msr.reason = KVM_MSR_EXIT_REASON_UNKNOWN;
	v->run->msr.index = MSR_TEST_CTRL;
	splitlock_handle_rdmsr(v);
	assert_int_equal(v->run->msr.error, 1);
	assert_false(vm_stopping(&vm));
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
	struct vcpu *v = &vm.vcpus[1];

	(void)state;
	wrmsr(v, MSR_TEST_CTRL, TEST_CTRL_SPLIT_LOCK_DETECT);
	fake.events.exception.pending = 1;	/* stale state must not survive */
	ac_exit(v, 17, true);
	assert_false(vm_stopping(&vm));
	assert_int_equal(fake.set_events_calls, 1);
	assert_int_equal(fake.events.exception.injected, 1);
	assert_int_equal(fake.events.exception.pending, 0);
	assert_int_equal(fake.events.exception.nr, 17);
	assert_int_equal(fake.events.exception.has_error_code, 1);
	assert_int_equal(fake.events.exception.error_code, 0);
	assert_int_equal(v->stats.ac_injected, 1);
	assert_int_equal(v->stats.sigbus, 1);
	assert_int_equal(v->sigbus, 0);
	/* Without the SIGBUS (a kernel that does not send it) it is the same. */
	ac_exit(v, 17, false);
	assert_int_equal(v->stats.ac_injected, 2);
	assert_int_equal(v->stats.sigbus, 1);
}

/* Runs fn with stderr sent to a buffer. */
static void capture_stderr(void (*fn)(void), char *buf, size_t len)
{
	FILE *tmp = tmpfile();
	int saved = dup(STDERR_FILENO);
	size_t n;

	assert_non_null(tmp);
	fflush(stderr);
	dup2(fileno(tmp), STDERR_FILENO);
	fn();
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(tmp);
	n = fread(buf, 1, len - 1, tmp);
	buf[n] = '\0';
	fclose(tmp);
}

/* lock xadd [rdi], eax with [rdi] across the line at 0x200040. */
static void place_split_xadd(uint64_t rdi)
{
	static const uint8_t lock_xadd[] = { 0xf0, 0x0f, 0xc1, 0x07 };

	memcpy(ram + 0x101234, lock_xadd, sizeof(lock_xadd));
	fake.regs.rip = 0x101234;
	fake.regs.rdi = rdi;
	fake.regs.rax = 5;
	fake.regs.rflags = 0x2;
	if (rdi + 4 <= RAM)
		memcpy(ram + rdi, (uint32_t[]){ 0x11223344 }, 4);
}

static void ac_emulated_when_not_asked(void **state)
{
	struct vcpu *v = &vm.vcpus[0];
	uint32_t result;

	(void)state;
	place_split_xadd(0x20003e);
	ac_exit(v, 17, true);
	assert_false(vm_stopping(&vm));
	assert_int_equal(fake.set_events_calls, 0);
	assert_int_equal(fake.set_regs_calls, 1);
	memcpy(&result, ram + 0x20003e, 4);
	assert_int_equal(result, 0x11223349);
	assert_int_equal(fake.regs.rax, 0x11223344);
	assert_int_equal(fake.regs.rip, 0x101238);
	assert_int_equal(v->stats.split_locks_emulated, 1);
	assert_int_equal(v->stats.split_locks_detected, 0);	/* hardware caught it */
	assert_int_equal(v->stats.sigbus, 1);
}

static void emulated_warning(void)
{
	place_split_xadd(0x20003e);
	ac_exit(&vm.vcpus[0], 17, false);
}

/* The warn-mode line names the instruction's own RIP, not the next one. */
static void emulation_warns_with_rip(void **state)
{
	char out[1024];

	(void)state;
	capture_stderr(emulated_warning, out, sizeof(out));
	assert_non_null(strstr(out, "vCPU 0: split lock at RIP 0x101234 (lock xadd, 4 bytes at 0x20003e, bytes f0 0f c1 07) emulated"));
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
	struct vcpu *v = &vm.vcpus[0];

	(void)state;
	place_split_xadd(RAM - 2);
	fake.sregs.cr2 = 0x1234;
	ac_exit(v, 17, true);
	assert_false(vm_stopping(&vm));
	assert_int_equal(fake.set_regs_calls, 0);
	assert_int_equal(fake.set_sregs_calls, 1);
	assert_int_equal(fake.sregs.cr2, RAM);
	assert_int_equal(fake.events.exception.injected, 1);
	assert_int_equal(fake.events.exception.nr, 14);
	assert_int_equal(fake.events.exception.has_error_code, 1);
	assert_int_equal(fake.events.exception.error_code, 0x2);	/* not present, write */
	memcpy(ram + RAM - 2, "\x44\x33", 2);
	ac_exit(v, 17, false);
	assert_int_equal(ram[RAM - 2], 0x44);		/* nothing written */
	assert_int_equal(ram[RAM - 1], 0x33);
	assert_int_equal(v->stats.split_locks_emulated, 0);
	assert_int_equal(v->stats.ac_injected, 0);

	/* The first page read-only with CR0.WP: a protection fault at the operand. */
	place_split_xadd(0x20003e);
	page_flags(0x200000, 0, PTE_RW);
	ac_exit(v, 17, false);
	assert_int_equal(fake.sregs.cr2, 0x20003e);
	assert_int_equal(fake.events.exception.error_code, 0x3);
	assert_int_equal(operand_at(0x20003e), 0x11223344);
	/* Without CR0.WP, CPL0 writes through. */
	fake.sregs.cr0 &= ~X86_CR0_WP;
	ac_exit(v, 17, false);
	assert_int_equal(operand_at(0x20003e), 0x11223349);
	assert_int_equal(v->stats.split_locks_emulated, 1);
	assert_false(vm_stopping(&vm));
}

/* SMAP, and a non-canonical operand (#GP(0), no CR2). */
static void ac_becomes_smap_and_gp_faults(void **state)
{
	struct vcpu *v = &vm.vcpus[0];

	(void)state;
	place_split_xadd(0x20003e);
	fake.sregs.cr4 |= 1ull << 21;		/* SMAP; the page is a user page */
	ac_exit(v, 17, false);
	assert_int_equal(fake.events.exception.nr, 14);
	assert_int_equal(fake.events.exception.error_code, 0x3);
	assert_int_equal(operand_at(0x20003e), 0x11223344);
	fake.regs.rflags |= 1ull << 18;		/* RFLAGS.AC lets CPL0 through */
	ac_exit(v, 17, false);
	assert_int_equal(operand_at(0x20003e), 0x11223349);

	place_split_xadd(0x800000000000ull - 2);
	fake.set_sregs_calls = 0;
	ac_exit(v, 17, false);
	assert_int_equal(fake.events.exception.nr, 13);
	assert_int_equal(fake.events.exception.has_error_code, 1);
	assert_int_equal(fake.events.exception.error_code, 0);
	assert_int_equal(fake.set_sregs_calls, 0);
	assert_false(vm_stopping(&vm));
}

/* Protection keys: PKRU is read from the vCPU only when CR4.PKE needs it. */
static void ac_becomes_the_key_fault(void **state)
{
	struct vcpu *v = &vm.vcpus[0];

	(void)state;
	place_split_xadd(0x20003e);
	ac_exit(v, 17, false);
	assert_int_equal(fake.get_pkru_calls, 0);
	place_split_xadd(0x20003e);
	fake.sregs.cr4 |= 1ull << 22;		/* PKE; the page has key 0 */
	fake.pkru = 2;				/* WD for key 0 */
	ac_exit(v, 17, false);
	assert_int_equal(fake.get_pkru_calls, 1);
	assert_int_equal(fake.events.exception.nr, 14);
	assert_int_equal(fake.events.exception.error_code, 0x23);	/* P W PK */
	assert_int_equal(operand_at(0x20003e), 0x11223344);
	/* Keys do not bind a supervisor write with CR0.WP clear. */
	fake.sregs.cr0 &= ~X86_CR0_WP;
	ac_exit(v, 17, false);
	assert_int_equal(operand_at(0x20003e), 0x11223349);
	assert_false(vm_stopping(&vm));
}

/* Reserved bits, a supervisor page at CPL3, and a fetch that faults now. */
static void ac_becomes_reserved_and_user_faults(void **state)
{
	struct vcpu *v = &vm.vcpus[0];

	(void)state;
	place_split_xadd(0x20003e);
	page_flags(0x200000, 1ull << 46, 0);		/* MAXPHYADDR is 46 */
	ac_exit(v, 17, false);
	assert_int_equal(fake.events.exception.nr, 14);
	assert_int_equal(fake.events.exception.error_code, 0xb);	/* P W RSVD */
	assert_int_equal(fake.sregs.cr2, 0x20003e);
	page_flags(0x200000, 0, 1ull << 46);

	/* CPL3 against a supervisor page. */
	fake.sregs.cs.dpl = fake.sregs.ss.dpl = 3;
	page_flags(0x200000, 0, PTE_US);
	ac_exit(v, 17, false);
	assert_int_equal(fake.events.exception.error_code, 0x7);	/* P W U */
	page_flags(0x200000, PTE_US, 0);

	/* The code page became no-execute since the #AC: resume, the CPU says so. */
	fake.sregs.cs.dpl = fake.sregs.ss.dpl = 0;
	fake.sregs.efer |= 1ull << 11;
	page_flags(0x101234, 1ull << 63, 0);
	fake.set_events_calls = 0;
	ac_exit(v, 17, false);
	assert_int_equal(fake.set_events_calls, 0);
	assert_int_equal(fake.set_regs_calls, 0);
	assert_false(vm_stopping(&vm));
	assert_int_equal(operand_at(0x20003e), 0x11223344);
}

/* Compatibility mode: the segment's base, and #SS(0) past SS's limit. */
static void ac_in_compatibility_mode(void **state)
{
	static const uint8_t add_ebp[] = { 0xf0, 0x83, 0x45, 0x00, 0x01 };	/* [ebp+0] */
	struct vcpu *v = &vm.vcpus[0];

	(void)state;
	fake.sregs.cs.l = 0;
	fake.sregs.cs.db = 1;
	fake.sregs.ss.base = 0x200000;
	memcpy(ram + 0x101234, add_ebp, sizeof(add_ebp));
	memcpy(ram + 0x20003e, (uint32_t[]){ 0x11223344 }, 4);
	fake.regs = (struct kvm_regs){ .rip = 0x101234, .rbp = 0x3e, .rflags = 0x2 };
	ac_exit(v, 17, false);
	assert_int_equal(operand_at(0x20003e), 0x11223345);
	assert_int_equal(fake.regs.rip, 0x101239);
	fake.regs.rip = 0x101234;
	fake.sregs.ss.limit = 0x40;
	ac_exit(v, 17, false);
	assert_int_equal(fake.events.exception.nr, 12);
	assert_int_equal(fake.events.exception.has_error_code, 1);
	assert_int_equal(fake.events.exception.error_code, 0);
	assert_int_equal(operand_at(0x20003e), 0x11223345);
	assert_false(vm_stopping(&vm));
}

static void pkru_unreadable(void)
{
	place_split_xadd(0x20003e);
	fake.sregs.cr4 |= 1ull << 22;
	fake.get_pkru_error = 5;
	ac_exit(&vm.vcpus[0], 17, false);
}

static void ac_stops_without_pkru(void **state)
{
	char out[4096];

	(void)state;
	capture_stderr(pkru_unreadable, out, sizeof(out));
	assert_int_equal(vm.status, VMM_EXIT_SPLIT_LOCK);
	assert_non_null(strstr(out, "cannot complete it: PKRU could not be read"));
	assert_int_equal(operand_at(0x20003e), 0x11223344);
}

/*
 * Legacy alignment checking (CPL3, CR0.AM, RFLAGS.AC) raises #AC whatever
 * TEST_CTRL says, and before any split lock: the hardware #AC is passed on,
 * and --split-lock=emulate leaves the instruction to the CPU.
 */
static void legacy_alignment_check(void **state)
{
	struct vcpu *v = &vm.vcpus[0];

	(void)state;
	place_split_xadd(0x20003e);
	fake.sregs.cs.dpl = fake.sregs.ss.dpl = 3;
	fake.sregs.cr0 |= X86_CR0_AM;
	fake.regs.rflags |= 1ull << 18;
	ac_exit(v, 17, true);
	assert_int_equal(fake.events.exception.nr, 17);
	assert_int_equal(fake.events.exception.error_code, 0);
	assert_int_equal(v->stats.ac_injected, 1);
	assert_int_equal(operand_at(0x20003e), 0x11223344);
	fake.set_events_calls = 0;
	assert_int_equal(splitlock_check(v), SL_NONE);
	assert_int_equal(fake.set_events_calls, 0);
	assert_int_equal(operand_at(0x20003e), 0x11223344);
	/* Without RFLAGS.AC it is a split lock again. */
	fake.regs.rflags &= ~(1ull << 18);
	assert_int_equal(splitlock_check(v), SL_EMULATED);
	assert_int_equal(operand_at(0x20003e), 0x11223349);
	assert_false(vm_stopping(&vm));
}

/* --split-lock=emulate leaves every faulting split lock to the CPU. */
static void software_leaves_faults_to_the_cpu(void **state)
{
	struct vcpu *v = &vm.vcpus[1];

	(void)state;
	place_split_xadd(RAM - 2);
	assert_int_equal(splitlock_check(v), SL_NONE);
	place_split_xadd(0x20003e);
	page_flags(0x200000, 0, PTE_RW);
	assert_int_equal(splitlock_check(v), SL_NONE);
	/* Even when the guest asked for #AC: the fault comes first. */
	wrmsr(v, MSR_TEST_CTRL, TEST_CTRL_SPLIT_LOCK_DETECT);
	assert_int_equal(splitlock_check(v), SL_NONE);
	assert_int_equal(fake.set_events_calls, 0);
	assert_int_equal(operand_at(0x20003e), 0x11223344);
	/* An instruction on a no-execute page is not even fetched. */
	page_flags(0x200000, PTE_RW, 0);
	page_flags(0x101234, 1ull << 63, 0);
	fake.sregs.efer |= 1ull << 11;
	wrmsr(v, MSR_TEST_CTRL, 0);
	assert_int_equal(splitlock_check(v), SL_NONE);
	assert_int_equal(operand_at(0x20003e), 0x11223344);
	page_flags(0x101234, 0, 1ull << 63);
	assert_int_equal(splitlock_check(v), SL_EMULATED);
	assert_int_equal(v->stats.split_locks_detected, 1);
	assert_false(vm_stopping(&vm));
}

static void unemulatable(void)
{
	/* 32-bit paging without long mode: not walked. */
	place_split_xadd(0x20003e);
	fake.sregs.efer &= ~X86_EFER_LMA;
	ac_exit(&vm.vcpus[0], 17, false);
}

static void ac_stops_when_it_cannot_emulate(void **state)
{
	char out[4096];
	struct vcpu *v = &vm.vcpus[0];

	(void)state;
	capture_stderr(unemulatable, out, sizeof(out));
	assert_true(vm_stopping(&vm));
	assert_int_equal(vm.status, VMM_EXIT_SPLIT_LOCK);
	assert_int_equal(fake.set_regs_calls, 0);
	assert_int_equal(v->stats.split_lock_stops, 1);
	assert_non_null(strstr(out, "vCPU 0: split lock at RIP 0x101234 (bytes"));
	assert_non_null(strstr(out, "TEST_CTRL bit 29 is clear"));
	assert_non_null(strstr(out, "cannot complete it: the guest uses 32-bit or PAE paging"));
	assert_non_null(strstr(out, "registers:"));
}

static void undecodable(void)
{
	memset(ram + 0x101234, 0x90, 16);
	fake.regs.rip = 0x101234;
	ac_exit(&vm.vcpus[0], 17, false);
}

static void ac_on_unknown_instruction_stops(void **state)
{
	char out[4096];

	(void)state;
	capture_stderr(undecodable, out, sizeof(out));
	assert_int_equal(vm.status, VMM_EXIT_SPLIT_LOCK);
	assert_non_null(strstr(out, "(bytes 90 90 90"));
	assert_non_null(strstr(out, "not a locked read-modify-write"));
}

/* --split-lock=emulate's check before an instruction runs. */
static void software_check(void **state)
{
	struct vcpu *v = &vm.vcpus[1];
	uint32_t result;

	(void)state;
	place_split_xadd(0x200000);		/* inside one line */
	assert_int_equal(splitlock_check(v), SL_NONE);
	memset(ram + 0x101234, 0x90, 4);	/* not a locked op */
	assert_int_equal(splitlock_check(v), SL_NONE);

	place_split_xadd(0x20003e);
	assert_int_equal(splitlock_check(v), SL_EMULATED);
	memcpy(&result, ram + 0x20003e, 4);
	assert_int_equal(result, 0x11223349);
	assert_int_equal(v->stats.split_locks_detected, 1);

	wrmsr(v, MSR_TEST_CTRL, TEST_CTRL_SPLIT_LOCK_DETECT);
	place_split_xadd(0x20003e);
	assert_int_equal(splitlock_check(v), SL_AC_INJECTED);
	assert_int_equal(fake.events.exception.nr, 17);
	memcpy(&result, ram + 0x20003e, 4);
	assert_int_equal(result, 0x11223344);	/* a fault: nothing written */
	assert_int_equal(v->stats.split_locks_detected, 2);
	assert_false(vm_stopping(&vm));
}

static void other_vector_stops(void)
{
	ac_exit(&vm.vcpus[0], 13, false);
}

static void other_exception_is_unhandled(void **state)
{
	char out[1024];

	(void)state;
	capture_stderr(other_vector_stops, out, sizeof(out));
	assert_int_equal(vm.status, VMM_EXIT_UNHANDLED);
	assert_non_null(strstr(out, "exception 13"));
}

static void inject_fails(void)
{
	wrmsr(&vm.vcpus[0], MSR_TEST_CTRL, TEST_CTRL_SPLIT_LOCK_DETECT);
	fake.set_events_error = 22;
	ac_exit(&vm.vcpus[0], 17, false);
}

static void injection_failure_stops(void **state)
{
	char out[1024];

	(void)state;
	capture_stderr(inject_fails, out, sizeof(out));
	assert_int_equal(vm.status, VMM_EXIT_HOST);
	assert_non_null(strstr(out, "KVM_SET_VCPU_EVENTS failed"));
	assert_int_equal(vm.vcpus[0].stats.ac_injected, 0);
}

static void decision(void **state)
{
	struct msr_state s = { 0 };

	(void)state;
	assert_int_equal(splitlock_decide_ac(&s), AC_EMULATE);
	s.test_ctrl = TEST_CTRL_SPLIT_LOCK_DETECT;
	assert_int_equal(splitlock_decide_ac(&s), AC_INJECT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(decision),
		cmocka_unit_test_setup_teardown(msr_exits_enumerated, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(msr_exits_not_enumerated, setup_not_enumerated, teardown),
		cmocka_unit_test_setup_teardown(unexpected_msr_exit_gets_gp, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ac_injected_when_asked, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ac_emulated_when_not_asked, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(emulation_warns_with_rip, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ac_stops_when_it_cannot_emulate, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ac_becomes_the_page_fault, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ac_becomes_smap_and_gp_faults, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ac_becomes_the_key_fault, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ac_stops_without_pkru, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ac_becomes_reserved_and_user_faults, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ac_in_compatibility_mode, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(legacy_alignment_check, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(software_leaves_faults_to_the_cpu, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(ac_on_unknown_instruction_stops, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(software_check, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(other_exception_is_unhandled, setup_enumerated, teardown),
		cmocka_unit_test_setup_teardown(injection_failure_stops, setup_enumerated, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
