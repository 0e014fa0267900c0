/* SPDX-License-Identifier: MIT */
/*
 * The split-lock decision (emulate_plan, emulate_perform in emulate.c) on a guest of
 * 2 MiB of RAM with the boot protocol's identity map, which the input then
 * edits, in any CPU mode and privilege, from either path.
 *
 * Input:
 *   u8 a (bit 0 hardware path, bit 1 the guest set TEST_CTRL bit 29,
 *         bit 2 CS.L clear (compatibility mode), bit 3 CS.D, bit 4 CPL3,
 *         bit 5 CR0.AM, bit 6 RFLAGS.AC, bit 7 EFER.NXE),
 *   u8 b (bit 0 SMEP, bit 1 SMAP, bit 2 PKE, bit 3 PKRU known, bit 4 CR0.WP,
 *         bit 5 LA57, bits 6-7 MAXPHYADDR 52/46/40/36),
 *   u32 PKRU, u32 DS base, u32 DS limit, u8 DS type (low 4 bits) and
 *   unusable (bit 4), u16 offset of RIP in the page at 0x100000,
 *   8 x u32 RAX..RDI (cut to 22 bits: half in RAM, half beyond),
 *   16 instruction bytes at RIP, then to the end (u16 slot, u64 value)
 *   pairs written into the four paging-structure pages.
 *
 * Oracles:
 *  - deciding writes no guest memory;
 *  - the software path never stops (long mode is on) and injects nothing
 *    but #AC, and that only when the guest asked for it; the hardware
 *    path injects #AC for a legacy alignment check (CPL3, AM, AC) or when
 *    the guest asked, whatever the instruction;
 *  - an injected #PF has CR2 inside the operand, at its first byte or a
 *    page boundary, W set (every locked RMW writes) and U exactly at CPL3;
 *    #GP and #SS have error code 0 and no CR2;
 *  - a plan to emulate is a decoded split lock whose parts add up to the
 *    operand, all in RAM on the software path; emulate_perform then changes no
 *    RAM byte outside those parts and the paging-structure pages.
 */
#include <inttypes.h>

#include "fuzz.h"

#include "boot.h"
#include "emulate.h"
#include "vmm_boot.h"

#define RAM (2ull << 20)
#define CODE 0x100000ull
#define TABLES_END (BOOT_PD_ADDR + 0x1000ull)

static uint8_t *ram, *before;

static void check_plan(const struct emulate_snapshot *s, const struct emulate_plan *p, bool legacy)
{
	bool hw = s->source == EMULATE_SOURCE_HARDWARE;

	FUZZ_CHECK((unsigned)p->kind <= EMULATE_PLAN_STOP, "plan kind %d", (int)p->kind);
	FUZZ_CHECK(p->kind == EMULATE_PLAN_NONE || p->kind == EMULATE_PLAN_EMULATE || p->why,
		   "plan %d without a reason", (int)p->kind);
	if (hw && (legacy || s->ac_requested))
		FUZZ_CHECK(p->kind == EMULATE_PLAN_INJECT && p->ex.vector == 17 && p->ex.has_error_code &&
			   p->ex.error_code == 0, "hardware #AC (legacy %d, asked %d) became plan %d",
			   legacy, s->ac_requested, (int)p->kind);
	if (!hw) {
		FUZZ_CHECK(p->kind != EMULATE_PLAN_STOP, "the software path stopped: %s", p->why);
		FUZZ_CHECK(p->kind != EMULATE_PLAN_INJECT || (p->ex.vector == 17 && s->ac_requested),
			   "the software path injected vector %u", p->ex.vector);
	}
	if (p->kind == EMULATE_PLAN_INJECT && p->ex.vector == 14) {
		FUZZ_CHECK(p->decoded && p->ex.has_cr2 && p->ex.has_error_code, "#PF without CR2");
		FUZZ_CHECK(p->ex.cr2 == p->access.la ||
			   ((p->ex.cr2 & 0xfff) == 0 && p->ex.cr2 - p->access.la < p->access.size),
			   "CR2 0x%" PRIx64 " for %u bytes at 0x%" PRIx64, p->ex.cr2, p->access.size,
			   p->access.la);
		FUZZ_CHECK((p->ex.error_code & 2) && !!(p->ex.error_code & 4) ==
			   (s->sregs.ss.dpl == 3), "#PF error code 0x%x", p->ex.error_code);
	}
	if (p->kind == EMULATE_PLAN_INJECT && (p->ex.vector == 12 || p->ex.vector == 13))
		FUZZ_CHECK(p->ex.has_error_code && p->ex.error_code == 0 && !p->ex.has_cr2,
			   "#%u with error code 0x%x", p->ex.vector, p->ex.error_code);
	if (p->kind == EMULATE_PLAN_EMULATE) {
		unsigned total = 0;

		FUZZ_CHECK(p->decoded && emulate_crosses_line(p->access.la, p->access.size),
			   "emulating what is not a split lock");
		FUZZ_CHECK(p->nparts == 1 || p->nparts == 2, "%u parts", p->nparts);
		for (unsigned i = 0; i < p->nparts; i++) {
			total += p->part[i].len;
			FUZZ_CHECK(hw || p->part[i].ram, "the software path emulates MMIO");
			FUZZ_CHECK(!p->part[i].ram || p->part[i].gpa + p->part[i].len <= RAM,
				   "part %u at 0x%" PRIx64 " is not in RAM", i, p->part[i].gpa);
		}
		FUZZ_CHECK(total == p->access.size, "parts of %u bytes for %u", total, p->access.size);
	}
}

static bool in_parts(const struct emulate_plan *p, uint64_t gpa)
{
	for (unsigned i = 0; i < p->nparts; i++)
		if (p->part[i].ram && gpa - p->part[i].gpa < p->part[i].len)
			return true;
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned maxphys[] = { 52, 46, 40, 36 };
	struct fuzz_in in = fuzz_in(data, size);
	uint8_t a = fuzz_u8(&in), b = fuzz_u8(&in), dst;
	struct emulate_snapshot s;
	struct emulate_plan p;
	uint8_t code[16];
	__u64 *gprs[8];
	bool legacy;

	if (!ram) {
		ram = malloc(RAM);
		before = malloc(RAM);
		FUZZ_SETUP(ram && before);
	}
	memset(ram, 0, RAM);
	boot_build_page_tables(ram, RAM);
	memset(&s, 0, sizeof(s));
	s.mem = (struct guest_mem){ ram, RAM };
	boot_init_sregs(&s.sregs);
	s.source = a & 1 ? EMULATE_SOURCE_HARDWARE : EMULATE_SOURCE_SOFTWARE;
	s.ac_requested = a & 2;
	if (a & 4)
		s.sregs.cs.l = 0;
	s.sregs.cs.db = !s.sregs.cs.l && (a & 8);
	if (a & 16)
		s.sregs.cs.dpl = s.sregs.ss.dpl = 3;
	if (a & 32)
		s.sregs.cr0 |= X86_CR0_AM;
	s.regs.rflags = 0x2 | (a & 64 ? 1ull << 18 : 0);
	if (a & 128)
		s.sregs.efer |= 1ull << 11;
	s.sregs.cr4 |= (b & 1 ? 1ull << 20 : 0) | (b & 2 ? 1ull << 21 : 0) |
		       (b & 4 ? 1ull << 22 : 0) | (b & 32 ? 1ull << 12 : 0);
	s.pkru_known = b & 8;
	if (!(b & 16))
		s.sregs.cr0 &= ~X86_CR0_WP;
	s.maxphyaddr = maxphys[b >> 6];
	s.pkru = fuzz_u32(&in);
	s.sregs.ds.base = fuzz_u32(&in);
	s.sregs.ds.limit = fuzz_u32(&in);
	dst = fuzz_u8(&in);
	s.sregs.ds.type = dst & 15;
	s.sregs.ds.unusable = (dst >> 4) & 1;
	s.regs.rip = CODE + (fuzz_u16(&in) & 0xfff);
	gprs[0] = &s.regs.rax; gprs[1] = &s.regs.rcx; gprs[2] = &s.regs.rdx; gprs[3] = &s.regs.rbx;
	gprs[4] = &s.regs.rsp; gprs[5] = &s.regs.rbp; gprs[6] = &s.regs.rsi; gprs[7] = &s.regs.rdi;
	for (unsigned i = 0; i < 8; i++)
		*gprs[i] = fuzz_u32(&in) & 0x3fffff;
	memset(code, 0x90, sizeof(code));
	fuzz_bytes(&in, code, sizeof(code));
	memcpy(ram + s.regs.rip, code, sizeof(code));
	while (in.n) {
		uint64_t at = BOOT_PML4_ADDR + (fuzz_u16(&in) % ((TABLES_END - BOOT_PML4_ADDR) / 8)) * 8;
		uint64_t v = fuzz_u64(&in);

		memcpy(ram + at, &v, 8);
	}
	legacy = s.sregs.ss.dpl == 3 && (s.sregs.cr0 & X86_CR0_AM) && (s.regs.rflags & (1ull << 18));

	memcpy(before, ram, RAM);
	emulate_plan(&s, &p);
	FUZZ_CHECK(memcmp(before, ram, RAM) == 0, "emulate_plan wrote guest memory");
	check_plan(&s, &p, legacy);
	if (p.kind == EMULATE_PLAN_EMULATE) {
		struct kvm_regs r = s.regs;

		emulate_perform(&p, &s.mem, &r);
		for (uint64_t g = 0; g < RAM; g++)
			if (ram[g] != before[g] && !in_parts(&p, g))
				FUZZ_CHECK(g >= BOOT_PML4_ADDR && g < TABLES_END,
					   "emulate_perform changed 0x%" PRIx64 ", outside its operand", g);
	}
	return 0;
}
