/* SPDX-License-Identifier: MIT */
/*
 * The decoder glue in each CPU mode: default operand and address sizes,
 * REX only in 64-bit mode, default segments, truncated input, and a first
 * use from several threads at once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"

static struct decode_insn dec(enum decode_mode mode, const uint8_t *b, size_t n, int want)
{
	struct decode_insn si;

	memset(&si, 0, sizeof(si));
	assert_int_equal(decode_insn(mode, b, n, &si), want);
	return si;
}

#define DEC(mode, want, ...) \
	dec(mode, (const uint8_t[]){ __VA_ARGS__ }, sizeof((const uint8_t[]){ __VA_ARGS__ }), want)

static void sizes_per_mode(void **state)
{
	struct decode_insn si;

	(void)state;
	/* lock add [ebx]/[rbx]/[bp+di], eax/ax */
	si = DEC(DECODE_MODE_64, 0, 0xf0, 0x01, 0x03);
	assert_int_equal(si.size, 4);
	assert_int_equal(si.addr_size, 8);
	assert_int_equal(si.mode, DECODE_MODE_64);
	si = DEC(DECODE_MODE_32, 0, 0xf0, 0x01, 0x03);
	assert_int_equal(si.size, 4);
	assert_int_equal(si.addr_size, 4);
	si = DEC(DECODE_MODE_16, 0, 0xf0, 0x01, 0x03);
	assert_int_equal(si.size, 2);
	assert_int_equal(si.addr_size, 2);
	/* 0x66 and 0x67 flip the defaults both ways. */
	si = DEC(DECODE_MODE_16, 0, 0x66, 0x67, 0xf0, 0x01, 0x03);
	assert_int_equal(si.size, 4);
	assert_int_equal(si.addr_size, 4);
	si = DEC(DECODE_MODE_32, 0, 0x67, 0xf0, 0x01, 0x07);	/* [bx] */
	assert_int_equal(si.addr_size, 2);
	assert_int_equal(si.base, 3);
	si = DEC(DECODE_MODE_64, 0, 0x67, 0xf0, 0x01, 0x07);	/* [edi] */
	assert_int_equal(si.addr_size, 4);
	assert_int_equal(si.base, 7);
}

/* decode_rmw(): the same instructions with or without LOCK; decode_insn() locked only. */
static void rmw_without_lock(void **state)
{
	static const uint8_t cx16[] = { 0x65, 0x48, 0x0f, 0xc7, 0x0f };	/* cmpxchg16b %gs:(%rdi) */
	static const uint8_t add[] = { 0x01, 0x37 };			/* add %esi, (%rdi) */
	static const uint8_t mov[] = { 0x89, 0x37 };			/* mov %esi, (%rdi) */
	struct decode_insn i;

	(void)state;
	assert_int_equal(decode_insn(DECODE_MODE_64, cx16, sizeof(cx16), &i), -1);
	assert_int_equal(decode_rmw(DECODE_MODE_64, cx16, sizeof(cx16), &i), 0);
	assert_int_equal(i.op, DECODE_CMPXCHG16B);
	assert_int_equal(i.size, 16);
	assert_int_equal(i.seg, DECODE_SEG_GS);
	assert_false(i.locked_by_prefix);
	assert_int_equal(decode_rmw(DECODE_MODE_64, add, sizeof(add), &i), 0);
	assert_int_equal(i.op, DECODE_ADD);
	assert_int_equal(decode_rmw(DECODE_MODE_64, mov, sizeof(mov), &i), -1);
	assert_int_equal(decode_rmw(DECODE_MODE_64, cx16, 3, &i), DECODE_TRUNCATED);
}

static void rex_only_in_64_bit_mode(void **state)
{
	static const uint8_t rex_add[] = { 0xf0, 0x48, 0x01, 0x03 };
	static const uint8_t rex_first[] = { 0x48, 0xf0, 0x01, 0x03 };
	static const uint8_t c16b[] = { 0xf0, 0x48, 0x0f, 0xc7, 0x0b };
	static const uint8_t xchg_mem[] = { 0x87, 0x03 }, osz_lock[] = { 0x66, 0xf0 };
	struct decode_insn si;

	(void)state;
	si = DEC(DECODE_MODE_64, 0, 0xf0, 0x48, 0x01, 0x03);
	assert_int_equal(si.size, 8);
	/* Elsewhere 0x48 is DEC EAX: LOCK DEC reg is #UD, not a split lock. */
	assert_int_equal(decode_insn(DECODE_MODE_32, rex_add, sizeof(rex_add), &si), -1);
	assert_int_equal(decode_insn(DECODE_MODE_16, rex_add, sizeof(rex_add), &si), -1);
	assert_int_equal(decode_insn(DECODE_MODE_32, c16b, sizeof(c16b), &si), -1);
	/* The cheap filter agrees: a leading 0x48 is an opcode there. */
	assert_true(decode_maybe_locked(DECODE_MODE_64, rex_first, sizeof(rex_first)));
	assert_false(decode_maybe_locked(DECODE_MODE_32, rex_first, sizeof(rex_first)));
	assert_true(decode_maybe_locked(DECODE_MODE_32, rex_add, sizeof(rex_add)));
	/* XCHG with memory locks; its ModR/M must be among the bytes read, not past them. */
	assert_true(decode_maybe_locked(DECODE_MODE_64, xchg_mem, 2));
	assert_false(decode_maybe_locked(DECODE_MODE_64, xchg_mem, 1));
	/* Nor a LOCK past the bytes read. */
	assert_false(decode_maybe_locked(DECODE_MODE_64, osz_lock, 1));
	assert_true(decode_maybe_locked(DECODE_MODE_64, osz_lock, 2));
}

static void segments(void **state)
{
	struct decode_insn si;

	(void)state;
	assert_int_equal(DEC(DECODE_MODE_32, 0, 0xf0, 0x01, 0x03).seg, DECODE_SEG_DS);
	assert_int_equal(DEC(DECODE_MODE_32, 0, 0xf0, 0x01, 0x45, 0x00).seg, DECODE_SEG_SS);	/* [ebp] */
	assert_int_equal(DEC(DECODE_MODE_64, 0, 0xf0, 0x01, 0x04, 0x24).seg, DECODE_SEG_SS);	/* [rsp] */
	assert_int_equal(DEC(DECODE_MODE_16, 0, 0xf0, 0x01, 0x02).seg, DECODE_SEG_SS);	/* [bp+si] */
	assert_int_equal(DEC(DECODE_MODE_32, 0, 0x26, 0xf0, 0x01, 0x03).seg, DECODE_SEG_ES);
	assert_int_equal(DEC(DECODE_MODE_32, 0, 0x2e, 0xf0, 0x01, 0x03).seg, DECODE_SEG_CS);
	assert_int_equal(DEC(DECODE_MODE_64, 0, 0x65, 0xf0, 0x01, 0x03).seg, DECODE_SEG_GS);
	si = DEC(DECODE_MODE_64, 0, 0xf0, 0x01, 0x05, 0, 0, 0, 0);
	assert_int_equal(si.base, DECODE_REG_RIP);
	/* No RIP-relative addressing outside 64-bit mode: disp32 alone. */
	si = DEC(DECODE_MODE_32, 0, 0xf0, 0x01, 0x05, 0x10, 0, 0, 0);
	assert_int_equal(si.base, DECODE_REG_NONE);
	assert_int_equal(si.disp, 0x10);
}

static void truncated(void **state)
{
	static const uint8_t xadd[] = { 0xf0, 0x0f, 0xc1, 0x07 };
	struct decode_insn si;

	(void)state;
	for (size_t n = 0; n < sizeof(xadd); n++)
		assert_int_equal(decode_insn(DECODE_MODE_64, xadd, n, &si), DECODE_TRUNCATED);
	assert_int_equal(decode_insn(DECODE_MODE_64, xadd, sizeof(xadd), &si), 0);
	assert_int_equal(decode_insn(DECODE_MODE_64, (const uint8_t[]){ 0x90 }, 1, &si), -1);
}

static void *decode_many(void *arg)
{
	static const uint8_t xadd[] = { 0xf0, 0x0f, 0xc1, 0x07 };
	struct decode_insn si;
	long bad = 0;

	(void)arg;
	for (int i = 0; i < 1000; i++)
		bad += decode_insn((enum decode_mode)(i % 3), xadd, sizeof(xadd), &si) != 0 ||
		       si.op != DECODE_XADD;
	return (void *)bad;
}

/* The decoders are set up once, whichever vCPU thread decodes first. */
static void first_use_from_threads(void **state)
{
	pthread_t t[4];

	(void)state;
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, decode_many, NULL), 0);
	for (int i = 0; i < 4; i++) {
		void *bad;

		assert_int_equal(pthread_join(t[i], &bad), 0);
		assert_null(bad);
	}
}

static unsigned len_of(enum decode_mode mode, const uint8_t *b, size_t n, bool *falls)
{
	return decode_length(mode, b, n, falls);
}

#define LEN(mode, falls, ...) \
	len_of(mode, (const uint8_t[]){ __VA_ARGS__ }, sizeof((const uint8_t[]){ __VA_ARGS__ }), falls)

/*
 * Asked again, decode_length() answers from decode_view()'s memo as it
 * did the first time, and afresh when the bytes or the mode change.
 */
static void lengths_remembered(void **state)
{
	static const uint8_t add[] = { 0x48, 0x01, 0xd8, 0x90 };	/* add rax, rbx */
	static const uint8_t jmp[] = { 0xeb, 0xfe, 0x90, 0x90 };	/* jmp $ */
	static const uint8_t rex_inc[] = { 0x48, 0xff, 0xc0, 0x90 };	/* 64-bit: inc rax; 32-bit: dec eax */
	bool falls = false;

	(void)state;
	assert_int_equal(decode_length(DECODE_MODE_64, add, sizeof(add), &falls), 3);
	assert_true(falls);
	falls = false;
	assert_int_equal(decode_length(DECODE_MODE_64, add, sizeof(add), &falls), 3);
	assert_true(falls);
	/* Rewritten code. */
	assert_int_equal(decode_length(DECODE_MODE_64, jmp, sizeof(jmp), &falls), 2);
	assert_false(falls);
	/* The same bytes in another mode. */
	assert_int_equal(decode_length(DECODE_MODE_64, rex_inc, sizeof(rex_inc), &falls), 3);
	assert_int_equal(decode_length(DECODE_MODE_32, rex_inc, sizeof(rex_inc), &falls), 1);
	/* Fewer bytes than the remembered length: decoded again, and short. */
	assert_int_equal(decode_length(DECODE_MODE_64, add, 2, &falls), 0);
	assert_false(falls);
}

/* Any instruction's length, and whether the next one is right behind it. */
static void lengths(void **state)
{
	bool falls;

	(void)state;
	/* mov (%r15), %rax; movabs $imm64, %r15; a split lock */
	assert_int_equal(LEN(DECODE_MODE_64, &falls, 0x49, 0x8b, 0x07), 3);
	assert_true(falls);
	assert_int_equal(LEN(DECODE_MODE_64, &falls, 0x49, 0xbf, 0, 0, 0, 0, 0, 0, 0, 0x80), 10);
	assert_true(falls);
	assert_int_equal(LEN(DECODE_MODE_64, &falls, 0xf0, 0x83, 0x05, 0x10, 0x93, 0, 0, 0x01), 8);
	assert_true(falls);
	/* 66 changes the immediate's size in 16- and 32-bit code alike. */
	assert_int_equal(LEN(DECODE_MODE_32, &falls, 0x66, 0x05, 0x34, 0x12), 4);
	assert_int_equal(LEN(DECODE_MODE_16, &falls, 0x05, 0x34, 0x12), 3);
	assert_int_equal(LEN(DECODE_MODE_16, &falls, 0x66, 0x05, 0x78, 0x56, 0x34, 0x12), 6);
	/* 0x40 is INC EAX outside 64-bit mode, a REX prefix inside. */
	assert_int_equal(LEN(DECODE_MODE_32, &falls, 0x40, 0x90), 1);
	assert_int_equal(LEN(DECODE_MODE_64, &falls, 0x40, 0x90), 2);
	/* wrmsr, ud2 (always faults: the CPU decides where it goes), cpuid */
	assert_int_equal(LEN(DECODE_MODE_64, &falls, 0x0f, 0x30), 2);
	assert_true(falls);
	assert_int_equal(LEN(DECODE_MODE_64, &falls, 0x0f, 0x0b), 2);
	assert_true(falls);
	/* Branches, calls, returns, INT n, SYSCALL, XBEGIN, VMCALL: elsewhere. */
	LEN(DECODE_MODE_64, &falls, 0xeb, 0xfe);
	assert_false(falls);
	LEN(DECODE_MODE_64, &falls, 0x74, 0x00);
	assert_false(falls);
	LEN(DECODE_MODE_64, &falls, 0xff, 0x25, 0, 0, 0, 0);
	assert_false(falls);
	LEN(DECODE_MODE_64, &falls, 0xe8, 0, 0, 0, 0);
	assert_false(falls);
	LEN(DECODE_MODE_64, &falls, 0xc3);
	assert_false(falls);
	LEN(DECODE_MODE_64, &falls, 0xcd, 0x80);
	assert_false(falls);
	LEN(DECODE_MODE_64, &falls, 0x0f, 0x05);
	assert_false(falls);
	LEN(DECODE_MODE_64, &falls, 0xc7, 0xf8, 0, 0, 0, 0);
	assert_false(falls);
	LEN(DECODE_MODE_64, &falls, 0x0f, 0x01, 0xc1);
	assert_false(falls);
	/* Cut short, or no instruction at all: unknown. */
	assert_int_equal(LEN(DECODE_MODE_64, &falls, 0x49, 0xbf, 0, 0), 0);
	assert_false(falls);
	assert_int_equal(LEN(DECODE_MODE_64, &falls, 0x06), 0);		/* PUSH ES: #UD in 64-bit mode */
	assert_false(falls);
}

#define LOCK_UD(mode, ...) \
	decode_lock_faults(mode, (const uint8_t[]){ __VA_ARGS__ }, sizeof((const uint8_t[]){ __VA_ARGS__ }))

/* A LOCK the instruction does not take: #UD, certain only with all its bytes there. */
static void lock_faults(void **state)
{
	(void)state;
	/* LOCK CMP with XACQUIRE (seed 38 record 384), LOCK UD2, LOCK MOV, LOCK ADD to a register */
	assert_true(LOCK_UD(DECODE_MODE_32, 0x66, 0xf0, 0xf2, 0x81, 0xba, 0x44, 0xf5, 0xff, 0xff,
			    0x19, 0x3f));
	assert_true(LOCK_UD(DECODE_MODE_32, 0xf0, 0x0f, 0x0b));
	assert_true(LOCK_UD(DECODE_MODE_64, 0xf0, 0x48, 0x89, 0x08));
	assert_true(LOCK_UD(DECODE_MODE_16, 0xf0, 0x01, 0xc0));
	assert_true(LOCK_UD(DECODE_MODE_64, 0xf0, 0x90));
	/* Lockable with a memory destination, or no LOCK at all */
	assert_false(LOCK_UD(DECODE_MODE_64, 0xf0, 0x01, 0x08));
	assert_false(LOCK_UD(DECODE_MODE_32, 0xf2, 0xf0, 0x0f, 0xc7, 0x08));
	assert_false(LOCK_UD(DECODE_MODE_64, 0x0f, 0x0b));
	/* The immediate is not there: the fetch may fault first */
	assert_false(LOCK_UD(DECODE_MODE_32, 0xf0, 0x81, 0x3a, 0x44, 0x00));
	/* AMD's CPUs take LOCK MOV CR0 as MOV CR8 */
	assert_false(LOCK_UD(DECODE_MODE_32, 0xf0, 0x0f, 0x22, 0xc0));
	assert_false(LOCK_UD(DECODE_MODE_32, 0x66, 0xf0, 0x0f, 0x20, 0xc0));
	/* Past 15 bytes with its prefixes: #GP, not #UD */
	assert_false(LOCK_UD(DECODE_MODE_64, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0,
			     0x48, 0x81, 0x38, 0x01, 0x02, 0x03, 0x04));
	assert_true(LOCK_UD(DECODE_MODE_64, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0xf0, 0x48,
			    0x81, 0x38, 0x01, 0x02, 0x03, 0x04));
}

#define BRANCH(mode, ip, br, ...) \
	decode_branch(mode, (const uint8_t[]){ __VA_ARGS__ }, \
		      sizeof((const uint8_t[]){ __VA_ARGS__ }), ip, br)

/* Where a direct branch can complete. */
static void branch_targets(void **state)
{
	struct decode_branch br;

	(void)state;
	/* jmp far 0x3f:0x102000 in 32-bit code; its 16-bit form */
	assert_true(BRANCH(DECODE_MODE_32, 0x101000, &br, 0xea, 0x00, 0x20, 0x10, 0x00, 0x3f, 0x00));
	assert_int_equal(br.n, 1);
	assert_int_equal(br.to[0], 0x102000);
	assert_int_equal(br.far_sel, 0x3f);
	assert_int_equal(br.from, -1);
	assert_true(BRANCH(DECODE_MODE_32, 0x101000, &br, 0x66, 0x9a, 0x34, 0x12, 0x08, 0x00));
	assert_int_equal(br.n, 1);
	assert_int_equal(br.to[0], 0x1234);
	assert_int_equal(br.far_sel, 8);
	/* jmp rel32, call rel32, jne rel8 (both ways), loop: in 16-bit code IP wraps */
	assert_true(BRANCH(DECODE_MODE_64, 0x1000, &br, 0xe9, 0x00, 0xf0, 0xff, 0xff));
	assert_int_equal(br.n, 1);
	assert_int_equal(br.to[0], 0x5);
	assert_int_equal(br.far_sel, 0);
	assert_true(BRANCH(DECODE_MODE_32, 0x1000, &br, 0xe8, 0x10, 0x00, 0x00, 0x00));
	assert_int_equal(br.n, 1);
	assert_int_equal(br.to[0], 0x1015);
	assert_true(BRANCH(DECODE_MODE_64, 0x1000, &br, 0x75, 0xfe));
	assert_int_equal(br.n, 2);
	assert_int_equal(br.to[0], 0x1000);
	assert_int_equal(br.to[1], 0x1002);
	assert_true(BRANCH(DECODE_MODE_16, 0xfff0, &br, 0xe2, 0x20));
	assert_int_equal(br.n, 2);
	assert_int_equal(br.to[0], 0x12);
	assert_int_equal(br.to[1], 0xfff2);
	assert_int_equal(br.from, -1);
	/* Not from its bytes: indirect, RET; not at all: 66 on a near branch in 64-bit code, no branch */
	assert_true(BRANCH(DECODE_MODE_64, 0x1000, &br, 0xff, 0xe0));
	assert_int_equal(br.n, 0);
	assert_true(BRANCH(DECODE_MODE_64, 0x1000, &br, 0xc3));
	assert_int_equal(br.n, 0);
	assert_false(BRANCH(DECODE_MODE_64, 0x1000, &br, 0x66, 0xe9, 0x00, 0x10));
	assert_int_equal(br.n, 0);
	assert_int_equal(br.from, -1);
	assert_false(BRANCH(DECODE_MODE_64, 0x1000, &br, 0x90));
	assert_int_equal(br.n, 0);
	assert_int_equal(br.from, -1);
}

/* Where an indirect branch or a RET reads its target. */
static void branch_sources(void **state)
{
	struct decode_branch br;

	(void)state;
	/* jmp *%r9; call *0x10(%rbx); jmp far *0x0; ret; ret $8; lret in 16-bit code */
	assert_true(BRANCH(DECODE_MODE_64, 0, &br, 0x41, 0xff, 0xe1));
	assert_int_equal(br.from, DECODE_FROM_REG);
	assert_int_equal(br.reg, 9);
	assert_int_equal(br.size, 8);
	assert_false(br.far);
	assert_true(BRANCH(DECODE_MODE_64, 0, &br, 0xff, 0x53, 0x10));
	assert_int_equal(br.from, DECODE_FROM_MEM);
	assert_int_equal(br.mem.base, 3);
	assert_int_equal(br.mem.disp, 0x10);
	assert_int_equal(br.mem.size, 8);
	assert_true(BRANCH(DECODE_MODE_32, 0, &br, 0xff, 0x2d, 0, 0, 0, 0));
	assert_int_equal(br.from, DECODE_FROM_MEM);
	assert_true(br.far);
	assert_int_equal(br.size, 4);
	assert_int_equal(br.mem.size, 4);
	assert_true(BRANCH(DECODE_MODE_64, 0, &br, 0xc3));
	assert_int_equal(br.from, DECODE_FROM_STACK);
	assert_int_equal(br.size, 8);
	assert_true(BRANCH(DECODE_MODE_64, 0, &br, 0xc2, 0x08, 0x00));
	assert_int_equal(br.from, DECODE_FROM_STACK);
	assert_true(BRANCH(DECODE_MODE_16, 0, &br, 0xcb));
	assert_int_equal(br.from, DECODE_FROM_STACK);
	assert_true(br.far);
	assert_int_equal(br.size, 2);
	/* Not these: a direct JMP, a far one in 64-bit mode, 66 on a near one there, no branch */
	assert_true(BRANCH(DECODE_MODE_64, 0, &br, 0xeb, 0x00));
	assert_int_equal(br.from, -1);
	assert_false(BRANCH(DECODE_MODE_64, 0, &br, 0xff, 0x2b));
	assert_int_equal(br.from, -1);
	assert_false(BRANCH(DECODE_MODE_64, 0, &br, 0x66, 0xff, 0xe0));
	assert_int_equal(br.from, -1);
	assert_false(BRANCH(DECODE_MODE_64, 0, &br, 0x90));
	assert_int_equal(br.from, -1);
}

/* The memory operand of any instruction, and whether it is written. */
static void accesses(void **state)
{
	struct decode_insn si;
	bool write;

	(void)state;
	assert_int_equal(decode_access(DECODE_MODE_64, (const uint8_t[]){ 0x89, 0x03 }, 2, &si, &write, NULL), 0);
	assert_true(write);
	assert_int_equal(si.size, 4);
	assert_int_equal(si.base, 3);
	assert_int_equal(si.length, 2);
	assert_int_equal(decode_access(DECODE_MODE_64, (const uint8_t[]){ 0x48, 0x8b, 0x44, 0x24, 0x08 }, 5,
					  &si, &write, NULL), 0);
	assert_false(write);
	assert_int_equal(si.size, 8);
	assert_int_equal(si.base, 4);
	assert_int_equal(si.disp, 8);
	assert_int_equal(si.seg, DECODE_SEG_SS);
	/* push qword [rbx]: the explicit operand is read; the stack's is implicit. */
	assert_int_equal(decode_access(DECODE_MODE_64, (const uint8_t[]){ 0xff, 0x33 }, 2, &si, &write, NULL), 0);
	assert_false(write);
	assert_int_equal(si.size, 8);
	/* lea, a register operand, a 10-byte x87 operand: nothing to forecast. */
	assert_int_equal(decode_access(DECODE_MODE_64, (const uint8_t[]){ 0x48, 0x8d, 0x03 }, 3, &si, &write, NULL), -1);
	assert_int_equal(decode_access(DECODE_MODE_64, (const uint8_t[]){ 0x01, 0xd8 }, 2, &si, &write, NULL), -1);
	assert_int_equal(decode_access(DECODE_MODE_64, (const uint8_t[]){ 0xdb, 0x2b }, 2, &si, &write, NULL), -1);
	/* MOV moffs: an explicit memory operand without ModRM. */
	assert_int_equal(decode_access(DECODE_MODE_64, (const uint8_t[]){ 0x8b, 0x04, 0x25, 0x00, 0x10, 0x00, 0x00 }, 7,
				       &si, &write, NULL), 0);
	assert_int_equal(decode_access(DECODE_MODE_32, (const uint8_t[]){ 0xa1, 0x00, 0x10, 0x00, 0x00 }, 5,
				       &si, &write, NULL), 0);
	assert_false(write);
	assert_int_equal(decode_access(DECODE_MODE_32, (const uint8_t[]){ 0xa3, 0x00, 0x10, 0x00, 0x00 }, 5,
				       &si, &write, NULL), 0);
	assert_true(write);
	/* String instructions' operands are implicit. */
	assert_int_equal(decode_access(DECODE_MODE_64, (const uint8_t[]){ 0xa5 }, 1, &si, &write, NULL), -1);
}

#define VIEW(mode, v, ...) ({ \
	static const uint8_t b_[] = { __VA_ARGS__ }; \
	decode_view(mode, b_, sizeof(b_), v); })

/*
 * decode_view() answers from its memo only for the very bytes it decoded:
 * two MOVs alike but for their immediate's last byte, each asked twice.
 */
static void view_memo(void **state)
{
	uint8_t a[] = { 0x48, 0xb8, 1, 0, 0, 0, 0, 0, 0, 0 }, b[sizeof(a)];
	struct decode_view v;

	(void)state;
	memcpy(b, a, sizeof(a));
	b[9] = 0x80;
	for (unsigned round = 0; round < 2; round++) {
		assert_int_equal(decode_view(DECODE_MODE_64, a, sizeof(a), &v), 0);
		assert_int_equal(v.op[1].imm, 1);
		assert_int_equal(decode_view(DECODE_MODE_64, b, sizeof(b), &v), 0);
		assert_int_equal((uint64_t)v.op[1].imm, 0x8000000000000001ull);
		/* The same bytes, fewer of them: truncated, not the memo's MOV. */
		assert_int_equal(decode_view(DECODE_MODE_64, a, 5, &v), DECODE_TRUNCATED);
		/* The same bytes in 32-bit code: DEC EAX, then MOV EAX, imm32. */
		assert_int_equal(decode_view(DECODE_MODE_32, a, sizeof(a), &v), 0);
		assert_int_equal(v.length, 1);
	}
}

static void views(void **state)
{
	struct decode_view v;

	(void)state;
	/* ENDBR64: its F3 is part of the opcode, no prefix. */
	assert_int_equal(VIEW(DECODE_MODE_64, &v, 0xf3, 0x0f, 0x1e, 0xfa), 0);
	assert_int_equal(v.length, 4);
	assert_int_equal(v.prefixes, 0);
	/* F3 repeats MOVS, not RET; 66 and REX.W counted. */
	assert_int_equal(VIEW(DECODE_MODE_64, &v, 0xf3, 0xa4), 0);
	assert_true(v.rep);
	assert_int_equal(VIEW(DECODE_MODE_64, &v, 0xf3, 0xc3), 0);
	assert_false(v.rep);
	assert_int_equal(v.prefixes, 1);
	assert_int_equal(VIEW(DECODE_MODE_64, &v, 0x66, 0x49, 0x9d), 0);	/* POPFQ: REX.W over 66 */
	assert_int_equal(v.opsize, 8);
	assert_int_equal(v.prefixes, 2);
	assert_int_equal(v.osz, 1);
	assert_true(v.rex && v.rex_w);
	/* Operands: MOV SS, AX; MOV DR7, R9; CALL far ptr16:16; INT 0x80. */
	assert_int_equal(VIEW(DECODE_MODE_64, &v, 0x8e, 0xd0), 0);
	assert_int_equal(v.op[0].kind, DECODE_OPND_SEG);
	assert_int_equal(v.op[0].reg, DECODE_SEG_SS);
	assert_int_equal(v.op[1].kind, DECODE_OPND_GPR);
	assert_int_equal(v.op[1].reg, 0);
	assert_int_equal(VIEW(DECODE_MODE_64, &v, 0x41, 0x0f, 0x23, 0xf9), 0);
	assert_int_equal(v.op[0].kind, DECODE_OPND_DR);
	assert_int_equal(v.op[0].reg, 7);
	assert_int_equal(v.op[1].reg, 9);
	assert_int_equal(VIEW(DECODE_MODE_16, &v, 0x9a, 0x34, 0x12, 0x08, 0x00), 0);
	assert_int_equal(v.op[0].kind, DECODE_OPND_PTR);
	assert_int_equal(v.op[0].imm, 0x1234);
	assert_int_equal(v.op[0].sel, 8);
	assert_true(v.far);
	assert_int_equal(VIEW(DECODE_MODE_32, &v, 0xcd, 0x80), 0);
	assert_int_equal(v.op[0].kind, DECODE_OPND_IMM);
	assert_int_equal((uint8_t)v.op[0].imm, 0x80);
	/* What the CPU answers with #UD, bytes that end first, 16 bytes. */
	assert_int_equal(VIEW(DECODE_MODE_64, &v, 0x9a, 0, 0, 0, 0, 8, 0), -1);
	assert_int_equal(VIEW(DECODE_MODE_64, &v, 0xf0, 0xf4), -1);
	assert_int_equal(VIEW(DECODE_MODE_64, &v, 0x0f, 0x22, 0xe8), -1);	/* MOV CR5 */
	assert_int_equal(VIEW(DECODE_MODE_64, &v, 0x70), DECODE_TRUNCATED);
	assert_int_equal(VIEW(DECODE_MODE_64, &v, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
			      0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x90), DECODE_TOO_LONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* First, while the decoders are still unset. */
		cmocka_unit_test(first_use_from_threads),
		cmocka_unit_test(sizes_per_mode),
		cmocka_unit_test(rmw_without_lock),
		cmocka_unit_test(rex_only_in_64_bit_mode),
		cmocka_unit_test(segments),
		cmocka_unit_test(truncated),
		cmocka_unit_test(lengths),
		cmocka_unit_test(lengths_remembered),
		cmocka_unit_test(accesses),
		cmocka_unit_test(lock_faults),
		cmocka_unit_test(branch_targets),
		cmocka_unit_test(branch_sources),
		cmocka_unit_test(views),
		cmocka_unit_test(view_memo),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
