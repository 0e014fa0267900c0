/* SPDX-License-Identifier: MIT */
/* The MSR model as a table: every access, enumerated or not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "msr.h"
#include "vmm_msr.h"

static void core_capabilities(void **state)
{
	struct msr_state s;
	uint64_t v = 0xdead;

	(void)state;
	msr_reset(&s);
	assert_int_equal(msr_read(true, &s, MSR_IA32_CORE_CAPABILITIES, &v), MSR_OK);
	assert_int_equal(v, 1ull << 5);
	assert_int_equal(msr_read(false, &s, MSR_IA32_CORE_CAPABILITIES, &v), MSR_OK);
	assert_int_equal(v, 0);
	/* Read-only whatever the value, even the one it reads back. */
	for (int en = 0; en < 2; en++) {
		assert_int_equal(msr_write(en, &s, MSR_IA32_CORE_CAPABILITIES, 0), MSR_GP);
		assert_int_equal(msr_write(en, &s, MSR_IA32_CORE_CAPABILITIES, 1ull << 5), MSR_GP);
	}
}

static void test_ctrl_enumerated(void **state)
{
	struct msr_state s;
	uint64_t v = 0xdead;

	(void)state;
	msr_reset(&s);
	assert_int_equal(msr_read(true, &s, MSR_TEST_CTRL, &v), MSR_OK);
	assert_int_equal(v, 0);
	assert_int_equal(msr_write(true, &s, MSR_TEST_CTRL, 1ull << 29), MSR_OK);
	assert_int_equal(msr_read(true, &s, MSR_TEST_CTRL, &v), MSR_OK);
	assert_int_equal(v, 1ull << 29);
	/* Every bit but 29 is reserved: #GP, and the value stays. */
	for (int bit = 0; bit < 64; bit++) {
		if (bit == 29)
			continue;
		assert_int_equal(msr_write(true, &s, MSR_TEST_CTRL, 1ull << bit), MSR_GP);
		assert_int_equal(msr_write(true, &s, MSR_TEST_CTRL, (1ull << bit) | (1ull << 29)),
				 MSR_GP);
		assert_int_equal(msr_read(true, &s, MSR_TEST_CTRL, &v), MSR_OK);
		assert_int_equal(v, 1ull << 29);
	}
	assert_int_equal(msr_write(true, &s, MSR_TEST_CTRL, 0), MSR_OK);
	assert_int_equal(msr_read(true, &s, MSR_TEST_CTRL, &v), MSR_OK);
	assert_int_equal(v, 0);
	msr_write(true, &s, MSR_TEST_CTRL, 1ull << 29);
	msr_reset(&s);
	assert_int_equal(s.test_ctrl, 0);
}

static void test_ctrl_not_enumerated(void **state)
{
	struct msr_state s;
	uint64_t v;

	(void)state;
	msr_reset(&s);
	assert_int_equal(msr_read(false, &s, MSR_TEST_CTRL, &v), MSR_GP);
	assert_int_equal(msr_write(false, &s, MSR_TEST_CTRL, 0), MSR_GP);
	assert_int_equal(msr_write(false, &s, MSR_TEST_CTRL, 1ull << 29), MSR_GP);
	assert_int_equal(s.test_ctrl, 0);
}

static void other_msrs(void **state)
{
	struct msr_state s;
	uint64_t v;

	(void)state;
	msr_reset(&s);
	assert_true(msr_is_emulated(0x33));
	assert_true(msr_is_emulated(0xcf));
	assert_false(msr_is_emulated(0x34));
	assert_false(msr_is_emulated(0x10));
	assert_int_equal(msr_read(true, &s, 0x10, &v), MSR_GP);
	assert_int_equal(msr_write(true, &s, 0x10, 0), MSR_GP);
	assert_int_equal(msr_test_ctrl_mask(true), 1ull << 29);
	assert_int_equal(msr_test_ctrl_mask(false), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(core_capabilities),
		cmocka_unit_test(test_ctrl_enumerated),
		cmocka_unit_test(test_ctrl_not_enumerated),
		cmocka_unit_test(other_msrs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
