/* SPDX-License-Identifier: MIT */
/* The CPUID table each vCPU gets (src/vmm/cpuid.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cpuid.h"
#include "vmm_msr.h"
#include "x86.h"

/*
 * A table of leaves 0, 1, 7 and 0xb (two subleaves), as KVM reports them,
 * in room for one entry more: a leaf 0xb past nent, which nothing may touch.
 */
static struct kvm_cpuid2 *table(uint32_t vendor_ebx)
{
	struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + 6 * sizeof(c->entries[0]));

	c->nent = 5;
	c->entries[0] = (struct kvm_cpuid_entry2){ .function = 0, .eax = 0xd, .ebx = vendor_ebx };
	c->entries[1] = (struct kvm_cpuid_entry2){ .function = 1, .ebx = 0xff010800 };
	c->entries[2] = (struct kvm_cpuid_entry2){ .function = 7, .index = 0,
						   .flags = KVM_CPUID_FLAG_SIGNIFCANT_INDEX };
	c->entries[3] = (struct kvm_cpuid_entry2){ .function = 0xb, .index = 0, .edx = 0xff,
						   .flags = KVM_CPUID_FLAG_SIGNIFCANT_INDEX };
	c->entries[4] = (struct kvm_cpuid_entry2){ .function = 0xb, .index = 1, .edx = 0xff,
						   .flags = KVM_CPUID_FLAG_SIGNIFCANT_INDEX };
	c->entries[5] = (struct kvm_cpuid_entry2){ .function = 0xb, .index = 2, .edx = 0xff,
						   .flags = KVM_CPUID_FLAG_SIGNIFCANT_INDEX };
	return c;
}

static void test_find(void **state)
{
	struct kvm_cpuid2 *c = table(0x756e6547);

	(void)state;
	assert_ptr_equal(cpuid_find(c, 0xb, 1), &c->entries[4]);
	assert_ptr_equal(cpuid_find(c, 1, 5), &c->entries[1]);	/* no index: any */
	assert_null(cpuid_find(c, 7, 1));
	assert_null(cpuid_find(c, 0xb, 2));	/* past nent */
	assert_null(cpuid_find(c, 0x80000008, 0));
	free(c);
}

static void test_vendor(void **state)
{
	struct kvm_cpuid2 *c;

	(void)state;
	c = table(0x68747541);		/* "Auth"enticAMD */
	assert_true(cpuid_amd_like(c));
	free(c);
	c = table(0x6f677948);		/* "Hygo"nGenuine */
	assert_true(cpuid_amd_like(c));
	free(c);
	c = table(0x756e6547);		/* "Genu"ineIntel */
	assert_false(cpuid_amd_like(c));
	c->nent = 0;
	assert_false(cpuid_amd_like(c));
	free(c);
}

static void test_fixup(void **state)
{
	struct kvm_cpuid2 *c = table(0x756e6547);

	(void)state;
	cpuid_fixup(c, 3);
	assert_int_equal(c->entries[1].ebx, 0x03010800);	/* the initial APIC ID */
	assert_int_equal(c->entries[3].edx, 3);			/* x2APIC ID, every subleaf */
	assert_int_equal(c->entries[4].edx, 3);
	assert_int_equal(c->entries[5].edx, 0xff);		/* past nent: not the table's */
	assert_int_equal(c->entries[2].edx, 1u << CPUID_7_EDX_CORE_CAPABILITIES_BIT);
	free(c);
}

/* Leaves 1, 0x80000001 and 0x8000000a with every register bit set. */
static struct kvm_cpuid2 *virt_table(void)
{
	struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + 4 * sizeof(c->entries[0]));
	const uint32_t fn[] = { 0, 1, 0x80000001, 0x8000000a };

	c->nent = 4;
	for (int i = 0; i < 4; i++)
		c->entries[i] = (struct kvm_cpuid_entry2){ .function = fn[i], .eax = ~0u,
							   .ebx = ~0u, .ecx = ~0u, .edx = ~0u };
	return c;
}

static void test_nested(void **state)
{
	struct kvm_cpuid2 *c = virt_table();

	(void)state;
	assert_int_equal(cpuid_nested(c), CPUID_NESTED_SVM);
	c->entries[2].ecx &= ~(uint32_t)X86_CPUID_80000001_ECX_SVM;
	assert_int_equal(cpuid_nested(c), CPUID_NESTED_VMX);
	assert_string_equal(cpuid_nested_name(cpuid_nested(c)), "vmx");
	c->entries[1].ecx = X86_CPUID_1_ECX_VMX - 1;	/* every bit below VMX */
	assert_int_equal(cpuid_nested(c), CPUID_NESTED_NONE);
	assert_string_equal(cpuid_nested_name(CPUID_NESTED_NONE), "none");
	assert_string_equal(cpuid_nested_name(CPUID_NESTED_SVM), "svm");
	c->nent = 1;
	assert_int_equal(cpuid_nested(c), CPUID_NESTED_NONE);
	free(c);
}

/* Only the two bits and the SVM leaf go; everything else stays. */
static void test_hide_nested(void **state)
{
	struct kvm_cpuid2 *c = virt_table();

	(void)state;
	assert_int_equal(cpuid_hide_nested(c), CPUID_NESTED_SVM);
	assert_int_equal(cpuid_nested(c), CPUID_NESTED_NONE);
	assert_int_equal(c->entries[1].ecx, ~(uint32_t)X86_CPUID_1_ECX_VMX);
	assert_int_equal(c->entries[1].edx, ~0u);
	assert_int_equal(c->entries[2].ecx, ~(uint32_t)X86_CPUID_80000001_ECX_SVM);
	assert_int_equal(c->entries[2].edx, ~0u);	/* LM, NX ... */
	assert_int_equal(c->entries[3].eax | c->entries[3].ebx | c->entries[3].ecx |
			 c->entries[3].edx, 0);
	assert_int_equal(c->entries[0].ecx, ~0u);
	assert_int_equal(cpuid_hide_nested(c), CPUID_NESTED_NONE);
	c->nent = 0;		/* a table without the leaves: nothing to do */
	assert_int_equal(cpuid_hide_nested(c), CPUID_NESTED_NONE);
	free(c);
}

/* CPUID.(7,0):EBX[11] alone says RTM; no leaf 7, no RTM. */
static void test_rtm(void **state)
{
	struct kvm_cpuid2 *c = table(0x756e6547);

	(void)state;
	assert_false(cpuid_rtm(c));
	c->entries[2].ebx = ~(uint32_t)X86_CPUID_7_EBX_RTM;
	assert_false(cpuid_rtm(c));
	c->entries[2].ebx = X86_CPUID_7_EBX_RTM;
	assert_true(cpuid_rtm(c));
	c->nent = 2;
	assert_false(cpuid_rtm(c));
	free(c);
}

/* CPUID.1:ECX[31] set and cleared alone; a table without leaf 1 untouched. */
static void test_set_hypervisor(void **state)
{
	struct kvm_cpuid2 *c = table(0x756e6547);
	struct kvm_cpuid2 *before = table(0x756e6547);

	(void)state;
	c->entries[1].ecx = 0x7ffaf3ff;
	assert_true(cpuid_set_hypervisor(c, true));
	assert_int_equal(c->entries[1].ecx, 0xfffaf3ff);
	assert_true(cpuid_set_hypervisor(c, true));
	assert_int_equal(c->entries[1].ecx, 0xfffaf3ff);
	assert_true(cpuid_set_hypervisor(c, false));
	assert_int_equal(c->entries[1].ecx, 0x7ffaf3ff);
	/* Nothing else of the table moves. */
	before->entries[1].ecx = c->entries[1].ecx;
	assert_memory_equal(c, before, sizeof(*c) + 6 * sizeof(c->entries[0]));
	c->entries[1].function = 2;	/* no leaf 1 */
	assert_false(cpuid_set_hypervisor(c, true));
	assert_int_equal(c->entries[1].ecx, 0x7ffaf3ff);
	free(c);
	free(before);
}

/* auto: set exactly where the VM does not enumerate split-lock detection; on, off: as said. */
static void test_hypervisor_choice(void **state)
{
	enum cpuid_hypervisor h;

	(void)state;
	assert_true(cpuid_hypervisor_bit(CPUID_HYPERVISOR_AUTO, false));
	assert_false(cpuid_hypervisor_bit(CPUID_HYPERVISOR_AUTO, true));
	assert_true(cpuid_hypervisor_bit(CPUID_HYPERVISOR_ON, true));
	assert_true(cpuid_hypervisor_bit(CPUID_HYPERVISOR_ON, false));
	assert_false(cpuid_hypervisor_bit(CPUID_HYPERVISOR_OFF, true));
	assert_false(cpuid_hypervisor_bit(CPUID_HYPERVISOR_OFF, false));
	assert_int_equal(cpuid_hypervisor_parse("auto", &h), 0);
	assert_int_equal(h, CPUID_HYPERVISOR_AUTO);
	assert_int_equal(cpuid_hypervisor_parse("off", &h), 0);
	assert_int_equal(h, CPUID_HYPERVISOR_OFF);
	assert_int_equal(cpuid_hypervisor_parse("on", &h), 0);
	assert_int_equal(h, CPUID_HYPERVISOR_ON);
	assert_int_equal(cpuid_hypervisor_parse("yes", &h), -1);
	assert_string_equal(cpuid_hypervisor_name(CPUID_HYPERVISOR_ON), "on");
	assert_string_equal(cpuid_hypervisor_name((enum cpuid_hypervisor)3), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_vendor),
		cmocka_unit_test(test_fixup),
		cmocka_unit_test(test_nested),
		cmocka_unit_test(test_hide_nested),
		cmocka_unit_test(test_rtm),
		cmocka_unit_test(test_set_hypervisor),
		cmocka_unit_test(test_hypervisor_choice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
