/* SPDX-License-Identifier: MIT */
/*
 * The exit dispatch driven with synthetic exits through the fake KVM: each
 * exit reason reaches its handler, is counted, says whether KVM completes
 * it, and an exit the VM cannot go on from stops it with its status and
 * one line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "dispatch.h"
#include "fake_kvm.h"
#include "vmm_msr.h"
#include "vmm_ports.h"
#include "vmm_status.h"
#include "array_size.h"

#define RAM (4ull << 20)

static struct fake_vm fv;

static int setup(void **state)
{
	(void)state;
	return fake_vm_init(&fv, 2, RAM);
}

static int teardown(void **state)
{
	(void)state;
	fake_vm_destroy(&fv);
	return 0;
}

/* Dispatches one exit of reason on vCPU i and returns what it said on stderr. */
static char *dispatch(unsigned i, uint32_t reason)
{
	struct vcpu *v = &fv.vm.vcpus[i];
	struct capture c;

	v->run->exit_reason = reason;
	assert_int_equal(capture_stderr(&c), 0);
	dispatch_exit(v);
	assert_int_equal(capture_close(&c), 0);
	return c.buf;
}

static void io_out(struct vcpu *v, uint16_t port, uint32_t value)
{
	v->run->io.direction = KVM_EXIT_IO_OUT;
	v->run->io.size = 4;
	v->run->io.port = port;
	v->run->io.count = 1;
	v->run->io.data_offset = 4096;
	memcpy((uint8_t *)v->run + 4096, &value, sizeof(value));
}

/* I/O, MMIO and MSR exits are completed by KVM on the next entry; others are not. */
static void completion_and_count(void **state)
{
	static const struct {
		uint32_t reason;
		enum vcpu_completion completion;
	} cases[] = {
		{ KVM_EXIT_IO, VCPU_COMPLETION_KVM }, { KVM_EXIT_MMIO, VCPU_COMPLETION_KVM },
		{ KVM_EXIT_X86_RDMSR, VCPU_COMPLETION_KVM }, { KVM_EXIT_X86_WRMSR, VCPU_COMPLETION_KVM },
		{ KVM_EXIT_INTR, VCPU_COMPLETION_NONE },
	};
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		uint64_t before = v->stats.exits[cases[i].reason];

		v->completion = cases[i].completion == VCPU_COMPLETION_KVM ? VCPU_COMPLETION_NONE
									     : VCPU_COMPLETION_KVM;
		io_out(v, 0x80, 0);	/* an unknown port: warned, dropped */
		v->run->mmio.is_write = 1;
		v->run->msr.reason = KVM_MSR_EXIT_REASON_FILTER;
		v->run->msr.index = MSR_TEST_CTRL;
		v->run->msr.data = 0;
		free(dispatch(0, cases[i].reason));
		assert_int_equal(v->completion, cases[i].completion);
		assert_int_equal(v->stats.exits[cases[i].reason], before + 1);
	}
	assert_false(vm_stopping(&fv.vm));
}

/* MMIO where there is no RAM: reads give all-ones; warned at most 8 times a VM. */
static void mmio_unbacked(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[1];
	unsigned lines = 0;

	(void)state;
	for (unsigned i = 0; i < 10; i++) {
		char *err;

		v->run->mmio.is_write = 0;
		v->run->mmio.len = 4;
		v->run->mmio.phys_addr = 0xfee00000;
		memset(v->run->mmio.data, 0, sizeof(v->run->mmio.data));
		err = dispatch(1, KVM_EXIT_MMIO);
		for (char *p = err; (p = strstr(p, "where there is no RAM or device")); p++)
			lines++;
		if (i == 0)
			assert_non_null(strstr(err, "vCPU 1: read of 4 byte(s) at guest-physical 0xfee00000"));
		free(err);
		for (size_t b = 0; b < sizeof(v->run->mmio.data); b++)
			assert_int_equal(v->run->mmio.data[b], 0xff);
	}
	assert_int_equal(lines, 8);
	assert_false(vm_stopping(&fv.vm));
}

/* The MSR exits reach the emulated MSRs: TEST_CTRL per vCPU. */
static void msr_exits(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[1];

	(void)state;
	v->run->msr.reason = KVM_MSR_EXIT_REASON_FILTER;
	v->run->msr.index = MSR_TEST_CTRL;
	v->run->msr.data = TEST_CTRL_SPLIT_LOCK_DETECT;
	v->run->msr.error = 0xff;
	free(dispatch(1, KVM_EXIT_X86_WRMSR));
	assert_int_equal(v->run->msr.error, 0);
	v->run->msr.data = 0xbad;
	free(dispatch(1, KVM_EXIT_X86_RDMSR));
	assert_int_equal(v->run->msr.data, TEST_CTRL_SPLIT_LOCK_DETECT);
	fv.vm.vcpus[0].run->msr.reason = KVM_MSR_EXIT_REASON_FILTER;
	fv.vm.vcpus[0].run->msr.index = MSR_TEST_CTRL;
	free(dispatch(0, KVM_EXIT_X86_RDMSR));
	assert_int_equal(fv.vm.vcpus[0].run->msr.data, 0);
}

/* The guest's exit port ends the VM with its status. */
static void exit_port(void **state)
{
	(void)state;
	io_out(&fv.vm.vcpus[0], PORT_EXIT, 7);
	free(dispatch(0, KVM_EXIT_IO));
	assert_true(vm_stopping(&fv.vm));
	assert_int_equal(fv.vm.status, 7);
}

/* The last vCPU to halt, with nothing to wake any: the VM stops, said once. */
static void all_halted(void **state)
{
	char *err;

	(void)state;
	fv.vm.halted = 1;	/* vCPU 1 is parked in its HLT */
	err = dispatch(0, KVM_EXIT_HLT);
	assert_true(vm_stopping(&fv.vm));
	assert_int_equal(fv.vm.status, VMM_EXIT_HALTED);
	assert_non_null(strstr(err, "every vCPU has halted with nothing to wake them"));
	assert_non_null(strstr(err, "vCPU 0 halted last"));
	free(err);
}

/* Exits the VM cannot go on from: their status, one line naming them. */
static void fatal_exits(void **state)
{
	static const struct {
		uint32_t reason;
		int status;
		const char *says;
	} cases[] = {
		{ KVM_EXIT_SHUTDOWN, VMM_EXIT_SHUTDOWN, "vCPU 1: triple fault (KVM_EXIT_SHUTDOWN)" },
		{ KVM_EXIT_FAIL_ENTRY, VMM_EXIT_FAIL_ENTRY,
		  "vCPU 1: KVM could not enter the guest (KVM_EXIT_FAIL_ENTRY), hardware reason 0x80000021" },
		{ KVM_EXIT_INTERNAL_ERROR, VMM_EXIT_INTERNAL,
		  "vCPU 1: KVM internal error, suberror 1, data 0x11 0x22 (KVM could not" },
		{ KVM_EXIT_DEBUG, VMM_EXIT_UNHANDLED,
		  "vCPU 1: debug exit (KVM_EXIT_DEBUG) while not single-stepping, DR6 0xffff0ff0" },
		{ 999, VMM_EXIT_UNHANDLED, "vCPU 1: exit reason 999, which this vmm does not handle" },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct kvm_run *run;
		char *err;

		fake_vm_destroy(&fv);	/* each case on a VM of its own */
		assert_int_equal(fake_vm_init(&fv, 2, RAM), 0);
		run = fv.vm.vcpus[1].run;
		/* The exit's data: one union, filled as KVM fills it for this reason. */
		if (cases[i].reason == KVM_EXIT_FAIL_ENTRY)
			run->fail_entry.hardware_entry_failure_reason = 0x80000021;
		if (cases[i].reason == KVM_EXIT_INTERNAL_ERROR) {
			run->internal.suberror = 1;
			run->internal.ndata = 2;
			run->internal.data[0] = 0x11;
			run->internal.data[1] = 0x22;
		}
		if (cases[i].reason == KVM_EXIT_DEBUG)
			run->debug.arch.dr6 = 0xffff0ff0;
		err = dispatch(1, cases[i].reason);
		assert_true(vm_stopping(&fv.vm));
		assert_int_equal(fv.vm.status, cases[i].status);
		if (!strstr(err, cases[i].says))
			fail_msg("exit %u said '%s', not '%s'", cases[i].reason, err, cases[i].says);
		free(err);
		/* A second stop does not explain itself again: the first stopper did. */
		err = dispatch(0, cases[i].reason);
		assert_int_equal(fv.vm.status, cases[i].status);
		assert_null(strstr(err, "vCPU 0:"));
		free(err);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(completion_and_count, setup, teardown),
		cmocka_unit_test_setup_teardown(mmio_unbacked, setup, teardown),
		cmocka_unit_test_setup_teardown(msr_exits, setup, teardown),
		cmocka_unit_test_setup_teardown(exit_port, setup, teardown),
		cmocka_unit_test_setup_teardown(all_halted, setup, teardown),
		cmocka_unit_test_setup_teardown(fatal_exits, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
