/* SPDX-License-Identifier: MIT */
/* Page tables, GDT, boot_info and registers, built on a plain buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "boot.h"
#include "array_size.h"

static uint64_t get64(const uint8_t *mem, uint64_t addr)
{
	uint64_t v;

	memcpy(&v, mem + addr, sizeof(v));
	return v;
}

/* Walks the tables the way the MMU does, for a 2 MiB-page identity map. */
static int translate(const uint8_t *mem, uint64_t cr3, uint64_t va, uint64_t *pa)
{
	uint64_t e = get64(mem, cr3 + ((va >> 39) & 511) * 8);

	if (!(e & X86_PTE_P) || !(e & X86_PTE_US) || !(e & X86_PTE_RW))
		return -1;
	e = get64(mem, (e & ~0xfffull) + ((va >> 30) & 511) * 8);
	if (!(e & X86_PTE_P))
		return -1;
	e = get64(mem, (e & ~0xfffull) + ((va >> 21) & 511) * 8);
	if (!(e & X86_PTE_P) || !(e & X86_PTE_PS) || !(e & X86_PTE_US))
		return -1;
	*pa = (e & ~0x1fffffull & ((1ull << 52) - 1)) | (va & 0x1fffff);
	return 0;
}

static void identity_map(void **state)
{
	static const uint64_t sizes[] = { 4ull << 20, 64ull << 20, 1ull << 30,
					  (3ull << 30) + (6ull << 20), 4ull << 30 };

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		uint8_t *mem = calloc(1, 0x10000);
		uint64_t pa;

		assert_non_null(mem);
		memset(mem + BOOT_PD_ADDR, 0xaa, 0x1000);	/* must be cleared */
		boot_build_page_tables(mem, sizes[i]);
		for (uint64_t va = 0; va < sizes[i]; va += 0x1ff000) {
			assert_int_equal(translate(mem, BOOT_PML4_ADDR, va, &pa), 0);
			assert_int_equal(pa, va);
		}
		assert_int_equal(translate(mem, BOOT_PML4_ADDR, sizes[i] - 1, &pa), 0);
		assert_int_equal(pa, sizes[i] - 1);
		/* No PDPT entry past the GiBs RAM needs (one would point past the PDs). */
		for (uint64_t e = (sizes[i] + (1ull << 30) - 1) >> 30; e < 512; e++)
			assert_int_equal(get64(mem, BOOT_PDPT_ADDR + e * 8), 0);
		/* Nothing above RAM is mapped (up to the 4 GiB the PDs cover). */
		if (sizes[i] < (4ull << 30))
			assert_int_equal(translate(mem, BOOT_PML4_ADDR,
						   (sizes[i] + (2 << 20) - 1) & ~0x1fffffull, &pa), -1);
		assert_int_equal(translate(mem, BOOT_PML4_ADDR, 4ull << 30, &pa), -1);
		free(mem);
	}
}

static void gdt_descriptors(void **state)
{
	uint8_t *mem = calloc(1, 0x10000);
	uint64_t code, data, tss;

	(void)state;
	boot_build_gdt(mem);
	assert_int_equal(get64(mem, BOOT_GDT_ADDR), 0);
	code = get64(mem, BOOT_GDT_ADDR + BOOT_SEL_CODE64);
	data = get64(mem, BOOT_GDT_ADDR + BOOT_SEL_DATA);
	tss = get64(mem, BOOT_GDT_ADDR + BOOT_SEL_TSS);
	/* Present, DPL0, code execute/read accessed, L=1, D=0, G=1. */
	assert_int_equal((code >> 40) & 0xff, 0x9b);
	assert_int_equal((code >> 52) & 0xf, 0xa);
	/* Present, DPL0, data read/write accessed, D/B=1, G=1. */
	assert_int_equal((data >> 40) & 0xff, 0x93);
	assert_int_equal((data >> 52) & 0xf, 0xc);
	/* Busy 64-bit TSS at BOOT_TSS_ADDR, limit 0x67, upper half zero. */
	assert_int_equal((tss >> 40) & 0xff, 0x8b);
	assert_int_equal(tss & 0xffff, 0x67);
	assert_int_equal(((tss >> 16) & 0xffffff) | ((tss >> 56) << 24), BOOT_TSS_ADDR);
	assert_int_equal(get64(mem, BOOT_GDT_ADDR + BOOT_SEL_TSS + 8), 0);
	free(mem);
}

static void info_blocks(void **state)
{
	struct boot_layout l = { .ram_size = 64ull << 20, .cpus = 3,
				 .image_size = 12345, .cmdline = "mode=x" };
	uint8_t *mem = calloc(1, 0x20000);
	struct boot_info bi;

	(void)state;
	for (unsigned cpu = 0; cpu < l.cpus; cpu++)
		boot_build_info(mem, &l, cpu);
	for (unsigned cpu = 0; cpu < l.cpus; cpu++) {
		memcpy(&bi, mem + BOOT_INFO_ADDR + cpu * sizeof(bi), sizeof(bi));
		assert_int_equal(bi.magic, BOOT_INFO_MAGIC);
		assert_int_equal(bi.abi_version, BOOT_ABI_VERSION);
		assert_int_equal(bi.size, sizeof(bi));
		assert_int_equal(bi.cpu_index, cpu);
		assert_int_equal(bi.cpu_count, 3);
		assert_int_equal(bi.ram_size, 64ull << 20);
		assert_int_equal(bi.image_base, BOOT_IMAGE_ADDR);
		assert_int_equal(bi.image_size, 12345);
		assert_int_equal(bi.cpu_region_size, BOOT_CPU_REGION_SIZE);
		assert_int_equal(bi.cpu_region_base,
				 (64ull << 20) - (cpu + 1) * BOOT_CPU_REGION_SIZE);
		assert_string_equal(bi.cmdline, "mode=x");
	}
	free(mem);
}

static void registers(void **state)
{
	struct boot_layout l = { .ram_size = 16ull << 20, .cpus = 2 };
	struct kvm_sregs s;
	struct kvm_regs r;

	(void)state;
	memset(&s, 0x5a, sizeof(s));
	boot_init_sregs(&s);
	assert_true(s.cr0 & X86_CR0_PG);
	assert_true(s.cr0 & X86_CR0_PE);
	assert_false(s.cr0 & X86_CR0_AM);	/* alignment checking is the guest's call */
	assert_true(s.cr4 & X86_CR4_PAE);
	assert_int_equal(s.efer & (X86_EFER_LME | X86_EFER_LMA), X86_EFER_LME | X86_EFER_LMA);
	assert_int_equal(s.cr3, BOOT_PML4_ADDR);
	assert_int_equal(s.cs.l, 1);
	assert_int_equal(s.cs.db, 0);
	assert_int_equal(s.cs.dpl, 0);
	assert_int_equal(s.cs.selector, BOOT_SEL_CODE64);
	assert_int_equal(s.ss.selector, BOOT_SEL_DATA);
	assert_int_equal(s.tr.type, 0xb);
	assert_int_equal(s.idt.limit, 0);
	assert_int_equal(s.ldt.unusable, 1);
	/* The GDT ends with the TSS's 16-byte descriptor: its limit is the last byte's offset. */
	assert_int_equal(s.gdt.base, BOOT_GDT_ADDR);
	assert_int_equal(s.gdt.limit, BOOT_SEL_TSS + 15);

	boot_init_regs(&r, &l, 1);
	assert_int_equal(r.rip, BOOT_IMAGE_ADDR);
	assert_int_equal(r.rdi, BOOT_INFO_ADDR + sizeof(struct boot_info));
	assert_int_equal(r.rsp, (16ull << 20) - BOOT_CPU_REGION_SIZE);
	assert_int_equal(r.rflags, 0x2);
}

/* Kernels' entry states: Linux's 64-bit entry and 32-bit protected mode. */
static void kernel_entries(void **state)
{
	struct boot_layout l = { .ram_size = 16ull << 20, .cpus = 2, .machine = MACHINE_PC,
				 .entry = { BOOT_ENTRY_PROT32, 0x100020, 0x2badb002, 0x10000, 0 } };
	uint8_t *mem = calloc(1, 16ull << 20);
	struct kvm_sregs s;
	struct kvm_regs r;
	uint64_t d;

	(void)state;
	memset(&s, 0x5a, sizeof(s));
	boot_init_entry_sregs(&s, &l);
	assert_int_equal(s.cr0, X86_CR0_PE | X86_CR0_ET);	/* paging off */
	assert_int_equal(s.cr4, 0);
	assert_int_equal(s.efer, 0);
	assert_int_equal(s.cs.selector, BOOT_SEL_CODE32);
	assert_true(s.cs.db == 1 && s.cs.l == 0 && s.cs.base == 0 && s.cs.limit == 0xffffffff);
	assert_true(s.ds.selector == BOOT_SEL_DATA && s.ss.db == 1 && s.ds.limit == 0xffffffff);
	assert_int_equal(s.gdt.limit, BOOT_SEL_CODE32 + 7);
	/* The descriptor behind CS 0x28 says the same as the cached one. */
	boot_setup_memory(mem, &l);
	memcpy(&d, mem + BOOT_GDT_ADDR + BOOT_SEL_CODE32, 8);
	assert_int_equal(d, 0x00cf9b000000ffffull);
	/* No boot_info for a kernel: its parameters live there. */
	assert_int_equal(mem[BOOT_INFO_ADDR], 0);
	boot_init_regs(&r, &l, 0);
	assert_true(r.rip == 0x100020 && r.rax == 0x2badb002 && r.rbx == 0x10000 && r.rflags == 2);
	l.entry = (struct boot_entry){ BOOT_ENTRY_LONG, 0x1000000, 0, 0, 0x10000 };
	boot_init_entry_sregs(&s, &l);
	assert_int_equal(s.efer & (X86_EFER_LME | X86_EFER_LMA), X86_EFER_LME | X86_EFER_LMA);
	assert_int_equal(s.cs.selector, BOOT_SEL_CODE64);
	boot_init_regs(&r, &l, 0);
	assert_true(r.rip == 0x1000000 && r.rsi == 0x10000 && r.rsp == BOOT_PC_STACK_TOP);
	/* Only vCPU 0 of a kernel is entered; every vCPU of a flat image. */
	assert_true(boot_vcpu_entered(&l, 0));
	assert_false(boot_vcpu_entered(&l, 1));
	l.machine = MACHINE_BARE;
	assert_true(boot_vcpu_entered(&l, 1));
	free(mem);
}

static void image_limit(void **state)
{
	(void)state;
	assert_int_equal(boot_image_limit(4ull << 20, 1), (4ull << 20) - BOOT_CPU_REGION_SIZE);
	assert_int_equal(boot_image_limit(4ull << 20, 16), (4ull << 20) - 16 * BOOT_CPU_REGION_SIZE);
	assert_int_equal(boot_image_limit(4ull << 20, 256), BOOT_IMAGE_ADDR);
	/* RAM too small for the regions: no room for any image at all. */
	assert_int_equal(boot_image_limit(2ull << 20, 256), BOOT_IMAGE_ADDR);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(identity_map),
		cmocka_unit_test(gdt_descriptors),
		cmocka_unit_test(info_blocks),
		cmocka_unit_test(registers),
		cmocka_unit_test(kernel_entries),
		cmocka_unit_test(image_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
