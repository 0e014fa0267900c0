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

#include <string.h>
#include <sys/mman.h>

#include "decode.h"
#include "emulate.h"

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
	enum sl_op op;
	unsigned size;
	bool bit_reg;        /* BT* with a register offset: keep it small */
};

#define B(...) { __VA_ARGS__ }, sizeof((uint8_t[]){ __VA_ARGS__ })

static const struct insn_case cases[] = {
	{ "lock add byte [rdi], cl", B(0xf0, 0x00, 0x0f), SL_ADD, 1, false },
	{ "lock add byte [rdi], dh", B(0xf0, 0x00, 0x37), SL_ADD, 1, false },
	{ "lock add word [rdi], cx", B(0x66, 0xf0, 0x01, 0x0f), SL_ADD, 2, false },
	{ "lock add dword [rdi], esi", B(0xf0, 0x01, 0x37), SL_ADD, 4, false },
	{ "lock add qword [rdi], rsi", B(0xf0, 0x48, 0x01, 0x37), SL_ADD, 8, false },
	{ "lock add dword [rdi], -128", B(0xf0, 0x83, 0x07, 0x80), SL_ADD, 4, false },
	{ "lock adc dword [rdi], ecx", B(0xf0, 0x11, 0x0f), SL_ADC, 4, false },
	{ "lock adc byte [rdi], 0x7f", B(0xf0, 0x80, 0x17, 0x7f), SL_ADC, 1, false },
	{ "lock and qword [rdi], rbx", B(0xf0, 0x48, 0x21, 0x1f), SL_AND, 8, false },
	{ "lock or byte [rdi], bl", B(0xf0, 0x08, 0x1f), SL_OR, 1, false },
	{ "lock or word [rdi], 0x8001", B(0x66, 0xf0, 0x81, 0x0f, 0x01, 0x80), SL_OR, 2, false },
	{ "lock sbb word [rdi], dx", B(0x66, 0xf0, 0x19, 0x17), SL_SBB, 2, false },
	{ "lock sub qword [rdi], rax", B(0xf0, 0x48, 0x29, 0x07), SL_SUB, 8, false },
	{ "lock sub qword [rdi], imm32", B(0xf0, 0x48, 0x81, 0x2f, 0x78, 0x56, 0x34, 0x92), SL_SUB, 8, false },
	{ "lock xor dword [rdi], ebx", B(0xf0, 0x31, 0x1f), SL_XOR, 4, false },
	{ "lock xor byte [rdi], 0xa5", B(0xf0, 0x80, 0x37, 0xa5), SL_XOR, 1, false },
	{ "lock not dword [rdi]", B(0xf0, 0xf7, 0x17), SL_NOT, 4, false },
	{ "lock not byte [rdi]", B(0xf0, 0xf6, 0x17), SL_NOT, 1, false },
	{ "lock neg qword [rdi]", B(0xf0, 0x48, 0xf7, 0x1f), SL_NEG, 8, false },
	{ "lock neg byte [rdi]", B(0xf0, 0xf6, 0x1f), SL_NEG, 1, false },
	{ "lock inc word [rdi]", B(0x66, 0xf0, 0xff, 0x07), SL_INC, 2, false },
	{ "lock inc byte [rdi]", B(0xf0, 0xfe, 0x07), SL_INC, 1, false },
	{ "lock dec dword [rdi]", B(0xf0, 0xff, 0x0f), SL_DEC, 4, false },
	{ "lock dec qword [rdi]", B(0xf0, 0x48, 0xff, 0x0f), SL_DEC, 8, false },
	{ "xchg dword [rdi], ecx", B(0x87, 0x0f), SL_XCHG, 4, false },
	{ "xchg byte [rdi], al", B(0x86, 0x07), SL_XCHG, 1, false },
	{ "xchg byte [rdi], bh", B(0x86, 0x3f), SL_XCHG, 1, false },
	{ "xchg word [rdi], si", B(0x66, 0x87, 0x37), SL_XCHG, 2, false },
	{ "lock xchg qword [rdi], rsi", B(0xf0, 0x48, 0x87, 0x37), SL_XCHG, 8, false },
	{ "lock xadd dword [rdi], esi", B(0xf0, 0x0f, 0xc1, 0x37), SL_XADD, 4, false },
	{ "lock xadd byte [rdi], ah", B(0xf0, 0x0f, 0xc0, 0x27), SL_XADD, 1, false },
	{ "lock xadd word [rdi], cx", B(0x66, 0xf0, 0x0f, 0xc1, 0x0f), SL_XADD, 2, false },
	{ "lock xadd qword [rdi], rbx", B(0xf0, 0x48, 0x0f, 0xc1, 0x1f), SL_XADD, 8, false },
	{ "lock cmpxchg dword [rdi], ecx", B(0xf0, 0x0f, 0xb1, 0x0f), SL_CMPXCHG, 4, false },
	{ "lock cmpxchg byte [rdi], bl", B(0xf0, 0x0f, 0xb0, 0x1f), SL_CMPXCHG, 1, false },
	{ "lock cmpxchg word [rdi], dx", B(0x66, 0xf0, 0x0f, 0xb1, 0x17), SL_CMPXCHG, 2, false },
	{ "lock cmpxchg qword [rdi], rsi", B(0xf0, 0x48, 0x0f, 0xb1, 0x37), SL_CMPXCHG, 8, false },
	{ "lock cmpxchg8b [rdi]", B(0xf0, 0x0f, 0xc7, 0x0f), SL_CMPXCHG8B, 8, false },
	{ "lock cmpxchg16b [rdi]", B(0xf0, 0x48, 0x0f, 0xc7, 0x0f), SL_CMPXCHG16B, 16, false },
	{ "lock bts dword [rdi], 5", B(0xf0, 0x0f, 0xba, 0x2f, 0x05), SL_BTS, 4, false },
	{ "lock btr qword [rdi], 63", B(0xf0, 0x48, 0x0f, 0xba, 0x37, 0x3f), SL_BTR, 8, false },
	{ "lock btc word [rdi], 17", B(0x66, 0xf0, 0x0f, 0xba, 0x3f, 0x11), SL_BTC, 2, false },
	{ "lock bts dword [rdi], ecx", B(0xf0, 0x0f, 0xab, 0x0f), SL_BTS, 4, true },
	{ "lock btr qword [rdi], rdx", B(0xf0, 0x48, 0x0f, 0xb3, 0x17), SL_BTR, 8, true },
	{ "lock btc word [rdi], si", B(0x66, 0xf0, 0x0f, 0xbb, 0x37), SL_BTC, 2, true },
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
#define ARITH 0x8d5ull

static void random_ctx(struct ctx *c, const struct insn_case *ic, uint8_t *mem)
{
	c->rax = rnd();
	c->rbx = rnd();
	c->rcx = rnd();
	c->rdx = rnd();
	c->rsi = rnd();
	/* 0x202: IF as the host has it, plus random arithmetic flags. */
	c->rflags = 0x202 | (rnd() & ARITH);
	if (ic->bit_reg) {
		/* A signed offset that stays within +-AREA/2 bytes of [rdi]. */
		int64_t bit = (int64_t)(rnd() % (AREA * 8)) - AREA * 4;

		c->rcx = c->rdx = c->rsi = (uint64_t)bit;
	}
	for (unsigned i = 0; i < 2 * AREA; i++)
		mem[i] = (uint8_t)rnd();
	/* Half the compare-exchanges should succeed. */
	if ((ic->op == SL_CMPXCHG || ic->op == SL_CMPXCHG8B || ic->op == SL_CMPXCHG16B) &&
	    (rnd() & 1)) {
		memcpy(&c->rax, mem + AREA, 8);
		memcpy(&c->rdx, mem + AREA + 8, 8);
	}
}

static void one_run(const struct insn_case *ic, const struct sl_insn *si)
{
	uint8_t native_mem[2 * AREA] __attribute__((aligned(16)));
	uint8_t emu_mem[2 * AREA] __attribute__((aligned(16)));
	uint8_t op[16] __attribute__((aligned(16)));
	struct ctx c, n;
	struct kvm_regs r;
	struct sl_access a;
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
	a = sl_operand(si, &r, 0, 0);
	off = (int64_t)(a.la - r.rdi);
	assert_true(off >= -AREA && off + a.size <= AREA);
	assert_int_equal(a.size, ic->size);
	memcpy(op, emu_mem + AREA + off, a.size);
	sl_execute(si, &r, op);
	memcpy(emu_mem + AREA + off, op, a.size);

	if (memcmp(native_mem, emu_mem, sizeof(emu_mem)))
		fail_msg("%s: memory differs", ic->what);
	if (n.rax != r.rax || n.rbx != r.rbx || n.rcx != r.rcx || n.rdx != r.rdx ||
	    n.rsi != r.rsi)
		fail_msg("%s: registers differ: rax %llx/%llx rbx %llx/%llx rcx %llx/%llx rdx %llx/%llx rsi %llx/%llx",
			 ic->what, (unsigned long long)n.rax, r.rax, (unsigned long long)n.rbx, r.rbx,
			 (unsigned long long)n.rcx, r.rcx, (unsigned long long)n.rdx, r.rdx,
			 (unsigned long long)n.rsi, r.rsi);
	if ((n.rflags & ARITH) != (r.rflags & ARITH))
		fail_msg("%s: flags 0x%llx natively, 0x%llx emulated (from 0x%llx)", ic->what,
			 (unsigned long long)(n.rflags & ARITH), r.rflags & ARITH,
			 (unsigned long long)c.rflags);
	assert_int_equal(r.rip, 0x1000 + ic->len);
}

static void matches_host_cpu(void **state)
{
	(void)state;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const struct insn_case *ic = &cases[k];
		struct sl_insn si;

		if (sl_decode(ic->bytes, ic->len, &si))
			fail_msg("%s: not decoded as a locked RMW", ic->what);
		assert_int_equal(si.op, ic->op);
		assert_int_equal(si.size, ic->size);
		assert_int_equal(si.length, ic->len);
		assert_true(sl_maybe_locked(ic->bytes, ic->len));
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
	struct sl_insn si;

	(void)state;
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		assert_int_equal(sl_decode(others[i].b, others[i].len, &si), -1);
	assert_false(sl_maybe_locked(others[0].b, others[0].len));
	assert_false(sl_maybe_locked(others[1].b, others[1].len));
	assert_false(sl_maybe_locked(others[2].b, others[2].len));
}

/* The cheap filter may say yes too often, never too rarely. */
static void prefilter_has_no_false_negatives(void **state)
{
	static const uint8_t prefixes[] = { 0xf0, 0x66, 0x67, 0x64, 0x65, 0x48, 0x4c, 0x40, 0xf3 };
	struct sl_insn si;
	unsigned decoded = 0;

	(void)state;
	for (int i = 0; i < 200000; i++) {
		uint8_t b[SL_INSN_MAX];
		unsigned np = rnd() % 4;

		for (unsigned j = 0; j < sizeof(b); j++)
			b[j] = (uint8_t)rnd();
		for (unsigned j = 0; j < np; j++)
			b[j] = prefixes[rnd() % sizeof(prefixes)];
		if (sl_decode(b, sizeof(b), &si) == 0) {
			decoded++;
			if (!sl_maybe_locked(b, sizeof(b)))
				fail_msg("prefilter rejects a locked %s", sl_op_name(si.op));
		}
	}
	assert_true(decoded > 100);
}

static void operand_addresses(void **state)
{
	struct kvm_regs r = { .rax = 0x1000, .rbx = 0x10, .rip = 0x200000, .rdi = 0x1ffffffff0ull };
	struct sl_insn si;
	struct sl_access a;
	static const uint8_t sib[] = { 0xf0, 0x01, 0x4c, 0x98, 0x10 };     /* [rax+rbx*4+0x10] */
	static const uint8_t riprel[] = { 0xf0, 0x01, 0x0d, 0x00, 0x01, 0x00, 0x00 }; /* [rip+0x100] */
	static const uint8_t fs[] = { 0x64, 0xf0, 0x01, 0x0f };            /* fs:[rdi] */
	static const uint8_t a32[] = { 0x67, 0xf0, 0x01, 0x0f };           /* [edi] */
	static const uint8_t bts_neg[] = { 0xf0, 0x0f, 0xab, 0x0f };       /* bts [rdi], ecx */

	(void)state;
	assert_int_equal(sl_decode(sib, sizeof(sib), &si), 0);
	a = sl_operand(&si, &r, 0, 0);
	assert_int_equal(a.la, 0x1000 + 0x10 * 4 + 0x10);
	assert_int_equal(sl_decode(riprel, sizeof(riprel), &si), 0);
	a = sl_operand(&si, &r, 0, 0);
	assert_int_equal(a.la, 0x200000 + sizeof(riprel) + 0x100);
	assert_int_equal(sl_decode(fs, sizeof(fs), &si), 0);
	a = sl_operand(&si, &r, 0x7000000, 0x9000000);
	assert_int_equal(a.la, 0x1ffffffff0ull + 0x7000000);
	assert_int_equal(sl_decode(a32, sizeof(a32), &si), 0);
	a = sl_operand(&si, &r, 0, 0);
	assert_int_equal(a.la, 0xfffffff0ull);
	/* Bit -1 is bit 31 of the dword below [rdi]. */
	r.rcx = (uint64_t)-1;
	assert_int_equal(sl_decode(bts_neg, sizeof(bts_neg), &si), 0);
	a = sl_operand(&si, &r, 0, 0);
	assert_int_equal(a.la, 0x1ffffffff0ull - 4);
	r.rcx = 64;
	a = sl_operand(&si, &r, 0, 0);
	assert_int_equal(a.la, 0x1ffffffff0ull + 8);
	/* The most negative offsets, which must not overflow on the way. */
	r.rcx = 0x80000000u;			/* ecx = INT32_MIN: -2^28 bytes */
	a = sl_operand(&si, &r, 0, 0);
	assert_int_equal(a.la, 0x1ffffffff0ull - (1ull << 28));
	{
		static const uint8_t bts64[] = { 0xf0, 0x48, 0x0f, 0xab, 0x07 };  /* bts [rdi], rax */

		assert_int_equal(sl_decode(bts64, sizeof(bts64), &si), 0);
		r.rax = 0x8000000000000000ull;
		r.rdi = 0x100000;
		a = sl_operand(&si, &r, 0, 0);
		assert_int_equal(a.la, 0xf000000000100000ull);
		r.rax = 0x8000000000000018ull;
		a = sl_operand(&si, &r, 0, 0);
		assert_int_equal(a.la, 0xf000000000100000ull);
	}
}

static void line_rule(void **state)
{
	(void)state;
	assert_false(sl_crosses_line(0, 8));
	assert_false(sl_crosses_line(56, 8));
	assert_true(sl_crosses_line(57, 8));
	assert_true(sl_crosses_line(63, 2));
	assert_false(sl_crosses_line(63, 1));
	assert_false(sl_crosses_line(48, 16));
	assert_true(sl_crosses_line(56, 16));
	assert_true(sl_crosses_line(0x1000 - 2, 4));	/* page and line */
	assert_false(sl_crosses_line(0x1000, 4));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(matches_host_cpu, setup, teardown),
		cmocka_unit_test(not_locked_rmw),
		cmocka_unit_test(prefilter_has_no_false_negatives),
		cmocka_unit_test(operand_addresses),
		cmocka_unit_test(line_rule),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
