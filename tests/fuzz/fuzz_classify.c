/* SPDX-License-Identifier: MIT */
/*
 * step.c's classifications of guest bytes (step_classify,
 * step_certain_fault, step_handler_first_push), all through decode_view()
 * (Zydis). Input: a byte of CPU state (bit 0 CPL3, 1 DR7.GD, 2 real mode,
 * 3 with it virtual-8086 mode, 4 CR4.VME and PVI, 5 RFLAGS.VIP, 6 AMD),
 * 8 bytes every general register holds, then the instruction bytes,
 * classified in 16-bit, 32-bit, compatibility and 64-bit code.
 *
 * Oracles:
 *  - a length step_classify gives is the whole instruction as Zydis's
 *    length decode has it, within the bytes and 15; the kinds that give
 *    one always do; undecodable bytes are STEP_OTHER without length;
 *  - classifying depends on the instruction's own bytes only: the same
 *    answer from exactly its length, "undecodable" from one byte fewer;
 *  - rep only for STEP_OTHER, jump only for STEP_BRANCH, the vectors of
 *    INT3, INT1 and INTO, no INTO in 64-bit code, a kvm_faults fault of
 *    #GP or #UD (#GP whatever CR4 and EFER say for those needing none);
 *  - step_certain_fault answers -1, #UD, #GP, #DB or #SS, an error code
 *    only with #GP or #SS, and for bytes Zydis rejects nothing but #UD;
 *  - step_handler_first_push answers -1, 0 or 1, with a length that is
 *    the instruction's, at most STEP_HANDLER_FIRST_MAX.
 */
#include "fuzz.h"

#include "decode.h"
#include "step.h"

static enum decode_mode mode_of(struct step_mode m)
{
	return m.cs_l ? DECODE_MODE_64 : m.cs_d ? DECODE_MODE_32 : DECODE_MODE_16;
}

static bool gives_len(enum step_kind k)
{
	switch (k) {
	case STEP_HLT: case STEP_STI: case STEP_INT3: case STEP_INT1: case STEP_INTO:
	case STEP_INTN: case STEP_PUSHF: case STEP_POPF: case STEP_IRET: case STEP_SYSCALL:
	case STEP_SYSRET: case STEP_SYSENTER: case STEP_SYSEXIT: case STEP_XBEGIN:
		return true;
	default:
		return false;
	}
}

static bool same(const struct step_insn *a, const struct step_insn *b)
{
	return a->kind == b->kind && a->opsize == b->opsize && a->len == b->len &&
	       a->vector == b->vector && a->rel == b->rel && a->rep == b->rep &&
	       a->jump == b->jump && a->kvm_faults == b->kvm_faults && a->kvm_needs == b->kvm_needs;
}

static void check_classify(struct step_mode m, const uint8_t *b, size_t n)
{
	struct step_insn in, exact;
	bool falls;
	unsigned len = decode_length(mode_of(m), b, n, &falls);

	step_classify(b, n, m, &in);
	FUZZ_CHECK(!in.len || (in.len == len && in.len <= n && in.len <= DECODE_INSN_MAX),
		   "kind %d: length %u, decoded %u of %zu bytes", (int)in.kind, in.len, len, n);
	FUZZ_CHECK(!gives_len(in.kind) || in.len, "kind %d without its length", (int)in.kind);
	FUZZ_CHECK(len || (in.kind == STEP_OTHER && !in.len && !in.rep && step_undecodable(&in)),
		   "undecodable bytes classed %d", (int)in.kind);
	FUZZ_CHECK(!in.rep || in.kind == STEP_OTHER, "rep on kind %d", (int)in.kind);
	FUZZ_CHECK(!in.jump || in.kind == STEP_BRANCH, "jump on kind %d", (int)in.kind);
	FUZZ_CHECK(in.opsize == 0 || in.opsize == 2 || in.opsize == 4 || in.opsize == 8,
		   "opsize %u", in.opsize);
	FUZZ_CHECK((in.kind != STEP_INT3 || in.vector == 3) && (in.kind != STEP_INT1 || in.vector == 1) &&
		   (in.kind != STEP_INTO || (in.vector == 4 && !m.cs_l)), "kind %d vector %u",
		   (int)in.kind, in.vector);
	if (in.kvm_faults) {
		for (unsigned k = 0; k < 8; k++) {
			int v = step_kvm_fault_vector(&in, (k & 1 ? X86_CR4_OSXSAVE : 0) |
						      (k & 2 ? X86_CR4_VMXE : 0),
						      k & 4 ? X86_EFER_SVME : 0);

			FUZZ_CHECK(v == X86_VEC_GP || (v == X86_VEC_UD && in.kvm_needs != STEP_KVM_NEEDS_NONE),
				   "KVM's fault %d", v);
		}
	}
	if (!len)
		return;
	step_classify(b, len, m, &exact);
	FUZZ_CHECK(same(&in, &exact), "%u bytes alone classify otherwise", len);
	step_classify(b, len - 1, m, &exact);
	FUZZ_CHECK(exact.kind == STEP_OTHER && !exact.len && !exact.rep && !exact.kvm_faults,
		   "%u bytes classed %d from %u", len, (int)exact.kind, len - 1);
}

static void check_fault(uint8_t state, const uint64_t *gpr, int mode, const uint8_t *b, size_t n)
{
	struct step_cpu c = { .rflags = 2, .gdt_limit = 0x3f, .ldt_limit = -1, .gpr = gpr };
	struct decode_view v;
	uint32_t err = 0x5555;
	int vector;

	c.long64 = mode == 3;
	c.cs_d = mode != 0;
	c.lma = mode >= 2;
	c.cpl = state & 1 ? 3 : 0;
	c.dr7 = state & 2 ? X86_DR7_GD : 0;
	c.real = (state & 4) != 0;
	if (c.real && (state & 8) && !mode) {
		c.rflags |= X86_RFLAGS_VM;
		c.cpl = 3;
	}
	c.cr4 = state & 16 ? X86_CR4_VME | X86_CR4_PVI : 0;
	c.rflags |= state & 32 ? X86_RFLAGS_VIP : 0;
	c.amd = (state & 64) != 0;
	c.lock_ud = decode_lock_faults(c.long64 ? DECODE_MODE_64 : c.cs_d ? DECODE_MODE_32 : DECODE_MODE_16,
				       b, n);
	vector = step_certain_fault(b, n, &c, &err);
	FUZZ_CHECK(vector == -1 || vector == X86_VEC_UD || vector == X86_VEC_GP || vector == X86_VEC_DB ||
		   vector == X86_VEC_SS, "vector %d", vector);
	FUZZ_CHECK(!err || vector == X86_VEC_GP || vector == X86_VEC_SS, "error code %#x with %d", err, vector);
	if (decode_view(c.long64 ? DECODE_MODE_64 : c.cs_d && !c.real ? DECODE_MODE_32 : DECODE_MODE_16,
			b, n, &v))
		FUZZ_CHECK(vector == -1 || vector == X86_VEC_UD, "vector %d for undecodable bytes", vector);
}

static void check_first_push(bool long64, const uint8_t *b, size_t n)
{
	unsigned len = 0;
	bool falls;
	int pushed = step_handler_first_push(b, n, long64, &len);

	FUZZ_CHECK(pushed >= -1 && pushed <= 1, "pushed %d", pushed);
	if (pushed >= 0)
		FUZZ_CHECK(len >= 1 && len <= n && len <= STEP_HANDLER_FIRST_MAX &&
			   decode_length(long64 ? DECODE_MODE_64 : DECODE_MODE_32, b, n, &falls) == len,
			   "length %u of %zu bytes", len, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct step_mode modes[] = {
		{ .cs_l = false, .cs_d = false }, { .cs_l = false, .cs_d = true },
		{ .cs_l = false, .cs_d = true }, { .cs_l = true, .cs_d = false },
	};
	uint64_t gpr[16], fill = 0;

	if (size < 9 || size > 9 + 2 * DECODE_INSN_MAX)
		return 0;
	memcpy(&fill, data + 1, 8);
	for (unsigned i = 0; i < 16; i++)
		gpr[i] = fill + i * 8;
	for (int m = 0; m < 4; m++) {
		check_classify(modes[m], data + 9, size - 9);
		check_fault(data[0], gpr, m, data + 9, size - 9);
	}
	check_first_push(false, data + 9, size - 9);
	check_first_push(true, data + 9, size - 9);
	return 0;
}
