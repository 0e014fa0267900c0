/* SPDX-License-Identifier: MIT */
/*
 * Differential tests of the split-lock decoder glue and emulator: every
 * instruction is also run natively on the host CPU from a JIT page, with the
 * same random registers, flags and memory, and the two results must match
 * to the bit: memory, every register, arithmetic flags, RIP.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "boot.h"
#include "decode.h"
#include "emulate.h"
#include "vmm_boot.h"
#include "array_size.h"

struct ctx {
	uint64_t rax, rbx, rcx, rdx, rsi, rdi, rflags;
};

void run_native(struct ctx *c, const void *code);
/* Loads ctx, calls the instruction (followed by ret), stores ctx back. */
asm(".text\n"
    ".globl run_native\n"
    "run_native:\n\t"
    "push %rbx\n\t"
    "push %r12\n\t"
    "push %r13\n\t"
    "mov %rdi, %r12\n\t"
    "mov %rsi, %r13\n\t"
    "mov 0(%r12), %rax\n\t"
    "mov 8(%r12), %rbx\n\t"
    "mov 16(%r12), %rcx\n\t"
    "mov 24(%r12), %rdx\n\t"
    "mov 32(%r12), %rsi\n\t"
    "pushq 48(%r12)\n\t"
    "popfq\n\t"
    "mov 40(%r12), %rdi\n\t"
    "call *%r13\n\t"
    "pushfq\n\t"
    "popq 48(%r12)\n\t"
    "mov %rax, 0(%r12)\n\t"
    "mov %rbx, 8(%r12)\n\t"
    "mov %rcx, 16(%r12)\n\t"
    "mov %rdx, 24(%r12)\n\t"
    "mov %rsi, 32(%r12)\n\t"
    "mov %rdi, 40(%r12)\n\t"
    "pop %r13\n\t"
    "pop %r12\n\t"
    "pop %rbx\n\t"
    "ret\n");

struct insn_case {
	const char *what;
	uint8_t bytes[12];
	unsigned len;
	enum decode_op op;
	unsigned size;
	bool bit_reg;        /* BT* with a register offset: keep it small */
};

#define B(...) { __VA_ARGS__ }, sizeof((uint8_t[]){ __VA_ARGS__ })

static const struct insn_case cases[] = {
	{ "lock add byte [rdi], cl", B(0xf0, 0x00, 0x0f), DECODE_ADD, 1, false },
	{ "lock add byte [rdi], dh", B(0xf0, 0x00, 0x37), DECODE_ADD, 1, false },
	{ "lock add word [rdi], cx", B(0x66, 0xf0, 0x01, 0x0f), DECODE_ADD, 2, false },
	{ "lock add dword [rdi], esi", B(0xf0, 0x01, 0x37), DECODE_ADD, 4, false },
	{ "lock add qword [rdi], rsi", B(0xf0, 0x48, 0x01, 0x37), DECODE_ADD, 8, false },
	{ "lock add dword [rdi], -128", B(0xf0, 0x83, 0x07, 0x80), DECODE_ADD, 4, false },
	{ "lock adc dword [rdi], ecx", B(0xf0, 0x11, 0x0f), DECODE_ADC, 4, false },
	{ "lock adc byte [rdi], 0x7f", B(0xf0, 0x80, 0x17, 0x7f), DECODE_ADC, 1, false },
	{ "lock and qword [rdi], rbx", B(0xf0, 0x48, 0x21, 0x1f), DECODE_AND, 8, false },
	{ "lock or byte [rdi], bl", B(0xf0, 0x08, 0x1f), DECODE_OR, 1, false },
	{ "lock or word [rdi], 0x8001", B(0x66, 0xf0, 0x81, 0x0f, 0x01, 0x80), DECODE_OR, 2, false },
	{ "lock sbb word [rdi], dx", B(0x66, 0xf0, 0x19, 0x17), DECODE_SBB, 2, false },
	{ "lock sub qword [rdi], rax", B(0xf0, 0x48, 0x29, 0x07), DECODE_SUB, 8, false },
	{ "lock sub qword [rdi], imm32", B(0xf0, 0x48, 0x81, 0x2f, 0x78, 0x56, 0x34, 0x92), DECODE_SUB, 8, false },
	{ "lock xor dword [rdi], ebx", B(0xf0, 0x31, 0x1f), DECODE_XOR, 4, false },
	{ "lock xor byte [rdi], 0xa5", B(0xf0, 0x80, 0x37, 0xa5), DECODE_XOR, 1, false },
	{ "lock not dword [rdi]", B(0xf0, 0xf7, 0x17), DECODE_NOT, 4, false },
	{ "lock not byte [rdi]", B(0xf0, 0xf6, 0x17), DECODE_NOT, 1, false },
	{ "lock neg qword [rdi]", B(0xf0, 0x48, 0xf7, 0x1f), DECODE_NEG, 8, false },
	{ "lock neg byte [rdi]", B(0xf0, 0xf6, 0x1f), DECODE_NEG, 1, false },
	{ "lock inc word [rdi]", B(0x66, 0xf0, 0xff, 0x07), DECODE_INC, 2, false },
	{ "lock inc byte [rdi]", B(0xf0, 0xfe, 0x07), DECODE_INC, 1, false },
	{ "lock dec dword [rdi]", B(0xf0, 0xff, 0x0f), DECODE_DEC, 4, false },
	{ "lock dec qword [rdi]", B(0xf0, 0x48, 0xff, 0x0f), DECODE_DEC, 8, false },
	{ "xchg dword [rdi], ecx", B(0x87, 0x0f), DECODE_XCHG, 4, false },
	{ "xchg byte [rdi], al", B(0x86, 0x07), DECODE_XCHG, 1, false },
	{ "xchg byte [rdi], bh", B(0x86, 0x3f), DECODE_XCHG, 1, false },
	{ "xchg word [rdi], si", B(0x66, 0x87, 0x37), DECODE_XCHG, 2, false },
	{ "lock xchg qword [rdi], rsi", B(0xf0, 0x48, 0x87, 0x37), DECODE_XCHG, 8, false },
	{ "lock xadd dword [rdi], esi", B(0xf0, 0x0f, 0xc1, 0x37), DECODE_XADD, 4, false },
	{ "lock xadd byte [rdi], ah", B(0xf0, 0x0f, 0xc0, 0x27), DECODE_XADD, 1, false },
	{ "lock xadd word [rdi], cx", B(0x66, 0xf0, 0x0f, 0xc1, 0x0f), DECODE_XADD, 2, false },
	{ "lock xadd qword [rdi], rbx", B(0xf0, 0x48, 0x0f, 0xc1, 0x1f), DECODE_XADD, 8, false },
	{ "lock cmpxchg dword [rdi], ecx", B(0xf0, 0x0f, 0xb1, 0x0f), DECODE_CMPXCHG, 4, false },
	{ "lock cmpxchg byte [rdi], bl", B(0xf0, 0x0f, 0xb0, 0x1f), DECODE_CMPXCHG, 1, false },
	{ "lock cmpxchg word [rdi], dx", B(0x66, 0xf0, 0x0f, 0xb1, 0x17), DECODE_CMPXCHG, 2, false },
	{ "lock cmpxchg qword [rdi], rsi", B(0xf0, 0x48, 0x0f, 0xb1, 0x37), DECODE_CMPXCHG, 8, false },
	{ "lock cmpxchg8b [rdi]", B(0xf0, 0x0f, 0xc7, 0x0f), DECODE_CMPXCHG8B, 8, false },
	{ "lock cmpxchg16b [rdi]", B(0xf0, 0x48, 0x0f, 0xc7, 0x0f), DECODE_CMPXCHG16B, 16, false },
	{ "lock bts dword [rdi], 5", B(0xf0, 0x0f, 0xba, 0x2f, 0x05), DECODE_BTS, 4, false },
	{ "lock btr qword [rdi], 63", B(0xf0, 0x48, 0x0f, 0xba, 0x37, 0x3f), DECODE_BTR, 8, false },
	{ "lock btc word [rdi], 17", B(0x66, 0xf0, 0x0f, 0xba, 0x3f, 0x11), DECODE_BTC, 2, false },
	{ "lock bts dword [rdi], ecx", B(0xf0, 0x0f, 0xab, 0x0f), DECODE_BTS, 4, true },
	{ "lock btr qword [rdi], rdx", B(0xf0, 0x48, 0x0f, 0xb3, 0x17), DECODE_BTR, 8, true },
	{ "lock btc word [rdi], si", B(0x66, 0xf0, 0x0f, 0xbb, 0x37), DECODE_BTC, 2, true },
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint8_t *jit;

static int setup(void **state)
{
	(void)state;
	jit = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return jit == MAP_FAILED ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	munmap(jit, 4096);
	return 0;
}

#define AREA 64          /* bytes around the operand, for register bit offsets */

static void random_ctx(struct ctx *c, const struct insn_case *ic, uint8_t *mem)
{
	c->rax = rnd();
	c->rbx = rnd();
	c->rcx = rnd();
	c->rdx = rnd();
	c->rsi = rnd();
	/* 0x202: IF as the host has it, plus random arithmetic flags. */
	c->rflags = 0x202 | (rnd() & X86_RFLAGS_ARITH);
	if (ic->bit_reg) {
		/* A signed offset that stays within +-AREA/2 bytes of [rdi]. */
		int64_t bit = (int64_t)(rnd() % (AREA * 8)) - AREA * 4;

		c->rcx = c->rdx = c->rsi = (uint64_t)bit;
	}
	for (unsigned i = 0; i < 2 * AREA; i++)
		mem[i] = (uint8_t)rnd();
	/* Half the compare-exchanges should succeed. */
	if ((ic->op == DECODE_CMPXCHG || ic->op == DECODE_CMPXCHG8B || ic->op == DECODE_CMPXCHG16B) &&
	    (rnd() & 1)) {
		memcpy(&c->rax, mem + AREA, 8);
		memcpy(&c->rdx, mem + AREA + 8, 8);
	}
}

static bool operand_ok;	/* the last operand() passed the canonical check */

/* Where si's operand is in 64-bit mode with these FS and GS bases. */
static struct emulate_access operand(const struct decode_insn *si, const struct kvm_regs *r,
				     uint64_t fs_base, uint64_t gs_base)
{
	struct kvm_sregs s = { .cr0 = 0x80000011, .efer = 0x500, .cs = { .l = 1 } };
	struct emulate_exception fault;
	struct emulate_access a = { .size = si->size };

	s.fs.base = fs_base;
	s.gs.base = gs_base;
	assert_int_equal(emulate_cpu_mode(&s, r->rflags), DECODE_MODE_64);
	operand_ok = emulate_linear(si, &s, r->rflags, emulate_effective(si, r), si->size, &a.la, &fault);
	return a;
}

static void one_run(const struct insn_case *ic, const struct decode_insn *si)
{
	uint8_t native_mem[2 * AREA] __attribute__((aligned(16)));
	uint8_t emu_mem[2 * AREA] __attribute__((aligned(16)));
	uint8_t op[16] __attribute__((aligned(16)));
	struct ctx c, n;
	struct kvm_regs r;
	struct emulate_access a;
	int64_t off;

	random_ctx(&c, ic, native_mem);
	memcpy(emu_mem, native_mem, sizeof(emu_mem));
	n = c;
	n.rdi = (uint64_t)(uintptr_t)(native_mem + AREA);
	run_native(&n, jit);

	memset(&r, 0, sizeof(r));
	r.rax = c.rax; r.rbx = c.rbx; r.rcx = c.rcx; r.rdx = c.rdx; r.rsi = c.rsi;
	r.rdi = (uint64_t)(uintptr_t)(emu_mem + AREA);
	r.rflags = c.rflags;
	r.rip = 0x1000;
	a = operand(si, &r, 0, 0);
	off = (int64_t)(a.la - r.rdi);
	assert_true(off >= -AREA && off + a.size <= AREA);
	assert_int_equal(a.size, ic->size);
	memcpy(op, emu_mem + AREA + off, a.size);
	emulate_execute(si, &r, op);
	memcpy(emu_mem + AREA + off, op, a.size);

	if (memcmp(native_mem, emu_mem, sizeof(emu_mem)))
		fail_msg("%s: memory differs", ic->what);
	if (n.rax != r.rax || n.rbx != r.rbx || n.rcx != r.rcx || n.rdx != r.rdx ||
	    n.rsi != r.rsi)
		fail_msg("%s: registers differ: rax %llx/%llx rbx %llx/%llx rcx %llx/%llx rdx %llx/%llx rsi %llx/%llx",
			 ic->what, (unsigned long long)n.rax, r.rax, (unsigned long long)n.rbx, r.rbx,
			 (unsigned long long)n.rcx, r.rcx, (unsigned long long)n.rdx, r.rdx,
			 (unsigned long long)n.rsi, r.rsi);
	if ((n.rflags & X86_RFLAGS_ARITH) != (r.rflags & X86_RFLAGS_ARITH))
		fail_msg("%s: flags 0x%llx natively, 0x%llx emulated (from 0x%llx)", ic->what,
			 (unsigned long long)(n.rflags & X86_RFLAGS_ARITH), r.rflags & X86_RFLAGS_ARITH,
			 (unsigned long long)c.rflags);
	assert_int_equal(r.rip, 0x1000 + ic->len);
}

static void matches_host_cpu(void **state)
{
	(void)state;
	for (size_t k = 0; k < ARRAY_SIZE(cases); k++) {
		const struct insn_case *ic = &cases[k];
		struct decode_insn si;

		if (decode_insn(DECODE_MODE_64, ic->bytes, ic->len, &si))
			fail_msg("%s: not decoded as a locked RMW", ic->what);
		assert_int_equal(si.op, ic->op);
		assert_int_equal(si.size, ic->size);
		assert_int_equal(si.length, ic->len);
		assert_true(decode_maybe_locked(DECODE_MODE_64, ic->bytes, ic->len));
		memcpy(jit, ic->bytes, ic->len);
		jit[ic->len] = 0xc3;	/* ret */
		for (int i = 0; i < 500; i++)
			one_run(ic, &si);
	}
}

static void not_locked_rmw(void **state)
{
	static const struct { uint8_t b[8]; unsigned len; } others[] = {
		{ { 0x01, 0x37 }, 2 },                /* add [rdi], esi: no lock */
		{ { 0x87, 0xc8 }, 2 },                /* xchg eax, ecx: registers */
		{ { 0x90 }, 1 },                      /* nop */
		{ { 0x8b, 0x07 }, 2 },                /* mov eax, [rdi] */
		{ { 0x0f, 0xb1, 0x0f }, 3 },          /* cmpxchg without lock */
		{ { 0xf3, 0xa4 }, 2 },                /* rep movsb */
		{ { 0x0f, 0xab, 0x0f }, 3 },          /* bts without lock */
	};
	struct decode_insn si;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(others); i++)
		assert_int_equal(decode_insn(DECODE_MODE_64, others[i].b, others[i].len, &si), -1);
	assert_false(decode_maybe_locked(DECODE_MODE_64, others[0].b, others[0].len));
	assert_false(decode_maybe_locked(DECODE_MODE_64, others[1].b, others[1].len));
	assert_false(decode_maybe_locked(DECODE_MODE_64, others[2].b, others[2].len));
}

/* The cheap filter may say yes too often, never too rarely. */
static void prefilter_has_no_false_negatives(void **state)
{
	static const uint8_t prefixes[] = { 0xf0, 0x66, 0x67, 0x64, 0x65, 0x48, 0x4c, 0x40, 0xf3 };
	struct decode_insn si;
	unsigned decoded = 0;

	(void)state;
	for (int i = 0; i < 200000; i++) {
		uint8_t b[DECODE_INSN_MAX];
		unsigned np = rnd() % 4;

		for (unsigned j = 0; j < sizeof(b); j++)
			b[j] = (uint8_t)rnd();
		for (unsigned j = 0; j < np; j++)
			b[j] = prefixes[rnd() % sizeof(prefixes)];
		if (decode_insn(DECODE_MODE_64, b, sizeof(b), &si) == 0) {
			decoded++;
			if (!decode_maybe_locked(DECODE_MODE_64, b, sizeof(b)))
				fail_msg("prefilter rejects a locked %s", decode_op_name(si.op));
		}
	}
	assert_true(decoded > 100);
}

static void operand_addresses(void **state)
{
	struct kvm_regs r = { .rax = 0x1000, .rbx = 0x10, .rip = 0x200000, .rdi = 0x1ffffffff0ull };
	struct decode_insn si;
	struct emulate_access a;
	static const uint8_t sib[] = { 0xf0, 0x01, 0x4c, 0x98, 0x10 };     /* [rax+rbx*4+0x10] */
	static const uint8_t riprel[] = { 0xf0, 0x01, 0x0d, 0x00, 0x01, 0x00, 0x00 }; /* [rip+0x100] */
	static const uint8_t fs[] = { 0x64, 0xf0, 0x01, 0x0f };            /* fs:[rdi] */
	static const uint8_t a32[] = { 0x67, 0xf0, 0x01, 0x0f };           /* [edi] */
	static const uint8_t bts_neg[] = { 0xf0, 0x0f, 0xab, 0x0f };       /* bts [rdi], ecx */

	(void)state;
	assert_int_equal(decode_insn(DECODE_MODE_64, sib, sizeof(sib), &si), 0);
	a = operand(&si, &r, 0, 0);
	assert_int_equal(a.la, 0x1000 + 0x10 * 4 + 0x10);
	assert_int_equal(decode_insn(DECODE_MODE_64, riprel, sizeof(riprel), &si), 0);
	a = operand(&si, &r, 0, 0);
	assert_int_equal(a.la, 0x200000 + sizeof(riprel) + 0x100);
	assert_int_equal(decode_insn(DECODE_MODE_64, fs, sizeof(fs), &si), 0);
	a = operand(&si, &r, 0x7000000, 0x9000000);
	assert_int_equal(a.la, 0x1ffffffff0ull + 0x7000000);
	assert_int_equal(decode_insn(DECODE_MODE_64, a32, sizeof(a32), &si), 0);
	a = operand(&si, &r, 0, 0);
	assert_int_equal(a.la, 0xfffffff0ull);
	/* Bit -1 is bit 31 of the dword below [rdi]. */
	r.rcx = (uint64_t)-1;
	assert_int_equal(decode_insn(DECODE_MODE_64, bts_neg, sizeof(bts_neg), &si), 0);
	a = operand(&si, &r, 0, 0);
	assert_int_equal(a.la, 0x1ffffffff0ull - 4);
	r.rcx = 64;
	a = operand(&si, &r, 0, 0);
	assert_int_equal(a.la, 0x1ffffffff0ull + 8);
	/* The most negative offsets, which must not overflow on the way. */
	r.rcx = 0x80000000u;			/* ecx = INT32_MIN: -2^28 bytes */
	a = operand(&si, &r, 0, 0);
	assert_int_equal(a.la, 0x1ffffffff0ull - (1ull << 28));
	{
		static const uint8_t bts64[] = { 0xf0, 0x48, 0x0f, 0xab, 0x07 };  /* bts [rdi], rax */

		assert_int_equal(decode_insn(DECODE_MODE_64, bts64, sizeof(bts64), &si), 0);
		r.rax = 0x8000000000000000ull;
		r.rdi = 0x100000;
		a = operand(&si, &r, 0, 0);
		assert_int_equal(a.la, 0xf000000000100000ull);
		assert_false(operand_ok);	/* not canonical: #GP */
		r.rax = 0x8000000000000018ull;
		a = operand(&si, &r, 0, 0);
		assert_int_equal(a.la, 0xf000000000100000ull);
	}
}

static void line_rule(void **state)
{
	(void)state;
	assert_false(emulate_crosses_line(0, 8));
	assert_false(emulate_crosses_line(56, 8));
	assert_true(emulate_crosses_line(57, 8));
	assert_true(emulate_crosses_line(63, 2));
	assert_false(emulate_crosses_line(63, 1));
	assert_false(emulate_crosses_line(48, 16));
	assert_true(emulate_crosses_line(56, 16));
	assert_true(emulate_crosses_line(0x1000 - 2, 4));	/* page and line */
	assert_false(emulate_crosses_line(0x1000, 4));
}

/* ---- the decision, on guest RAM with the boot protocol's identity map */

#define RAM (4ull << 20)
static uint8_t *ram;
static struct emulate_snapshot snap;

static int setup_guest(void **state)
{
	(void)state;
	ram = calloc(1, RAM);
	if (!ram)
		return -1;
	boot_build_page_tables(ram, RAM);
	memset(&snap, 0, sizeof(snap));
	snap.mem = (struct guest_mem){ ram, RAM };
	snap.maxphyaddr = 46;
	boot_init_sregs(&snap.sregs);
	snap.regs.rflags = 0x2;
	return 0;
}

static int teardown_guest(void **state)
{
	(void)state;
	free(ram);
	return 0;
}

/* Compatibility mode: 32-bit code under the 64-bit kernel's page tables. */
/* lock add dword [ebx], 1: 32-bit addressing outside 64-bit mode. */
static const uint8_t lock_add_ebx[] = { 0xf0, 0x83, 0x03, 0x01 };

static void compat_mode(void)
{
	snap.sregs.cs.l = 0;
	snap.sregs.cs.db = 1;
}

static void code(uint64_t rip, const void *bytes, size_t n)
{
	memcpy(ram + rip, bytes, n);
	snap.regs.rip = rip;
}

static uint32_t at(uint64_t gpa)
{
	uint32_t v;

	memcpy(&v, ram + gpa, 4);
	return v;
}

static void plan_both(struct emulate_plan *sw, struct emulate_plan *hw)
{
	uint8_t *before = malloc(RAM);

	assert_non_null(before);
	memcpy(before, ram, RAM);
	snap.source = EMULATE_SOURCE_SOFTWARE;
	emulate_plan(&snap, sw);
	snap.source = EMULATE_SOURCE_HARDWARE;
	emulate_plan(&snap, hw);
	/* Deciding never writes guest memory, accessed bits included. */
	assert_memory_equal(before, ram, RAM);
	free(before);
}

/* lock add dword [ebx], 1 with a DS base: the linear address has it. */
static void compat_segment_base(void **state)
{
	struct emulate_plan sw, hw;

	(void)state;
	compat_mode();
	snap.sregs.ds.base = 0x300000;
	snap.regs.rbx = 0x3e;
	code(0x101000, lock_add_ebx, sizeof(lock_add_ebx));
	memcpy(ram + 0x30003e, (uint32_t[]){ 0x11111111 }, 4);
	memcpy(ram + 0x3e, (uint32_t[]){ 0x22222222 }, 4);
	plan_both(&sw, &hw);
	assert_int_equal(sw.kind, EMULATE_PLAN_EMULATE);
	assert_int_equal(hw.kind, EMULATE_PLAN_EMULATE);
	assert_int_equal(sw.insn.mode, DECODE_MODE_32);
	assert_int_equal(sw.access.la, 0x30003e);
	assert_int_equal(sw.nparts, 1);
	assert_int_equal(sw.part[0].gpa, 0x30003e);
	emulate_perform(&sw, &snap.mem, &snap.regs);
	assert_int_equal(at(0x30003e), 0x11111112);
	assert_int_equal(at(0x3e), 0x22222222);
	assert_int_equal(snap.regs.rip, 0x101004);
	/* Accessed and dirty bits once performed: the 2 MiB page's PDE. */
	assert_true(at(BOOT_PD_ADDR + 8) & 0x60);
}

/* REX does not exist outside 64-bit mode: 48 is DEC EAX, and LOCK on it #UD. */
static void compat_has_no_rex(void **state)
{
	static const uint8_t rex_add[] = { 0xf0, 0x48, 0x01, 0x03 };
	struct emulate_plan sw, hw;

	(void)state;
	compat_mode();
	snap.regs.rbx = 0x20003e;
	code(0x101000, rex_add, sizeof(rex_add));
	plan_both(&sw, &hw);
	assert_int_equal(sw.kind, EMULATE_PLAN_NONE);
	assert_false(sw.decoded);
	assert_int_equal(hw.kind, EMULATE_PLAN_STOP);
	/* The same bytes are a 64-bit lock add in 64-bit mode. */
	snap.sregs.cs.l = 1;
	snap.sregs.cs.db = 0;
	plan_both(&sw, &hw);
	assert_int_equal(sw.kind, EMULATE_PLAN_EMULATE);
	assert_int_equal(sw.access.size, 8);
}

/* Limits, types and usability, with #GP(0) or #SS(0) on the hardware path. */
static void compat_segment_faults(void **state)
{
	static const uint8_t add_ebp[] = { 0xf0, 0x83, 0x45, 0x00, 0x01 }; /* [ebp+0]: SS */
	static const uint8_t add_cs[] = { 0x2e, 0xf0, 0x83, 0x03, 0x01 };  /* cs:[ebx] */
	struct emulate_plan sw, hw;

	(void)state;
	compat_mode();
	snap.regs.rbx = snap.regs.rbp = 0x20003e;
	code(0x101000, lock_add_ebx, sizeof(lock_add_ebx));
	snap.sregs.ds.limit = 0x200040;		/* the last byte is 0x200041 */
	plan_both(&sw, &hw);
	assert_int_equal(sw.kind, EMULATE_PLAN_NATIVE);
	assert_int_equal(hw.kind, EMULATE_PLAN_INJECT);
	assert_int_equal(hw.ex.vector, 13);
	assert_true(hw.ex.has_error_code);
	assert_int_equal(hw.ex.error_code, 0);
	assert_false(hw.ex.has_cr2);
	snap.sregs.ds.limit = 0x200041;
	plan_both(&sw, &hw);
	assert_int_equal(sw.kind, EMULATE_PLAN_EMULATE);

	snap.sregs.ss.limit = 0x200040;
	code(0x101000, add_ebp, sizeof(add_ebp));
	plan_both(&sw, &hw);
	assert_int_equal(hw.kind, EMULATE_PLAN_INJECT);
	assert_int_equal(hw.ex.vector, 12);

	/* Expand-down: offsets above the limit are the valid ones. */
	snap.sregs.ds.type = 0x7;
	snap.sregs.ds.limit = 0x1fffff;
	code(0x101000, lock_add_ebx, sizeof(lock_add_ebx));
	plan_both(&sw, &hw);
	assert_int_equal(hw.kind, EMULATE_PLAN_EMULATE);
	snap.sregs.ds.limit = 0x200040;
	plan_both(&sw, &hw);
	assert_int_equal(hw.ex.vector, 13);

	/* A read-only data segment, a null one, and a write through CS. */
	snap.sregs.ds.type = 0x1;
	snap.sregs.ds.limit = 0xffffffff;
	plan_both(&sw, &hw);
	assert_int_equal(hw.kind, EMULATE_PLAN_INJECT);
	snap.sregs.ds.type = 0x3;
	snap.sregs.ds.unusable = 1;
	plan_both(&sw, &hw);
	assert_int_equal(hw.kind, EMULATE_PLAN_INJECT);
	snap.sregs.ds.unusable = 0;
	code(0x101000, add_cs, sizeof(add_cs));
	plan_both(&sw, &hw);
	assert_int_equal(hw.kind, EMULATE_PLAN_INJECT);
	assert_int_equal(hw.ex.vector, 13);
}

/*
 * An operand across 4 GiB: in 64-bit mode its second page is at
 * 0x100000000 (here a 1 GiB page onto 0x40000000); outside it the linear
 * address wraps to 0 (compatibility mode, DS base 0xfffff000).
 */
static void operand_across_4gib(void **state)
{
	static const uint8_t xadd[] = { 0xf0, 0x0f, 0xc1, 0x07 };	/* lock xadd [rdi], eax */
	uint64_t pdpte = X86_PTE_P | X86_PTE_RW | X86_PTE_US | X86_PTE_PS;
	struct emulate_plan sw, hw;

	(void)state;
	memcpy(ram + BOOT_PDPT_ADDR + 3 * 8, (uint64_t[]){ pdpte | 0xc0000000ull }, 8);
	memcpy(ram + BOOT_PDPT_ADDR + 4 * 8, (uint64_t[]){ pdpte | 0x40000000ull }, 8);
	snap.regs.rdi = 0xfffffffe;
	code(0x101000, xadd, sizeof(xadd));
	plan_both(&sw, &hw);
	assert_int_equal(sw.nparts, 2);
	assert_int_equal(sw.part[0].gpa, 0xfffffffeull);
	assert_int_equal(sw.part[1].gpa, 0x40000000ull);
	compat_mode();
	snap.sregs.ds.base = 0xfffff000;
	snap.regs.rdi = 0xffe;
	plan_both(&sw, &hw);
	assert_int_equal(sw.nparts, 2);
	assert_int_equal(sw.access.la, 0xfffffffeull);
	assert_int_equal(sw.part[1].gpa, 0);
}

/*
 * The fetch walks the pages of the 15 bytes it reads and no more: code
 * that ends a page leaves the next page's accessed bit alone.
 */
static void fetch_stops_at_15_bytes(void **state)
{
	static const uint8_t xadd[] = { 0xf0, 0x0f, 0xc1, 0x07 };	/* lock xadd [rdi], eax */
	uint64_t pde[2];
	struct emulate_plan sw, hw;

	(void)state;
	for (unsigned i = 0; i < 2; i++) {
		memcpy(&pde[i], ram + BOOT_PD_ADDR + 8 * i, 8);
		pde[i] &= ~(uint64_t)(X86_PTE_A | X86_PTE_D);
		memcpy(ram + BOOT_PD_ADDR + 8 * i, &pde[i], 8);
	}
	memset(ram + 0x1ffff1, 0x90, 15);
	code(0x1ffff1, xadd, sizeof(xadd));		/* 15 bytes to the 2 MiB page's end */
	snap.regs.rdi = 0x10003e;
	plan_both(&sw, &hw);
	assert_int_equal(sw.kind, EMULATE_PLAN_EMULATE);
	assert_int_equal(sw.nbytes, 15);
	emulate_perform(&sw, &snap.mem, &snap.regs);
	memcpy(pde, ram + BOOT_PD_ADDR, sizeof(pde));
	assert_true(pde[0] & X86_PTE_A);
	assert_false(pde[1] & X86_PTE_A);
}

/* The decoder's mode: real and virtual-8086 mode are 16-bit whatever CS's cache says. */
static void cpu_modes(void **state)
{
	static const struct {
		uint64_t cr0, efer, rflags;
		uint8_t l, db;
		enum decode_mode mode;
	} t[] = {
		{ 0, 0, 0x2, 0, 1, DECODE_MODE_16 },				/* real mode */
		{ 1, 0, 0x2 | X86_RFLAGS_VM, 0, 1, DECODE_MODE_16 },		/* virtual-8086 */
		{ 1, 0, 0x2, 0, 1, DECODE_MODE_32 },
		{ 1, 0, 0x2, 1, 0, DECODE_MODE_16 },				/* L without LMA */
		{ 1, X86_EFER_LMA, 0x2, 1, 0, DECODE_MODE_64 },
		{ 1, X86_EFER_LMA, 0x2, 0, 1, DECODE_MODE_32 },			/* compatibility */
		{ 1, X86_EFER_LMA, 0x2, 0, 0, DECODE_MODE_16 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct kvm_sregs s = { .cr0 = t[i].cr0, .efer = t[i].efer,
				       .cs = { .l = t[i].l, .db = t[i].db } };

		assert_int_equal(emulate_cpu_mode(&s, t[i].rflags), t[i].mode);
	}
}

/*
 * A fetch up to CS's limit: 15 bytes inside it fault nowhere; fewer do
 * past it, which matters where the instruction is cut short there.
 */
static void fetch_to_cs_limit(void **state)
{
	struct emulate_plan sw, hw;

	(void)state;
	compat_mode();
	snap.regs.rbx = 0x20003e;
	code(0x101000, lock_add_ebx, sizeof(lock_add_ebx));
	snap.sregs.cs.limit = 0x101000 + 14;
	plan_both(&sw, &hw);
	assert_int_equal(hw.kind, EMULATE_PLAN_EMULATE);
	assert_int_equal(hw.nbytes, 15);
	assert_false(hw.fetch_faults);
	snap.sregs.cs.limit = 0x101000 + 13;
	plan_both(&sw, &hw);
	assert_int_equal(hw.kind, EMULATE_PLAN_EMULATE);
	assert_true(hw.fetch_faults);
	snap.sregs.cs.limit = 0x101000 + 2;			/* the instruction crosses it */
	plan_both(&sw, &hw);
	assert_int_equal(hw.kind, EMULATE_PLAN_NATIVE);
}

/*
 * Outside 64-bit mode base + offset is a 32-bit linear address: it wraps
 * at 4 GiB. An expand-down segment's upper bound is 0xffff where its B
 * flag is clear (SDM vol. 3 3.4.5), whatever the address size.
 */
static void compat_segment_wraps(void **state)
{
	struct emulate_plan sw, hw;

	(void)state;
	compat_mode();
	snap.sregs.ds.base = 0xfff00000;
	snap.regs.rbx = 0x30003e;
	code(0x101000, lock_add_ebx, sizeof(lock_add_ebx));
	memcpy(ram + 0x20003e, (uint32_t[]){ 0x11111111 }, 4);
	plan_both(&sw, &hw);
	assert_int_equal(sw.kind, EMULATE_PLAN_EMULATE);
	assert_int_equal(sw.access.la, 0x20003e);
	emulate_perform(&sw, &snap.mem, &snap.regs);
	assert_int_equal(at(0x20003e), 0x11111112);

	/* Expand-down above a limit of 0xfff: a dword at 0xfffe ends past 0xffff. */
	snap.sregs.ds.base = 0x200000;
	snap.sregs.ds.type = 0x7;
	snap.sregs.ds.limit = 0xfff;
	snap.regs.rbx = 0xfffe;
	snap.sregs.ds.db = 1;
	code(0x101000, lock_add_ebx, sizeof(lock_add_ebx));
	plan_both(&sw, &hw);
	assert_int_equal(hw.kind, EMULATE_PLAN_EMULATE);
	snap.sregs.ds.db = 0;
	plan_both(&sw, &hw);
	assert_int_equal(hw.kind, EMULATE_PLAN_INJECT);
	assert_int_equal(hw.ex.vector, 13);
	assert_int_equal(sw.kind, EMULATE_PLAN_NATIVE);
}

/* Address-size wrap, BT register offsets included, and IP wrap. */
static void wraps(void **state)
{
	static const uint8_t bts[] = { 0x67, 0xf0, 0x0f, 0xab, 0x0f };  /* bts [edi], ecx */
	static const uint8_t add16[] = { 0x67, 0xf0, 0x01, 0x07 };      /* add [bx], eax */
	struct decode_insn si;
	struct kvm_regs r = { .rdi = 0x1fffffff0ull, .rcx = 0x200, .rbx = 0x1fffe };

	(void)state;
	assert_int_equal(decode_insn(DECODE_MODE_64, bts, sizeof(bts), &si), 0);
	assert_int_equal(si.addr_size, 4);
	/* 0xfffffff0 + 512 / 8 wraps at 32 bits. */
	assert_int_equal(emulate_effective(&si, &r), 0x30);
	assert_int_equal(decode_insn(DECODE_MODE_32, add16, sizeof(add16), &si), 0);
	assert_int_equal(si.addr_size, 2);
	assert_int_equal(emulate_effective(&si, &r), 0xfffe);
	/* EIP wraps at 32 bits outside 64-bit mode. */
	{
		static const uint8_t add[] = { 0xf0, 0x01, 0x03 };
		uint8_t mem[16] __attribute__((aligned(16))) = { 0 };

		assert_int_equal(decode_insn(DECODE_MODE_32, add, sizeof(add), &si), 0);
		r.rip = 0xfffffffe;
		emulate_execute(&si, &r, mem);
		assert_int_equal(r.rip, 1);
	}
}

/* 64-bit mode: FS base, non-canonical #GP(0), stack references #SS(0). */
static void long_mode_faults(void **state)
{
	static const uint8_t fs_add[] = { 0x64, 0xf0, 0x01, 0x03 };       /* fs:[rbx] */
	static const uint8_t rsp_add[] = { 0xf0, 0x01, 0x04, 0x24 };      /* [rsp] */
	struct emulate_plan sw, hw;

	(void)state;
	snap.sregs.fs.base = 0x200000;
	snap.regs.rbx = 0x3e;
	code(0x101000, fs_add, sizeof(fs_add));
	plan_both(&sw, &hw);
	assert_int_equal(sw.kind, EMULATE_PLAN_EMULATE);
	assert_int_equal(sw.access.la, 0x20003e);
	snap.regs.rbx = 0x7fffffdffffeull;	/* the last byte is not canonical */
	plan_both(&sw, &hw);
	assert_int_equal(sw.kind, EMULATE_PLAN_NATIVE);
	assert_int_equal(hw.ex.vector, 13);
	snap.regs.rsp = 0x800000000000ull - 2;
	code(0x101000, rsp_add, sizeof(rsp_add));
	plan_both(&sw, &hw);
	assert_int_equal(hw.kind, EMULATE_PLAN_INJECT);
	assert_int_equal(hw.ex.vector, 12);
}

/*
 * An operand half in RAM, half where no RAM is: KVM's MMIO reads all-ones
 * and drops writes. The software path leaves it to KVM; the hardware path
 * does the same itself.
 */
static void mmio_operand(void **state)
{
	uint64_t pde = 0x40000000ull | X86_PTE_P | X86_PTE_RW | X86_PTE_US | X86_PTE_PS;
	struct emulate_plan sw, hw;

	(void)state;
	memcpy(ram + BOOT_PD_ADDR + 8, &pde, 8);	/* 0x200000 -> 1 GiB: no RAM */
	snap.regs.rbx = 0x1ffffe;
	memcpy(ram + 0x1ffffe, "\x10\x20", 2);
	code(0x101000, lock_add_ebx, sizeof(lock_add_ebx));
	plan_both(&sw, &hw);
	assert_int_equal(sw.kind, EMULATE_PLAN_NATIVE);
	assert_int_equal(hw.kind, EMULATE_PLAN_EMULATE);
	assert_int_equal(hw.nparts, 2);
	assert_true(hw.part[0].ram);
	assert_false(hw.part[1].ram);
	assert_int_equal(hw.part[1].gpa, 0x40000000ull);
	emulate_perform(&hw, &snap.mem, &snap.regs);
	/* 0xffff2010 + 1 */
	assert_int_equal(ram[0x1ffffe], 0x11);
	assert_int_equal(ram[0x1fffff], 0x20);
}

/* The guest asked for #AC: injected, except where a fault comes first. */
static void ac_requested(void **state)
{
	struct emulate_plan sw, hw;

	(void)state;
	snap.ac_requested = true;
	snap.regs.rbx = 0x20003e;
	code(0x101000, lock_add_ebx, sizeof(lock_add_ebx));
	plan_both(&sw, &hw);
	assert_int_equal(sw.kind, EMULATE_PLAN_INJECT);
	assert_int_equal(sw.ex.vector, 17);
	assert_int_equal(hw.ex.vector, 17);
	assert_true(sw.ex.has_error_code);
	snap.regs.rbx = RAM - 2;		/* second page not present */
	plan_both(&sw, &hw);
	assert_int_equal(sw.kind, EMULATE_PLAN_NATIVE);
	assert_int_equal(hw.ex.vector, 17);	/* the CPU raised #AC already */
	/* Not a split lock at all: nothing to do on the software path. */
	snap.regs.rbx = 0x200000;
	plan_both(&sw, &hw);
	assert_int_equal(sw.kind, EMULATE_PLAN_NONE);
}

/* A misaligned CMPXCHG16B raises #GP and never locks. */
static void cmpxchg16b_misaligned(void **state)
{
	static const uint8_t c16[] = { 0xf0, 0x48, 0x0f, 0xc7, 0x0b };
	struct emulate_plan sw, hw;

	(void)state;
	snap.regs.rbx = 0x200038;
	code(0x101000, c16, sizeof(c16));
	plan_both(&sw, &hw);
	assert_int_equal(sw.kind, EMULATE_PLAN_NONE);
	assert_int_equal(hw.kind, EMULATE_PLAN_STOP);
}

/* Any instruction's memory operand: the fault the CPU is about to raise. */
static void predicts_faults(void **state)
{
	static const uint8_t load[] = { 0x48, 0x8b, 0x03 };		/* mov rax, [rbx] */
	static const uint8_t store[] = { 0x48, 0x89, 0x03 };		/* mov [rbx], rax */
	static const uint8_t stack[] = { 0x48, 0x8b, 0x04, 0x24 };	/* mov rax, [rsp] */
	static const uint8_t lea[] = { 0x48, 0x8d, 0x03 };		/* lea rax, [rbx] */
	static const uint8_t reg[] = { 0x01, 0xd8 };			/* add eax, ebx */
	static const uint8_t ds_load[] = { 0x8b, 0x03 };		/* mov eax, [ebx] */
	static const uint8_t movdqa[] = { 0x66, 0x0f, 0x6f, 0x03 };	/* movdqa xmm0, [rbx] */
	static const uint8_t lock_add[] = { 0xf0, 0x01, 0x03 };	/* lock add [rbx], eax */
	struct emulate_forecast f;
	uint64_t pde1;

	(void)state;
	snap.regs.rbx = 0x1000;
	assert_int_equal(emulate_predict_fault(&snap, load, sizeof(load), NULL), -1);
	snap.regs.rbx = 0x400000;	/* past the 4 MiB the boot map covers */
	assert_int_equal(emulate_predict_fault(&snap, load, sizeof(load), &f), 14);
	assert_false(f.certain);	/* a walk may set accessed bits on its way */
	assert_int_equal(emulate_predict_segment_fault(&snap, load, sizeof(load), NULL), -1);
	assert_int_equal(f.ex.error_code, 0);	/* not present, read, supervisor */
	snap.regs.rbx = 0x3ffffc;	/* its second page is not present */
	assert_int_equal(emulate_predict_fault(&snap, load, sizeof(load), &f), 14);
	assert_false(f.mmio);
	/* Its first page no RAM (MMIO): KVM emulates it, and queues that #PF itself. */
	snap.mem.size = RAM - 0x1000;
	assert_int_equal(emulate_predict_fault(&snap, load, sizeof(load), &f), 14);
	assert_true(f.mmio);
	snap.regs.rbx = 0x3ff000;
	assert_int_equal(emulate_predict_fault(&snap, load, sizeof(load), &f), -1);
	assert_true(f.mmio);
	snap.regs.rbx = 0x1000;
	assert_int_equal(emulate_predict_fault(&snap, load, sizeof(load), &f), -1);
	assert_false(f.mmio);
	snap.mem.size = RAM;
	snap.regs.rbx = 0x3ffffc;
	snap.regs.rbx = 0x8000000000000000ull;
	assert_int_equal(emulate_predict_fault(&snap, load, sizeof(load), &f), 13);
	assert_true(f.certain);		/* a plain MOV: nothing else can come first */
	f.certain = false;
	assert_int_equal(emulate_predict_segment_fault(&snap, load, sizeof(load), &f), 13);
	assert_true(f.certain);
	assert_true(f.ex.has_error_code);
	assert_int_equal(f.ex.error_code, 0);
	assert_int_equal(emulate_predict_fault(&snap, movdqa, sizeof(movdqa), &f), 13);
	assert_false(f.certain);	/* SSE: #NM or #UD may come first */
	assert_int_equal(emulate_predict_fault(&snap, lock_add, sizeof(lock_add), &f), 13);
	assert_false(f.certain);	/* locked: the split-lock check's business */
	assert_int_equal(emulate_predict_fault(&snap, lea, sizeof(lea), NULL), -1);	/* no access */
	assert_int_equal(emulate_predict_fault(&snap, reg, sizeof(reg), NULL), -1);
	snap.regs.rsp = 0x800000000000ull;
	assert_int_equal(emulate_predict_fault(&snap, stack, sizeof(stack), NULL), 12);
	/* A read-only page faults the store only (CR0.WP), never the load. */
	memcpy(&pde1, ram + BOOT_PD_ADDR + 8, 8);
	pde1 &= ~(uint64_t)X86_PTE_RW;
	memcpy(ram + BOOT_PD_ADDR + 8, &pde1, 8);
	snap.sregs.cr0 |= X86_CR0_WP;
	snap.regs.rbx = 0x200000;
	assert_int_equal(emulate_predict_fault(&snap, load, sizeof(load), NULL), -1);
	assert_int_equal(emulate_predict_fault(&snap, store, sizeof(store), NULL), 14);
	/* Compatibility mode: past DS's limit is #GP. */
	compat_mode();
	snap.sregs.ds.limit = 0xfff;
	snap.sregs.ds.g = 0;
	snap.regs.rbx = 0xffe;
	assert_int_equal(emulate_predict_fault(&snap, ds_load, sizeof(ds_load), NULL), 13);
	snap.regs.rbx = 0xffc;
	assert_int_equal(emulate_predict_fault(&snap, ds_load, sizeof(ds_load), NULL), -1);
	/*
	 * Through CS (seed 18 record 165): a readable code segment lets CMP
	 * read, a write is #GP, and so is a read of execute-only code.
	 */
	{
		static const uint8_t cs_cmp[] = { 0x2e, 0x39, 0x03 };		/* cmp cs:[ebx], eax */
		static const uint8_t cs_store[] = { 0x2e, 0x89, 0x03 };	/* mov cs:[ebx], eax */

		snap.regs.rbx = 0x1000;
		snap.sregs.cs.type = 0xb;	/* execute/read, accessed */
		snap.sregs.cs.limit = 0xffffffff;
		assert_int_equal(emulate_predict_segment_fault(&snap, cs_cmp, sizeof(cs_cmp), NULL), -1);
		assert_int_equal(emulate_predict_segment_fault(&snap, cs_store, sizeof(cs_store), &f), 13);
		assert_true(f.certain);
		snap.sregs.cs.type = 0xd;	/* execute-only, conforming: bit 2 is no expand-down */
		assert_int_equal(emulate_predict_segment_fault(&snap, cs_cmp, sizeof(cs_cmp), NULL), 13);
		snap.sregs.cs.type = 0xf;	/* conforming and readable */
		assert_int_equal(emulate_predict_segment_fault(&snap, cs_cmp, sizeof(cs_cmp), NULL), -1);
	}
}

/*
 * Real mode keeps the limits the segment caches hold: with DS flat from
 * protected mode ("big real mode", as the generator's real-mode records
 * run) a 32-bit address reaches 2 MiB; with a real-mode limit it is
 * #GP, which real mode delivers without an error code.
 */
static void real_mode_cached_limits(void **state)
{
	static const uint8_t add[] = { 0x67, 0x66, 0xf0, 0x83, 0x03, 0x01 };	/* lock addl $1, (%ebx) */
	struct emulate_plan sw, hw;

	(void)state;
	snap.sregs.cr0 &= ~(uint64_t)(X86_CR0_PE | X86_CR0_PG);
	snap.sregs.efer = 0;
	snap.sregs.cs = (struct kvm_segment){ .base = 0x10000, .limit = 0xffff, .selector = 0x1000,
					      .type = 11, .present = 1, .s = 1 };
	snap.sregs.ds = (struct kvm_segment){ .limit = 0xffffffff, .selector = 0x10, .type = 3,
					      .present = 1, .s = 1, .db = 1, .g = 1 };
	code(0x11000, add, sizeof(add));
	snap.regs.rip = 0x1000;
	snap.regs.rbx = 0x20003e;
	plan_both(&sw, &hw);
	assert_int_equal(sw.kind, EMULATE_PLAN_EMULATE);
	assert_int_equal(sw.access.la, 0x20003e);
	assert_int_equal(sw.access.size, 4);
	snap.sregs.ds.limit = 0xffff;
	plan_both(&sw, &hw);
	assert_int_equal(hw.kind, EMULATE_PLAN_INJECT);
	assert_int_equal(hw.ex.vector, 13);
	assert_false(hw.ex.has_error_code);
	/* The limit is the last byte's offset: a dword ending on it is inside. */
	snap.sregs.ds.limit = 0x200041;
	plan_both(&sw, &hw);
	assert_int_equal(sw.kind, EMULATE_PLAN_EMULATE);
	snap.sregs.ds.limit = 0x200040;
	plan_both(&sw, &hw);
	assert_int_equal(hw.ex.vector, 13);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(matches_host_cpu, setup, teardown),
		cmocka_unit_test(not_locked_rmw),
		cmocka_unit_test(prefilter_has_no_false_negatives),
		cmocka_unit_test(operand_addresses),
		cmocka_unit_test(line_rule),
		cmocka_unit_test(cpu_modes),
		cmocka_unit_test_setup_teardown(fetch_stops_at_15_bytes, setup_guest, teardown_guest),
		cmocka_unit_test_setup_teardown(operand_across_4gib, setup_guest, teardown_guest),
		cmocka_unit_test_setup_teardown(fetch_to_cs_limit, setup_guest, teardown_guest),
		cmocka_unit_test_setup_teardown(compat_segment_wraps, setup_guest, teardown_guest),
		cmocka_unit_test(wraps),
		cmocka_unit_test_setup_teardown(compat_segment_base, setup_guest, teardown_guest),
		cmocka_unit_test_setup_teardown(compat_has_no_rex, setup_guest, teardown_guest),
		cmocka_unit_test_setup_teardown(compat_segment_faults, setup_guest, teardown_guest),
		cmocka_unit_test_setup_teardown(real_mode_cached_limits, setup_guest, teardown_guest),
		cmocka_unit_test_setup_teardown(long_mode_faults, setup_guest, teardown_guest),
		cmocka_unit_test_setup_teardown(mmio_operand, setup_guest, teardown_guest),
		cmocka_unit_test_setup_teardown(ac_requested, setup_guest, teardown_guest),
		cmocka_unit_test_setup_teardown(cmpxchg16b_misaligned, setup_guest, teardown_guest),
		cmocka_unit_test_setup_teardown(predicts_faults, setup_guest, teardown_guest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
