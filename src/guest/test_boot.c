/* SPDX-License-Identifier: MIT */
/* What the VMM promised in vmm_boot.h, as seen from vCPU 0. */
#include "guest.h"


extern char __image_start[], __image_end[];

static void test_magic(const struct boot_info *bi)
{
	tap_ok(bi->magic == BOOT_INFO_MAGIC && bi->abi_version == BOOT_ABI_VERSION &&
	       bi->size == sizeof(*bi),
	       "boot_info magic, abi_version %u and size %u", bi->abi_version, bi->size);
}

static void test_bsp_slot(const struct boot_info *bi)
{
	tap_ok(bi->cpu_index == 0 && bi == (const struct boot_info *)(uintptr_t)BOOT_INFO_ADDR,
	       "boot vCPU has cpu_index 0 and the first boot_info slot (%p)", bi);
}

static void test_ram(const struct boot_info *bi)
{
	tap_diag("ram_size %lu MiB, %u vCPUs", bi->ram_size >> 20, bi->cpu_count);
	tap_ok(bi->ram_size >= VMM_MIN_RAM && bi->ram_size <= VMM_MAX_RAM,
	       "ram_size 0x%lx within [VMM_MIN_RAM, VMM_MAX_RAM]", bi->ram_size);
}

static void test_image(const struct boot_info *bi)
{
	uint64_t size = (uint64_t)(__image_end - __image_start);

	tap_ok(bi->image_base == BOOT_IMAGE_ADDR && (uint64_t)__image_start == BOOT_IMAGE_ADDR &&
	       bi->image_size == size,
	       "image at 0x%lx, %lu bytes as linked", bi->image_base, bi->image_size);
}

static void test_region(const struct boot_info *bi)
{
	uint64_t top = bi->cpu_region_base + bi->cpu_region_size;

	tap_ok(top == bi->ram_size && bi->cpu_region_size == BOOT_CPU_REGION_SIZE &&
	       this_cpu()->entry_rsp == top &&
	       bi->cpu_region_base >= bi->image_base + bi->image_size,
	       "vCPU 0 region 0x%lx+0x%lx ends at the top of RAM, entry RSP at its top",
	       bi->cpu_region_base, bi->cpu_region_size);
}

static void test_control_regs(const struct boot_info *bi)
{
	uint64_t cr0 = read_cr0(), cr4 = read_cr4();
	uint64_t want0 = X86_CR0_PE | X86_CR0_WP | X86_CR0_PG | X86_CR0_AM;

	(void)bi;
	tap_ok((cr0 & want0) == want0 && (cr4 & X86_CR4_PAE) && read_cr3() == BOOT_PML4_ADDR,
	       "CR0 0x%lx has PE WP PG AM, CR4 0x%lx has PAE, CR3 at BOOT_PML4_ADDR",
	       cr0, cr4);
}

/* Printable copy of the command line: a stray '\n' would break TAP. */
static void test_cmdline(const struct boot_info *bi)
{
	char line[BOOT_CMDLINE_MAX];
	size_t n = strnlen(bi->cmdline, BOOT_CMDLINE_MAX);
	bool terminated = n < BOOT_CMDLINE_MAX;

	if (!terminated)
		n = BOOT_CMDLINE_MAX - 1;
	for (size_t i = 0; i < n; i++) {
		char c = bi->cmdline[i];
		line[i] = (c >= ' ' && c <= '~') ? c : '?';
	}
	line[n] = '\0';
	tap_diag("cmdline: %s", line);
	tap_ok(terminated, "cmdline is NUL-terminated within %u bytes", BOOT_CMDLINE_MAX);
}

/*
 * What CPUID offers the guest for guests of its own, and whether the bit
 * that turns the vendor's extension on takes: KVM refuses EFER.SVME (AMD)
 * and CR4.VMXE (Intel) where the vCPU's CPUID lacks SVM or VMX. The
 * harness holds nested= against the policy: --split-lock=emulate hides both.
 * The other vendor's bit is not tried: it is reserved there anyway, and
 * QEMU's TCG (7.2) loops on a reserved CR4 bit instead of raising #GP.
 */
static void test_nested(const struct boot_info *bi)
{
	uint32_t vendor = cpuid(0).b;
	bool svm = cpuid(0x80000000).a >= 0x80000001 &&
		   (cpuid(0x80000001).c & X86_CPUID_80000001_ECX_SVM);
	bool vmx = cpuid(1).c & X86_CPUID_1_ECX_VMX;
	uint64_t efer = rdmsr(MSR_EFER), cr4 = read_cr4();
	const char *name, *bit;
	bool offered;
	int vec;

	(void)bi;
	tap_diag("nested=%s", svm ? "svm" : vmx ? "vmx" : "none");
	if (vendor == X86_CPUID_VENDOR_AMD || vendor == X86_CPUID_VENDOR_HYGON) {
		name = "SVM", bit = "EFER.SVME", offered = svm;
		vec = wrmsr_safe(MSR_EFER, efer | X86_EFER_SVME);
		wrmsr(MSR_EFER, efer);
	} else if (vendor == X86_CPUID_VENDOR_INTEL) {
		name = "VMX", bit = "CR4.VMXE", offered = vmx;
		vec = write_cr4_safe(cr4 | X86_CR4_VMXE);
		write_cr4(cr4);
	} else {
		tap_skip("a CPU vendor with neither SVM nor VMX",
			 "nested virtualization: the enabling bit agrees with CPUID");
		return;
	}
	tap_ok((vec == EXC_NONE) == offered,
	       "nested virtualization: CPUID says %s %d, and %s %s", name, offered, bit,
	       vec == EXC_NONE ? "can be set" : exception_mnemonic((unsigned)vec));
}

static const struct guest_test tests[] = {
	{ "magic", test_magic },
	{ "bsp_slot", test_bsp_slot },
	{ "ram", test_ram },
	{ "image", test_image },
	{ "region", test_region },
	{ "control_regs", test_control_regs },
	{ "cmdline", test_cmdline },
	{ "nested", test_nested },
};

TEST_GROUP(boot_tests, "boot protocol", tests);
