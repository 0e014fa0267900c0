/* SPDX-License-Identifier: MIT */
/*
 * The boot builders, checked by walking what they built the way the MMU
 * does.
 *
 * Input: u64 RAM size (made a whole number of KiB within
 * VMM_MIN_RAM..VMM_MAX_RAM, as the CLI guarantees; flag bit 0 rounds it to
 * MiB), u8 cpus - 1, u64 image size, u8 flags, a NUL-terminated command
 * line (any length: the builder must truncate), then virtual addresses
 * (u64 each, at most 64) to translate, besides the edges of RAM.
 * "RAM" is a buffer of BOOT_IMAGE_ADDR bytes: everything the builders write
 * must stay below the image, and ASan catches anything past it.
 *
 * Oracles:
 *  - the 4-level walk of each address: below RAM it is present, writable,
 *    user, 2 MiB, not NX, and maps to itself; from RAM rounded up to 2 MiB
 *    on it is not present; no entry has reserved bits set, and every table
 *    lies inside the VMM's first 1 MiB;
 *  - the GDT holds the flat 64-bit code, data and TSS descriptors that
 *    boot_init_sregs loads, and the sregs are long mode with paging;
 *  - each vCPU's boot_info is complete and right (cmdline truncated to
 *    BOOT_CMDLINE_MAX - 1 and NUL-padded), and its registers point at it
 *    with a 16-byte-aligned stack at the top of its region; where the
 *    layout is one the loader accepts, the regions lie above the image;
 *  - no byte outside the GDT, TSS, page tables and boot_info array changed.
 */
#include <inttypes.h>

#include "fuzz.h"

#include "boot.h"
#include "loader.h"
#include "vmm_boot.h"
#include "array_size.h"

#define PATTERN 0x5a
#define MEM_SIZE BOOT_IMAGE_ADDR
#define MAX_ADDRS 64

static uint8_t *mem;

static uint64_t get64(uint64_t addr)
{
	uint64_t v;

	FUZZ_CHECK(addr + 8 <= MEM_SIZE, "table entry at 0x%" PRIx64 " outside the VMM's 1 MiB", addr);
	memcpy(&v, mem + addr, sizeof(v));
	return v;
}

/* Bits 51:32 of an address in an entry must be 0 (RAM ends at 4 GiB), 62:52 are ignored
 * by hardware but vmm has no use for them, 63 is NX. */
static void check_entry(uint64_t e, const char *level, uint64_t va)
{
	FUZZ_CHECK(!(e & (1ull << 63)), "%s entry for 0x%" PRIx64 " is NX", level, va);
	FUZZ_CHECK(!(e & 0x7ff0000000000000ull), "%s entry for 0x%" PRIx64 " has bits 62:52: 0x%" PRIx64,
		   level, va, e);
	FUZZ_CHECK((e & 0x000fffff00000000ull) == 0, "%s entry for 0x%" PRIx64 " points above 4 GiB: 0x%" PRIx64,
		   level, va, e);
}

/* 0 and *pa for a present translation (checked on the way); -1 when not present. */
static int walk(uint64_t cr3, uint64_t va, uint64_t *pa)
{
	uint64_t e;

	FUZZ_CHECK((cr3 & 0xfff) == 0, "CR3 0x%" PRIx64 " is not page-aligned", cr3);
	e = get64(cr3 + ((va >> 39) & 511) * 8);
	if (!(e & X86_PTE_P))
		return -1;
	check_entry(e, "PML4", va);
	FUZZ_CHECK((e & (X86_PTE_RW | X86_PTE_US)) == (X86_PTE_RW | X86_PTE_US) && !(e & X86_PTE_PS),
		   "PML4 entry 0x%" PRIx64, e);
	e = get64((e & 0xffffffffff000ull) + ((va >> 30) & 511) * 8);
	if (!(e & X86_PTE_P))
		return -1;
	check_entry(e, "PDPT", va);
	FUZZ_CHECK((e & (X86_PTE_RW | X86_PTE_US)) == (X86_PTE_RW | X86_PTE_US) && !(e & X86_PTE_PS),
		   "PDPT entry 0x%" PRIx64 " (1 GiB pages are not used)", e);
	e = get64((e & 0xffffffffff000ull) + ((va >> 21) & 511) * 8);
	if (!(e & X86_PTE_P))
		return -1;
	check_entry(e, "PD", va);
	FUZZ_CHECK((e & (X86_PTE_RW | X86_PTE_US | X86_PTE_PS)) == (X86_PTE_RW | X86_PTE_US | X86_PTE_PS),
		   "PD entry 0x%" PRIx64 " for 0x%" PRIx64 " is not a writable user 2 MiB page", e, va);
	FUZZ_CHECK((e & 0x1fe000) == 0, "2 MiB PD entry 0x%" PRIx64 " has reserved bits 20:13", e);
	*pa = (e & 0xfffffffe00000ull) | (va & 0x1fffff);
	return 0;
}

static void check_address(uint64_t va, uint64_t ram_size)
{
	uint64_t mapped = (ram_size + 0x1fffff) & ~0x1fffffull, pa = 0;
	int r;

	/* Non-canonical addresses never reach the tables. */
	if (va >= (1ull << 47) && va < 0xffff800000000000ull)
		return;
	r = walk(BOOT_PML4_ADDR, va, &pa);
	if (va < ram_size)
		FUZZ_CHECK(r == 0 && pa == va, "RAM address 0x%" PRIx64 " maps to %d/0x%" PRIx64
			   " (RAM 0x%" PRIx64 ")", va, r, pa, ram_size);
	else if (va >= mapped)
		FUZZ_CHECK(r != 0, "0x%" PRIx64 " beyond RAM 0x%" PRIx64 " is mapped to 0x%" PRIx64,
			   va, ram_size, pa);
	else
		FUZZ_CHECK(r == 0 && pa == va, "0x%" PRIx64 " in the last 2 MiB page maps to 0x%" PRIx64,
			   va, pa);
}

static void check_desc(unsigned sel, unsigned type, unsigned s, unsigned l, unsigned db,
		       uint32_t base, uint32_t limit, unsigned g)
{
	uint64_t d = get64(BOOT_GDT_ADDR + sel);
	uint32_t d_base = (uint32_t)(((d >> 16) & 0xffffff) | ((d >> 56) << 24));
	uint32_t d_limit = (uint32_t)((d & 0xffff) | ((d >> 48) & 0xf) << 16);

	FUZZ_CHECK(((d >> 40) & 0xf) == type && ((d >> 44) & 1) == s && ((d >> 45) & 3) == 0 &&
		   ((d >> 47) & 1) == 1 && ((d >> 53) & 1) == l && ((d >> 54) & 1) == db &&
		   ((d >> 55) & 1) == g && d_base == base && d_limit == limit,
		   "GDT descriptor 0x%x = 0x%016" PRIx64, sel, d);
}

static void check_gdt_sregs(void)
{
	struct kvm_sregs s;

	FUZZ_CHECK(get64(BOOT_GDT_ADDR) == 0, "GDT null descriptor");
	check_desc(BOOT_SEL_CODE64, 0xb, 1, 1, 0, 0, 0xfffff, 1);
	check_desc(BOOT_SEL_DATA, 0x3, 1, 0, 1, 0, 0xfffff, 1);
	check_desc(BOOT_SEL_TSS, 0xb, 0, 0, 0, BOOT_TSS_ADDR, 0x67, 0);
	FUZZ_CHECK(get64(BOOT_GDT_ADDR + BOOT_SEL_TSS + 8) == 0, "TSS base[63:32]");

	memset(&s, 0, sizeof(s));
	boot_init_sregs(&s);
	FUZZ_CHECK(s.cs.selector == BOOT_SEL_CODE64 && s.cs.l == 1 && s.cs.db == 0 &&
		   s.cs.present && s.cs.dpl == 0, "CS");
	FUZZ_CHECK(s.ds.selector == BOOT_SEL_DATA && s.ss.selector == BOOT_SEL_DATA, "DS/SS");
	FUZZ_CHECK(s.tr.selector == BOOT_SEL_TSS && s.tr.base == BOOT_TSS_ADDR, "TR");
	FUZZ_CHECK(s.gdt.base == BOOT_GDT_ADDR && s.gdt.limit >= BOOT_SEL_TSS + 15, "GDTR");
	FUZZ_CHECK(s.cr3 == BOOT_PML4_ADDR, "CR3");
	FUZZ_CHECK((s.cr0 & (X86_CR0_PE | X86_CR0_PG)) == (X86_CR0_PE | X86_CR0_PG), "CR0");
	FUZZ_CHECK(s.cr4 & X86_CR4_PAE, "CR4.PAE");
	FUZZ_CHECK((s.efer & (X86_EFER_LME | X86_EFER_LMA)) == (X86_EFER_LME | X86_EFER_LMA), "EFER");
}

static void check_info(const struct boot_layout *l, unsigned cpu, bool valid_layout)
{
	struct boot_info bi;
	struct kvm_regs r;
	uint64_t info_addr = BOOT_INFO_ADDR + (uint64_t)cpu * sizeof(bi);
	size_t cmdlen = l->cmdline ? strlen(l->cmdline) : 0;

	if (cmdlen > BOOT_CMDLINE_MAX - 1)
		cmdlen = BOOT_CMDLINE_MAX - 1;
	FUZZ_CHECK(info_addr + sizeof(bi) <= BOOT_IMAGE_ADDR, "boot_info %u overlaps the image", cpu);
	memcpy(&bi, mem + info_addr, sizeof(bi));
	FUZZ_CHECK(bi.magic == BOOT_INFO_MAGIC && bi.abi_version == BOOT_ABI_VERSION &&
		   bi.size == sizeof(bi), "boot_info %u header", cpu);
	FUZZ_CHECK(bi.cpu_index == cpu && bi.cpu_count == l->cpus, "boot_info %u: cpu %u of %u",
		   cpu, bi.cpu_index, bi.cpu_count);
	FUZZ_CHECK(bi.ram_size == l->ram_size && bi.image_base == BOOT_IMAGE_ADDR &&
		   bi.image_size == l->image_size, "boot_info %u sizes", cpu);
	FUZZ_CHECK(bi.cpu_region_size == BOOT_CPU_REGION_SIZE &&
		   bi.cpu_region_base == l->ram_size - (uint64_t)(cpu + 1) * BOOT_CPU_REGION_SIZE,
		   "boot_info %u region 0x%" PRIx64, cpu, bi.cpu_region_base);
	FUZZ_CHECK(bi.flags == 0 && bi.reserved0 == 0, "boot_info %u flags", cpu);
	for (size_t i = 0; i < ARRAY_SIZE(bi.reserved); i++)
		FUZZ_CHECK(bi.reserved[i] == 0, "boot_info %u reserved[%zu]", cpu, i);
	FUZZ_CHECK(memcmp(bi.cmdline, l->cmdline ? l->cmdline : "", cmdlen) == 0,
		   "boot_info %u cmdline", cpu);
	for (size_t i = cmdlen; i < BOOT_CMDLINE_MAX; i++)
		FUZZ_CHECK(bi.cmdline[i] == '\0', "boot_info %u cmdline[%zu] after the text", cpu, i);

	memset(&r, 0x55, sizeof(r));
	boot_init_regs(&r, l, cpu);
	FUZZ_CHECK(r.rip == BOOT_IMAGE_ADDR && r.rdi == info_addr && r.rflags == 0x2,
		   "vCPU %u RIP/RDI/RFLAGS", cpu);
	FUZZ_CHECK(r.rsp == bi.cpu_region_base + bi.cpu_region_size, "vCPU %u RSP", cpu);
	FUZZ_CHECK(r.rax == 0 && r.rbx == 0 && r.rcx == 0 && r.rdx == 0 && r.rsi == 0 &&
		   r.rbp == 0 && r.r8 == 0 && r.r15 == 0, "vCPU %u other registers not zeroed", cpu);
	if (valid_layout) {
		FUZZ_CHECK(r.rsp % 16 == 0, "vCPU %u RSP 0x%llx not 16-byte aligned", cpu, r.rsp);
		FUZZ_CHECK(bi.cpu_region_base >= boot_image_limit(l->ram_size, l->cpus) &&
			   bi.cpu_region_base >= BOOT_IMAGE_ADDR + l->image_size &&
			   bi.cpu_region_base + bi.cpu_region_size <= l->ram_size,
			   "vCPU %u region 0x%" PRIx64 " overlaps the image or leaves RAM", cpu,
			   bi.cpu_region_base);
	}
}

static void check_untouched(uint64_t from, uint64_t to)
{
	if (fuzz_all_bytes(mem + from, to - from, PATTERN))
		return;
	for (uint64_t a = from; a < to; a++)
		FUZZ_CHECK(mem[a] == PATTERN, "byte 0x%" PRIx64 " changed", a);
}

/* Everything but what the builders own, in address order, is as it was. */
static void check_rest_untouched(unsigned cpus)
{
	const struct { uint64_t from, to; } written[] = {
		{ BOOT_GDT_ADDR, BOOT_GDT_ADDR + 0x800 },
		{ BOOT_TSS_ADDR, BOOT_TSS_ADDR + 0x68 },
		{ BOOT_PML4_ADDR, BOOT_PML4_ADDR + 0x1000 },
		{ BOOT_PDPT_ADDR, BOOT_PDPT_ADDR + 0x1000 },
		{ BOOT_PD_ADDR, BOOT_PD_ADDR + BOOT_PD_PAGES * 0x1000 },
		{ BOOT_INFO_ADDR, BOOT_INFO_ADDR + (uint64_t)cpus * sizeof(struct boot_info) },
	};
	uint64_t at = 0;

	for (size_t i = 0; i < ARRAY_SIZE(written); i++) {
		FUZZ_SETUP(written[i].from >= at);	/* the list is in order */
		check_untouched(at, written[i].from);
		at = written[i].to;
	}
	check_untouched(at, MEM_SIZE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = fuzz_in(data, size);
	uint64_t raw_ram = fuzz_u64(&in);
	unsigned cpus = 1 + fuzz_u8(&in);
	uint64_t image_size = fuzz_u64(&in);
	uint8_t flags = fuzz_u8(&in);
	char *cmdline = fuzz_cstr(&in);
	uint64_t ram_size, kib = (VMM_MAX_RAM - VMM_MIN_RAM) / 1024 + 1;
	struct boot_layout l;
	char why[256];
	bool valid;

	ram_size = VMM_MIN_RAM + (raw_ram % kib) * 1024;
	if (flags & 1)
		ram_size &= ~0xfffffull;
	if (flags & 2)
		image_size = image_size % (ram_size - BOOT_IMAGE_ADDR) + 1;
	l = (struct boot_layout){
		.ram_size = ram_size,
		.cpus = cpus,
		.image_size = image_size,
		.cmdline = flags & 4 ? NULL : cmdline,
	};
	/* The loader only lets through layouts with room for the image. */
	valid = loader_check_size(image_size, ram_size, cpus, why, sizeof(why)) == 0;

	if (!mem) {
		mem = malloc(MEM_SIZE);
		FUZZ_SETUP(mem);
	}
	memset(mem, PATTERN, MEM_SIZE);
	boot_setup_memory(mem, &l);

	check_gdt_sregs();
	for (unsigned cpu = 0; cpu < cpus; cpu++)
		check_info(&l, cpu, valid);
	check_rest_untouched(cpus);

	/* The edges of RAM and of the tables, then the input's own addresses. */
	{
		const uint64_t mapped = (ram_size + 0x1fffff) & ~0x1fffffull;
		const uint64_t edges[] = {
			0, 0xfff, BOOT_IMAGE_ADDR, ram_size - 1, ram_size, mapped - 1, mapped,
			(1ull << 30) - 1, 1ull << 30, (2ull << 30) + 5, (4ull << 30) - 1, 4ull << 30,
			(512ull << 30) - 1, 512ull << 30, (1ull << 47) - 1, 0xffff800000000000ull,
			UINT64_MAX,
		};

		for (size_t i = 0; i < ARRAY_SIZE(edges); i++)
			check_address(edges[i], ram_size);
	}
	for (unsigned i = 0; i < MAX_ADDRS && in.n; i++) {
		uint64_t va = fuzz_u64(&in);

		/* Mostly addresses near RAM, or the walk would only see holes. */
		if (!(va & 1))
			va %= ram_size + (8ull << 20);
		check_address(va, ram_size);
	}
	free(cmdline);
	return 0;
}
