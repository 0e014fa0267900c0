/* SPDX-License-Identifier: MIT */
#include "kvm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "log.h"
#include "vmm_status.h"

int kvm_ioctl(int fd, unsigned long req, void *arg, const char *what)
{
	int r;

	do
		r = ioctl(fd, req, arg);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		die_errno(what, errno, "the host's KVM refused it; run 'vmm --host-info' to see what it offers");
	return r;
}

int kvm_open(void)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	int version;

	if (fd < 0) {
		int e = errno;

		if (e == ENOENT)
			die_errno("open /dev/kvm", e,
				  "load kvm_intel or kvm_amd, or enable virtualisation in firmware or the hypervisor");
		if (e == EACCES || e == EPERM)
			die_errno("open /dev/kvm", e,
				  "run as root or add the user to the group that owns /dev/kvm");
		die_errno("open /dev/kvm", e, NULL);
	}
	version = KVM_IOCTL(fd, KVM_GET_API_VERSION, NULL);
	if (version != KVM_API_VERSION)
		die(VMM_EXIT_HOST, "/dev/kvm speaks KVM API %d, this vmm needs %d",
		    version, KVM_API_VERSION);
	return fd;
}

int kvm_cap(int fd, long cap)
{
	int r = ioctl(fd, KVM_CHECK_EXTENSION, cap);

	if (r < 0)
		die_errno("KVM_CHECK_EXTENSION", errno, NULL);
	return r;
}

void kvm_require(int fd, const struct kvm_cap_need *need, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (kvm_cap(fd, need[i].cap) <= 0)
			die(VMM_EXIT_HOST,
			    "this host's KVM lacks %s, which vmm needs for %s; a newer host kernel has it",
			    need[i].name, need[i].why);
}

unsigned kvm_max_vcpus(int kvm_fd)
{
	int r = kvm_cap(kvm_fd, KVM_CAP_MAX_VCPUS);

	if (r <= 0)
		r = kvm_cap(kvm_fd, KVM_CAP_NR_VCPUS);
	return r > 0 ? (unsigned)r : 4;
}

int kvm_create_vm(int kvm_fd)
{
	return KVM_IOCTL(kvm_fd, KVM_CREATE_VM, 0);
}

void kvm_set_memory(int vm_fd, uint32_t slot, uint64_t gpa, void *hva, uint64_t size)
{
	struct kvm_userspace_memory_region region = {
		.slot = slot,
		.guest_phys_addr = gpa,
		.memory_size = size,
		.userspace_addr = (uint64_t)(uintptr_t)hva,
	};

	KVM_IOCTL(vm_fd, KVM_SET_USER_MEMORY_REGION, &region);
}

struct kvm_cpuid2 *kvm_supported_cpuid(int kvm_fd)
{
	for (unsigned n = 64;; n *= 2) {
		struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + n * sizeof(c->entries[0]));

		if (!c)
			die(VMM_EXIT_HOST, "out of memory for the CPUID table");
		c->nent = n;
		if (ioctl(kvm_fd, KVM_GET_SUPPORTED_CPUID, c) == 0)
			return c;
		free(c);
		if (errno != E2BIG || n >= 4096)
			die_errno("KVM_GET_SUPPORTED_CPUID", errno, NULL);
	}
}

size_t kvm_run_size(int kvm_fd)
{
	int r = KVM_IOCTL(kvm_fd, KVM_GET_VCPU_MMAP_SIZE, NULL);

	if ((size_t)r < sizeof(struct kvm_run))
		die(VMM_EXIT_HOST, "KVM_GET_VCPU_MMAP_SIZE returned %d, smaller than struct kvm_run", r);
	return (size_t)r;
}

void kvm_route_msrs_to_user(int vm_fd, const uint32_t *msrs, unsigned n)
{
	struct kvm_enable_cap cap = {
		.cap = KVM_CAP_X86_USER_SPACE_MSR,
		.args[0] = KVM_MSR_EXIT_REASON_FILTER,
	};
	/* One deny bit per range; a zero bit means "not allowed", i.e. exit. */
	static const uint8_t deny = 0;
	struct kvm_msr_filter filter = { .flags = KVM_MSR_FILTER_DEFAULT_ALLOW };

	if (n > KVM_MSR_FILTER_MAX_RANGES)
		die(VMM_EXIT_HOST, "too many MSR filter ranges (%u)", n);
	KVM_IOCTL(vm_fd, KVM_ENABLE_CAP, &cap);
	for (unsigned i = 0; i < n; i++)
		filter.ranges[i] = (struct kvm_msr_filter_range){
			.flags = KVM_MSR_FILTER_READ | KVM_MSR_FILTER_WRITE,
			.nmsrs = 1,
			.base = msrs[i],
			.bitmap = (uint8_t *)&deny,
		};
	KVM_IOCTL(vm_fd, KVM_X86_SET_MSR_FILTER, &filter);
}
