/* SPDX-License-Identifier: MIT */
/*
 * /dev/kvm, VM and vCPU construction, with two error policies, after the
 * KVM selftests library's: __kvm_x() returns what the syscall does (-1 and
 * errno, or NULL) so that --host-info and the probes can record it and go
 * on; kvm_x() returns the same after printing one line that names the call,
 * errno and what the user can do, for the VMM proper. Neither exits: the
 * caller gives back what it took (vm_create, vm_destroy).
 */
#ifndef VMM_KVM_H
#define VMM_KVM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/kvm.h>

struct kvm_cap_need {
	long cap;
	const char *name;
	const char *why;
};

struct boot_layout;

/* ioctl() retried on EINTR; its result (-1 and errno on failure). */
int __kvm_ioctl(int fd, unsigned long req, void *arg);
/* One KVM_RUN, not retried (EINTR is how a kick or immediate_exit returns): 0 or -errno. */
int __kvm_vcpu_run(int vcpu_fd);

/*
 * Opens /dev/kvm and checks the API version: the fd, or -1 with errno and
 * a one-line reason in err.
 */
int __kvm_open(char *err, size_t errlen);
/* The same, printing the reason and advice on failure. */
int kvm_open(void);
/* KVM_CHECK_EXTENSION on fd (the /dev/kvm or VM fd); -1 and errno on failure. */
int __kvm_cap(int fd, long cap);
int kvm_cap(int fd, long cap);
/* 0, or -1 after naming the first capability in `need` that fd lacks. */
int kvm_require(int fd, const struct kvm_cap_need *need, size_t n);
/* Upper bound on vCPUs: KVM_CAP_MAX_VCPUS, else NR_VCPUS, else 4. */
unsigned kvm_max_vcpus(int kvm_fd);

/* The host's supported CPUID table (free() it), or NULL and errno. */
struct kvm_cpuid2 *__kvm_supported_cpuid(int kvm_fd);
struct kvm_cpuid2 *kvm_supported_cpuid(int kvm_fd);
/* KVM_GET_VCPU_MMAP_SIZE, or -1 and errno (EPROTO: smaller than kvm_run). */
long __kvm_run_size(int kvm_fd);
long kvm_run_size(int kvm_fd);

/*
 * A VM and its vCPUs, built the same way for the guest and for the host
 * probes. On failure the error-returning forms return -1 with errno and
 * *what naming the call; whatever was created is recorded, for the caller's
 * clean-up, in *vm_fd or *fd and *run (initialise them to -1 and NULL).
 */
/* KVM_CREATE_VM with `size` bytes at hva as guest RAM from GPA 0. */
int __kvm_vm_create(int kvm_fd, void *hva, uint64_t size, int *vm_fd, const char **what);
int kvm_vm_create(int kvm_fd, void *hva, uint64_t size, int *vm_fd);

struct kvm_vcpu_setup {
	unsigned index;
	size_t run_size;
	const struct kvm_cpuid2 *cpuid;       /* as this vCPU is to see it */
	const struct boot_layout *layout;
	unsigned cpl;                         /* segment privilege at entry */
};
/*
 * KVM_CREATE_VCPU, its run page, its CPUID table, and the boot protocol's
 * registers, which it leaves in *regs and *sregs.
 */
int __kvm_vcpu_create(int vm_fd, const struct kvm_vcpu_setup *s, int *fd, struct kvm_run **run,
		      struct kvm_regs *regs, struct kvm_sregs *sregs, const char **what);
int kvm_vcpu_create(int vm_fd, const struct kvm_vcpu_setup *s, int *fd, struct kvm_run **run,
		    struct kvm_regs *regs, struct kvm_sregs *sregs);
/*
 * The PC machine's in-kernel devices, made before any vCPU: KVM_SET_TSS_ADDR
 * and KVM_SET_IDENTITY_MAP_ADDR (pages in the 32-bit hole that VMX needs
 * for real mode), KVM_CREATE_IRQCHIP (PIC, I/O APIC, a local APIC per vCPU)
 * with KVM_SET_GSI_ROUTING as the firmware tables say, and KVM_CREATE_PIT2.
 * With them KVM handles HLT, and vCPUs other than 0
 * wait in their local APIC for INIT and SIPI.
 */
#define KVM_PC_TSS_ADDR          0xfffbd000u  /* three pages */
#define KVM_PC_IDENTITY_MAP_ADDR 0xfffbc000u  /* one page */
int __kvm_pc_create(int vm_fd, const struct kvm_irq_routing *routes, const char **what);
int kvm_pc_create(int vm_fd, const struct kvm_irq_routing *routes);
/* KVM_IRQ_LINE: an ISA interrupt line's level; 0 or -errno. */
int __kvm_irq_line(int vm_fd, unsigned irq, bool level);

/*
 * Sends guest RDMSR/WRMSR of `msrs` to userspace (KVM_EXIT_X86_RDMSR/WRMSR,
 * reason FILTER); every other MSR stays with KVM, except that with
 * `failures` the accesses KVM would answer with #GP (reasons UNKNOWN and
 * INVAL) come to userspace too.
 */
int kvm_route_msrs_to_user(int vm_fd, const uint32_t *msrs, unsigned n, bool failures);

#endif
