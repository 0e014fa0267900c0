/* SPDX-License-Identifier: MIT */
/* /dev/kvm and VM-level ioctls, each checked: a failure names the call. */
#ifndef VMM_KVM_H
#define VMM_KVM_H

#include <stddef.h>
#include <stdint.h>

#include <linux/kvm.h>

struct kvm_cap_need {
	long cap;
	const char *name;
	const char *why;
};

/* ioctl() that dies naming `what` on failure; returns ioctl's result. */
int kvm_ioctl(int fd, unsigned long req, void *arg, const char *what);
#define KVM_IOCTL(fd, req, arg) kvm_ioctl((fd), (req), (arg), #req)

/* Opens /dev/kvm and checks the API version; dies with advice otherwise. */
int kvm_open(void);
/* KVM_CHECK_EXTENSION on fd (the /dev/kvm or VM fd). */
int kvm_cap(int fd, long cap);
/* Dies naming the first capability in `need` that fd lacks. */
void kvm_require(int fd, const struct kvm_cap_need *need, size_t n);
/* Upper bound on vCPUs: KVM_CAP_MAX_VCPUS, else NR_VCPUS, else 4. */
unsigned kvm_max_vcpus(int kvm_fd);

int kvm_create_vm(int kvm_fd);
void kvm_set_memory(int vm_fd, uint32_t slot, uint64_t gpa, void *hva, uint64_t size);
/* The host's supported CPUID table; free() it. */
struct kvm_cpuid2 *kvm_supported_cpuid(int kvm_fd);
size_t kvm_run_size(int kvm_fd);
/*
 * Sends guest RDMSR/WRMSR of `msrs` to userspace (KVM_EXIT_X86_RDMSR/WRMSR,
 * reason FILTER); every other MSR stays with KVM.
 */
void kvm_route_msrs_to_user(int vm_fd, const uint32_t *msrs, unsigned n);

#endif
