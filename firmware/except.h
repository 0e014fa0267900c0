/* SPDX-License-Identifier: MIT */
/*
 * Exception table: ASM_TRY(fixup) marks the instruction that follows it as
 * allowed to fault. If it does, the exception handler records vector, error
 * code and RIP in this CPU's struct cpu and resumes at the fixup label, at the
 * CPL the fault happened at. Works at CPL0 and inside run_user() and run_ring().
 *
 *	asm volatile(ASM_TRY("1f") "ud2\n\t" "1:" ::: "memory");
 *	if (exception_vector() == X86_VEC_UD) ...
 *
 * Use extended asm (at least one ':'), since the macro writes "%%gs".
 * Only faults (RIP = the instruction) can match; traps such as #DB or #BP
 * report the next RIP and are not caught.
 */
#ifndef FW_EXCEPT_H
#define FW_EXCEPT_H

#include <stdint.h>

#include "percpu.h"
#include "vmm_msr.h"
#include "x86.h"

/* exception_vector() when the ASM_TRY instruction did not fault. */
#define EXC_NONE (-1)

#define FW_STR_(x) #x
#define FW_STR(x) FW_STR_(x)

#define ASM_TRY(fixup)                                          \
	"movl $-1, %%gs:" FW_STR(CPU_EXC_VECTOR) "\n\t"         \
	".pushsection .ex_table, \"a\"\n\t"                     \
	".balign 8\n\t"                                         \
	".quad 1111f, " fixup "\n\t"                            \
	".popsection\n\t"                                       \
	"1111: "

/* Results of the last ASM_TRY on this CPU. */
static inline int exception_vector(void)
{
	int v;

	asm volatile("movl %%gs:%c1, %0" : "=r"(v) : "i"(CPU_EXC_VECTOR) : "memory");
	return v;
}

static inline uint64_t exception_error_code(void)
{
	uint64_t v;

	asm volatile("movq %%gs:%c1, %0" : "=r"(v) : "i"(CPU_EXC_ERROR) : "memory");
	return v;
}

static inline uint64_t exception_rip(void)
{
	uint64_t v;

	asm volatile("movq %%gs:%c1, %0" : "=r"(v) : "i"(CPU_EXC_RIP) : "memory");
	return v;
}

/* RFLAGS as the CPU pushed them for the last ASM_TRY fault (RF, TF: SDM vol. 3 17.3.1.1). */
static inline uint64_t exception_rflags(void)
{
	return this_cpu()->exc_rflags;
}

/*
 * Each returns EXC_NONE if the instruction completed, else the vector.
 * rdmsr_safe stores 0 to *val on a fault. All work at CPL3 too (and then
 * report #GP, as RDMSR/WRMSR are CPL0-only).
 */
int rdmsr_safe(uint32_t msr, uint64_t *val);
int wrmsr_safe(uint32_t msr, uint64_t val);
int write_cr4_safe(uint64_t val);
int try_ud2(void);
int try_div0(void);

/* "#GP" etc. for vectors 0-31, "vector" otherwise. */
const char *exception_mnemonic(unsigned vector);

/* Register frame the exception stubs in entry.S build, lowest address first. */
struct ex_regs {
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
	uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t vector, error_code;
	uint64_t rip, cs, rflags, rsp, ss;
};

void fw_exception(struct ex_regs *regs);

#endif
