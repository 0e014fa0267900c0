/* SPDX-License-Identifier: MIT */
/*
 * The I/O half of hostinfo.h: reads /proc and asks /dev/kvm. Nothing here
 * dies: --host-info has to report on hosts where KVM is missing or refuses
 * things, so every failure is written into struct hostinfo and reading goes on.
 */
#include "hostinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/kvm.h>

#include "boot.h"
#include "cpuid.h"
#include "kvm.h"
#include "vmm_msr.h"
#include "x86.h"
#include "array_size.h"

/* /proc/cpuinfo grows with the CPU count; this is far beyond any real one. */
#define PROC_TEXT_MAX (64u << 20)

/* The whole file as a NUL-terminated string (free() it), or NULL and *err. */
static char *read_text(const char *path, int *err)
{
	size_t cap = 4096, len = 0;
	char *buf = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		*err = errno;
		return NULL;
	}
	for (;;) {
		ssize_t n;

		if (!buf || len + 1 >= cap) {
			char *nb;

			if (buf)
				cap *= 2;
			if (cap > PROC_TEXT_MAX) {
				*err = EFBIG;
				goto fail;
			}
			nb = realloc(buf, cap);
			if (!nb) {
				*err = ENOMEM;
				goto fail;
			}
			buf = nb;
		}
		/* /proc files report size 0, so read until EOF. */
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			*err = errno;
			goto fail;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	/* A read-only fd has nothing left to flush; close cannot lose data. */
	(void)close(fd);
	return buf;
fail:
	free(buf);
	(void)close(fd);
	return NULL;
}

void hostinfo_read_proc(struct hostinfo *hi)
{
	char *text;
	int err = 0;

	text = read_text("/proc/cpuinfo", &err);
	hostinfo_parse_cpuinfo(hi, text);
	free(text);

	text = read_text("/proc/cmdline", &err);
	hostinfo_parse_cmdline(hi, text);
	free(text);

	/* Absent before Linux 6.2 and without CONFIG_CPU_SUP_INTEL: -1 says so. */
	text = read_text("/proc/sys/kernel/split_lock_mitigate", &err);
	hostinfo_parse_mitigate(hi, text);
	free(text);

	hostinfo_finish(hi);
}

/* ------------------------------------------------------------ KVM */

/* Records the first failure only: later ones are usually its consequences. */
static int probe_fail(struct hostinfo *hi, const char *call, int err)
{
	if (!hi->probe_error[0]) {
		if (err)
			snprintf(hi->probe_error, sizeof(hi->probe_error), "%s: %s (errno %d)",
				 call, strerror(err), err);
		else
			snprintf(hi->probe_error, sizeof(hi->probe_error), "%s", call);
	}
	return -1;
}

static void host_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
	__asm__ volatile("cpuid"
			 : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
			 : "a"(leaf), "c"(sub));
}

/*
 * mov eax, 7; xor ecx, ecx; cpuid; mov eax, edx; mov dx, 0xf4;
 * out dx, eax; hlt -- the guest reports CPUID.(7,0):EDX on port 0xf4.
 */
static const uint8_t probe_code[] = {
	0xb8, 0x07, 0x00, 0x00, 0x00,
	0x31, 0xc9,
	0x0f, 0xa2,
	0x89, 0xd0,
	0x66, 0xba, 0xf4, 0x00,
	0xef,
	0xf4,
};
#define PROBE_PORT      0xf4
#define PROBE_RAM       (4ull << 20)
#define PROBE_MAX_EXITS 16

struct probe {
	int vm, vcpu;
	uint8_t *mem;
	struct kvm_run *run;
	size_t run_size;
	struct kvm_cpuid2 *cpuid;
	/* The vCPU's registers as created; a probe changes them and probe_load()s them. */
	struct kvm_regs regs;
	struct kvm_sregs sregs;
};

static const char *exit_name(uint32_t r)
{
	switch (r) {
	case KVM_EXIT_HLT: return "KVM_EXIT_HLT";
	case KVM_EXIT_IO: return "KVM_EXIT_IO";
	case KVM_EXIT_MMIO: return "KVM_EXIT_MMIO";
	case KVM_EXIT_SHUTDOWN: return "KVM_EXIT_SHUTDOWN";
	case KVM_EXIT_FAIL_ENTRY: return "KVM_EXIT_FAIL_ENTRY";
	case KVM_EXIT_INTERNAL_ERROR: return "KVM_EXIT_INTERNAL_ERROR";
	case KVM_EXIT_EXCEPTION: return "KVM_EXIT_EXCEPTION";
	case KVM_EXIT_DEBUG: return "KVM_EXIT_DEBUG";
	default: return "an unexpected exit";
	}
}

/* Runs the probe guest until it reports; 0 and *edx, or -1 with probe_error. */
static int probe_run(struct hostinfo *hi, struct probe *p, uint32_t *edx)
{
	for (int i = 0; i < PROBE_MAX_EXITS; i++) {
		struct kvm_run *run = p->run;
		int r = __kvm_vcpu_run(p->vcpu);

		if (r == -EINTR || r == -EAGAIN)
			continue;
		if (r)
			return probe_fail(hi, "KVM_RUN", -r);
		if (run->exit_reason == KVM_EXIT_INTR)
			continue;
		if (run->exit_reason != KVM_EXIT_IO) {
			char what[96];

			snprintf(what, sizeof(what), "the probe guest stopped with %s (%u) before reporting",
				 exit_name(run->exit_reason), run->exit_reason);
			return probe_fail(hi, what, 0);
		}
		if (run->io.port != PROBE_PORT || run->io.direction != KVM_EXIT_IO_OUT)
			continue;
		if (run->io.size != 4 || run->io.count != 1 ||
		    run->io.data_offset > p->run_size - 4)
			return probe_fail(hi, "the probe guest's OUT to port 0xf4 is malformed", 0);
		memcpy(edx, (uint8_t *)run + run->io.data_offset, sizeof(*edx));
		return 0;
	}
	return probe_fail(hi, "the probe guest did not report within 16 exits", 0);
}

/*
 * Fills p from nothing (what it could not set stays -1 or NULL for
 * probe_teardown()): its VM with code, its vCPU at cpl. 0, or -1 with
 * probe_error.
 */
static int probe_setup_code(struct hostinfo *hi, int kvm, struct probe *p, bool table_bit,
			    const uint8_t *code, size_t code_len, unsigned cpl);

static int probe_setup(struct hostinfo *hi, int kvm, struct probe *p, bool table_bit)
{
	return probe_setup_code(hi, kvm, p, table_bit, probe_code, sizeof(probe_code), 0);
}

static int probe_setup_code(struct hostinfo *hi, int kvm, struct probe *p, bool table_bit,
			    const uint8_t *code, size_t code_len, unsigned cpl)
{
	const struct boot_layout layout = {
		.ram_size = PROBE_RAM, .cpus = 1, .image_size = code_len,
	};
	struct kvm_cpuid_entry2 *leaf7;
	const char *what;
	void *m;
	long run_size;

	*p = (struct probe){ .vm = -1, .vcpu = -1 };
	m = mmap(NULL, PROBE_RAM, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return probe_fail(hi, "mmap of the probe guest's RAM", errno);
	p->mem = m;
	if (__kvm_vm_create(kvm, p->mem, PROBE_RAM, &p->vm, &what))
		return probe_fail(hi, what, errno);
	boot_setup_memory(p->mem, &layout);
	memcpy(p->mem + BOOT_IMAGE_ADDR, code, code_len);

	run_size = __kvm_run_size(kvm);
	if (run_size < 0)
		return probe_fail(hi, errno == EPROTO ?
				  "KVM_GET_VCPU_MMAP_SIZE is smaller than struct kvm_run" :
				  "KVM_GET_VCPU_MMAP_SIZE", errno == EPROTO ? 0 : errno);
	p->run_size = (size_t)run_size;

	p->cpuid = __kvm_supported_cpuid(kvm);
	if (!p->cpuid)
		return probe_fail(hi, errno == ENOMEM ? "allocating the CPUID table" :
				  "KVM_GET_SUPPORTED_CPUID", errno);
	/* The same table a real vCPU 0 gets, then the bit under test. */
	cpuid_fixup(p->cpuid, 0);
	leaf7 = cpuid_find(p->cpuid, 7, 0);
	if (!leaf7)
		return probe_fail(hi, "KVM_GET_SUPPORTED_CPUID lists no leaf 7", 0);
	if (table_bit)
		leaf7->edx |= 1u << CPUID_7_EDX_CORE_CAPABILITIES_BIT;
	else
		leaf7->edx &= ~(1u << CPUID_7_EDX_CORE_CAPABILITIES_BIT);

	if (__kvm_vcpu_create(p->vm, &(struct kvm_vcpu_setup){
				      .index = 0, .run_size = p->run_size, .cpuid = p->cpuid,
				      .layout = &layout, .cpl = cpl,
			      }, &p->vcpu, &p->run, &p->regs, &p->sregs, &what))
		return probe_fail(hi, what, errno);
	return 0;
}

/*
 * A one-question probe's start: a fresh scratch for its errors, and its VM
 * with code at cpl (CPUID.(7,0):EDX[30] set). 0, or -1 with probe_error.
 */
static int probe_open(struct hostinfo *scratch, int kvm, struct probe *p, const uint8_t *code,
		      size_t len, unsigned cpl)
{
	hostinfo_init(scratch);
	return probe_setup_code(scratch, kvm, p, true, code, len, cpl);
}

/* p->sregs and p->regs into the vCPU: 0, or -1 with probe_error. */
static int probe_load(struct hostinfo *scratch, struct probe *p)
{
	if (__kvm_ioctl(p->vcpu, KVM_SET_SREGS, &p->sregs) < 0 ||
	    __kvm_ioctl(p->vcpu, KVM_SET_REGS, &p->regs) < 0)
		return probe_fail(scratch, "KVM_SET_SREGS/KVM_SET_REGS", errno);
	return 0;
}

static void probe_teardown(struct hostinfo *hi, struct probe *p)
{
	free(p->cpuid);
	if (p->run && munmap(p->run, p->run_size) < 0)
		probe_fail(hi, "munmap of the vCPU run page", errno);
	if (p->vcpu >= 0 && close(p->vcpu) < 0)
		probe_fail(hi, "close of the probe vCPU", errno);
	if (p->mem && munmap(p->mem, PROBE_RAM) < 0)
		probe_fail(hi, "munmap of the probe guest's RAM", errno);
	if (p->vm >= 0 && close(p->vm) < 0)
		probe_fail(hi, "close of the probe VM", errno);
}

/*
 * The end of a one-question probe: its VM gone, and where it found no
 * answer (result < 0), why, in err.
 */
static int probe_finish(struct hostinfo *scratch, struct probe *p, int result, char *err,
			size_t errlen)
{
	probe_teardown(scratch, p);
	if (result < 0 && err)
		snprintf(err, errlen, "%s", scratch->probe_error[0] ? scratch->probe_error :
			 "no answer within 16 exits");
	return result;
}

/*
 * Does a CPUID.(7,0):EDX[30] set with KVM_SET_CPUID2 reach the guest? Some
 * KVMs (the nested "PVM" of the project's machines) answer leaf 7 from the
 * host whatever the table says. The table gets the opposite of the host's
 * own bit, so that "the guest saw the table's value" cannot be the host's
 * value showing through.
 */
static void probe_cpuid(struct hostinfo *hi, int kvm)
{
	struct probe p;
	uint32_t r[4], edx = 0;
	bool host_bit = false, table_bit;

	host_cpuid(0, 0, r);
	if (r[0] >= 7) {
		host_cpuid(7, 0, r);
		host_bit = (r[3] >> CPUID_7_EDX_CORE_CAPABILITIES_BIT) & 1;
	}
	table_bit = !host_bit;

	if (probe_setup(hi, kvm, &p, table_bit) == 0 && probe_run(hi, &p, &edx) == 0)
		hi->cpuid_7_edx30_reaches_guest =
			(bool)((edx >> CPUID_7_EDX_CORE_CAPABILITIES_BIT) & 1) == table_bit;
	/* A cleanup failure after a result leaves the result standing. */
	probe_teardown(hi, &p);
}

/* mov eax, 1; cpuid; mov eax, ecx; mov dx, 0xf4; out dx, eax; hlt: CPUID.1:ECX on port 0xf4. */
static const uint8_t probe_leaf1_code[] = {
	0xb8, 0x01, 0x00, 0x00, 0x00, 0x0f, 0xa2, 0x89, 0xc8, 0x66, 0xba, 0xf4, 0x00, 0xef, 0xf4,
};

/*
 * Does a CPUID.1:ECX[31] (hypervisor) of KVM_SET_CPUID2 reach the guest?
 * The same KVMs answer leaf 1 from the host too. Again the table gets the
 * opposite of the host's bit, set with a second KVM_SET_CPUID2 before the
 * first run (which KVM allows). *host_bit: the host's own.
 */
bool hostinfo_host_hypervisor(void)
{
	uint32_t r[4];

	host_cpuid(1, 0, r);
	return (r[2] & X86_CPUID_1_ECX_HYPERVISOR) != 0;
}

static void probe_cpuid_hypervisor(struct hostinfo *hi, int kvm, bool *host_bit)
{
	struct probe p;
	uint32_t ecx = 0;
	bool table_bit;

	*host_bit = hostinfo_host_hypervisor();
	table_bit = !*host_bit;
	if (probe_setup_code(hi, kvm, &p, true, probe_leaf1_code, sizeof(probe_leaf1_code), 0) == 0) {
		if (!cpuid_set_hypervisor(p.cpuid, table_bit))
			probe_fail(hi, "KVM_GET_SUPPORTED_CPUID lists no leaf 1", 0);
		else if (__kvm_ioctl(p.vcpu, KVM_SET_CPUID2, p.cpuid) < 0)
			probe_fail(hi, "KVM_SET_CPUID2", errno);
		else if (probe_run(hi, &p, &ecx) == 0)
			hi->cpuid_1_ecx31_reaches_guest =
				((ecx & X86_CPUID_1_ECX_HYPERVISOR) != 0) == table_bit;
	}
	probe_teardown(hi, &p);
}

int hostinfo_probe_cpuid_hypervisor(int kvm_fd, bool *host_bit)
{
	struct hostinfo scratch;

	hostinfo_init(&scratch);
	probe_cpuid_hypervisor(&scratch, kvm_fd, host_bit);
	return scratch.cpuid_1_ecx31_reaches_guest;
}

int hostinfo_probe_cpuid_reaches(int kvm_fd)
{
	struct hostinfo scratch;

	hostinfo_init(&scratch);
	probe_cpuid(&scratch, kvm_fd);
	return scratch.cpuid_7_edx30_reaches_guest;
}

/*
 * nop; nop; hlt at the given CPL. A working single-step exits with
 * KVM_EXIT_DEBUG after the first nop. One that does not ends otherwise and
 * never loops: at CPL0 in HLT, at CPL3 in a triple fault (HLT there is #GP,
 * and a #DB that reaches the guest has no IDT either).
 */
static const uint8_t nop_nop_hlt[] = { 0x90, 0x90, 0xf4 };

/*
 * Runs nop_nop_hlt at `cpl` under `dbg` for one KVM_RUN: 1 when it stops on
 * the second nop, 0 when it runs on (err says to where), -1 with err when
 * the probe failed.
 */
static int probe_debug_once(int kvm, unsigned cpl, struct kvm_guest_debug *dbg,
			    char *err, size_t errlen)
{
	struct probe p;
	struct hostinfo scratch;
	int result = -1;

	if (probe_open(&scratch, kvm, &p, nop_nop_hlt, sizeof(nop_nop_hlt), cpl) == 0) {
		if (__kvm_ioctl(p.vcpu, KVM_SET_GUEST_DEBUG, dbg) < 0) {
			probe_fail(&scratch, "KVM_SET_GUEST_DEBUG", errno);
		} else if (__kvm_ioctl(p.vcpu, KVM_RUN, NULL) < 0) {
			probe_fail(&scratch, "KVM_RUN", errno);
		} else {
			result = p.run->exit_reason == KVM_EXIT_DEBUG &&
				 p.run->debug.arch.pc == BOOT_IMAGE_ADDR + 1;
			if (!result && err)
				snprintf(err, errlen, "the guest ran on to %s (%u) at 0x%llx",
					 exit_name(p.run->exit_reason), p.run->exit_reason,
					 (unsigned long long)(p.run->exit_reason == KVM_EXIT_DEBUG ?
							      p.run->debug.arch.pc : 0));
		}
		/* Leave no breakpoint armed behind the probe (the lab's QEMU minds). */
		dbg->control = 0;
		(void)__kvm_ioctl(p.vcpu, KVM_SET_GUEST_DEBUG, dbg);
	}
	return probe_finish(&scratch, &p, result, err, errlen);
}

int hostinfo_probe_singlestep(int kvm, unsigned cpl, char *err, size_t errlen)
{
	struct kvm_guest_debug dbg = {
		.control = KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_SINGLESTEP,
	};

	return probe_debug_once(kvm, cpl, &dbg, err, errlen);
}

/*
 * IRETQ at CPL0 to the next instruction (a frame of BOOT_SEL_CODE64,
 * BOOT_SEL_DATA and the flags as they are), then nop; nop; hlt, single-
 * stepped: KVM's step exit after IRETQ comes at its target, or (the
 * nested PVM KVM) one instruction later, IRETQ run without its trap.
 */
#define IRET_PROBE_AT (BOOT_IMAGE_ADDR + 14)
#define IRET_PROBE_TARGET (BOOT_IMAGE_ADDR + 16)
static const uint8_t iret_step_code[] = {
	0x48, 0x89, 0xe0,			/* mov %rsp, %rax */
	0x6a, BOOT_SEL_DATA,			/* push $ss */
	0x50,					/* push %rax */
	0x9c,					/* pushfq */
	0x6a, BOOT_SEL_CODE64,			/* push $cs */
	0x68, 0x10, 0x00, 0x10, 0x00,		/* push $IRET_PROBE_TARGET */
	0x48, 0xcf,				/* iretq */
	0x90, 0x90, 0xf4,
};
_Static_assert(BOOT_IMAGE_ADDR == 0x100000u, "iret_step_code's push of its target");

int hostinfo_probe_iret_step(int kvm, char *err, size_t errlen)
{
	struct kvm_guest_debug dbg = { .control = KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_SINGLESTEP };
	struct probe p;
	struct hostinfo scratch;
	uint64_t before = 0;
	int result = -1;

	if (probe_open(&scratch, kvm, &p, iret_step_code, sizeof(iret_step_code), 0) == 0) {
		if (__kvm_ioctl(p.vcpu, KVM_SET_GUEST_DEBUG, &dbg) < 0) {
			probe_fail(&scratch, "KVM_SET_GUEST_DEBUG", errno);
		} else {
			for (int i = 0; i < PROBE_MAX_EXITS && result < 0 && !scratch.probe_error[0];
			     i++) {
				uint64_t pc;

				if (__kvm_ioctl(p.vcpu, KVM_RUN, NULL) < 0) {
					if (errno != EINTR && errno != EAGAIN)
						probe_fail(&scratch, "KVM_RUN", errno);
					continue;
				}
				if (p.run->exit_reason != KVM_EXIT_DEBUG) {
					probe_fail(&scratch, exit_name(p.run->exit_reason), 0);
					break;
				}
				pc = p.run->debug.arch.pc;
				if (before == IRET_PROBE_AT)
					result = pc == IRET_PROBE_TARGET ? 1 :
						 pc == IRET_PROBE_TARGET + 1 ? 0 :
						 probe_fail(&scratch, "the step after IRETQ ended elsewhere", 0);
				before = pc;
			}
		}
		dbg.control = 0;
		(void)__kvm_ioctl(p.vcpu, KVM_SET_GUEST_DEBUG, &dbg);
	}
	return probe_finish(&scratch, &p, result, err, errlen);
}

/*
 * The same nop; nop; hlt with a KVM_GUESTDBG_USE_HW_BP execute breakpoint on
 * the second nop: --split-lock=emulate puts one on an exception handler's
 * first instruction to check it before it runs.
 */
int hostinfo_probe_hwbp(int kvm, char *err, size_t errlen)
{
	struct kvm_guest_debug dbg = {
		.control = KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_USE_HW_BP,
		.arch.debugreg = { [0] = BOOT_IMAGE_ADDR + 1, [7] = 0x1 },
	};

	return probe_debug_once(kvm, 0, &dbg, err, errlen);
}

/*
 * The guest's own breakpoints while KVM single-steps it at CPL0, as under
 * --split-lock=emulate. DR1 = 0x200000 (write, 4 bytes), DR0 = the second
 * NOP below (execute), DR7 = L0 | L1; movl $1, 0x200000; nop; nop; hlt.
 * Every #DB comes to userspace.
 * - A data breakpoint fires if a #DB has B1: some KVMs (the project's,
 *   which emulates CPL0 code) never fire one; emulate then must not raise
 *   one for the split locks it completes either.
 * - The step trap of the first NOP, which the CPU runs itself, lands on
 *   DR0's instruction: B0 beside BS says the CPU reports an enabled
 *   instruction breakpoint at the next instruction with the step trap
 *   (QEMU's TCG does). A step whose #DB KVM or the VMM makes up (MOV DR,
 *   an emulated split lock) must then report it too.
 */
#define BPS_MOVL_OFF 24u
#define BPS_EXEC_OFF 36u
static const uint8_t bps_code[] = {
	0xb8, 0x00, 0x00, 0x20, 0x00,			/* mov $0x200000, %eax */
	0x0f, 0x23, 0xc8,				/* mov %rax, %dr1 */
	0xb8, (BOOT_IMAGE_ADDR + BPS_EXEC_OFF) & 0xff,	/* mov $exec, %eax */
	(BOOT_IMAGE_ADDR + BPS_EXEC_OFF) >> 8 & 0xff,
	(BOOT_IMAGE_ADDR + BPS_EXEC_OFF) >> 16 & 0xff,
	(BOOT_IMAGE_ADDR + BPS_EXEC_OFF) >> 24 & 0xff,
	0x0f, 0x23, 0xc0,				/* mov %rax, %dr0 */
	0xb8, 0x05, 0x04, 0xd0, 0x00,			/* mov $0xd00405, %eax */
	0x0f, 0x23, 0xf8,				/* mov %rax, %dr7 */
	0xc7, 0x04, 0x25, 0x00, 0x00, 0x20, 0x00, 0x01, 0x00, 0x00, 0x00,	/* BPS_MOVL_OFF */
	0x90,
	0x90,						/* BPS_EXEC_OFF */
	0xf4,
};
_Static_assert(sizeof(bps_code) == BPS_EXEC_OFF + 2, "bps_code's DR0 is its second NOP");

int hostinfo_probe_guest_bps(int kvm, int *exec_beside_step, char *err, size_t errlen)
{
	struct probe p;
	struct hostinfo scratch;
	struct kvm_guest_debug dbg = {
		.control = KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_SINGLESTEP,
	};
	int data = -1, exec = -1, fired = 0;

	if (probe_open(&scratch, kvm, &p, bps_code, sizeof(bps_code), 0) == 0) {
		if (__kvm_ioctl(p.vcpu, KVM_SET_GUEST_DEBUG, &dbg) < 0)
			probe_fail(&scratch, "KVM_SET_GUEST_DEBUG", errno);
		for (int i = 0; i < PROBE_MAX_EXITS && data < 0 && !scratch.probe_error[0]; i++) {
			const struct kvm_debug_exit_arch *d = &p.run->debug.arch;

			/*
			 * Again at the MOVL: the MOV to DR7 before it, which KVM
			 * emulates while it steps the guest, ended its TF (the
			 * lab's KVM steps on only at the next exit).
			 */
			if (i && d->pc == BOOT_IMAGE_ADDR + BPS_MOVL_OFF &&
			    __kvm_ioctl(p.vcpu, KVM_SET_GUEST_DEBUG, &dbg) < 0) {
				probe_fail(&scratch, "KVM_SET_GUEST_DEBUG", errno);
			} else if (__kvm_ioctl(p.vcpu, KVM_RUN, NULL) < 0) {
				probe_fail(&scratch, "KVM_RUN", errno);
			} else if (p.run->exit_reason == KVM_EXIT_HLT) {
				data = fired;	/* no step trap at the second NOP: exec unknown */
			} else if (p.run->exit_reason != KVM_EXIT_DEBUG) {
				probe_fail(&scratch, exit_name(p.run->exit_reason), 0);
			} else {
				fired |= (d->dr6 & 2) != 0;
				if (d->pc == BOOT_IMAGE_ADDR + BPS_EXEC_OFF && (d->dr6 & X86_DR6_BS)) {
					exec = (d->dr6 & 1) != 0;
					data = fired;
				}
			}
		}
		/* Leave no breakpoint armed behind the probe (the lab's QEMU minds). */
		dbg.control = 0;
		(void)__kvm_ioctl(p.vcpu, KVM_SET_GUEST_DEBUG, &dbg);
	}
	*exec_beside_step = exec;
	if (data >= 0 && exec < 0 && err)
		snprintf(err, errlen, "the guest reached HLT without a step trap at its second NOP");
	return probe_finish(&scratch, &p, data, err, errlen);
}

/*
 * Runs a probe guest to a triple fault (1) or a HLT (0); -1 with
 * probe_error. `stopped`: KVM's internal error or a failed entry is 1 too.
 */
static int probe_end(struct hostinfo *scratch, struct probe *p, bool stopped)
{
	for (int i = 0; i < PROBE_MAX_EXITS && !scratch->probe_error[0]; i++) {
		if (__kvm_ioctl(p->vcpu, KVM_RUN, NULL) < 0) {
			if (errno != EINTR && errno != EAGAIN)
				probe_fail(scratch, "KVM_RUN", errno);
		} else if (p->run->exit_reason == KVM_EXIT_SHUTDOWN ||
			   (stopped && (p->run->exit_reason == KVM_EXIT_INTERNAL_ERROR ||
					p->run->exit_reason == KVM_EXIT_FAIL_ENTRY))) {
			return 1;
		} else if (p->run->exit_reason == KVM_EXIT_HLT) {
			return 0;
		} else if (p->run->exit_reason != KVM_EXIT_INTR) {
			probe_fail(scratch, exit_name(p->run->exit_reason), 0);
		}
	}
	return -1;
}

static int probe_shutdown_or_hlt(struct hostinfo *scratch, struct probe *p)
{
	return probe_end(scratch, p, false);
}

/*
 * DR7 = GD (and bit 10); mov %dr0, %rax; hlt. Unwatched, the #DB of a CPU
 * that honours GD finds no IDT and ends in a triple fault; one that
 * ignores GD halts.
 */
static const uint8_t gd_code[] = {
	0xb8, 0x00, 0x24, 0x00, 0x00,
	0x0f, 0x23, 0xf8,
	0x0f, 0x21, 0xc0,
	0xf4,
};

int hostinfo_probe_dr7_gd(int kvm, char *err, size_t errlen)
{
	struct probe p;
	struct hostinfo scratch;
	int result = -1;

	if (probe_open(&scratch, kvm, &p, gd_code, sizeof(gd_code), 0) == 0)
		result = probe_shutdown_or_hlt(&scratch, &p);
	return probe_finish(&scratch, &p, result, err, errlen);
}

/*
 * push $0x28; push $code32; lretq -- into compatibility mode through a
 * 32-bit code descriptor the probe adds at 0x28 -- then movl $1,
 * %cs:(%ebx); hlt. A CPU that checks the segment's type raises #GP there
 * (no IDT: a triple fault); one that does not halts.
 */
#define CS_PROBE_SEL 0x28u
static const uint8_t cs_write_code[] = {
	0x6a, CS_PROBE_SEL,
	0x68, 0x09, 0x00, 0x10, 0x00,	/* BOOT_IMAGE_ADDR + 9 */
	0x48, 0xcb,
	0x2e, 0xc7, 0x03, 0x01, 0x00, 0x00, 0x00,
	0xf4,
};
_Static_assert(BOOT_IMAGE_ADDR == 0x100000u, "cs_write_code's push of code32");

/*
 * A probe guest whose code goes to compatibility mode through CS_PROBE_SEL
 * (added to the GDT here) and stores 1 at RBX = 0x200000 before its HLT;
 * probe_end()'s answer, a halt without that store none (-1).
 */
static int probe_compat(struct hostinfo *scratch, int kvm, struct probe *p, const uint8_t *code,
			size_t len, bool stopped)
{
	uint64_t code32 = 0x00cf9a000000ffffull;	/* base 0, 4 GiB, 32-bit, DPL0 */
	int r;

	if (probe_open(scratch, kvm, p, code, len, 0))
		return -1;
	memcpy(p->mem + BOOT_GDT_ADDR + CS_PROBE_SEL, &code32, sizeof(code32));
	p->sregs.gdt.limit = CS_PROBE_SEL + 7;
	p->regs.rbx = 0x200000;
	if (probe_load(scratch, p))
		return -1;
	r = probe_end(scratch, p, stopped);
	if (r == 0 && p->mem[0x200000] != 1)
		return probe_fail(scratch, "the probe guest halted without writing", 0);
	return r;
}

int hostinfo_probe_cs_write(int kvm, char *err, size_t errlen)
{
	struct probe p;
	struct hostinfo scratch;
	int result;

	result = probe_compat(&scratch, kvm, &p, cs_write_code, sizeof(cs_write_code), false);
	return probe_finish(&scratch, &p, result, err, errlen);
}

/*
 * lock movl $1, (%rbx); hlt. A CPU that rejects the LOCK raises #UD (no
 * IDT: a triple fault) and writes nothing; one that takes it stores and
 * halts.
 */
static const uint8_t lock_mov_code[] = {
	0xf0, 0xc7, 0x03, 0x01, 0x00, 0x00, 0x00,
	0xf4,
};

int hostinfo_probe_lock_ud(int kvm, char *err, size_t errlen)
{
	struct probe p;
	struct hostinfo scratch;
	int result = -1;

	if (probe_open(&scratch, kvm, &p, lock_mov_code, sizeof(lock_mov_code), 0) == 0) {
		p.regs.rbx = 0x200000;
		if (probe_load(&scratch, &p) == 0)
			result = probe_shutdown_or_hlt(&scratch, &p);
		/* #UD or a store: anything else is no answer. */
		if ((result == 0 && p.mem[0x200000] != 1) || (result == 1 && p.mem[0x200000])) {
			probe_fail(&scratch, "the probe guest's store does not match how it ended", 0);
			result = -1;
		}
	}
	return probe_finish(&scratch, &p, result, err, errlen);
}

/*
 * int $0x20 with an IDT that ends at vector 13, whose #GP handler reads the
 * error code into EAX and halts: the architecture's is 0x20 * 8 + 2 (the IDT
 * bit and the vector as the index, SDM vol. 3 6.13); QEMU's TCG pushes
 * 0x20 * 16 + 2.
 */
#define INTN_PROBE_VECTOR 0x20u
#define INTN_PROBE_IDT (BOOT_IMAGE_ADDR + 0x100u)
static const uint8_t intn_code[] = {
	0xcd, INTN_PROBE_VECTOR,
	0xf4,
	0x8b, 0x04, 0x24,	/* the #GP handler: mov (%rsp), %eax */
	0xf4,
};

/* A present 64-bit interrupt gate (type 0x8e: DPL0, 0xee: DPL3) for vector to handler. */
static void probe_gate(uint8_t *mem, uint64_t idt, unsigned vector, uint64_t handler, uint16_t cs,
		       uint8_t type)
{
	uint8_t *gate = mem + idt + vector * 16;

	memset(gate, 0, 16);
	gate[0] = (uint8_t)handler;
	gate[1] = (uint8_t)(handler >> 8);
	gate[2] = (uint8_t)cs;
	gate[3] = (uint8_t)(cs >> 8);
	gate[5] = type;
	gate[6] = (uint8_t)(handler >> 16);
	gate[7] = (uint8_t)(handler >> 24);
}

/*
 * The probe guest with one DPL0 gate in an IDT at idt, vector to handler,
 * run to a halt: 0 with its registers in *regs, else -1 (probe_error says
 * why, but for a triple fault).
 */
static int probe_gate_run(struct hostinfo *scratch, struct probe *p, uint64_t idt, unsigned vector,
			  uint64_t handler, struct kvm_regs *regs)
{
	probe_gate(p->mem, idt, vector, handler, p->sregs.cs.selector, 0x8e);
	p->sregs.idt.base = idt;
	p->sregs.idt.limit = (uint16_t)((vector + 1) * 16 - 1);
	if (probe_load(scratch, p) || probe_shutdown_or_hlt(scratch, p) != 0)
		return -1;
	if (__kvm_ioctl(p->vcpu, KVM_GET_REGS, regs) < 0)
		return probe_fail(scratch, "KVM_GET_REGS", errno);
	return 0;
}

int hostinfo_probe_intn_error_code(int kvm, char *err, size_t errlen)
{
	struct probe p;
	struct hostinfo scratch;
	struct kvm_regs regs;
	int result = -1;

	if (probe_open(&scratch, kvm, &p, intn_code, sizeof(intn_code), 0) == 0) {
		if (probe_gate_run(&scratch, &p, INTN_PROBE_IDT, X86_VEC_GP, BOOT_IMAGE_ADDR + 3,
				   &regs) == 0)
			result = (uint32_t)regs.rax == INTN_PROBE_VECTOR * 8 + 2 ? 1 :
				 (uint32_t)regs.rax == INTN_PROBE_VECTOR * 16 + 2 ? 0 : -1;
		if (result < 0 && !scratch.probe_error[0])
			probe_fail(&scratch, "the probe's #GP handler did not see either error code", 0);
	}
	return probe_finish(&scratch, &p, result, err, errlen);
}

/*
 * Events at CPL0 where a KVM may run the guest in its instruction
 * emulator, whose INT n, INT3 and #UD do not work in 64-bit mode (the
 * nested PVM KVM: KVM internal error): with TF set (INT3, then an
 * undefined opcode, f3 0f 04), and INT3 behind MOV SS. The #DB handler
 * returns (TF stays set), the #BP and #UD handlers store 1 at RBX and
 * halt.
 */
/* pushfq; orq $TF, (%rsp); popfq: the probe guest's TF on. */
#define PROBE_TF_ON 0x9c, 0x48, 0x81, 0x0c, 0x24, 0x00, 0x01, 0x00, 0x00, 0x9d
#define EV_PROBE_HANDLERS 0x20u
#define EV_PROBE_IDT (BOOT_IMAGE_ADDR + 0x100u)
static const uint8_t ev_tf_int3[] = {
	PROBE_TF_ON,
	0x90, 0xcc, 0xf4,
};
static const uint8_t ev_tf_ud[] = {
	PROBE_TF_ON,
	0x90, 0xf3, 0x0f, 0x04, 0xf4,
};
static const uint8_t ev_movss_int3[] = {
	0x8c, 0xd0, 0x8e, 0xd0,		/* mov %ss, %eax; mov %eax, %ss */
	0xcc, 0xf4,
};
/* Without TF: INT3, and INT n through a gate of its own (hostinfo_probe_soft_int_cpl0()). */
#define EV_PROBE_INTN 0x20u
static const uint8_t ev_int3[] = { 0xcc, 0xf4 };
static const uint8_t ev_intn[] = { 0xcd, EV_PROBE_INTN, 0xf4 };
static const uint8_t ev_handlers[] = {
	0x48, 0xcf,			/* #DB: iretq */
	0xc7, 0x03, 0x01, 0x00, 0x00, 0x00, 0xf4,	/* #BP, #UD: movl $1, (%rbx); hlt */
};

/*
 * Loads p's registers (RBX = 0x200000) and runs the probe guest: 1 where
 * it halts having stored 1 at RBX (and 2 at RBX + 4 where `second`), 0
 * where KVM stops it with its internal error, else -1 with probe_error.
 */
static int probe_stored_or_stopped(struct hostinfo *scratch, struct probe *p, bool second)
{
	int result;

	p->regs.rbx = 0x200000;
	if (probe_load(scratch, p))
		return -1;
	result = probe_end(scratch, p, true);
	if (result == 1 && p->run->exit_reason == KVM_EXIT_INTERNAL_ERROR)
		return 0;
	if (result == 0 && p->mem[0x200000] == 1 && (!second || p->mem[0x200004] == 2))
		return 1;
	if (result >= 0)
		result = probe_fail(scratch, "the probe guest neither stored what it should "
				    "nor stopped with KVM's internal error", 0);
	return result;
}

/* The boot TSS's RSP0, for a probe guest that comes back to CPL0 from outside it. */
static void probe_rsp0(struct probe *p)
{
	const uint64_t rsp0 = 0x210000;

	memcpy(p->mem + BOOT_TSS_ADDR + 4, &rsp0, sizeof(rsp0));
}

/* One of them: 1 delivered, 0 KVM's internal error, -1 no answer. */
struct probe_seq {
	const uint8_t *code;
	size_t len;
};

static int probe_event_once(int kvm, const uint8_t *code, size_t len, char *err, size_t errlen)
{
	uint8_t image[EV_PROBE_HANDLERS + sizeof(ev_handlers)] = { 0 };
	struct probe p;
	struct hostinfo scratch;
	int result = -1;

	memcpy(image, code, len);
	memcpy(image + EV_PROBE_HANDLERS, ev_handlers, sizeof(ev_handlers));
	if (probe_open(&scratch, kvm, &p, image, sizeof(image), 0) == 0) {
		uint64_t h = BOOT_IMAGE_ADDR + EV_PROBE_HANDLERS;

		probe_gate(p.mem, EV_PROBE_IDT, X86_VEC_DB, h, p.sregs.cs.selector, 0x8e);
		probe_gate(p.mem, EV_PROBE_IDT, X86_VEC_BP, h + 2, p.sregs.cs.selector, 0x8e);
		probe_gate(p.mem, EV_PROBE_IDT, X86_VEC_UD, h + 2, p.sregs.cs.selector, 0x8e);
		probe_gate(p.mem, EV_PROBE_IDT, EV_PROBE_INTN, h + 2, p.sregs.cs.selector, 0x8e);
		p.sregs.idt.base = EV_PROBE_IDT;
		p.sregs.idt.limit = (EV_PROBE_INTN + 1) * 16 - 1;
		result = probe_stored_or_stopped(&scratch, &p, false);
	}
	return probe_finish(&scratch, &p, result, err, errlen);
}

/* Each in turn while they are delivered: 1, or the first other answer. */
static int probe_events(int kvm, const struct probe_seq *seqs, size_t n, char *err, size_t errlen)
{
	int result = 1;

	for (size_t i = 0; i < n && result == 1; i++)
		result = probe_event_once(kvm, seqs[i].code, seqs[i].len, err, errlen);
	return result;
}

int hostinfo_probe_cpl0_events(int kvm, char *err, size_t errlen)
{
	static const struct probe_seq seqs[] = {
		{ ev_tf_int3, sizeof(ev_tf_int3) },
		{ ev_tf_ud, sizeof(ev_tf_ud) },
		{ ev_movss_int3, sizeof(ev_movss_int3) },
	};

	return probe_events(kvm, seqs, ARRAY_SIZE(seqs), err, errlen);
}

int hostinfo_probe_soft_int_cpl0(int kvm, char *err, size_t errlen)
{
	static const struct probe_seq seqs[] = {
		{ ev_int3, sizeof(ev_int3) },
		{ ev_intn, sizeof(ev_intn) },
	};

	return probe_events(kvm, seqs, ARRAY_SIZE(seqs), err, errlen);
}

/*
 * lock cmpxchg16b (%rdi) twice at CPL0: the first compares equal (RDX:RAX
 * = 0) and stores RCX:RBX, the second (same registers) differs and loads
 * the stored value into RDX:RAX; then hlt. KVM's instruction emulator,
 * which runs CPL0 code on the nested PVM KVM, stops the VM instead.
 */
#define CX16_PROBE_AT 0x200000u
static const uint8_t cx16_code[] = {
	0xf0, 0x48, 0x0f, 0xc7, 0x0f,		/* lock cmpxchg16b (%rdi) */
	0xf0, 0x48, 0x0f, 0xc7, 0x0f,
	0xf4,
};

/* Where the probe guest halted: both CMPXCHG16Bs did what the architecture says. */
static bool cx16_done(struct hostinfo *scratch, struct probe *p)
{
	static const uint64_t want[2] = { 0x1111, 0x2222 };
	struct kvm_regs regs;

	if (__kvm_ioctl(p->vcpu, KVM_GET_REGS, &regs) < 0) {
		probe_fail(scratch, "KVM_GET_REGS", errno);
		return false;
	}
	return !memcmp(p->mem + CX16_PROBE_AT, want, sizeof(want)) && regs.rax == 0x1111 &&
	       regs.rdx == 0x2222;
}

int hostinfo_probe_cmpxchg16b_cpl0(int kvm, char *err, size_t errlen)
{
	struct probe p;
	struct hostinfo scratch;
	int result = -1;

	if (probe_open(&scratch, kvm, &p, cx16_code, sizeof(cx16_code), 0) == 0) {
		p.regs.rdi = CX16_PROBE_AT;
		p.regs.rax = p.regs.rdx = 0;
		p.regs.rbx = 0x1111;
		p.regs.rcx = 0x2222;
		if (probe_load(&scratch, &p) == 0)
			result = probe_end(&scratch, &p, true);
		if (result == 1)	/* KVM's internal error (or no entry) */
			result = p.run->exit_reason == KVM_EXIT_INTERNAL_ERROR ? 0 : -1;
		else if (result == 0)
			result = cx16_done(&scratch, &p) ? 1 :
				 probe_fail(&scratch, "the probe's CMPXCHG16Bs halted with the wrong result", 0);
		if (result < 0 && !scratch.probe_error[0])
			probe_fail(&scratch, "the probe's CMPXCHG16B neither completed nor stopped the VM", 0);
	}
	return probe_finish(&scratch, &p, result, err, errlen);
}

/*
 * At CPL0, as Linux's FPU set-up does: CPUID.1:ECX[26] (XSAVE; without it
 * ESI = 2 and hlt), CR4.OSXSAVE set, XSETBV XCR0 = x87 | SSE, then
 * xsave64 (%rdi); xrstor64 (%rdi); ESI = 1 and hlt. The guest reads CPUID
 * itself: some KVMs answer leaf 1 from the host whatever the table says.
 * The nested PVM KVM stops the VM at the XRSTOR.
 */
#define XSAVE_PROBE_AT 0x200000u
static const uint8_t xsave_code[] = {
	0xb8, 0x01, 0x00, 0x00, 0x00,		/* mov $1, %eax */
	0x0f, 0xa2,				/* cpuid */
	0xbe, 0x02, 0x00, 0x00, 0x00,		/* mov $2, %esi */
	0x0f, 0xba, 0xe1, 0x1a,			/* bt $26, %ecx */
	0x73, 0x25,				/* jnc hlt */
	0x0f, 0x20, 0xe0,			/* mov %cr4, %rax */
	0x48, 0x0d, 0x00, 0x00, 0x04, 0x00,	/* or $OSXSAVE, %rax */
	0x0f, 0x22, 0xe0,			/* mov %rax, %cr4 */
	0x31, 0xc9,				/* xor %ecx, %ecx */
	0xb8, 0x03, 0x00, 0x00, 0x00,		/* mov $3, %eax */
	0x31, 0xd2,				/* xor %edx, %edx */
	0x0f, 0x01, 0xd1,			/* xsetbv */
	0x48, 0x0f, 0xae, 0x27,			/* xsave64 (%rdi) */
	0x48, 0x0f, 0xae, 0x2f,			/* xrstor64 (%rdi) */
	0xbe, 0x01, 0x00, 0x00, 0x00,		/* mov $1, %esi */
	0xf4,					/* hlt */
};

/*
 * Runs `code` at CPL0 (RDI = rdi): 0 where KVM stops the VM with its internal
 * error, 1 where the guest halts with ESI 1 or 2 (done, or nothing to try),
 * -1 with `faulted` where it stops otherwise.
 */
static int probe_insns_cpl0(int kvm, const uint8_t *code, size_t len, uint64_t rdi,
			    const char *faulted, char *err, size_t errlen)
{
	struct probe p;
	struct hostinfo scratch;
	struct kvm_regs regs;
	int result = -1;

	if (probe_open(&scratch, kvm, &p, code, len, 0) == 0) {
		p.regs.rdi = rdi;
		if (probe_load(&scratch, &p) == 0)
			result = probe_end(&scratch, &p, true);
		if (result == 1) {
			result = p.run->exit_reason == KVM_EXIT_INTERNAL_ERROR ? 0 :
				 probe_fail(&scratch, faulted, 0);
		} else if (result == 0) {
			if (__kvm_ioctl(p.vcpu, KVM_GET_REGS, &regs) < 0)
				result = probe_fail(&scratch, "KVM_GET_REGS", errno);
			else if (regs.rsi != 1 && regs.rsi != 2)
				result = probe_fail(&scratch, "the probe guest halted early", 0);
			else
				result = 1;
		}
	}
	return probe_finish(&scratch, &p, result, err, errlen);
}

int hostinfo_probe_xsave_cpl0(int kvm, char *err, size_t errlen)
{
	return probe_insns_cpl0(kvm, xsave_code, sizeof(xsave_code), XSAVE_PROBE_AT,
				"the probe's XSAVE or XRSTOR faulted", err, errlen);
}

/*
 * At CPL0, instructions every Linux kernel runs early (hweight's POPCNT,
 * the x87 set-up's FWAIT, SMAP's CLAC where CPUID.(7,0):EBX[20] has it,
 * read by the guest itself), then ESI = 1 and hlt. The nested PVM KVM runs
 * CPL0 code in its instruction emulator, which stops the VM at each of them.
 */
static const uint8_t linux_insns_code[] = {
	0xf3, 0x48, 0x0f, 0xb8, 0xc0,		/* popcnt %rax, %rax */
	0x9b,					/* fwait */
	0xb8, 0x07, 0x00, 0x00, 0x00,		/* mov $7, %eax */
	0x31, 0xc9,				/* xor %ecx, %ecx */
	0x0f, 0xa2,				/* cpuid */
	0x0f, 0xba, 0xe3, 0x14,			/* bt $20, %ebx */
	0x73, 0x03,				/* jnc 1f */
	0x0f, 0x01, 0xca,			/* clac */
	0xbe, 0x01, 0x00, 0x00, 0x00,		/* 1: mov $1, %esi */
	0xf4,					/* hlt */
};

int hostinfo_probe_kernel_insns_cpl0(int kvm, char *err, size_t errlen)
{
	return probe_insns_cpl0(kvm, linux_insns_code, sizeof(linux_insns_code), 0,
				"the probe's POPCNT, FWAIT or CLAC faulted", err, errlen);
}

/*
 * POPF sets TF, then MOV SS, nop, hlt: the single-step trap of MOV SS waits
 * for the nop (SDM vol. 3 6.8.3), so the #DB frame holds hlt's RIP; the
 * nested PVM KVM, whose emulator runs CPL0 code with TF set, traps right
 * after MOV SS (the nop's RIP). The #DB handler takes the frame's RIP into
 * RAX and halts.
 */
#define MOVSS_PROBE_NOP (BOOT_IMAGE_ADDR + 14)
static const uint8_t movss_trap_code[] = {
	0x8c, 0xd0,				/* mov %ss, %eax */
	PROBE_TF_ON,
	0x8e, 0xd0,				/* mov %eax, %ss */
	0x90, 0xf4,				/* MOVSS_PROBE_NOP: nop; hlt */
	0x48, 0x8b, 0x04, 0x24, 0xf4,		/* 0x10, #DB: mov (%rsp), %rax; hlt */
};

int hostinfo_probe_movss_trap(int kvm, char *err, size_t errlen)
{
	struct probe p;
	struct hostinfo scratch;
	struct kvm_regs regs;
	int result = -1;

	if (probe_open(&scratch, kvm, &p, movss_trap_code, sizeof(movss_trap_code), 0) == 0) {
		if (probe_gate_run(&scratch, &p, EV_PROBE_IDT, X86_VEC_DB, BOOT_IMAGE_ADDR + 0x10,
				   &regs) == 0)
			result = regs.rax == MOVSS_PROBE_NOP + 1 ? 1 :
				 regs.rax == MOVSS_PROBE_NOP ? 0 : -1;
		if (result < 0 && !scratch.probe_error[0])
			probe_fail(&scratch, "the probe's #DB came neither after MOV SS nor after "
				   "the instruction behind it", 0);
	}
	return probe_finish(&scratch, &p, result, err, errlen);
}

/*
 * SYSCALL and SYSRET from CPL3, which the nested PVM KVM takes over: with
 * EFER.SCE clear, SYSCALL must raise #UD at itself (the #UD handler checks
 * its frame's RIP, stores 1 at RBX and halts; a halt without the store is
 * a #UD elsewhere); with SCE set and the guest's TF, SYSCALL to a handler
 * that returns with SYSRETQ must come back to CPL3 (FMASK 0 keeps TF: the
 * #DB handler returns from CPL0 frames, and for the first CPL3 one stores
 * 1 and 2 and halts). RSP0 from the boot TSS, a user stack at 0x220000.
 */
#define SYS_PROBE_HANDLER (BOOT_IMAGE_ADDR + 0x20)
static const uint8_t sce0_syscall_code[] = {
	0x0f, 0x05, 0xf4,
	[0x20] = 0x48, 0x81, 0x3c, 0x24, 0x00, 0x00, 0x10, 0x00,	/* cmpq $BOOT_IMAGE_ADDR, (%rsp) */
	0x75, 0x06,					/* jne 1f */
	0xc7, 0x03, 0x01, 0x00, 0x00, 0x00,		/* movl $1, (%rbx) */
	0xf4,						/* 1: hlt */
};
static const uint8_t syscall_tf_code[] = {
	PROBE_TF_ON,
	0x0f, 0x05,					/* syscall */
	0x90, 0xf4,
	[0x10] = 0x48, 0x0f, 0x07,			/* LSTAR: sysretq */
	[0x20] = 0xf6, 0x44, 0x24, 0x08, 0x03,		/* #DB: testb $3, 8(%rsp) */
	0x74, 0x0e,					/* jz 1f */
	0xc7, 0x03, 0x01, 0x00, 0x00, 0x00,		/* movl $1, (%rbx) */
	0xc7, 0x43, 0x04, 0x02, 0x00, 0x00, 0x00, 0xf4,	/* movl $2, 4(%rbx); hlt */
	0x48, 0xcf,					/* 1: iretq */
};
_Static_assert(BOOT_IMAGE_ADDR == 0x100000u, "the syscall probes' addresses");

/* One of them, at CPL3: 1 as the architecture has it, 0 not, -1 no answer. */
static int probe_sys_once(int kvm, bool sce, char *err, size_t errlen)
{
	static const struct kvm_msr_entry sys_msrs[] = {
		{ .index = MSR_STAR, .data = 0x0020000800000000ull },
		{ .index = MSR_LSTAR, .data = BOOT_IMAGE_ADDR + 0x10 },
		{ .index = MSR_SYSCALL_MASK, .data = 0 },
	};
	struct kvm_msrs *msrs = calloc(1, sizeof(*msrs) + sizeof(sys_msrs));
	struct probe p;
	struct hostinfo scratch;
	int result = -1;

	if (!msrs)
		return -1;
	msrs->nmsrs = ARRAY_SIZE(sys_msrs);
	memcpy(msrs->entries, sys_msrs, sizeof(sys_msrs));
	if (probe_open(&scratch, kvm, &p, sce ? syscall_tf_code : sce0_syscall_code,
		       sce ? sizeof(syscall_tf_code) : sizeof(sce0_syscall_code), 3) == 0) {
		if (sce && __kvm_ioctl(p.vcpu, KVM_SET_MSRS, msrs) != (int)ARRAY_SIZE(sys_msrs)) {
			probe_fail(&scratch, "KVM_SET_MSRS (STAR, LSTAR, FMASK)", errno);
		} else {
			struct kvm_sregs *sr = &p.sregs;

			probe_rsp0(&p);
			probe_gate(p.mem, EV_PROBE_IDT, sce ? X86_VEC_DB : X86_VEC_UD, SYS_PROBE_HANDLER,
				   BOOT_SEL_CODE64, 0x8e);
			sr->idt.base = EV_PROBE_IDT;
			sr->idt.limit = ((sce ? X86_VEC_DB : X86_VEC_UD) + 1) * 16 - 1;
			sr->efer = sce ? sr->efer | X86_EFER_SCE : sr->efer & ~(uint64_t)X86_EFER_SCE;
			p.regs.rsp = 0x220000;
			result = probe_stored_or_stopped(&scratch, &p, sce);
			/* A #UD elsewhere, or a fault where there is no gate (a triple fault). */
			if (result < 0 && p.run && (p.run->exit_reason == KVM_EXIT_HLT ||
						    p.run->exit_reason == KVM_EXIT_SHUTDOWN)) {
				scratch.probe_error[0] = '\0';
				result = 0;
			}
		}
	}
	free(msrs);
	return probe_finish(&scratch, &p, result, err, errlen);
}

int hostinfo_probe_syscall_sysret(int kvm, char *err, size_t errlen)
{
	int r = probe_sys_once(kvm, false, err, errlen);

	return r == 1 ? probe_sys_once(kvm, true, err, errlen) : r;
}

/*
 * A locked add across a page boundary whose second page is read-only
 * (the 2 MiB page at 0x200000, CR0.WP set): the architecture checks the
 * whole access first, so the #PF leaves memory as it was. KVM's
 * instruction emulator writes the first page before the second faults,
 * and the nested PVM KVM runs CPL0 code in it. The #PF handler halts.
 */
#define SPLIT_PROBE_AT 0x1ffffeu
static const uint8_t split_fault_code[] = {
	0xbc, 0x00, 0x00, 0x1f, 0x00,		/* mov $0x1f0000, %esp: below the read-only page */
	0xbb, 0xfe, 0xff, 0x1f, 0x00,		/* mov $SPLIT_PROBE_AT, %ebx */
	0xf0, 0x83, 0x03, 0x01,			/* lock addl $1, (%rbx) */
	0xf4,
	[0x10] = 0xf4,				/* #PF: hlt */
};

int hostinfo_probe_split_fault(int kvm, char *err, size_t errlen)
{
	static const uint8_t before[4] = { 0x11, 0x22, 0x33, 0x44 };
	struct probe p;
	struct hostinfo scratch;
	struct kvm_regs regs;
	int result = -1;

	if (probe_open(&scratch, kvm, &p, split_fault_code, sizeof(split_fault_code), 0) == 0) {
		p.mem[BOOT_PD_ADDR + 8] &= (uint8_t)~X86_PTE_RW;
		memcpy(p.mem + SPLIT_PROBE_AT, before, sizeof(before));
		if (probe_gate_run(&scratch, &p, EV_PROBE_IDT, X86_VEC_PF, BOOT_IMAGE_ADDR + 0x10,
				   &regs) == 0 && regs.rip == BOOT_IMAGE_ADDR + 0x11)
			result = !memcmp(p.mem + SPLIT_PROBE_AT, before, sizeof(before));
		if (result < 0 && !scratch.probe_error[0])
			probe_fail(&scratch, "the probe's locked add raised no #PF", 0);
	}
	return probe_finish(&scratch, &p, result, err, errlen);
}

/*
 * CPL1: IRETQ to a DPL1 64-bit code segment (CPL1_SEL_CODE, stack
 * CPL1_SEL_DATA), which stores 1 at RBX and returns to CPL0 with INT $0x20
 * through a DPL3 gate (RSP0 from the boot TSS); the handler stores 2 at
 * RBX + 4 and halts. The nested PVM KVM runs only CPL0 and CPL3: it stops
 * the VM, KVM internal error.
 */
#define CPL1_SEL_CODE 0x28u
#define CPL1_SEL_DATA 0x30u
static const uint8_t cpl1_code[] = {
	0x6a, CPL1_SEL_DATA | 1,		/* push $ss */
	0x68, 0x00, 0x00, 0x22, 0x00,		/* push $0x220000 */
	0x9c,					/* pushfq */
	0x6a, CPL1_SEL_CODE | 1,		/* push $cs */
	0x68, 0x11, 0x00, 0x10, 0x00,		/* push $(BOOT_IMAGE_ADDR + 0x11) */
	0x48, 0xcf,				/* iretq */
	0xc7, 0x03, 0x01, 0x00, 0x00, 0x00,	/* 0x11, CPL1: movl $1, (%rbx) */
	0xcd, 0x20,				/* int $0x20 */
	0xf4,
	0xc7, 0x43, 0x04, 0x02, 0x00, 0x00, 0x00,	/* 0x1a, CPL0: movl $2, 4(%rbx) */
	0xf4,
};

int hostinfo_probe_cpl1(int kvm, char *err, size_t errlen)
{
	uint64_t code = 0x00afbb000000ffffull, data = 0x00cfb3000000ffffull;	/* DPL1 */
	struct probe p;
	struct hostinfo scratch;
	int result = -1;

	if (probe_open(&scratch, kvm, &p, cpl1_code, sizeof(cpl1_code), 0) == 0) {
		memcpy(p.mem + BOOT_GDT_ADDR + CPL1_SEL_CODE, &code, sizeof(code));
		memcpy(p.mem + BOOT_GDT_ADDR + CPL1_SEL_DATA, &data, sizeof(data));
		probe_rsp0(&p);
		probe_gate(p.mem, EV_PROBE_IDT, 0x20, BOOT_IMAGE_ADDR + 0x1a, p.sregs.cs.selector, 0xee);
		p.sregs.gdt.limit = CPL1_SEL_DATA + 7;
		p.sregs.idt.base = EV_PROBE_IDT;
		p.sregs.idt.limit = 0x21 * 16 - 1;
		result = probe_stored_or_stopped(&scratch, &p, true);
	}
	return probe_finish(&scratch, &p, result, err, errlen);
}

/*
 * Into compatibility mode as cs_write_code goes, then out of IA-32e mode
 * and back as a guest kernel's mode switch does: CR0.PG cleared (the code
 * is identity-mapped), EFER.LME cleared; with it clear, PAE paging on and
 * off again (a PDPT at LM_OFF_PDPT whose first entry is the boot PD, a
 * store of 2 at 4(%ebx) between), as the guests outside IA-32e mode have
 * it; LME set again, PG set again; movl $1, (%ebx); hlt. A KVM that
 * leaves IA-32e mode but cannot page outside it (the nested PVM KVM
 * stops the VM there) cannot run them either.
 */
#define LM_OFF_PDPT 0x300000u
static const uint8_t lm_off_code[] = {
	0x6a, CS_PROBE_SEL,
	0x68, 0x09, 0x00, 0x10, 0x00,	/* BOOT_IMAGE_ADDR + 9 */
	0x48, 0xcb,
	0x0f, 0x20, 0xc0,		/* mov %cr0, %eax */
	0x25, 0xff, 0xff, 0xff, 0x7f,	/* and $~PG, %eax */
	0x0f, 0x22, 0xc0,		/* mov %eax, %cr0 */
	0xb9, 0x80, 0x00, 0x00, 0xc0,	/* mov $MSR_EFER, %ecx */
	0x0f, 0x32,			/* rdmsr */
	0x25, 0xff, 0xfe, 0xff, 0xff,	/* and $~LME, %eax */
	0x0f, 0x30,			/* wrmsr */
	0xc7, 0x05, 0x00, 0x00, 0x30, 0x00,
	0x01, 0x40, 0x00, 0x00,		/* movl $(BOOT_PD_ADDR | P), LM_OFF_PDPT */
	0x0f, 0x20, 0xde,		/* mov %cr3, %esi */
	0xb8, 0x00, 0x00, 0x30, 0x00,	/* mov $LM_OFF_PDPT, %eax */
	0x0f, 0x22, 0xd8,		/* mov %eax, %cr3 */
	0x0f, 0x20, 0xc0,		/* mov %cr0, %eax */
	0x0d, 0x00, 0x00, 0x00, 0x80,	/* or $PG, %eax: PAE paging */
	0x0f, 0x22, 0xc0,		/* mov %eax, %cr0 */
	0xc7, 0x43, 0x04, 0x02, 0x00, 0x00, 0x00,	/* movl $2, 4(%ebx) */
	0x0f, 0x20, 0xc0,		/* mov %cr0, %eax */
	0x25, 0xff, 0xff, 0xff, 0x7f,	/* and $~PG, %eax */
	0x0f, 0x22, 0xc0,		/* mov %eax, %cr0 */
	0x0f, 0x22, 0xde,		/* mov %esi, %cr3 */
	0x0f, 0x32,			/* rdmsr */
	0x0d, 0x00, 0x01, 0x00, 0x00,	/* or $LME, %eax */
	0x0f, 0x30,			/* wrmsr */
	0x0f, 0x20, 0xc0,		/* mov %cr0, %eax */
	0x0d, 0x00, 0x00, 0x00, 0x80,	/* or $PG, %eax */
	0x0f, 0x22, 0xc0,		/* mov %eax, %cr0 */
	0xc7, 0x03, 0x01, 0x00, 0x00, 0x00,
	0xf4,
};

int hostinfo_probe_leave_long_mode(int kvm, char *err, size_t errlen)
{
	struct probe p;
	struct hostinfo scratch;
	int result;

	result = probe_compat(&scratch, kvm, &p, lm_off_code, sizeof(lm_off_code), true);
	if (result >= 0)
		result = !result;	/* a halt after the store: back in IA-32e mode */
	if (result == 1 && p.mem[0x200004] != 2)
		result = probe_fail(&scratch, "the probe guest came back without paging outside IA-32e mode", 0);
	return probe_finish(&scratch, &p, result, err, errlen);
}

/*
 * The way an application processor's start-up code goes after INIT and
 * SIPI (Linux's trampoline): from real mode at LM_ON_ADDR, LGDT, CR0.PE,
 * a far jump to 32-bit code (CS_PROBE_SEL), CR4.PAE, CR3 the boot PML4,
 * EFER.LME with WRMSR, CR0.PG; then hlt, in IA-32e (compatibility) mode.
 */
#define LM_ON_ADDR  0x7000u
#define LM_ON_GDTR  0x7f00u
static const uint8_t lm_on_code[] = {
	0x66, 0x0f, 0x01, 0x16, 0x00, 0x7f,	/* lgdtl LM_ON_GDTR */
	0x0f, 0x20, 0xc0,			/* mov %cr0, %eax */
	0x66, 0x83, 0xc8, 0x01,			/* or $PE, %eax */
	0x0f, 0x22, 0xc0,			/* mov %eax, %cr0 */
	0x66, 0xea, 0x18, 0x70, 0x00, 0x00, 0x28, 0x00,	/* ljmpl $CS_PROBE_SEL, $LM_ON_ADDR + 0x18 */
	0x66, 0xb8, 0x10, 0x00,			/* mov $BOOT_SEL_DATA, %ax */
	0x8e, 0xd8,				/* mov %ax, %ds */
	0x8e, 0xd0,				/* mov %ax, %ss */
	0x0f, 0x20, 0xe0,			/* mov %cr4, %eax */
	0x83, 0xc8, 0x20,			/* or $PAE, %eax */
	0x0f, 0x22, 0xe0,			/* mov %eax, %cr4 */
	0xb8, 0x00, 0x20, 0x00, 0x00,		/* mov $BOOT_PML4_ADDR, %eax */
	0x0f, 0x22, 0xd8,			/* mov %eax, %cr3 */
	0xb9, 0x80, 0x00, 0x00, 0xc0,		/* mov $MSR_EFER, %ecx */
	0x0f, 0x32,				/* rdmsr */
	0x0d, 0x00, 0x01, 0x00, 0x00,		/* or $LME, %eax */
	0x0f, 0x30,				/* wrmsr */
	0x0f, 0x20, 0xc0,			/* mov %cr0, %eax */
	0x0d, 0x00, 0x00, 0x00, 0x80,		/* or $PG, %eax */
	0x0f, 0x22, 0xc0,			/* mov %eax, %cr0 */
	0xf4,					/* hlt */
};
_Static_assert(BOOT_PML4_ADDR == 0x2000u && BOOT_SEL_DATA == 0x10u, "lm_on_code's constants");

/* The vCPU as SIPI leaves it: real mode at LM_ON_ADDR, the GDTR for LGDT in memory. */
static void probe_real_mode(struct probe *p)
{
	uint64_t code32 = 0x00cf9a000000ffffull;	/* base 0, 4 GiB, 32-bit, DPL0 */
	struct kvm_segment seg = {
		.limit = 0xffff, .type = 3, .present = 1, .s = 1,
	};

	memcpy(p->mem + LM_ON_ADDR, lm_on_code, sizeof(lm_on_code));
	memcpy(p->mem + BOOT_GDT_ADDR + CS_PROBE_SEL, &code32, sizeof(code32));
	p->mem[LM_ON_GDTR] = CS_PROBE_SEL + 7;
	p->mem[LM_ON_GDTR + 1] = 0;
	memcpy(p->mem + LM_ON_GDTR + 2, &(uint32_t){ BOOT_GDT_ADDR }, 4);
	p->sregs.ds = p->sregs.es = p->sregs.fs = p->sregs.gs = p->sregs.ss = seg;
	seg.type = 0xb;
	seg.base = LM_ON_ADDR;
	seg.selector = LM_ON_ADDR >> 4;
	p->sregs.cs = seg;
	p->sregs.cr0 = X86_CR0_ET | X86_CR0_NE;
	p->sregs.cr4 = 0;
	p->sregs.efer = 0;
	p->regs.rip = 0;
}

int hostinfo_probe_enter_long_mode(int kvm, char *err, size_t errlen)
{
	struct probe p;
	struct hostinfo scratch;
	int result = -1;

	if (probe_open(&scratch, kvm, &p, nop_nop_hlt, sizeof(nop_nop_hlt), 0) == 0) {
		probe_real_mode(&p);
		if (probe_load(&scratch, &p) == 0)
			result = probe_end(&scratch, &p, true);
		if (result >= 0)
			result = !result;	/* a halt: it got there */
		if (result == 1 && (__kvm_ioctl(p.vcpu, KVM_GET_SREGS, &p.sregs) < 0 ||
				    !(p.sregs.efer & X86_EFER_LMA)))
			result = probe_fail(&scratch, "the probe guest halted outside IA-32e mode", 0);
	}
	return probe_finish(&scratch, &p, result, err, errlen);
}

/*
 * The legacy alignment check (SDM vol. 3 6.15, #AC): at CPL3 with CR0.AM
 * and RFLAGS.AC set, a misaligned load faults. The probe loads from an odd
 * address, then reports on port 0xf4 (IOPL 3); with no IDT the #AC ends in
 * a triple fault. The same run with RFLAGS.AC clear must reach the report,
 * so that only the alignment check can tell the two apart. QEMU's TCG
 * never raises it.
 */
static const uint8_t align_code[] = {
	0x8b, 0x05, 0x1b, 0x00, 0x00, 0x00,	/* mov 0x21(%rip base 6), %eax: misaligned */
	0x66, 0xba, PROBE_PORT, 0x00,		/* mov $PROBE_PORT, %dx */
	0xef,					/* out %eax, (%dx) */
	0xf4,
	[0x24] = 0,
};

/* 1 triple fault, 0 the report reached, -1 with probe_error. */
static int probe_align_once(struct hostinfo *scratch, int kvm, bool ac)
{
	struct probe p;
	int result = -1;

	if (probe_open(scratch, kvm, &p, align_code, sizeof(align_code), 3) == 0) {
		p.sregs.cr0 |= X86_CR0_AM;
		p.regs.rflags |= (3u << 12) | (ac ? X86_RFLAGS_AC : 0);
		for (int i = 0; i < PROBE_MAX_EXITS && result < 0 && !probe_load(scratch, &p); i++) {
			if (__kvm_ioctl(p.vcpu, KVM_RUN, NULL) < 0) {
				if (errno != EINTR && errno != EAGAIN)
					probe_fail(scratch, "KVM_RUN", errno);
				break;
			}
			if (p.run->exit_reason == KVM_EXIT_SHUTDOWN)
				result = 1;
			else if (p.run->exit_reason == KVM_EXIT_IO && p.run->io.port == PROBE_PORT)
				result = 0;
			else if (p.run->exit_reason != KVM_EXIT_INTR) {
				probe_fail(scratch, exit_name(p.run->exit_reason), 0);
				break;
			}
		}
	}
	probe_teardown(scratch, &p);
	return result;
}

int hostinfo_probe_alignment_check(int kvm, char *err, size_t errlen)
{
	struct hostinfo scratch;
	int with_ac, without;

	hostinfo_init(&scratch);
	without = probe_align_once(&scratch, kvm, false);
	with_ac = without == 0 ? probe_align_once(&scratch, kvm, true) : -1;
	if (without == 1)
		probe_fail(&scratch, "the probe's load faulted with RFLAGS.AC clear", 0);
	if (with_ac < 0 && err)
		snprintf(err, errlen, "%s", scratch.probe_error[0] ? scratch.probe_error :
			 "no answer within 16 exits");
	return with_ac;
}

static void probe_singlestep(struct hostinfo *hi, int kvm)
{
	hi->singlestep_cpl0 = hostinfo_probe_singlestep(kvm, 0, NULL, 0);
	hi->singlestep_cpl3 = hostinfo_probe_singlestep(kvm, 3, NULL, 0);
	hi->iret_step = hostinfo_probe_iret_step(kvm, NULL, 0);
	hi->hwbp = hostinfo_probe_hwbp(kvm, hi->hwbp_detail, sizeof(hi->hwbp_detail));
	hi->databp_cpl0 = hostinfo_probe_guest_bps(kvm, &hi->exec_bp_beside_step, NULL, 0);
	hi->dr7_gd = hostinfo_probe_dr7_gd(kvm, NULL, 0);
	hi->cs_write_gp = hostinfo_probe_cs_write(kvm, NULL, 0);
	hi->intn_error_code = hostinfo_probe_intn_error_code(kvm, NULL, 0);
	hi->lock_ud = hostinfo_probe_lock_ud(kvm, NULL, 0);
	hi->leave_long_mode = hostinfo_probe_leave_long_mode(kvm, NULL, 0);
	hi->enter_long_mode = hostinfo_probe_enter_long_mode(kvm, NULL, 0);
	hi->cpl0_events = hostinfo_probe_cpl0_events(kvm, NULL, 0);
	hi->cpl1 = hostinfo_probe_cpl1(kvm, NULL, 0);
	hi->movss_trap = hostinfo_probe_movss_trap(kvm, NULL, 0);
	hi->syscall_sysret = hostinfo_probe_syscall_sysret(kvm, NULL, 0);
	hi->split_fault = hostinfo_probe_split_fault(kvm, NULL, 0);
	hi->alignment_check = hostinfo_probe_alignment_check(kvm, NULL, 0);
	hi->cmpxchg16b_cpl0 = hostinfo_probe_cmpxchg16b_cpl0(kvm, NULL, 0);
	hi->soft_int_cpl0 = hostinfo_probe_soft_int_cpl0(kvm, NULL, 0);
	hi->xsave_cpl0 = hostinfo_probe_xsave_cpl0(kvm, NULL, 0);
	hi->kernel_insns_cpl0 = hostinfo_probe_kernel_insns_cpl0(kvm, NULL, 0);
}

void hostinfo_read_kvm(struct hostinfo *hi, bool run_probe)
{
	struct kvm_cpuid2 *cpuid;
	int kvm;

	hi->kvm_error[0] = '\0';
	hi->probe_error[0] = '\0';
	hi->cpuid_7_edx30_reaches_guest = -1;
	hi->nested = -1;
	memset(&hi->caps, 0, sizeof(hi->caps));

	kvm = __kvm_open(hi->kvm_error, sizeof(hi->kvm_error));
	if (kvm < 0) {
		if (run_probe)
			snprintf(hi->probe_error, sizeof(hi->probe_error), "no usable /dev/kvm");
		return;
	}

	hi->caps.user_space_msr = __kvm_cap(kvm, KVM_CAP_X86_USER_SPACE_MSR);
	hi->caps.msr_filter = __kvm_cap(kvm, KVM_CAP_X86_MSR_FILTER);
	hi->caps.exception_payload = __kvm_cap(kvm, KVM_CAP_EXCEPTION_PAYLOAD);
	hi->caps.vcpu_events = __kvm_cap(kvm, KVM_CAP_VCPU_EVENTS);
	hi->caps.set_guest_debug = __kvm_cap(kvm, KVM_CAP_SET_GUEST_DEBUG);
	hi->caps.bus_lock_exit = __kvm_cap(kvm, KVM_CAP_X86_BUS_LOCK_EXIT);
	hi->caps.immediate_exit = __kvm_cap(kvm, KVM_CAP_IMMEDIATE_EXIT);
	hi->caps.nr_vcpus = __kvm_cap(kvm, KVM_CAP_NR_VCPUS);
	hi->caps.max_vcpus = __kvm_cap(kvm, KVM_CAP_MAX_VCPUS);
	cpuid = __kvm_supported_cpuid(kvm);
	if (cpuid)
		hi->nested = (int)cpuid_nested(cpuid);
	free(cpuid);

	if (run_probe) {
		bool host_bit;

		probe_cpuid(hi, kvm);
		probe_cpuid_hypervisor(hi, kvm, &host_bit);
		probe_singlestep(hi, kvm);
	}
	if (close(kvm) < 0 && run_probe)
		probe_fail(hi, "close of /dev/kvm", errno);
}
