/* SPDX-License-Identifier: MIT */
/* The CPUID table each vCPU gets: pure edits of KVM's supported table. */
#ifndef VMM_CPUID_H
#define VMM_CPUID_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/kvm.h>

struct kvm_cpuid_entry2 *cpuid_find(struct kvm_cpuid2 *c, uint32_t fn, uint32_t idx);
/* Leaf 0's vendor is "AuthenticAMD" or "HygonGenuine" (AMD's long-mode rules). */
bool cpuid_amd_like(struct kvm_cpuid2 *c);
/* CPUID.(7,0):EBX.RTM: XBEGIN starts transactions (else #UD, or always aborts). */
bool cpuid_rtm(struct kvm_cpuid2 *c);
/*
 * Per-vCPU identity (APIC IDs in leaves 1, 0xb, 0x1f) and
 * CPUID.(7,0):EDX[30], which every guest sees: IA32_CORE_CAPABILITIES
 * exists on every VM of this VMM, as KVM itself enumerates it in the 2019
 * split-lock series v8, patch 11/15 "kvm/x86: Emulate MSR IA32_CORE_CAPABILITY".
 */
void cpuid_fixup(struct kvm_cpuid2 *c, unsigned cpu);

/*
 * --hypervisor-bit: CPUID.1:ECX[31], which says "a hypervisor runs this
 * guest". Every peer VMM sets it; Linux then skips its split-lock set-up
 * (split_lock_setup() in arch/x86/kernel/cpu/intel.c, bus_lock.c from 6.2),
 * whatever CORE_CAPABILITIES enumerates. auto: set unless the VM enumerates
 * split-lock detection, so that Linux sees what the policy offers.
 */
enum cpuid_hypervisor { CPUID_HYPERVISOR_AUTO, CPUID_HYPERVISOR_ON, CPUID_HYPERVISOR_OFF };
const char *cpuid_hypervisor_name(enum cpuid_hypervisor h);
/* 0 and *out set when s names one, -1 otherwise. */
int cpuid_hypervisor_parse(const char *s, enum cpuid_hypervisor *out);
/* The bit the guest is meant to see, for a VM that does (or not) enumerate detection. */
bool cpuid_hypervisor_bit(enum cpuid_hypervisor h, bool enumerated);
/* CPUID.1:ECX[31] set or cleared, nothing else; false for a table without leaf 1. */
bool cpuid_set_hypervisor(struct kvm_cpuid2 *c, bool on);

/* The virtualization extension a table offers a guest for guests of its own. */
enum cpuid_nested { CPUID_NESTED_NONE, CPUID_NESTED_SVM, CPUID_NESTED_VMX };
enum cpuid_nested cpuid_nested(struct kvm_cpuid2 *c);
const char *cpuid_nested_name(enum cpuid_nested n);
/*
 * Takes SVM and VMX out of the table, so that KVM refuses EFER.SVME and
 * CR4.VMXE: --split-lock=emulate cannot watch a nested guest (docs/design.md,
 * "Nested virtualization"). Returns what was offered before.
 */
enum cpuid_nested cpuid_hide_nested(struct kvm_cpuid2 *c);

#endif
