/* SPDX-License-Identifier: MIT */
#include "boot.h"

#include <string.h>

static void put64(uint8_t *mem, uint64_t addr, uint64_t v)
{
	memcpy(mem + addr, &v, sizeof(v));
}

/* Where vCPU `cpu`'s boot_info and stack live. */
static uint64_t boot_cpu_region_base(uint64_t ram_size, unsigned cpu)
{
	return ram_size - (uint64_t)(cpu + 1) * BOOT_CPU_REGION_SIZE;
}

uint64_t boot_image_limit(uint64_t ram_size, unsigned cpus)
{
	uint64_t regions = (uint64_t)cpus * BOOT_CPU_REGION_SIZE;

	if (ram_size < BOOT_IMAGE_ADDR + regions)
		return BOOT_IMAGE_ADDR;
	return ram_size - regions;
}

void boot_build_page_tables(uint8_t *mem, uint64_t ram_size)
{
	const uint64_t flags = X86_PTE_P | X86_PTE_RW | X86_PTE_US;
	uint64_t pages = (ram_size + (2ull << 20) - 1) >> 21;
	uint64_t pds = (pages + 511) / 512;

	memset(mem + BOOT_PML4_ADDR, 0, 0x1000);
	memset(mem + BOOT_PDPT_ADDR, 0, 0x1000);
	memset(mem + BOOT_PD_ADDR, 0, (size_t)BOOT_PD_PAGES * 0x1000);
	put64(mem, BOOT_PML4_ADDR, BOOT_PDPT_ADDR | flags);
	for (uint64_t i = 0; i < pds; i++)
		put64(mem, BOOT_PDPT_ADDR + i * 8, (BOOT_PD_ADDR + i * 0x1000) | flags);
	for (uint64_t i = 0; i < pages; i++)
		put64(mem, BOOT_PD_ADDR + i * 8, (i << 21) | flags | X86_PTE_PS);
}

/* Descriptor fields as the SDM lays them out (vol. 3, 3.4.5). */
static uint64_t seg_desc(uint32_t base, uint32_t limit, unsigned type,
			 unsigned s, unsigned l, unsigned db, unsigned g)
{
	return (uint64_t)(limit & 0xffff) | ((uint64_t)(base & 0xffffff) << 16) |
	       ((uint64_t)type << 40) | ((uint64_t)s << 44) | (1ull << 47) |
	       ((uint64_t)((limit >> 16) & 0xf) << 48) | ((uint64_t)l << 53) |
	       ((uint64_t)db << 54) | ((uint64_t)g << 55) |
	       ((uint64_t)(base >> 24) << 56);
}

void boot_build_gdt(uint8_t *mem)
{
	memset(mem + BOOT_GDT_ADDR, 0, 0x800);
	put64(mem, BOOT_GDT_ADDR + BOOT_SEL_CODE64, seg_desc(0, 0xfffff, 0xb, 1, 1, 0, 1));
	put64(mem, BOOT_GDT_ADDR + BOOT_SEL_DATA, seg_desc(0, 0xfffff, 0x3, 1, 0, 1, 1));
	/* 16-byte system descriptor; the upper half holds base[63:32] = 0. */
	put64(mem, BOOT_GDT_ADDR + BOOT_SEL_TSS, seg_desc(BOOT_TSS_ADDR, 0x67, 0xb, 0, 0, 0, 0));
	put64(mem, BOOT_GDT_ADDR + BOOT_SEL_TSS + 8, 0);
	/* Past the limit a flat image's GDTR gives: only 32-bit entries use it. */
	put64(mem, BOOT_GDT_ADDR + BOOT_SEL_CODE32, seg_desc(0, 0xfffff, 0xb, 1, 0, 1, 1));
	memset(mem + BOOT_TSS_ADDR, 0, 0x68);
}

void boot_build_info(uint8_t *mem, const struct boot_layout *l, unsigned cpu)
{
	struct boot_info bi = {
		.magic = BOOT_INFO_MAGIC,
		.abi_version = BOOT_ABI_VERSION,
		.size = sizeof(struct boot_info),
		.cpu_index = cpu,
		.cpu_count = l->cpus,
		.ram_size = l->ram_size,
		.image_base = BOOT_IMAGE_ADDR,
		.image_size = l->image_size,
		.cpu_region_base = boot_cpu_region_base(l->ram_size, cpu),
		.cpu_region_size = BOOT_CPU_REGION_SIZE,
		.flags = l->flags,
	};

	if (l->cmdline)
		strncpy(bi.cmdline, l->cmdline, sizeof(bi.cmdline) - 1);
	memcpy(mem + BOOT_INFO_ADDR + (uint64_t)cpu * sizeof(bi), &bi, sizeof(bi));
}

void boot_setup_memory(uint8_t *mem, const struct boot_layout *l)
{
	boot_build_page_tables(mem, l->ram_size);
	boot_build_gdt(mem);
	/* A kernel has its own parameters (kernel.c) where boot_info would be. */
	if (l->machine == MACHINE_PC)
		return;
	for (unsigned cpu = 0; cpu < l->cpus; cpu++)
		boot_build_info(mem, l, cpu);
}

bool boot_vcpu_entered(const struct boot_layout *l, unsigned cpu)
{
	return l->machine == MACHINE_BARE || cpu == 0;
}

static void flat_segment(struct kvm_segment *seg, uint16_t sel, uint8_t type,
			 uint8_t l, uint8_t db)
{
	*seg = (struct kvm_segment){
		.base = 0, .limit = 0xffffffff, .selector = sel, .type = type,
		.present = 1, .dpl = 0, .db = db, .s = 1, .l = l, .g = 1,
	};
}

void boot_init_sregs(struct kvm_sregs *s)
{
	flat_segment(&s->cs, BOOT_SEL_CODE64, 0xb, 1, 0);
	flat_segment(&s->ds, BOOT_SEL_DATA, 0x3, 0, 1);
	s->es = s->fs = s->gs = s->ss = s->ds;
	/* VMX refuses to enter with an unusable TR, even in long mode. */
	s->tr = (struct kvm_segment){
		.base = BOOT_TSS_ADDR, .limit = 0x67, .selector = BOOT_SEL_TSS,
		.type = 0xb, .present = 1,
	};
	s->ldt = (struct kvm_segment){ .type = 0x2, .unusable = 1 };
	s->gdt.base = BOOT_GDT_ADDR;
	s->gdt.limit = BOOT_SEL_TSS + 16 - 1;
	/* No IDT: an exception before the guest loads its own is a triple fault. */
	s->idt.base = 0;
	s->idt.limit = 0;
	s->cr0 = X86_CR0_PE | X86_CR0_MP | X86_CR0_ET | X86_CR0_NE | X86_CR0_WP | X86_CR0_PG;
	s->cr3 = BOOT_PML4_ADDR;
	s->cr4 = X86_CR4_PAE | X86_CR4_OSFXSR | X86_CR4_OSXMMEXCPT;
	s->efer = X86_EFER_LME | X86_EFER_LMA;
}

void boot_init_sregs_prot32(struct kvm_sregs *s)
{
	boot_init_sregs(s);
	flat_segment(&s->cs, BOOT_SEL_CODE32, 0xb, 0, 1);
	s->gdt.limit = BOOT_SEL_CODE32 + 8 - 1;
	s->cr0 = X86_CR0_PE | X86_CR0_ET;
	s->cr3 = 0;
	s->cr4 = 0;
	s->efer = 0;
}

void boot_init_entry_sregs(struct kvm_sregs *s, const struct boot_layout *l)
{
	if (l->entry.mode == BOOT_ENTRY_PROT32)
		boot_init_sregs_prot32(s);
	else
		boot_init_sregs(s);
}

void boot_init_regs(struct kvm_regs *r, const struct boot_layout *l, unsigned cpu)
{
	if (l->entry.mode != BOOT_ENTRY_FLAT) {
		*r = (struct kvm_regs){
			.rflags = 0x2, .rip = l->entry.rip, .rsp = BOOT_PC_STACK_TOP,
			.rax = l->entry.rax, .rbx = l->entry.rbx, .rsi = l->entry.rsi,
		};
		return;
	}
	*r = (struct kvm_regs){
		.rflags = 0x2,
		.rip = BOOT_IMAGE_ADDR,
		.rsp = boot_cpu_region_base(l->ram_size, cpu) + BOOT_CPU_REGION_SIZE,
		.rdi = BOOT_INFO_ADDR + (uint64_t)cpu * sizeof(struct boot_info),
	};
}
