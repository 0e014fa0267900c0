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

/* A table of leaves 0, 1, 7 and 0xb (two subleaves), as KVM reports them. */
static struct kvm_cpuid2 *table(uint32_t vendor_ebx)
{
	struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + 5 * sizeof(c->entries[0]));

	c->nent = 5;
	c->entries[0] = (struct kvm_cpuid_entry2){ .function = 0, .eax = 0xd, .ebx = vendor_ebx };
	c->entries[1] = (struct kvm_cpuid_entry2){ .function = 1, .ebx = 0xff010800 };
	c->entries[2] = (struct kvm_cpuid_entry2){ .function = 7, .index = 0,
						   .flags = KVM_CPUID_FLAG_SIGNIFCANT_INDEX };
	c->entries[3] = (struct kvm_cpuid_entry2){ .function = 0xb, .index = 0, .edx = 0xff,
						   .flags = KVM_CPUID_FLAG_SIGNIFCANT_INDEX };
	c->entries[4] = (struct kvm_cpuid_entry2){ .function = 0xb, .index = 1, .edx = 0xff,
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
	assert_int_equal(c->entries[2].edx, 1u << CPUID_7_EDX_CORE_CAPABILITIES_BIT);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_vendor),
		cmocka_unit_test(test_fixup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
