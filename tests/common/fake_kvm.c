/* SPDX-License-Identifier: MIT */
#include "fake_kvm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot.h"
#include "emulate.h"
#include "pagewalk.h"

_Static_assert(sizeof(struct vcpu_ops) % sizeof(fake_fn) == 0,
	       "struct vcpu_ops holds function pointers only");

struct fake_vcpu *fake_vcpu(struct vcpu *v)
{
	struct fake_vm *f = (struct fake_vm *)((char *)v->vm - offsetof(struct fake_vm, vm));

	return &f->cpus[v->index];
}

/* Counts a call of op; its injected error, 0 or -errno. */
static int enter(struct vcpu *v, size_t op)
{
	struct fake_vcpu *fc = fake_vcpu(v);

	fc->calls[op]++;
	return -fc->fail[op];
}

/* A getter and a setter of one piece of vCPU state. */
#define FAKE_GET(op, type, field)                                  \
	static int fake_##op(struct vcpu *v, type *out)            \
	{                                                          \
		int r = enter(v, FAKE_OP(op));                     \
		if (!r)                                            \
			*out = fake_vcpu(v)->field;                \
		return r;                                          \
	}
#define FAKE_SET(op, type, field)                                  \
	static int fake_##op(struct vcpu *v, const type *in)       \
	{                                                          \
		int r = enter(v, FAKE_OP(op));                     \
		if (!r)                                            \
			fake_vcpu(v)->field = *in;                 \
		return r;                                          \
	}

FAKE_GET(get_regs, struct kvm_regs, regs)
FAKE_SET(set_regs, struct kvm_regs, regs)
FAKE_GET(get_sregs, struct kvm_sregs, sregs)
FAKE_SET(set_sregs, struct kvm_sregs, sregs)
FAKE_GET(get_events, struct kvm_vcpu_events, events)
FAKE_SET(set_events, struct kvm_vcpu_events, events)
FAKE_GET(get_pkru, uint32_t, pkru)
FAKE_SET(set_guest_debug, struct kvm_guest_debug, debug)
FAKE_GET(get_debugregs, struct kvm_debugregs, debugregs)
FAKE_SET(set_debugregs, struct kvm_debugregs, debugregs)

/* An MSR from the vCPU's table; -ENODATA (KVM_GET_MSRS reads 0 of 1) for any other. */
static int fake_get_msr(struct vcpu *v, uint32_t index, uint64_t *value)
{
	struct fake_vcpu *fc = fake_vcpu(v);
	int r = enter(v, FAKE_OP(get_msr));

	if (r)
		return r;
	for (unsigned i = 0; i < FAKE_NMSRS; i++)
		if (fc->msrs[i].valid && fc->msrs[i].index == index) {
			*value = fc->msrs[i].value;
			return 0;
		}
	return -ENODATA;
}

/* A new member of struct vcpu_ops: its fake above, and one line here. */
static const struct vcpu_ops fake_ops = {
	.get_regs = fake_get_regs,
	.set_regs = fake_set_regs,
	.get_sregs = fake_get_sregs,
	.set_sregs = fake_set_sregs,
	.get_events = fake_get_events,
	.set_events = fake_set_events,
	.get_pkru = fake_get_pkru,
	.set_guest_debug = fake_set_guest_debug,
	.get_debugregs = fake_get_debugregs,
	.set_debugregs = fake_set_debugregs,
	.get_msr = fake_get_msr,
};

static int check_ops(void)
{
	for (size_t i = 0; i < FAKE_NOPS; i++) {
		fake_fn fn;

		memcpy(&fn, (const char *)&fake_ops + i * sizeof(fn), sizeof(fn));
		if (!fn) {
			fprintf(stderr, "fake_kvm: struct vcpu_ops member %zu has no fake in tests/common/fake_kvm.c\n",
				i);
			return -1;
		}
	}
	return 0;
}

int fake_vm_init(struct fake_vm *f, unsigned ncpus, uint64_t ram_size)
{
	memset(f, 0, sizeof(*f));
	f->console_fd = -1;
	if (check_ops())
		return -1;
	f->console_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (f->console_fd < 0 || vm_init_common(&f->vm, f->opts.split_lock, ncpus, f->console_fd,
						  &(const char *){ NULL }))
		return -1;
	f->runs = calloc(ncpus, sizeof(*f->runs));
	f->cpus = calloc(ncpus, sizeof(*f->cpus));
	if (!f->runs || !f->cpus)
		return -1;
	if (ram_size) {
		f->vm.mem = calloc(1, ram_size);
		if (!f->vm.mem)
			return -1;
		f->vm.ram_size = ram_size;
		boot_build_page_tables(f->vm.mem, ram_size);
	}
	f->vm.split_lock_enumerated = true;
	for (unsigned i = 0; i < ncpus; i++) {
		struct vcpu *v = &f->vm.vcpus[i];

		v->run = &f->runs[i];
		v->ops = v->kvm = &fake_ops;
		v->maxphyaddr = 46;
		msr_reset(&v->msrs);
		boot_init_sregs(&f->cpus[i].sregs);
		f->cpus[i].regs.rflags = X86_RFLAGS_FIXED;
	}
	return 0;
}

void fake_vm_destroy(struct fake_vm *f)
{
	if (f->vm.vcpus)
		vm_destroy_common(&f->vm);
	if (f->console_fd >= 0)
		close(f->console_fd);
	free(f->vm.mem);
	free(f->runs);
	free(f->cpus);
	memset(f, 0, sizeof(*f));
	f->console_fd = -1;
}
