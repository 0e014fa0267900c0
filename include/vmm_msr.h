/* SPDX-License-Identifier: MIT */
/*
 * Split-lock detection architecture, as the 2019 split-lock series v8
 * defines it (patches 05/15 "x86/msr-index: Define MSR_IA32_CORE_CAPABILITY
 * and split lock detection bit" and 09/15 "x86/split_lock: Define MSR
 * TEST_CTL register") and the Intel SDM documents it.
 */
#ifndef VMM_MSR_H
#define VMM_MSR_H

#define MSR_TEST_CTRL                    0x33u
#define TEST_CTRL_SPLIT_LOCK_DETECT_BIT  29
#define TEST_CTRL_SPLIT_LOCK_DETECT      (1ull << TEST_CTRL_SPLIT_LOCK_DETECT_BIT)

#define MSR_IA32_CORE_CAPABILITIES       0xcfu
#define CORE_CAP_SPLIT_LOCK_DETECT_BIT   5
#define CORE_CAP_SPLIT_LOCK_DETECT       (1ull << CORE_CAP_SPLIT_LOCK_DETECT_BIT)

/* CPUID.(EAX=7,ECX=0):EDX[30] enumerates IA32_CORE_CAPABILITIES. */
#define CPUID_7_EDX_CORE_CAPABILITIES_BIT 30

#endif
