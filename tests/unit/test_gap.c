/* SPDX-License-Identifier: MIT */
/*
 * KVM's emulation internal error at what the VMM completes where the probes
 * found KVM cannot (gap.c), driven as synthetic exits through the dispatch
 * and the fake KVM: a locked CMPXCHG16B completed (equal and not), its
 * faults injected as the CPU raises them, INT3 and INT n delivered through
 * the guest's IDT, and everything else KVM's internal error, named.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "dispatch.h"
#include "fake_kvm.h"
#include "gap.h"
#include "vmm_boot.h"
#include "vmm_status.h"
#include "x86.h"

#define RAM (4ull << 20)
#define CODE 0x101000u
#define IDT 0x102000u
#define HANDLER 0x103000u
#define STACK 0x110000u
#define OPERAND 0x200100u

static struct fake_vm fv;
static uint8_t *ram;

/* A host whose KVM runs neither CMPXCHG16B nor INT3/INT n at CPL0 (the PVM KVM). */
static int setup(void **state)
{
	(void)state;
	if (fake_vm_init(&fv, 2, RAM))
		return -1;
	ram = fv.vm.mem;
	fv.vm.host = (struct host_profile){ .xsave_cpl0 = true };
	/* The boot GDT's code and data descriptors, which delivery reads (accessed). */
	memcpy(ram + BOOT_GDT_ADDR + BOOT_SEL_CODE64, &(uint64_t){ 0x00af9b000000ffffull }, 8);
	memcpy(ram + BOOT_GDT_ADDR + BOOT_SEL_DATA, &(uint64_t){ 0x00cf93000000ffffull }, 8);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fake_vm_destroy(&fv);
	return 0;
}

/* KVM_EXIT_INTERNAL_ERROR, suberror emulation, on vCPU 0; what it said on stderr. */
static char *internal_error(void)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct capture c;

	v->run->exit_reason = KVM_EXIT_INTERNAL_ERROR;
	v->run->internal.suberror = KVM_INTERNAL_ERROR_EMULATION;
	v->run->internal.ndata = 0;
	assert_int_equal(capture_stderr(&c), 0);
	dispatch_exit(v);
	assert_int_equal(capture_close(&c), 0);
	return c.buf;
}

static struct fake_vcpu *code_at_rip(const uint8_t *bytes, size_t n)
{
	struct fake_vcpu *f = fake_vcpu(&fv.vm.vcpus[0]);

	memcpy(ram + CODE, bytes, n);
	f->regs.rip = CODE;
	f->regs.rflags = 0x2;
	f->regs.rsp = STACK;
	return f;
}

/* lock cmpxchg16b (%rdi) at RIP; RDX:RAX compared, RCX:RBX stored. */
static struct fake_vcpu *place_cx16(uint64_t rdi, uint64_t lo, uint64_t hi)
{
	static const uint8_t cx16[] = { 0xf0, 0x48, 0x0f, 0xc7, 0x0f };
	struct fake_vcpu *f = code_at_rip(cx16, sizeof(cx16));

	f->regs.rdi = rdi;
	f->regs.rax = lo;
	f->regs.rdx = hi;
	f->regs.rbx = 0x1111;
	f->regs.rcx = 0x2222;
	if (rdi + 16 <= RAM) {
		memcpy(ram + rdi, &(uint64_t){ 0xaaaa }, 8);
		memcpy(ram + rdi + 8, &(uint64_t){ 0xbbbb }, 8);
	}
	return f;
}

static uint64_t at(uint64_t gpa)
{
	uint64_t v;

	memcpy(&v, ram + gpa, 8);
	return v;
}

/* Equal: RCX:RBX stored, ZF set. Not equal: the operand loaded, ZF clear. RIP on, RF clear. */
static void cmpxchg16b_completed(void **state)
{
	struct fake_vcpu *f = place_cx16(OPERAND, 0xaaaa, 0xbbbb);
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	f->regs.rflags |= X86_RFLAGS_RF;
	free(internal_error());
	assert_false(vm_stopping(&fv.vm));
	assert_int_equal(at(OPERAND), 0x1111);
	assert_int_equal(at(OPERAND + 8), 0x2222);
	assert_true(f->regs.rflags & X86_RFLAGS_ZF);
	assert_false(f->regs.rflags & X86_RFLAGS_RF);
	assert_int_equal(f->regs.rip, CODE + 5);

	f = place_cx16(OPERAND, 1, 2);
	free(internal_error());
	assert_int_equal(at(OPERAND), 0xaaaa);
	assert_int_equal(f->regs.rax, 0xaaaa);
	assert_int_equal(f->regs.rdx, 0xbbbb);
	assert_false(f->regs.rflags & X86_RFLAGS_ZF);
	assert_int_equal(f->regs.rip, CODE + 5);
	assert_int_equal(v->stats.gap_locked_rmw, 2);
	assert_int_equal(v->stats.gap_faults, 0);
	assert_int_equal(f->events.exception.injected, 0);
	/* Not a split lock: nothing of the split-lock counters. */
	assert_int_equal(v->stats.split_locks_emulated, 0);
}

/* CMPXCHG16B without LOCK (Linux's this_cpu_cmpxchg16b with %gs): the same, GS's base added. */
static void cmpxchg16b_unlocked_gs(void **state)
{
	static const uint8_t cx16_gs[] = { 0x65, 0x48, 0x0f, 0xc7, 0x0f };	/* cmpxchg16b %gs:(%rdi) */
	struct fake_vcpu *f = place_cx16(OPERAND, 0xaaaa, 0xbbbb);

	(void)state;
	memcpy(ram + CODE, cx16_gs, sizeof(cx16_gs));
	f->sregs.gs.base = 0x100;
	f->regs.rdi = OPERAND - 0x100;
	free(internal_error());
	assert_false(vm_stopping(&fv.vm));
	assert_int_equal(at(OPERAND), 0x1111);
	assert_int_equal(at(OPERAND + 8), 0x2222);
	assert_int_equal(f->regs.rip, CODE + 5);
	assert_int_equal(fv.vm.vcpus[0].stats.gap_locked_rmw, 1);
}

/* Misaligned: #GP(0); past RAM's mapping: #PF with CR2. RIP stays, nothing written. */
static void cmpxchg16b_faults(void **state)
{
	struct fake_vcpu *f = place_cx16(OPERAND + 8, 0xaaaa, 0xbbbb);
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	free(internal_error());
	assert_false(vm_stopping(&fv.vm));
	assert_int_equal(f->regs.rip, CODE);
	assert_int_equal(f->events.exception.injected, 1);
	assert_int_equal(f->events.exception.nr, X86_VEC_GP);
	assert_int_equal(f->events.exception.error_code, 0);
	assert_int_equal(at(OPERAND + 8), 0xaaaa);

	/* The 2 MiB page at 0x200000 not present: #PF(write, not present). */
	f = place_cx16(OPERAND, 0xaaaa, 0xbbbb);
	ram[BOOT_PD_ADDR + 8] &= (uint8_t)~X86_PTE_P;
	free(internal_error());
	assert_int_equal(f->events.exception.nr, X86_VEC_PF);
	assert_int_equal(f->events.exception.error_code, 0x2);
	assert_int_equal(f->sregs.cr2, OPERAND);
	assert_int_equal(f->regs.rip, CODE);
	assert_int_equal(at(OPERAND), 0xaaaa);
	assert_int_equal(v->stats.gap_faults, 2);
	assert_int_equal(v->stats.gap_locked_rmw, 0);
}

/* The guest's TF: the completed instruction's single-step trap, DR6.BS. */
static void cmpxchg16b_step_trap(void **state)
{
	struct fake_vcpu *f = place_cx16(OPERAND, 0xaaaa, 0xbbbb);

	(void)state;
	f->regs.rflags |= X86_RFLAGS_TF;
	f->debugregs.dr6 = 0xffff0ff0;
	free(internal_error());
	assert_int_equal(f->regs.rip, CODE + 5);
	assert_int_equal(f->events.exception.injected, 1);
	assert_int_equal(f->events.exception.nr, X86_VEC_DB);
	assert_true(f->debugregs.dr6 & X86_DR6_BS);
}

/* A present 64-bit interrupt gate, DPL0, for vector to HANDLER + vector. */
static void gate(unsigned vector)
{
	uint64_t h = HANDLER + vector;
	uint8_t *g = ram + IDT + vector * 16;

	memset(g, 0, 16);
	g[0] = (uint8_t)h;
	g[1] = (uint8_t)(h >> 8);
	g[2] = BOOT_SEL_CODE64;
	g[5] = 0x8e;
	g[6] = (uint8_t)(h >> 16);
	g[7] = (uint8_t)(h >> 24);
}

static struct fake_vcpu *place_soft_int(const uint8_t *bytes, size_t n, unsigned limit_vectors)
{
	struct fake_vcpu *f = code_at_rip(bytes, n);

	f->sregs.idt.base = IDT;
	f->sregs.idt.limit = (uint16_t)(limit_vectors * 16 - 1);
	gate(X86_VEC_BP);
	gate(X86_VEC_GP);
	gate(0x20);
	return f;
}

/*
 * The frame as the CPU pushes it: RIP, CS, RFLAGS, RSP, SS, RSP aligned to
 * 16; a fault's with its error code and RF set.
 */
static void frame_is(uint64_t rip, uint64_t err, bool has_err)
{
	uint64_t sp = (STACK & ~15ull) - 40 - (has_err ? 8 : 0);
	struct fake_vcpu *f = fake_vcpu(&fv.vm.vcpus[0]);

	assert_int_equal(f->regs.rsp, sp);
	if (has_err)
		assert_int_equal(at(sp), err);
	sp += has_err ? 8 : 0;
	assert_int_equal(at(sp), rip);
	assert_int_equal(at(sp + 8), BOOT_SEL_CODE64);
	assert_int_equal(at(sp + 16), has_err ? 0x10002 : 0x2);
	assert_int_equal(at(sp + 24), STACK);
}

static void soft_ints_delivered(void **state)
{
	static const uint8_t int3[] = { 0xcc }, int20[] = { 0xcd, 0x20 };
	struct fake_vcpu *f = place_soft_int(int3, sizeof(int3), 0x21);
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	free(internal_error());
	assert_false(vm_stopping(&fv.vm));
	assert_int_equal(f->regs.rip, HANDLER + X86_VEC_BP);
	frame_is(CODE + 1, 0, false);
	f = place_soft_int(int20, sizeof(int20), 0x21);
	free(internal_error());
	assert_int_equal(f->regs.rip, HANDLER + 0x20);
	frame_is(CODE + 2, 0, false);
	assert_int_equal(v->stats.gap_soft_int, 2);
	/* Beyond the IDT's limit: #GP(0x20 * 8 + 2), pushed at the INT itself. */
	f = place_soft_int(int20, sizeof(int20), 0x20);
	free(internal_error());
	assert_int_equal(f->regs.rip, HANDLER + X86_VEC_GP);
	frame_is(CODE, 0x20 * 8 + 2, true);
	assert_int_equal(v->stats.gap_faults, 1);
	assert_int_equal(f->events.exception.injected, 0);
}

/* What KVM runs by the probes, or what vmm does not complete: the internal error, named. */
static void the_rest_stops(void **state)
{
	static const uint8_t ud2[] = { 0x0f, 0x0b }, lock_xadd[] = { 0xf0, 0x0f, 0xc1, 0x07 };
	static const uint8_t cx16[] = { 0xf0, 0x48, 0x0f, 0xc7, 0x0f }, int3[] = { 0xcc };
	static const struct {
		const uint8_t *code;
		size_t n;
		bool cx16_ok, int_ok;
		const char *says;
	} cases[] = {
		{ ud2, sizeof(ud2), false, false, "bytes at RIP 0x101000: 0f 0b" },
		{ ud2, sizeof(ud2), false, false, "neither a locked CMPXCHG16B nor INT3" },
		{ lock_xadd, sizeof(lock_xadd), false, false, "only CMPXCHG16B of the read-modify-write" },
		{ cx16, sizeof(cx16), true, false,
		  "the probe found that KVM runs a locked CMPXCHG16B at CPL0" },
		{ int3, sizeof(int3), false, true,
		  "the probe found that KVM delivers INT3 and INT n at CPL0" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *err;

		fake_vm_destroy(&fv);
		assert_int_equal(setup(NULL), 0);
		fv.vm.host.cmpxchg16b_cpl0 = cases[i].cx16_ok;
		fv.vm.host.soft_int_cpl0 = cases[i].int_ok;
		place_soft_int(cases[i].code, cases[i].n, 0x21);
		fake_vcpu(&fv.vm.vcpus[0])->regs.rdi = OPERAND;
		err = internal_error();
		assert_true(vm_stopping(&fv.vm));
		assert_int_equal(fv.vm.status, VMM_EXIT_INTERNAL);
		if (!strstr(err, cases[i].says) || !strstr(err, "KVM internal error, suberror 1"))
			fail_msg("case %zu said '%s', not '%s'", i, err, cases[i].says);
		free(err);
	}
}

/* Above CPL0, where the probes did not look: KVM's error, not the VMM's completion. */
static void not_at_cpl3(void **state)
{
	struct fake_vcpu *f = place_cx16(OPERAND, 0xaaaa, 0xbbbb);
	char *err;

	(void)state;
	f->sregs.ss.dpl = 3;
	f->sregs.cs.dpl = 3;
	err = internal_error();
	assert_true(vm_stopping(&fv.vm));
	assert_non_null(strstr(err, "not at CPL0"));
	assert_int_equal(at(OPERAND), 0xaaaa);
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(cmpxchg16b_completed, setup, teardown),
		cmocka_unit_test_setup_teardown(cmpxchg16b_unlocked_gs, setup, teardown),
		cmocka_unit_test_setup_teardown(cmpxchg16b_faults, setup, teardown),
		cmocka_unit_test_setup_teardown(cmpxchg16b_step_trap, setup, teardown),
		cmocka_unit_test_setup_teardown(soft_ints_delivered, setup, teardown),
		cmocka_unit_test_setup_teardown(the_rest_stops, setup, teardown),
		cmocka_unit_test_setup_teardown(not_at_cpl3, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
