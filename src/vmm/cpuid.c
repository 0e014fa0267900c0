/* SPDX-License-Identifier: MIT */
#include "cpuid.h"

#include <stddef.h>

#include "vmm_msr.h"
#include "x86.h"

struct kvm_cpuid_entry2 *cpuid_find(struct kvm_cpuid2 *c, uint32_t fn, uint32_t idx)
{
	for (uint32_t i = 0; i < c->nent; i++) {
		struct kvm_cpuid_entry2 *e = &c->entries[i];

		if (e->function != fn)
			continue;
		if ((e->flags & KVM_CPUID_FLAG_SIGNIFCANT_INDEX) && e->index != idx)
			continue;
		return e;
	}
	return NULL;
}

bool cpuid_amd_like(struct kvm_cpuid2 *c)
{
	const struct kvm_cpuid_entry2 *e = cpuid_find(c, 0, 0);

	return e && (e->ebx == X86_CPUID_VENDOR_AMD || e->ebx == X86_CPUID_VENDOR_HYGON);
}

bool cpuid_rtm(struct kvm_cpuid2 *c)
{
	const struct kvm_cpuid_entry2 *e = cpuid_find(c, 7, 0);

	return e && (e->ebx & X86_CPUID_7_EBX_RTM);
}

void cpuid_fixup(struct kvm_cpuid2 *c, unsigned cpu)
{
	struct kvm_cpuid_entry2 *e;

	e = cpuid_find(c, 1, 0);
	if (e)
		e->ebx = (e->ebx & 0x00ffffffu) | ((uint32_t)cpu << 24);
	for (uint32_t i = 0; i < c->nent; i++) {
		e = &c->entries[i];
		if (e->function == 0xb || e->function == 0x1f)
			e->edx = cpu;
	}
	e = cpuid_find(c, 7, 0);
	if (e)
		e->edx |= 1u << CPUID_7_EDX_CORE_CAPABILITIES_BIT;
}

enum cpuid_nested cpuid_nested(struct kvm_cpuid2 *c)
{
	const struct kvm_cpuid_entry2 *e = cpuid_find(c, 0x80000001, 0);

	if (e && (e->ecx & X86_CPUID_80000001_ECX_SVM))
		return CPUID_NESTED_SVM;
	e = cpuid_find(c, 1, 0);
	if (e && (e->ecx & X86_CPUID_1_ECX_VMX))
		return CPUID_NESTED_VMX;
	return CPUID_NESTED_NONE;
}

const char *cpuid_nested_name(enum cpuid_nested n)
{
	switch (n) {
	case CPUID_NESTED_SVM:
		return "svm";
	case CPUID_NESTED_VMX:
		return "vmx";
	case CPUID_NESTED_NONE:
		break;
	}
	return "none";
}

enum cpuid_nested cpuid_hide_nested(struct kvm_cpuid2 *c)
{
	enum cpuid_nested was = cpuid_nested(c);
	struct kvm_cpuid_entry2 *e = cpuid_find(c, 0x80000001, 0);

	if (e)
		e->ecx &= ~(uint32_t)X86_CPUID_80000001_ECX_SVM;
	e = cpuid_find(c, 1, 0);
	if (e)
		e->ecx &= ~(uint32_t)X86_CPUID_1_ECX_VMX;
	/* Leaf 0x8000000a describes SVM: reserved (zero) without it (APM vol. 3, E.4.9). */
	e = cpuid_find(c, X86_CPUID_SVM_LEAF, 0);
	if (e)
		e->eax = e->ebx = e->ecx = e->edx = 0;
	return was;
}
