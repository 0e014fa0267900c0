/* SPDX-License-Identifier: MIT */
/*
 * The MSR model against its reference semantics (docs/design.md, "Emulated
 * MSRs"), over a sequence of operations on one vCPU's state.
 *
 * Input: records of 13 bytes: u8 op, u32 index, u64 value.
 *   op bits 0-1: read, write, reset, #AC decision
 *   op bit 2:    enumerated (split-lock detection promised to the guest)
 *   op bits 3-4: index 0x33, 0xcf, the record's own, or 0x33 / 0xcf with
 *                one bit of the record's flipped (neighbours)
 *   op bit 5:    value limited to bit 29 (so both writable values come up)
 *
 * Reference: CORE_CAPABILITIES (0xcf) reads bit 5 exactly when enumerated
 * and every write #GPs; TEST_CTRL (0x33) without enumeration #GPs on every
 * access, with it reads the vCPU's value and takes writes of bit 29 only,
 * #GP (value unchanged) for any other bit; every other MSR #GPs. The state
 * never holds a bit outside bit 29, msr_read never changes the state, and
 * splitlock_decide_ac injects exactly when bit 29 is set.
 */
#include <inttypes.h>

#include "fuzz.h"

#include "msr.h"
#include "splitlock.h"
#include "vmm_msr.h"

static uint32_t pick_index(uint8_t op, uint32_t raw)
{
	switch ((op >> 3) & 3) {
	case 0: return MSR_TEST_CTRL;
	case 1: return MSR_IA32_CORE_CAPABILITIES;
	case 2: return raw;
	default:
		return (raw & 0x80 ? MSR_IA32_CORE_CAPABILITIES : MSR_TEST_CTRL) ^
		       (1u << (raw & 31));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = fuzz_in(data, size);
	struct msr_state s;
	uint64_t shadow = 0;

	msr_reset(&s);
	FUZZ_CHECK(s.test_ctrl == 0, "TEST_CTRL after reset 0x%" PRIx64, s.test_ctrl);
	while (in.n) {
		uint8_t op = fuzz_u8(&in);
		uint32_t index = pick_index(op, fuzz_u32(&in));
		uint64_t val = fuzz_u64(&in);
		bool en = op & 4;
		uint64_t mask = en ? TEST_CTRL_SPLIT_LOCK_DETECT : 0;
		bool is_tc = index == MSR_TEST_CTRL, is_cc = index == MSR_IA32_CORE_CAPABILITIES;

		if (op & 0x20)
			val &= TEST_CTRL_SPLIT_LOCK_DETECT;
		FUZZ_CHECK(msr_is_emulated(index) == (is_tc || is_cc), "msr_is_emulated(0x%x)", index);
		FUZZ_CHECK(msr_core_capabilities(en) == (en ? CORE_CAP_SPLIT_LOCK_DETECT : 0),
			   "msr_core_capabilities(%d)", en);
		FUZZ_CHECK(msr_test_ctrl_mask(en) == mask, "msr_test_ctrl_mask(%d)", en);

		switch (op & 3) {
		case 0: {
			uint64_t got = 0xfeedfacecafebeefull, before = s.test_ctrl;
			enum msr_result r = msr_read(en, &s, index, &got);
			enum msr_result want = is_cc || (is_tc && en) ? MSR_OK : MSR_GP;

			FUZZ_CHECK(r == want, "rdmsr 0x%x (enumerated %d) = %d, want %d", index, en, r, want);
			if (r == MSR_OK && is_cc)
				FUZZ_CHECK(got == (en ? CORE_CAP_SPLIT_LOCK_DETECT : 0),
					   "rdmsr 0xcf = 0x%" PRIx64, got);
			if (r == MSR_OK && is_tc)
				FUZZ_CHECK(got == shadow, "rdmsr 0x33 = 0x%" PRIx64 ", written 0x%" PRIx64,
					   got, shadow);
			FUZZ_CHECK(s.test_ctrl == before, "rdmsr changed the state");
			break;
		}
		case 1: {
			enum msr_result r = msr_write(en, &s, index, val);
			bool ok = is_tc && en && !(val & ~mask);

			FUZZ_CHECK(r == (ok ? MSR_OK : MSR_GP), "wrmsr 0x%x <- 0x%" PRIx64
				   " (enumerated %d) = %d", index, val, en, r);
			if (ok)
				shadow = val;
			break;
		}
		case 2:
			msr_reset(&s);
			shadow = 0;
			break;
		case 3:
			/* Injected exactly when the guest armed it; what else happens varies. */
			FUZZ_CHECK((splitlock_decide_ac(&s) == SPLITLOCK_AC_INJECT) ==
				   !!(shadow & TEST_CTRL_SPLIT_LOCK_DETECT),
				   "#AC decision with TEST_CTRL 0x%" PRIx64, shadow);
			break;
		}
		FUZZ_CHECK(s.test_ctrl == shadow, "TEST_CTRL 0x%" PRIx64 ", reference 0x%" PRIx64,
			   s.test_ctrl, shadow);
		FUZZ_CHECK(!(s.test_ctrl & ~TEST_CTRL_SPLIT_LOCK_DETECT),
			   "TEST_CTRL 0x%" PRIx64 " has bits outside bit 29", s.test_ctrl);
	}
	return 0;
}
