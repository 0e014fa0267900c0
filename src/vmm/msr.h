/* SPDX-License-Identifier: MIT */
/*
 * The two MSRs the VMM emulates per vCPU, as pure code. Semantics follow
 * the 2019 split-lock series v8 (Fenghua Yu, Xiaoyao Li), patches 11/15
 * "kvm/x86: Emulate MSR IA32_CORE_CAPABILITY" and 12/15 "kvm/vmx: Emulate
 * MSR TEST_CTL", and the Intel SDM's MSR tables: CORE_CAPABILITIES is read-only and enumerates split-lock
 * detection in bit 5; TEST_CTRL is writable only in the bits that
 * CORE_CAPABILITIES promises (bit 29), and with no such bit every access
 * faults, like vmx->msr_test_ctl_mask == 0 in patch 12/15.
 */
#ifndef VMM_MSR_MODEL_H
#define VMM_MSR_MODEL_H

#include <stdbool.h>
#include <stdint.h>

struct msr_state {
	uint64_t test_ctrl;      /* 0 at reset */
};

enum msr_result {
	MSR_OK,
	MSR_GP,                  /* inject #GP at the instruction */
};

bool msr_is_emulated(uint32_t index);
uint64_t msr_core_capabilities(bool enumerated);
uint64_t msr_test_ctrl_mask(bool enumerated);
void msr_reset(struct msr_state *s);
enum msr_result msr_read(bool enumerated, const struct msr_state *s, uint32_t index,
			 uint64_t *val);
enum msr_result msr_write(bool enumerated, struct msr_state *s, uint32_t index,
			  uint64_t val);

#endif
