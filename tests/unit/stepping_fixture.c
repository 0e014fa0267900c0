/* SPDX-License-Identifier: MIT */
/* The stepping tests' fixture (stepping_fixture.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "array_size.h"
#include "capture.h"
#include "dispatch.h"
#include "fake_kvm.h"
#include "splitlock.h"
#include "step.h"
#include "stepping.h"
#include "vcpu.h"
#include "vmm_boot.h"
#include "vmm_msr.h"
#include "vmm_status.h"
#include "x86.h"
#include "stepping_fixture.h"

struct fake_vm fv;

uint8_t *ram;

/*
 * ncpus vCPUs, the first at CODE (nops), CPL0 in long mode, an IDT of interrupt gates to
 * HANDLER(vector) (nops), a 64-bit code descriptor at BOOT_SEL_CODE64 and
 * a flat data one at BOOT_SEL_DATA, and the engine set up as vcpu_create()
 * does under emulate.
 */
int setup_vm(bool hwbp, unsigned ncpus)
{
	struct fake_vcpu *fc;
	struct vcpu *v;
	uint64_t code64 = 0x00af9b000000ffffull, data = 0x00cf93000000ffffull;

	if (fake_vm_init(&fv, ncpus, RAM))
		return -1;
	ram = fv.vm.mem;
	fv.vm.split_lock_emulate = true;
	fv.vm.split_lock_watch = SPLIT_LOCK_WATCH_ALL;	/* stepped from the first entry */
	fv.vm.host.step_cpl3 = true;
	fv.vm.host.step_hwbp = hwbp;
	v = &fv.vm.vcpus[0];
	fc = fake_vcpu(v);
	memcpy(ram + BOOT_GDT_ADDR + BOOT_SEL_CODE64, &code64, sizeof(code64));
	memcpy(ram + BOOT_GDT_ADDR + BOOT_SEL_DATA, &data, sizeof(data));
	for (unsigned i = 0; i < NGATES; i++) {
		uint8_t *g = ram + IDT + 16 * i;
		uint64_t h = HANDLER(i);

		memset(g, 0, 16);
		g[0] = (uint8_t)h;
		g[1] = (uint8_t)(h >> 8);
		g[2] = BOOT_SEL_CODE64;
		g[5] = 0x8e;	/* present interrupt gate, DPL0 */
		g[6] = (uint8_t)(h >> 16);
		g[7] = (uint8_t)(h >> 24);
		memset(ram + h, 0x90, 0x100);
	}
	memset(ram + CODE, 0x90, 0x100);
	fc->sregs.idt.base = IDT;
	fc->sregs.idt.limit = NGATES * 16 - 1;
	fc->regs.rip = CODE;
	fc->regs.rsp = STACK;
	stepping_init(v, &fc->regs, &fc->sregs);
	return 0;
}

/* cmocka setups: with or without working breakpoints, one or two vCPUs. */
#define SETUP(name, hwbp, ncpus) \
	int name(void **state) \
	{ \
		(void)state; \
		return setup_vm(hwbp, ncpus); \
	}
SETUP(setup_hwbp, true, 1)

SETUP(setup_no_hwbp, false, 1)
SETUP(setup_hwbp_2cpus, true, 2)
SETUP(setup_no_hwbp_2cpus, false, 2)
int teardown(void **state)
{
	(void)state;
	fake_vm_destroy(&fv);
	return 0;
}

struct kvm_regs *regs(struct vcpu *v)
{
	return &v->run->s.regs.regs;
}

/*
 * The run loop's part after KVM_RUN returned an exit: the real dispatch.
 * An I/O exit is a write of nothing to port 0x80, in the run page's second
 * half as KVM puts it; no exit here may stop the VM.
 */
void exit_with(struct vcpu *v, uint32_t reason)
{
	v->run->exit_reason = reason;
	if (reason == KVM_EXIT_IO)
		v->run->io = (typeof(v->run->io)){ .direction = KVM_EXIT_IO_OUT, .size = 1,
						   .port = 0x80, .count = 1, .data_offset = 2048 };
	dispatch_exit(v);
	assert_false(vm_stopping(v->vm));
}

/* A step exit: the instruction ran and the vCPU is now at rip (a #DB of the CPU's: DR7 written). */
void step_to_la(struct vcpu *v, uint64_t rip, uint64_t la, uint64_t dr6)
{
	regs(v)->rip = rip;
	v->run->debug.arch.dr6 = dr6;
	v->run->debug.arch.dr7 = 0x400;
	v->run->debug.arch.pc = la;	/* KVM reports the linear address: CS.base + RIP */
	exit_with(v, KVM_EXIT_DEBUG);
}

void step_to(struct vcpu *v, uint64_t rip, uint64_t dr6)
{
	step_to_la(v, rip, rip, dr6);
}

/* The step exit KVM's emulator makes after an instruction it emulated: DR7 left as it was. */
void step_to_emulated(struct vcpu *v, uint64_t rip)
{
	regs(v)->rip = rip;
	v->run->debug.arch.dr6 = DR6_STEP;
	v->run->debug.arch.pc = rip;
	exit_with(v, KVM_EXIT_DEBUG);
}

uint64_t word_at(uint64_t gpa)
{
	uint64_t w;

	memcpy(&w, ram + gpa, sizeof(w));
	return w;
}

void to_cpl3(struct vcpu *v)
{
	struct kvm_sregs *sr = &v->run->s.regs.sregs;
	uint64_t rsp0 = RSP0;

	sr->cs.selector = 0x33;
	sr->cs.dpl = 3;
	sr->ss.selector = 0x2b;
	sr->ss.dpl = 3;
	memcpy(ram + BOOT_TSS_ADDR + 4, &rsp0, 8);
}

/* WRMSR of a reserved TEST_CTRL bit reaches the VMM: #GP for the guest. */
void test_ctrl_reserved_write(struct vcpu *v)
{
	v->run->msr.reason = KVM_MSR_EXIT_REASON_FILTER;
	v->run->msr.index = MSR_TEST_CTRL;
	v->run->msr.data = 1;
	exit_with(v, KVM_EXIT_X86_WRMSR);
}

/*
 * The step of the instruction at CODE (the guest's TF set) ends at the #UD
 * handler with a fault frame of CODE at `frame`: it faulted, the frame
 * keeps the guest's TF, the handler runs with TF clear, nothing is owed or
 * counted.
 */
void faulted_to_ud_handler(struct vcpu *v, uint64_t frame)
{
	memcpy(ram + frame, (uint64_t[]){ CODE, BOOT_SEL_CODE64, X86_RFLAGS_FIXED | X86_RFLAGS_TF,
					  STACK, BOOT_SEL_DATA }, 40);
	regs(v)->rsp = frame;
	step_to(v, HANDLER(X86_VEC_UD), DR6_STEP);
	assert_int_equal(word_at(frame + 16), X86_RFLAGS_FIXED | X86_RFLAGS_TF);
	assert_false(v->step.guest_tf);
	assert_int_equal(v->stats.unchecked_runs, 0);
	assert_int_equal(v->stats.db_reinjected, 0);
}

/* The accessed and dirty bits of the boot map's PDE i (the 2 MiB page at i * 2 MiB). */
uint64_t pde_ad(unsigned i)
{
	uint64_t pde;

	memcpy(&pde, ram + BOOT_PD_ADDR + 8 * i, 8);
	return pde & (X86_PTE_A | X86_PTE_D);
}

/* Clears them in PDEs 0 and 1. */
void clear_pde_ad(void)
{
	for (unsigned i = 0; i < 2; i++) {
		uint64_t pde;

		memcpy(&pde, ram + BOOT_PD_ADDR + 8 * i, 8);
		pde &= ~(uint64_t)(X86_PTE_A | X86_PTE_D);
		memcpy(ram + BOOT_PD_ADDR + 8 * i, &pde, 8);
	}
}

void syscall_msrs(struct fake_vcpu *fc, uint64_t fmask)
{
	fc->msrs[0].valid = fc->msrs[1].valid = fc->msrs[2].valid = true;
	fc->msrs[0].index = MSR_STAR;
	fc->msrs[0].value = (0x1bull << 48) | (0x08ull << 32);
	fc->msrs[1].index = MSR_LSTAR;
	fc->msrs[1].value = HANDLER(0x1f);
	fc->msrs[2].index = MSR_SYSCALL_MASK;
	fc->msrs[2].value = fmask;
}

/* What the VM said as it stopped; the status must be VMM_EXIT_HOST. */
void assert_stopped_saying(struct capture *c, const char *what)
{
	assert_int_equal(capture_close(c), 0);
	assert_true(vm_stopping(&fv.vm));
	assert_int_equal(fv.vm.status, VMM_EXIT_HOST);
	assert_non_null(strstr(c->buf, what));
	free(c->buf);
}

/* xbegin CODE + 0x26 (C7 F8 rel32) at CODE, RAX all ones, RTM in CPUID as rtm says. */
struct vcpu *xbegin_at_code(bool rtm, uint64_t rflags)
{
	static const uint8_t xbegin[] = { 0xc7, 0xf8, 0x20, 0x00, 0x00, 0x00 };
	struct vcpu *v = &fv.vm.vcpus[0];

	memcpy(ram + CODE, xbegin, sizeof(xbegin));
	v->rtm = rtm;
	regs(v)->rax = ~0ull;
	regs(v)->rflags = rflags;
	stepping_before_run(v);
	return v;
}

/*
 * 32-bit protected mode without paging at CPL0, flat: a 32-bit code
 * segment at GDT 0x38 and vector's 8-byte interrupt gate to 0x38:0x130000.
 */
void flat32_gate(struct vcpu *v, unsigned vector)
{
	struct kvm_sregs *sr = &v->run->s.regs.sregs;
	uint64_t code32 = 0x00cf9b000000ffffull;
	uint8_t gate[8] = { 0x00, 0x00, 0x38, 0x00, 0x00, 0x8e, 0x13, 0x00 };	/* 0x38:0x130000 */

	memcpy(ram + BOOT_GDT_ADDR + 0x38, &code32, sizeof(code32));
	memcpy(ram + IDT + 8 * vector, gate, sizeof(gate));
	sr->efer = 0;
	sr->cr0 &= ~(uint64_t)X86_CR0_PG;
	sr->cs.l = 0;
	sr->cs.db = 1;
	sr->cs.selector = 0x08;
	sr->ss.db = 1;
	sr->ss.limit = 0xffffffff;
	sr->idt.limit = 8 * NGATES - 1;
	sr->gdt.limit = 0x3f;
}

/*
 * A frame of three slots of `slot` bytes (4: a 32-bit gate's; 2: a 16-bit
 * gate's, real mode's) at guest-physical at: (E)IP, CS, (E)FLAGS.
 */
void assert_frame(unsigned slot, uint64_t at, uint32_t ip, uint32_t cs, uint32_t flags)
{
	const uint32_t want[3] = { ip, cs, flags };

	for (unsigned i = 0; i < 3; i++) {
		uint32_t w = 0;

		memcpy(&w, ram + at + slot * i, slot);
		assert_int_equal(w, want[i]);
	}
}
