/* SPDX-License-Identifier: MIT */
#include "cpuid.h"

#include <stddef.h>
#include <string.h>

#include "array_size.h"
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

static const char *const hypervisor_names[] = {
	[CPUID_HYPERVISOR_AUTO] = "auto",
	[CPUID_HYPERVISOR_ON] = "on",
	[CPUID_HYPERVISOR_OFF] = "off",
};

const char *cpuid_hypervisor_name(enum cpuid_hypervisor h)
{
	return (unsigned)h < ARRAY_SIZE(hypervisor_names) ? hypervisor_names[h] : "?";
}

int cpuid_hypervisor_parse(const char *s, enum cpuid_hypervisor *out)
{
	for (unsigned i = 0; i < ARRAY_SIZE(hypervisor_names); i++) {
		if (strcmp(s, hypervisor_names[i]) == 0) {
			*out = (enum cpuid_hypervisor)i;
			return 0;
		}
	}
	return -1;
}

bool cpuid_hypervisor_bit(enum cpuid_hypervisor h, bool enumerated)
{
	if (h == CPUID_HYPERVISOR_AUTO)
		return !enumerated;
	return h == CPUID_HYPERVISOR_ON;
}

bool cpuid_set_hypervisor(struct kvm_cpuid2 *c, bool on)
{
	struct kvm_cpuid_entry2 *e = cpuid_find(c, 1, 0);

	if (!e)
		return false;
	if (on)
		e->ecx |= X86_CPUID_1_ECX_HYPERVISOR;
	else
		e->ecx &= ~(uint32_t)X86_CPUID_1_ECX_HYPERVISOR;
	return true;
}
