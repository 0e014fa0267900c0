/* SPDX-License-Identifier: MIT */
#include "except.h"

#include "atomic.h"
#include "console.h"
#include "fw.h"
#include "internal.h"
#include "processor.h"
#include "vmm_status.h"

struct ex_entry {
	uint64_t insn;
	uint64_t fixup;
};

extern const struct ex_entry __start_ex_table[], __stop_ex_table[];

static const char *const mnemonics[32] = {
	"#DE", "#DB", "NMI", "#BP", "#OF", "#BR", "#UD", "#NM",
	"#DF", "CSO", "#TS", "#NP", "#SS", "#GP", "#PF", "vector 15",
	"#MF", "#AC", "#MC", "#XM", "#VE", "#CP", "vector 22", "vector 23",
	"vector 24", "vector 25", "vector 26", "vector 27", "#HV", "#VC", "#SX",
	"vector 31",
};

const char *exception_mnemonic(unsigned vector)
{
	return vector < 32 ? mnemonics[vector] : "vector";
}

static uint64_t ex_table_fixup(uint64_t rip)
{
	for (const struct ex_entry *e = __start_ex_table; e < __stop_ex_table; e++)
		if (e->insn == rip)
			return e->fixup;
	return 0;
}

static void dump_regs(const struct ex_regs *r)
{
	printf("# rax=%016lx rbx=%016lx rcx=%016lx rdx=%016lx\n",
	       r->rax, r->rbx, r->rcx, r->rdx);
	printf("# rsi=%016lx rdi=%016lx rbp=%016lx rsp=%016lx\n",
	       r->rsi, r->rdi, r->rbp, r->rsp);
	printf("# r8 =%016lx r9 =%016lx r10=%016lx r11=%016lx\n",
	       r->r8, r->r9, r->r10, r->r11);
	printf("# r12=%016lx r13=%016lx r14=%016lx r15=%016lx\n",
	       r->r12, r->r13, r->r14, r->r15);
	printf("# cs=%04lx ss=%04lx rflags=%08lx cr0=%08lx cr2=%016lx cr4=%08lx\n",
	       r->cs, r->ss, r->rflags, read_cr0(), read_cr2(), read_cr4());
}

static __attribute__((noreturn)) void unexpected(const struct ex_regs *r)
{
	struct cpu *c = this_cpu();

	/* The report itself faulted: say so with as little code as possible. */
	if (atomic_fetch_add(&c->exc_depth, 1) != 0) {
		console_write_raw("Bail out! exception while reporting an exception\n");
		guest_exit(GUEST_STATUS_FAIL);
	}
	console_end_line();
	printf("Bail out! unexpected exception %s (vector %lu) error 0x%lx at RIP 0x%lx on cpu %u\n",
	       exception_mnemonic(r->vector), r->vector, r->error_code, r->rip,
	       c->index);
	dump_regs(r);
	guest_exit(GUEST_STATUS_FAIL);
}

/* The ud2s in entry.S through which CPL1-3 code asks CPL0 for something. */
static bool user_request(struct ex_regs *r)
{
	if (r->vector != X86_VEC_UD || !(r->cs & 3))
		return false;
	if (r->rip == (uint64_t)fw_user_return_insn && this_cpu()->user_saved_rsp)
		fw_user_return(r->rax);
	if (r->rip == (uint64_t)fw_console_insn) {
		outsb(PORT_COM1, (const void *)r->rsi, r->rcx);
		r->rip += 2;
		return true;
	}
	return false;
}

/* Called by exc_common in entry.S with the interrupted context in *regs. */
void fw_exception(struct ex_regs *regs)
{
	struct cpu *c = this_cpu();
	uint64_t fixup = 0;

	if (user_request(regs))
		return;
	/* #DF's RIP is not that of a faulting instruction: never fix it up. */
	if (regs->vector != X86_VEC_DF)
		fixup = ex_table_fixup(regs->rip);
	if (!fixup)
		unexpected(regs);
	c->exc_vector = (int32_t)regs->vector;
	c->exc_error_code = regs->error_code;
	c->exc_rip = regs->rip;
	c->exc_rflags = regs->rflags;
	regs->rip = fixup;
}

int rdmsr_safe(uint32_t msr, uint64_t *val)
{
	uint32_t lo = 0, hi = 0;
	int vec;

	asm volatile(ASM_TRY("1f") "rdmsr\n\t" "1:"
		     : "+a"(lo), "+d"(hi) : "c"(msr) : "memory");
	vec = exception_vector();
	*val = vec == EXC_NONE ? (lo | ((uint64_t)hi << 32)) : 0;
	return vec;
}

int wrmsr_safe(uint32_t msr, uint64_t val)
{
	asm volatile(ASM_TRY("1f") "wrmsr\n\t" "1:"
		     : : "c"(msr), "a"((uint32_t)val), "d"((uint32_t)(val >> 32))
		     : "memory");
	return exception_vector();
}

int write_cr4_safe(uint64_t val)
{
	asm volatile(ASM_TRY("1f") "mov %0, %%cr4\n\t" "1:" : : "r"(val) : "memory");
	return exception_vector();
}

int try_ud2(void)
{
	asm volatile(ASM_TRY("1f") "ud2\n\t" "1:" ::: "memory");
	return exception_vector();
}

int try_div0(void)
{
	uint32_t lo = 1, hi = 0, zero = 0;

	asm volatile(ASM_TRY("1f") "divl %2\n\t" "1:"
		     : "+a"(lo), "+d"(hi) : "r"(zero) : "memory");
	return exception_vector();
}
