/* SPDX-License-Identifier: MIT */
/*
 * The fixture of the stepping engine's unit tests (test_stepping*.c): a VM
 * on the fake KVM set up as vcpu_create() does under emulate, and the
 * exits a KVM would give, one entry at a time.
 */
#ifndef VMM_TEST_STEPPING_FIXTURE_H
#define VMM_TEST_STEPPING_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture.h"
#include "fake_kvm.h"

#define RAM      (4ull << 20)
#define CODE     0x101000ull
#define IDT      0x60000ull
#define NGATES   32u
#define STACK    0x180000ull
#define HANDLER(vector) (0x120000ull + (vector) * 0x100ull)
/* DR6 as a step exit reports it: the active-low bits set, BS. */
#define DR6_STEP (X86_DR6_ACTIVE_LOW | X86_DR6_BS)

extern struct fake_vm fv;
extern uint8_t *ram;

/* A VM of ncpus vCPUs at CODE, CPL0 in long mode; the cmocka setups below wrap it. */
int setup_vm(bool hwbp, unsigned ncpus);
int setup_hwbp(void **state);
int setup_no_hwbp(void **state);
int setup_hwbp_2cpus(void **state);
int setup_no_hwbp_2cpus(void **state);
int teardown(void **state);

/* The run page's registers; the exits a KVM would give (stepping_fixture.c says which). */
struct kvm_regs *regs(struct vcpu *v);
void exit_with(struct vcpu *v, uint32_t reason);
void step_to_la(struct vcpu *v, uint64_t rip, uint64_t la, uint64_t dr6);
void step_to(struct vcpu *v, uint64_t rip, uint64_t dr6);
void step_to_emulated(struct vcpu *v, uint64_t rip);
uint64_t word_at(uint64_t gpa);
/* CPL3 code at CODE on the stack at STACK, RSP0 of the TSS at RSP0. */
#define RSP0 0x1c0000ull
void to_cpl3(struct vcpu *v);
void test_ctrl_reserved_write(struct vcpu *v);
void faulted_to_ud_handler(struct vcpu *v, uint64_t frame);
uint64_t pde_ad(unsigned i);
void clear_pde_ad(void);
void syscall_msrs(struct fake_vcpu *fc, uint64_t fmask);
void assert_stopped_saying(struct capture *c, const char *what);
struct vcpu *xbegin_at_code(bool rtm, uint64_t rflags);
void flat32_gate(struct vcpu *v, unsigned vector);
void assert_frame(unsigned slot, uint64_t at, uint32_t ip, uint32_t cs, uint32_t flags);

#endif
