/* SPDX-License-Identifier: MIT */
#include "kvm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "array_size.h"
#include "boot.h"
#include "log.h"
#include "vmm_status.h"

#define KVM_HINT "the host's KVM refused it; run 'vmm --host-info' to see what it offers"

int __kvm_ioctl(int fd, unsigned long req, void *arg)
{
	int r;

	do
		r = ioctl(fd, req, arg);
	while (r < 0 && errno == EINTR);
	return r;
}

int __kvm_vcpu_run(int vcpu_fd)
{
	return ioctl(vcpu_fd, KVM_RUN, NULL) < 0 ? -errno : 0;
}

/* __kvm_ioctl, printing one line naming `what` on failure. */
static int kvm_ioctl(int fd, unsigned long req, void *arg, const char *what)
{
	int r = __kvm_ioctl(fd, req, arg);

	if (r < 0)
		errmsg_errno(what, errno, KVM_HINT);
	return r;
}

#define KVM_IOCTL(fd, req, arg) kvm_ioctl((fd), (req), (arg), #req)

int __kvm_open(char *err, size_t errlen)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	int version, e;

	if (fd < 0) {
		e = errno;
		snprintf(err, errlen, "open /dev/kvm: %s", strerror(e));
		errno = e;
		return -1;
	}
	version = __kvm_ioctl(fd, KVM_GET_API_VERSION, NULL);
	if (version == KVM_API_VERSION)
		return fd;
	e = version < 0 ? errno : EPROTO;
	if (version < 0)
		snprintf(err, errlen, "KVM_GET_API_VERSION failed: %s (errno %d)", strerror(e), e);
	else
		snprintf(err, errlen, "/dev/kvm speaks KVM API %d, this vmm needs %d",
			 version, KVM_API_VERSION);
	(void)close(fd);
	errno = e;
	return -1;
}

int kvm_open(void)
{
	char err[128];
	int fd = __kvm_open(err, sizeof(err));
	int e = errno;

	if (fd >= 0)
		return fd;
	if (strncmp(err, "open ", 5) != 0)
		errmsg("%s", err);
	else if (e == ENOENT)
		errmsg_errno("open /dev/kvm", e,
			     "load kvm_intel or kvm_amd, or enable virtualisation in firmware or the hypervisor; "
			     "without a KVM here, try vmm on a stock KVM inside QEMU: ./run.sh in its source tree "
			     "does that (docs/lab.md)");
	else if (e == EACCES || e == EPERM)
		errmsg_errno("open /dev/kvm", e,
			     "run as root or add the user to the group that owns /dev/kvm");
	else
		errmsg_errno("open /dev/kvm", e, NULL);
	return -1;
}

int __kvm_cap(int fd, long cap)
{
	return __kvm_ioctl(fd, KVM_CHECK_EXTENSION, (void *)cap);
}

int kvm_cap(int fd, long cap)
{
	int r = __kvm_cap(fd, cap);

	if (r < 0)
		errmsg_errno("KVM_CHECK_EXTENSION", errno, NULL);
	return r;
}

int kvm_require(int fd, const struct kvm_cap_need *need, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int r = kvm_cap(fd, need[i].cap);

		if (r < 0)
			return -1;
		if (r == 0) {
			errmsg("this host's KVM lacks %s, which vmm needs for %s; a newer host kernel has it",
			       need[i].name, need[i].why);
			return -1;
		}
	}
	return 0;
}

unsigned kvm_max_vcpus(int kvm_fd)
{
	/* A KVM that cannot answer gets the smallest bound any KVM has had. */
	int r = __kvm_cap(kvm_fd, KVM_CAP_MAX_VCPUS);

	if (r <= 0)
		r = __kvm_cap(kvm_fd, KVM_CAP_NR_VCPUS);
	return r > 0 ? (unsigned)r : 4;
}

struct kvm_cpuid2 *__kvm_supported_cpuid(int kvm_fd)
{
	for (unsigned n = 64; n <= 4096; n *= 2) {
		struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + n * sizeof(c->entries[0]));
		int e;

		if (!c) {
			errno = ENOMEM;
			return NULL;
		}
		c->nent = n;
		if (__kvm_ioctl(kvm_fd, KVM_GET_SUPPORTED_CPUID, c) == 0)
			return c;
		e = errno;
		free(c);
		errno = e;
		if (e != E2BIG)
			break;
	}
	return NULL;
}

struct kvm_cpuid2 *kvm_supported_cpuid(int kvm_fd)
{
	struct kvm_cpuid2 *c = __kvm_supported_cpuid(kvm_fd);

	if (!c && errno == ENOMEM)
		errmsg("out of memory for the CPUID table");
	else if (!c)
		errmsg_errno("KVM_GET_SUPPORTED_CPUID", errno, NULL);
	return c;
}

long __kvm_run_size(int kvm_fd)
{
	int r = __kvm_ioctl(kvm_fd, KVM_GET_VCPU_MMAP_SIZE, NULL);

	if (r >= 0 && (size_t)r < sizeof(struct kvm_run)) {
		errno = EPROTO;
		return -1;
	}
	return r;
}

long kvm_run_size(int kvm_fd)
{
	long r = __kvm_run_size(kvm_fd);

	if (r < 0 && errno == EPROTO)
		errmsg("KVM_GET_VCPU_MMAP_SIZE returned less than struct kvm_run");
	else if (r < 0)
		errmsg_errno("KVM_GET_VCPU_MMAP_SIZE", errno, KVM_HINT);
	return r;
}

int __kvm_vm_create(int kvm_fd, void *hva, uint64_t size, int *vm_fd, const char **what)
{
	struct kvm_userspace_memory_region region = {
		.slot = 0,
		.guest_phys_addr = 0,
		.memory_size = size,
		.userspace_addr = (uint64_t)(uintptr_t)hva,
	};

	*what = "KVM_CREATE_VM";
	*vm_fd = __kvm_ioctl(kvm_fd, KVM_CREATE_VM, (void *)0);
	if (*vm_fd < 0)
		return -1;
	*what = "KVM_SET_USER_MEMORY_REGION";
	return __kvm_ioctl(*vm_fd, KVM_SET_USER_MEMORY_REGION, &region) < 0 ? -1 : 0;
}

int kvm_vm_create(int kvm_fd, void *hva, uint64_t size, int *vm_fd)
{
	const char *what;

	if (__kvm_vm_create(kvm_fd, hva, size, vm_fd, &what)) {
		errmsg_errno(what, errno, KVM_HINT);
		return -1;
	}
	return 0;
}

int __kvm_pc_create(int vm_fd, const struct kvm_irq_routing *routes, const char **what)
{
	uint64_t identity = KVM_PC_IDENTITY_MAP_ADDR;
	struct kvm_pit_config pit = { .flags = KVM_PIT_SPEAKER_DUMMY };

	*what = "KVM_SET_TSS_ADDR";
	if (__kvm_ioctl(vm_fd, KVM_SET_TSS_ADDR, (void *)(uintptr_t)KVM_PC_TSS_ADDR) < 0)
		return -1;
	*what = "KVM_SET_IDENTITY_MAP_ADDR";
	if (__kvm_ioctl(vm_fd, KVM_SET_IDENTITY_MAP_ADDR, &identity) < 0)
		return -1;
	*what = "KVM_CREATE_IRQCHIP";
	if (__kvm_ioctl(vm_fd, KVM_CREATE_IRQCHIP, NULL) < 0)
		return -1;
	*what = "KVM_SET_GSI_ROUTING";
	if (__kvm_ioctl(vm_fd, KVM_SET_GSI_ROUTING, (void *)routes) < 0)
		return -1;
	*what = "KVM_CREATE_PIT2";
	return __kvm_ioctl(vm_fd, KVM_CREATE_PIT2, &pit) < 0 ? -1 : 0;
}

int kvm_pc_create(int vm_fd, const struct kvm_irq_routing *routes)
{
	const char *what;

	if (__kvm_pc_create(vm_fd, routes, &what)) {
		errmsg_errno(what, errno, "the PC machine (a kernel image) needs KVM's interrupt "
			     "controllers and PIT; run 'vmm --host-info' to see what this KVM offers");
		return -1;
	}
	return 0;
}

int __kvm_irq_line(int vm_fd, unsigned irq, bool level)
{
	struct kvm_irq_level l = { .irq = irq, .level = level };

	return __kvm_ioctl(vm_fd, KVM_IRQ_LINE, &l) < 0 ? -errno : 0;
}

/* The boot protocol's segments, with every privilege level set to cpl. */
static void set_cpl(struct kvm_sregs *s, unsigned cpl)
{
	struct kvm_segment *segs[] = { &s->cs, &s->ss, &s->ds, &s->es, &s->fs, &s->gs };

	for (size_t i = 0; i < ARRAY_SIZE(segs); i++) {
		segs[i]->dpl = (uint8_t)cpl;
		segs[i]->selector = (uint16_t)((segs[i]->selector & ~3u) | cpl);
	}
}

int __kvm_vcpu_create(int vm_fd, const struct kvm_vcpu_setup *s, int *fd, struct kvm_run **run,
		      struct kvm_regs *regs, struct kvm_sregs *sregs, const char **what)
{
	void *m;

	*what = "KVM_CREATE_VCPU";
	*fd = __kvm_ioctl(vm_fd, KVM_CREATE_VCPU, (void *)(uintptr_t)s->index);
	if (*fd < 0)
		return -1;
	*what = "mmap of the vCPU run page";
	m = mmap(NULL, s->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (m == MAP_FAILED)
		return -1;
	*run = m;
	*what = "KVM_SET_CPUID2";
	if (__kvm_ioctl(*fd, KVM_SET_CPUID2, (void *)s->cpuid) < 0)
		return -1;
	*what = "KVM_GET_SREGS";
	if (__kvm_ioctl(*fd, KVM_GET_SREGS, sregs) < 0)
		return -1;
	if (!boot_vcpu_entered(s->layout, s->index)) {
		/* A kernel's other vCPUs keep KVM's reset state: the PC machine's INIT and SIPI start them. */
		*what = "KVM_GET_REGS";
		return __kvm_ioctl(*fd, KVM_GET_REGS, regs) < 0 ? -1 : 0;
	}
	boot_init_entry_sregs(sregs, s->layout);
	if (s->cpl)
		set_cpl(sregs, s->cpl);
	*what = "KVM_SET_SREGS";
	if (__kvm_ioctl(*fd, KVM_SET_SREGS, sregs) < 0)
		return -1;
	boot_init_regs(regs, s->layout, s->index);
	*what = "KVM_SET_REGS";
	return __kvm_ioctl(*fd, KVM_SET_REGS, regs) < 0 ? -1 : 0;
}

int kvm_vcpu_create(int vm_fd, const struct kvm_vcpu_setup *s, int *fd, struct kvm_run **run,
		    struct kvm_regs *regs, struct kvm_sregs *sregs)
{
	const char *what;

	if (__kvm_vcpu_create(vm_fd, s, fd, run, regs, sregs, &what)) {
		errmsg_errno(what, errno, strncmp(what, "mmap", 4) ? KVM_HINT : NULL);
		return -1;
	}
	return 0;
}

int kvm_route_msrs_to_user(int vm_fd, const uint32_t *msrs, unsigned n, bool failures)
{
	struct kvm_enable_cap cap = {
		.cap = KVM_CAP_X86_USER_SPACE_MSR,
		.args[0] = KVM_MSR_EXIT_REASON_FILTER |
			   (failures ? KVM_MSR_EXIT_REASON_UNKNOWN | KVM_MSR_EXIT_REASON_INVAL : 0),
	};
	/* One deny bit per range; a zero bit means "not allowed", i.e. exit. */
	static const uint8_t deny = 0;
	struct kvm_msr_filter filter = { .flags = KVM_MSR_FILTER_DEFAULT_ALLOW };

	if (n > KVM_MSR_FILTER_MAX_RANGES) {
		errmsg("too many MSR filter ranges (%u)", n);
		return -1;
	}
	if (KVM_IOCTL(vm_fd, KVM_ENABLE_CAP, &cap) < 0)
		return -1;
	for (unsigned i = 0; i < n; i++)
		filter.ranges[i] = (struct kvm_msr_filter_range){
			.flags = KVM_MSR_FILTER_READ | KVM_MSR_FILTER_WRITE,
			.nmsrs = 1,
			.base = msrs[i],
			.bitmap = (uint8_t *)&deny,
		};
	return KVM_IOCTL(vm_fd, KVM_X86_SET_MSR_FILTER, &filter) < 0 ? -1 : 0;
}
