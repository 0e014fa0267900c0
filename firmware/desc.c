/* SPDX-License-Identifier: MIT */
/*
 * Descriptor tables. Everything is per vCPU, IDT included: all vCPUs start
 * at the same instant, and a private IDT needs no "wait until the BSP has
 * built it" step before a vCPU can take its first exception.
 */
#include "fw_string.h"
#include "internal.h"
#include "processor.h"
#include "vmm_msr.h"
#include "x86.h"

#define IDT_VECTORS     256
#define GATE_INTERRUPT  0x8e  /* present, 64-bit interrupt gate, DPL0 */
#define DF_IST          1

struct idt_gate {
	uint16_t off0;
	uint16_t sel;
	uint8_t ist;
	uint8_t type;
	uint16_t off1;
	uint32_t off2;
	uint32_t zero;
};

struct dtr {
	uint16_t limit;
	uint64_t base;
} __attribute__((packed));

_Static_assert(sizeof(struct idt_gate) * IDT_VECTORS <=
	       PERCPU_DF_STACK_OFF - PERCPU_IDT_OFF, "IDT does not fit");

static void build_gdt(struct cpu *c)
{
	uint64_t tss = (uint64_t)&c->tss;

	c->gdt[0] = 0;
	c->gdt[1] = 0x00af9a000000ffffull; /* kernel code64 */
	c->gdt[2] = 0x00cf92000000ffffull; /* kernel data */
	c->gdt[3] = 0x00cff2000000ffffull; /* user data, DPL3 */
	c->gdt[4] = 0x00affa000000ffffull; /* user code64, DPL3 */
	/* Available 64-bit TSS; the second slot holds base[63:32]. */
	c->gdt[5] = (sizeof(c->tss) - 1) | ((tss & 0xffffff) << 16) |
		    (0x89ull << 40) | (((tss >> 24) & 0xff) << 56);
	c->gdt[6] = tss >> 32;
}

static void build_tss(struct cpu *c)
{
	c->tss.rsp[0] = c->region_base + PERCPU_RSP0_STACK_TOP;
	c->tss.ist[DF_IST - 1] = c->region_base + PERCPU_DF_STACK_TOP;
	/* Beyond the limit: no I/O bitmap, so OUT at CPL3 is always #GP. */
	c->tss.iomap_base = sizeof(c->tss);
}

static void load_gdt(struct cpu *c)
{
	struct dtr gdtr = { sizeof(c->gdt) - 1, (uint64_t)c->gdt };

	asm volatile("lgdt %0" : : "m"(gdtr) : "memory");
	/*
	 * CS only changes through a far transfer. DS/ES/FS/GS are left null:
	 * 64-bit mode ignores them, and IRET to CPL3 would null a DPL0 one
	 * anyway. Loading GS zeroes GS base, so it is set afterwards.
	 */
	asm volatile("pushq %[cs]\n\t"
		     "leaq 1f(%%rip), %%rax\n\t"
		     "pushq %%rax\n\t"
		     "lretq\n"
		     "1:\n\t"
		     "movl %[ds], %%eax\n\t"
		     "movl %%eax, %%ss\n\t"
		     "xorl %%eax, %%eax\n\t"
		     "movl %%eax, %%ds\n\t"
		     "movl %%eax, %%es\n\t"
		     "movl %%eax, %%fs\n\t"
		     "movl %%eax, %%gs\n\t"
		     : : [cs] "i"(SEL_KERNEL_CS), [ds] "i"(SEL_KERNEL_DS)
		     : "rax", "memory");
	asm volatile("ltr %w0" : : "r"(SEL_TSS) : "memory");
	wrmsr(MSR_GS_BASE, (uint64_t)c);
}

static void set_gate(struct idt_gate *idt, unsigned vec, uint64_t handler,
		     unsigned ist)
{
	idt[vec] = (struct idt_gate){
		.off0 = (uint16_t)handler,
		.sel = SEL_KERNEL_CS,
		.ist = (uint8_t)ist,
		.type = GATE_INTERRUPT,
		.off1 = (uint16_t)(handler >> 16),
		.off2 = (uint32_t)(handler >> 32),
	};
}

static void load_idt(struct cpu *c)
{
	struct idt_gate *idt = (struct idt_gate *)(c->region_base + PERCPU_IDT_OFF);
	struct dtr idtr = { sizeof(*idt) * IDT_VECTORS - 1, (uint64_t)idt };

	memset(idt, 0, sizeof(*idt) * IDT_VECTORS);
	for (unsigned v = 0; v < 32; v++)
		set_gate(idt, v, fw_exc_stubs[v], v == X86_VEC_DF ? DF_IST : 0);
	asm volatile("lidt %0" : : "m"(idtr) : "memory");
}

void desc_init(struct cpu *c)
{
	build_gdt(c);
	build_tss(c);
	load_gdt(c);
	load_idt(c);
}
