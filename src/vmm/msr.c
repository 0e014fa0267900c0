/* SPDX-License-Identifier: MIT */
#include "msr.h"

#include "vmm_msr.h"

bool msr_is_emulated(uint32_t index)
{
	return index == MSR_TEST_CTRL || index == MSR_IA32_CORE_CAPABILITIES;
}

uint64_t msr_core_capabilities(bool enumerated)
{
	return enumerated ? CORE_CAP_SPLIT_LOCK_DETECT : 0;
}

uint64_t msr_test_ctrl_mask(bool enumerated)
{
	return enumerated ? TEST_CTRL_SPLIT_LOCK_DETECT : 0;
}

void msr_reset(struct msr_state *s)
{
	s->test_ctrl = 0;
}

enum msr_result msr_read(bool enumerated, const struct msr_state *s, uint32_t index,
			 uint64_t *val)
{
	switch (index) {
	case MSR_IA32_CORE_CAPABILITIES:
		/* Exists on every VM: CPUID.(7,0):EDX[30] is always set. */
		*val = msr_core_capabilities(enumerated);
		return MSR_OK;
	case MSR_TEST_CTRL:
		if (!msr_test_ctrl_mask(enumerated))
			return MSR_GP;
		*val = s->test_ctrl;
		return MSR_OK;
	}
	return MSR_GP;
}

enum msr_result msr_write(bool enumerated, struct msr_state *s, uint32_t index,
			  uint64_t val)
{
	uint64_t mask = msr_test_ctrl_mask(enumerated);

	switch (index) {
	case MSR_IA32_CORE_CAPABILITIES:
		return MSR_GP;	/* feature-enumerating, like CPUID */
	case MSR_TEST_CTRL:
		if (!mask || (val & ~mask))
			return MSR_GP;
		s->test_ctrl = val;
		return MSR_OK;
	}
	return MSR_GP;
}
