/* SPDX-License-Identifier: MIT */
/*
 * The KVM half of vm.h: the probe that comes before everything, and the
 * VM's lifetime. vm_create() takes every resource in one place and
 * vm_destroy() gives each back, on success and on every error path, so that
 * main() only orders events. vm.c is the half without ioctls that the unit
 * tests drive.
 */
#include "vm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "acpi.h"
#include "boot.h"
#include "cpuid.h"
#include "hostinfo.h"
#include "kvm.h"
#include "loader.h"
#include "log.h"
#include "mptable.h"
#include "smbios.h"
#include "vcpu.h"
#include "vmm_msr.h"
#include "vmm_status.h"
#include "array_size.h"

static const struct kvm_cap_need base_caps[] = {
	{ KVM_CAP_USER_MEMORY, "KVM_CAP_USER_MEMORY", "guest RAM" },
	{ KVM_CAP_EXT_CPUID, "KVM_CAP_EXT_CPUID", "the guest's CPUID table" },
	{ KVM_CAP_IMMEDIATE_EXIT, "KVM_CAP_IMMEDIATE_EXIT",
	  "stopping vCPUs without a race (--timeout, SIGINT)" },
	{ KVM_CAP_X86_USER_SPACE_MSR, "KVM_CAP_X86_USER_SPACE_MSR",
	  "emulating TEST_CTRL and CORE_CAPABILITIES in the VMM" },
	{ KVM_CAP_X86_MSR_FILTER, "KVM_CAP_X86_MSR_FILTER",
	  "routing MSRs 0x33 and 0xcf to the VMM" },
	{ KVM_CAP_VCPU_EVENTS, "KVM_CAP_VCPU_EVENTS", "injecting split-lock #AC" },
};

static const struct kvm_cap_need singlestep_caps[] = {
	{ KVM_CAP_SET_GUEST_DEBUG, "KVM_CAP_SET_GUEST_DEBUG",
	  "single-stepping the guest under --split-lock=emulate" },
	{ KVM_CAP_SYNC_REGS, "KVM_CAP_SYNC_REGS",
	  "cheap register access on every single-step under --split-lock=emulate" },
};

static const struct kvm_cap_need irqchip_caps[] = {
	{ KVM_CAP_IRQCHIP, "KVM_CAP_IRQCHIP", "the PC machine's interrupt controllers" },
	{ KVM_CAP_PIT2, "KVM_CAP_PIT2", "the PC machine's timer (PIT)" },
	{ KVM_CAP_IRQ_ROUTING, "KVM_CAP_IRQ_ROUTING", "the PC machine's interrupt routing" },
	{ KVM_CAP_SET_TSS_ADDR, "KVM_CAP_SET_TSS_ADDR", "the PC machine's real-mode support" },
	{ KVM_CAP_SET_IDENTITY_MAP_ADDR, "KVM_CAP_SET_IDENTITY_MAP_ADDR",
	  "the PC machine's real-mode support" },
};

static const uint32_t emulated_msrs[] = { MSR_TEST_CTRL, MSR_IA32_CORE_CAPABILITIES };

/*
 * A probe's answer (1: yes); one KVM could not run is a no, said in a
 * warning: the feature is optional, the KVM's failure worth knowing.
 */
static bool probed(int r, const char *err, const char *what, const char *instead)
{
	if (r < 0)
		warn("split-lock emulation: probing %s failed (%s); going on %s", what, err, instead);
	return r == 1;
}

/*
 * --split-lock=emulate single-steps the guest: find out where this KVM can.
 * Without CPL3 stepping the guest is told, in boot_info, that split locks at
 * CPL3 go unseen.
 */

static int probe_stepping(int kvm_fd, struct host_profile *p)
{
	const int sync = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
	char err[160] = "";
	int cpl0, exec, r;

	if (kvm_require(kvm_fd, singlestep_caps, ARRAY_SIZE(singlestep_caps)))
		return VMM_EXIT_HOST;
	r = kvm_cap(kvm_fd, KVM_CAP_SYNC_REGS);
	if (r < 0)
		return VMM_EXIT_HOST;
	if ((r & sync) != sync) {
		errmsg("this host's KVM cannot sync registers and sregs in the run page, which --split-lock=emulate needs");
		return VMM_EXIT_HOST;
	}
	cpl0 = hostinfo_probe_singlestep(kvm_fd, 0, err, sizeof(err));
	if (cpl0 != 1) {
		errmsg("--split-lock=emulate needs KVM single-stepping, and on this host it %s: %s",
		       cpl0 == 0 ? "does not stop after one instruction" : "could not be probed", err);
		return VMM_EXIT_HOST;
	}
	p->step_cpl3 = probed(hostinfo_probe_singlestep(kvm_fd, 3, err, sizeof(err)), err,
			      "single-stepping at CPL3", "without stepping CPL3 code");
	p->step_hwbp = probed(hostinfo_probe_hwbp(kvm_fd, err, sizeof(err)), err,
			      "hardware breakpoints", "without breakpoints");
	r = hostinfo_probe_guest_bps(kvm_fd, &exec, err, sizeof(err));
	p->guest_databp = probed(r, err, "the guest's data breakpoints", "as if they never fire at CPL0");
	/* One failed probe, one warning. */
	p->exec_bp_beside_step = r >= 0 && probed(exec, err, "the guest's instruction breakpoints",
						  "as if the CPU never reports one beside a step trap");
	/* Where the answer is unknown, the first late step exit says so (stepping.c). */
	r = hostinfo_probe_iret_step(kvm_fd, err, sizeof(err));
	(void)probed(r, err, "IRETQ's step trap", "as if it is kept");
	p->iret_step_lost = r == 0;
	return 0;
}

/* What the user must know of the profile, forced or probed. */
static void report_profile(const struct host_profile *p)
{
	if (!p->step_cpl3)
		warn("split-lock emulation: this KVM cannot single-step CPL3 code, so split locks at CPL3 are not detected");
	if (p->iret_step_lost)
		info("split-lock emulation: this KVM runs a single-stepped IRETQ at CPL0 without its "
		     "trap; the VMM performs those IRETs itself");
}

int vm_probe(bool emulate, unsigned quirks, struct host_profile *p)
{
	int kvm_fd, status;

	*p = (struct host_profile){ 0 };
	if (!emulate)
		return 0;
	kvm_fd = kvm_open();
	if (kvm_fd < 0)
		return VMM_EXIT_HOST;
	status = probe_stepping(kvm_fd, p);
	(void)close(kvm_fd);    /* nothing written through it: no error to lose */
	if (status)
		return status;
	profile_force_quirks(p, quirks);
	report_profile(p);
	return 0;
}

/* COM1's bytes, as one stream (pc.c calls it under its lock). */
static void com1_to_console(void *ctx, uint8_t byte)
{
	struct vm *vm = ctx;

	serial_put(&vm->serial, &byte, 1);
}

/* An ISA interrupt line, into KVM's PIC and I/O APIC. */
static void isa_irq_line(void *ctx, unsigned irq, bool level)
{
	struct vm *vm = ctx;
	int r = __kvm_irq_line(vm->vm_fd, irq, level);

	if (r)
		vm_fail(vm, VMM_EXIT_HOST, "KVM_IRQ_LINE for IRQ %u failed: %s (errno %d); the guest would miss interrupts",
			irq, strerror(-r), -r);
}

/*
 * The PC machine's devices and firmware tables, in guest RAM below 1 MiB
 * (the 0xe0000-0xfffff segment, reserved in the memory map). 0, or the exit
 * status after one line.
 */
static int prepare_pc(struct vm *vm, unsigned cpus)
{
	if (vm->ram_size > PC_RAM_MAX) {
		errmsg("-m: the PC machine's RAM ends at %llu MiB, below its local and I/O APICs; give at most -m %llu",
		       (unsigned long long)(PC_RAM_MAX >> 20), (unsigned long long)(PC_RAM_MAX >> 20));
		return VMM_EXIT_USAGE;
	}
	pc_init(&vm->pc, cpus, vm->ram_size, com1_to_console, isa_irq_line, vm);
	vm->machine = MACHINE_PC;	/* from here vm_destroy() gives the devices back */
	(void)acpi_build(vm->mem + PC_ACPI_ADDR, PC_ACPI_SIZE, PC_ACPI_ADDR, cpus);
	(void)smbios_build(vm->mem + PC_SMBIOS_ADDR, PC_SMBIOS_SIZE, PC_SMBIOS_ADDR);
	/* Kernels without ACPI find no MP table above 255 vCPUs, and say so. */
	if (!mptable_build(vm->mem + PC_MPTABLE_ADDR, PC_MPTABLE_SIZE, PC_MPTABLE_ADDR, cpus))
		info("the PC machine has no MP table above %u vCPUs: the guest must use ACPI",
		     MPTABLE_MAX_CPUS);
	return 0;
}

/*
 * KVM's interrupt controllers and PIT, before any vCPU. With more than one
 * vCPU, whether this KVM runs the start-up code of the guest's other CPUs
 * (real mode to IA-32e mode after INIT and SIPI): if not, said at once.
 */
static int make_pc_irqchip(struct vm *vm)
{
	union {
		struct kvm_irq_routing r;
		uint8_t bytes[sizeof(struct kvm_irq_routing) +
			      PC_GSI_ROUTES * sizeof(struct kvm_irq_routing_entry)];
	} routes = { 0 };
	char err[160] = "";
	int r;

	routes.r.nr = pc_gsi_routes(routes.r.entries);
	if (kvm_require(vm->kvm_fd, irqchip_caps, ARRAY_SIZE(irqchip_caps)) ||
	    kvm_pc_create(vm->vm_fd, &routes.r))
		return -1;
	if (vm->ncpus < 2)
		return 0;
	r = hostinfo_probe_enter_long_mode(vm->kvm_fd, err, sizeof(err));
	if (r == 0)
		warn("this KVM stops a guest that enters long mode itself (vmm --host-info: entering long mode): the guest's start of vCPUs 1-%u will stop the VM; boot with -c 1 here",
		     vm->ncpus - 1);
	else if (r < 0)
		warn("probing whether this KVM runs the start of the guest's other vCPUs failed (%s); going on",
		     err);
	return 0;
}

/* After the one line saying why: everything vm_create took goes back. */
static int give_back(struct vm *vm, int status)
{
	vm_destroy(vm);
	return status;
}

/*
 * What the host does to the guest's view, for boot_info.flags (the
 * self-test skips or holds its checks by them); an unknown answer leaves
 * its flag clear. Probed after the VM's own set-up, so that a failing
 * call hits that first.
 */
static uint32_t host_boot_flags(int kvm_fd)
{
	uint32_t flags = 0;

	if (hostinfo_probe_alignment_check(kvm_fd, NULL, 0) == 0)
		flags |= BOOT_FLAG_NO_ALIGNMENT_CHECK;
	if (hostinfo_probe_cpuid_reaches(kvm_fd) == 1)
		flags |= BOOT_FLAG_CPUID_7_EDX30_SET;
	return flags;
}

/*
 * What KVM's instruction emulator runs at CPL0, under every policy, then
 * --host-quirks' entries of it forced: the run loop completes what it cannot
 * (gap.c); a Linux kernel is refused where it cannot run what vmm cannot
 * complete (check_linux_runs()). Probed, as the boot flags are, after the
 * VM's own set-up, silently. An unknown answer counts as "cannot" where vmm
 * completes (it then acts only on KVM's internal error), as "can" where it
 * would refuse a kernel.
 */
static void probe_cpl0(int kvm_fd, struct host_profile *p, unsigned forced)
{
	p->cmpxchg16b_cpl0 = hostinfo_probe_cmpxchg16b_cpl0(kvm_fd, NULL, 0) == 1;
	p->soft_int_cpl0 = hostinfo_probe_soft_int_cpl0(kvm_fd, NULL, 0) == 1;
	p->xsave_cpl0 = hostinfo_probe_xsave_cpl0(kvm_fd, NULL, 0) != 0;
	p->kernel_insns_cpl0 = hostinfo_probe_kernel_insns_cpl0(kvm_fd, NULL, 0) != 0;
	profile_force_quirks(p, forced & PROFILE_CPL0_QUIRKS);
}

/*
 * A Linux kernel on a KVM that runs CPL0 code in an instruction emulator
 * lacking what every kernel runs early (the nested PVM KVM): refused at
 * once, rather than stopped minutes later by an internal error.
 */
static int check_linux_runs(const struct vm *vm, const struct loader_image *img,
			    const struct kernel_boot *kb)
{
	const char *blocker = profile_linux_blocker(&vm->host);

	if (!blocker || !kb->linux_kernel)
		return 0;
	errmsg("guest image '%s' is a Linux kernel, and this host's KVM cannot run a kernel at CPL0: "
	       "it stops the VM at %s there (vmm --host-info); boot it on a stock KVM", img->path, blocker);
	return VMM_EXIT_HOST;
}

/*
 * Where this KVM answers CPUID leaf 1 from the host (probed only when the
 * host's bit differs from the table's), the guest sees the host's
 * hypervisor bit whatever --hypervisor-bit asked: said, not hidden.
 */
static void check_hypervisor_bit(int kvm_fd, enum cpuid_hypervisor asked, bool table_bit)
{
	bool host_bit = hostinfo_host_hypervisor();

	if (host_bit == table_bit || hostinfo_probe_cpuid_hypervisor(kvm_fd, &host_bit) != 0)
		return;
	warn("CPUID.1:ECX[31] (hypervisor) is %s in the guest's CPUID table (--hypervisor-bit=%s), but this KVM answers leaf 1 from the host: the guest sees it %s",
	     table_bit ? "set" : "clear", cpuid_hypervisor_name(asked), host_bit ? "set" : "clear");
}

/*
 * A kernel entered in 32-bit mode that enables long mode itself, on a KVM
 * that stops such a guest (hostinfo_probe_leave_long_mode(): the EFER.LME
 * write): a PVH kernel is refused, since it must; a multiboot kernel may
 * stay in 32-bit mode, so it runs after a warning, and the line of a
 * fatal exit names the cause.
 */
static int check_own_long_mode(struct vm *vm, const struct loader_image *img,
			       const struct kernel_boot *kb)
{
	static const char hint[] = " (this KVM stops a guest that enables long mode itself; see above)";

	if (kb->entry.mode != BOOT_ENTRY_PROT32 ||
	    hostinfo_probe_leave_long_mode(vm->kvm_fd, NULL, 0) != 0)
		return 0;
	if (img->info.kind == IMAGE_PVH && kb->enables_long_mode) {
		errmsg("guest image '%s' is a 64-bit PVH kernel, entered in 32-bit mode to enable long mode itself, "
		       "and this host's KVM stops a guest that does (vmm --host-info: leaving long mode); "
		       "a Linux kernel (bzImage or vmlinux) boots here, other PVH kernels on a stock KVM", img->path);
		return VMM_EXIT_HOST;
	}
	warn("guest image '%s' is a %s entered in 32-bit mode, and this host's KVM stops a guest that "
	     "enables long mode itself (vmm --host-info: leaving long mode): it runs while it stays in 32-bit mode",
	     img->path, image_kind_name(img->info.kind));
	vm->stop_hint = hint;
	return 0;
}

/* As many vCPUs as KVM allows. */
static int check_cpus(const struct vm *vm, unsigned cpus)
{
	unsigned max = kvm_max_vcpus(vm->kvm_fd);

	if (cpus > max) {
		errmsg("--cpus %u is more than this host's KVM allows (%u)", cpus, max);
		return VMM_EXIT_USAGE;
	}
	return 0;
}

/* KVM's supported CPUID with the VM's edits: the hypervisor bit, nesting. */
static struct kvm_cpuid2 *vm_cpuid(const struct vm *vm, bool hypervisor)
{
	struct kvm_cpuid2 *cpuid = kvm_supported_cpuid(vm->kvm_fd);

	if (!cpuid)
		return NULL;
	cpuid_set_hypervisor(cpuid, hypervisor);
	if (vm->split_lock_emulate) {
		enum cpuid_nested hidden = cpuid_hide_nested(cpuid);

		if (hidden != CPUID_NESTED_NONE)
			info("--split-lock=emulate hides %s from the guest: the VMM cannot watch a nested guest's instructions (--split-lock=inherit, on or off offer it)",
			     hidden == CPUID_NESTED_SVM ? "SVM" : "VMX");
	}
	return cpuid;
}

int vm_create(struct vm *vm, const struct vm_config *c)
{
	struct boot_layout layout = *c->layout;
	struct kernel_boot kb;
	struct kvm_cpuid2 *cpuid;
	char err[512];
	void *mem;
	long run_size;
	const char *what;
	bool hypervisor;
	int r;

	if (vm_init_common(vm, c->policy, layout.cpus, c->console_fd, &what)) {
		errmsg_errno(what, errno, NULL);
		return give_back(vm, VMM_EXIT_HOST);
	}
	vm->split_lock_enumerated = c->split_lock_enumerated;
	vm->split_lock_emulate = c->split_lock_emulate;
	vm->split_lock_watch = c->split_lock_watch;
	vm->host = c->host;
	vm->machine = c->machine;
	ratelimit_init(&vm->split_lock_rate, c->split_lock_ratelimit, c->split_lock_ratelimit);

	mem = mmap(NULL, layout.ram_size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED) {
		errmsg_errno("mmap of guest RAM", errno, "try a smaller -m");
		return give_back(vm, VMM_EXIT_HOST);
	}
	vm->mem = mem;
	vm->ram_size = layout.ram_size;
	if (c->machine == MACHINE_PC && (r = prepare_pc(vm, layout.cpus)))
		return give_back(vm, r);
	/* Before /dev/kvm, so that a bad image is reported on any host. */
	r = loader_place(c->image, vm->mem, &layout, &kb, err, sizeof(err));
	if (r) {
		errmsg("%s", err);
		return give_back(vm, r == LOADER_USAGE ? VMM_EXIT_USAGE : VMM_EXIT_IMAGE);
	}
	vm->kvm_fd = kvm_open();
	if (vm->kvm_fd < 0 || kvm_require(vm->kvm_fd, base_caps, ARRAY_SIZE(base_caps)))
		return give_back(vm, VMM_EXIT_HOST);
	r = check_cpus(vm, layout.cpus);
	if (!r)
		r = check_own_long_mode(vm, c->image, &kb);
	if (r)
		return give_back(vm, r);
	if (kvm_vm_create(vm->kvm_fd, vm->mem, vm->ram_size, &vm->vm_fd) ||
	    kvm_route_msrs_to_user(vm->vm_fd, emulated_msrs, ARRAY_SIZE(emulated_msrs),
				   vm->split_lock_emulate))
		return give_back(vm, VMM_EXIT_HOST);
	if (vm->machine == MACHINE_PC && make_pc_irqchip(vm))
		return give_back(vm, VMM_EXIT_HOST);
	run_size = kvm_run_size(vm->kvm_fd);
	if (run_size < 0)
		return give_back(vm, VMM_EXIT_HOST);
	vm->run_size = (size_t)run_size;
	hypervisor = cpuid_hypervisor_bit(c->cpuid_hypervisor, vm->split_lock_enumerated);
	cpuid = vm_cpuid(vm, hypervisor);
	if (!cpuid)
		return give_back(vm, VMM_EXIT_HOST);
	for (unsigned i = 0; i < vm->ncpus; i++) {
		if (vcpu_create(&vm->vcpus[i], cpuid, &layout)) {
			free(cpuid);
			return give_back(vm, VMM_EXIT_HOST);
		}
	}
	free(cpuid);
	/* Guest memory is written once, when boot_info's flags are known. */
	layout.flags |= host_boot_flags(vm->kvm_fd);
	probe_cpl0(vm->kvm_fd, &vm->host, c->host_quirks);
	r = check_linux_runs(vm, c->image, &kb);
	if (r)
		return give_back(vm, r);
	check_hypervisor_bit(vm->kvm_fd, c->cpuid_hypervisor, hypervisor);
	boot_setup_memory(vm->mem, &layout);
	return 0;
}

void vm_destroy(struct vm *vm)
{
	for (unsigned i = 0; vm->vcpus && i < vm->ncpus; i++)
		vcpu_destroy(&vm->vcpus[i]);
	/* Neither fd was written through: closing them cannot lose anything. */
	if (vm->vm_fd >= 0)
		(void)close(vm->vm_fd);
	if (vm->kvm_fd >= 0)
		(void)close(vm->kvm_fd);
	if (vm->mem)
		munmap(vm->mem, vm->ram_size);
	vm->vm_fd = vm->kvm_fd = -1;
	vm->mem = NULL;
	vm_destroy_common(vm);
}
