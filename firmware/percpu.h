/* SPDX-License-Identifier: MIT */
/*
 * Per-vCPU state, carved out of the vCPU's private region (see
 * docs/guest-runtime.md for the picture). The VMM starts RSP at the top of
 * the region, so the main stack is the top part and everything else sits
 * below it. Offsets are from boot_info.cpu_region_base.
 */
#ifndef FW_PERCPU_H
#define FW_PERCPU_H

#define PERCPU_CPU_OFF          0x0000 /* struct cpu + GDT + TSS, 4 KiB */
#define PERCPU_IDT_OFF          0x1000 /* 256 gates, 4 KiB */
#define PERCPU_DF_STACK_OFF     0x2000 /* IST1 for #DF, 8 KiB */
#define PERCPU_RSP0_STACK_OFF   0x4000 /* TSS.RSP0: entries from CPL3, 8 KiB */
#define PERCPU_USER_STACK_OFF   0x6000 /* run_user's CPL3 stack, 16 KiB */
#define PERCPU_MAIN_STACK_OFF   0xa000 /* initial RSP's stack, 24 KiB */
#define PERCPU_MIN_SIZE         0x10000

#define PERCPU_DF_STACK_TOP     PERCPU_RSP0_STACK_OFF
#define PERCPU_RSP0_STACK_TOP   PERCPU_USER_STACK_OFF
#define PERCPU_USER_STACK_TOP   PERCPU_MAIN_STACK_OFF

/* Selectors of the guest's own GDT (desc.c). */
#define SEL_KERNEL_CS   0x08
#define SEL_KERNEL_DS   0x10
#define SEL_USER_DS     0x1b /* 0x18 | RPL3 */
#define SEL_USER_CS     0x23 /* 0x20 | RPL3 */
#define SEL_TSS         0x28
#define GDT_ENTRIES     7    /* the TSS descriptor takes two */

/* struct cpu offsets that assembly (and %gs-relative C) use. */
#define CPU_SELF            0
#define CPU_EXC_VECTOR      8
#define CPU_EXC_ERROR       16
#define CPU_EXC_RIP         24
#define CPU_USER_SAVED_RSP  32
#define CPU_USER_STACK      40

#ifndef __ASSEMBLER__
#include <stdint.h>

#include "vmm_boot.h"

#define CON_BUF_SIZE 200

struct tss64 {
	uint32_t reserved0;
	uint64_t rsp[3];
	uint64_t reserved1;
	uint64_t ist[7];
	uint64_t reserved2;
	uint16_t reserved3;
	uint16_t iomap_base;
} __attribute__((packed));

struct cpu {
	struct cpu *self;
	int32_t exc_vector;          /* EXC_NONE or the vector ASM_TRY caught */
	uint32_t index;
	uint64_t exc_error_code;
	uint64_t exc_rip;            /* RIP of the instruction that faulted */
	uint64_t user_saved_rsp;     /* run_user's kernel RSP; 0 when not in it */
	uint64_t user_stack_top;
	const struct boot_info *boot;
	uint64_t region_base;
	uint64_t entry_rsp;          /* RSP the VMM started this vCPU with */
	uint64_t exc_rflags;         /* RFLAGS in the frame of the last ASM_TRY fault */
	uint32_t exc_depth;          /* nesting of unexpected exceptions */
	uint32_t con_len;
	char con_buf[CON_BUF_SIZE];  /* the current, unfinished console line */
	uint64_t gdt[GDT_ENTRIES] __attribute__((aligned(16)));
	struct tss64 tss __attribute__((aligned(16)));
};

_Static_assert(__builtin_offsetof(struct cpu, self) == CPU_SELF, "asm ABI");
_Static_assert(__builtin_offsetof(struct cpu, exc_vector) == CPU_EXC_VECTOR, "asm ABI");
_Static_assert(__builtin_offsetof(struct cpu, exc_error_code) == CPU_EXC_ERROR, "asm ABI");
_Static_assert(__builtin_offsetof(struct cpu, exc_rip) == CPU_EXC_RIP, "asm ABI");
_Static_assert(__builtin_offsetof(struct cpu, user_saved_rsp) == CPU_USER_SAVED_RSP, "asm ABI");
_Static_assert(__builtin_offsetof(struct cpu, user_stack_top) == CPU_USER_STACK, "asm ABI");
_Static_assert(sizeof(struct tss64) == 104, "TSS layout");
_Static_assert(sizeof(struct cpu) <= PERCPU_IDT_OFF - PERCPU_CPU_OFF, "struct cpu too big");

/*
 * GS base points at struct cpu and nothing ever changes it (no swapgs), so
 * this works at CPL3 too: the region is mapped user-accessible.
 */
static inline struct cpu *this_cpu(void)
{
	struct cpu *c;

	asm volatile("movq %%gs:%c1, %0" : "=r"(c) : "i"(CPU_SELF));
	return c;
}

static inline uint32_t cpu_index(void)
{
	return this_cpu()->index;
}

#endif /* __ASSEMBLER__ */
#endif
