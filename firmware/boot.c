/* SPDX-License-Identifier: MIT */
/* From the VMM's entry state to guest_main / guest_ap_main. */
#include "fw.h"
#include "internal.h"

/* Set by vCPU 0 once "TAP version 13" is out, which must be line 1. */
static uint32_t bsp_started;

__attribute__((noreturn)) void guest_exit(uint32_t status)
{
	outl(PORT_EXIT, status);
	/* Not reached; if it were, halting lets the VMM see something is off. */
	halt_forever();
}

/* No GS, no IDT yet: format on the stack, write straight to the port. */
static __attribute__((noreturn)) FW_PRINTF(1, 2)
void early_fail(const char *fmt, ...)
{
	char line[PRINTF_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	console_write_raw(line);
	guest_exit(GUEST_STATUS_FAIL);
}

static void check_boot_info(const struct boot_info *bi, uint64_t entry_rsp)
{
	if (bi->magic != BOOT_INFO_MAGIC)
		early_fail("Bail out! boot_info at %p: magic 0x%lx, want 0x%llx\n",
			   bi, bi->magic, BOOT_INFO_MAGIC);
	if (bi->abi_version != BOOT_ABI_VERSION || bi->size < sizeof(*bi))
		early_fail("Bail out! boot_info at %p: abi_version %u size %u, want %u and %zu\n",
			   bi, bi->abi_version, bi->size, BOOT_ABI_VERSION, sizeof(*bi));
	if (bi->cpu_count == 0 || bi->cpu_count > VMM_MAX_VCPUS ||
	    bi->cpu_index >= bi->cpu_count)
		early_fail("Bail out! boot_info at %p: cpu_index %u of cpu_count %u\n",
			   bi, bi->cpu_index, bi->cpu_count);
	/* The layout in percpu.h assumes the stack starts at the region top. */
	if (bi->cpu_region_size < PERCPU_MIN_SIZE ||
	    entry_rsp != bi->cpu_region_base + bi->cpu_region_size)
		early_fail("Bail out! cpu %u: region 0x%lx+0x%lx, entry RSP 0x%lx; need >= 0x%x bytes with RSP at the top\n",
			   bi->cpu_index, bi->cpu_region_base, bi->cpu_region_size,
			   entry_rsp, PERCPU_MIN_SIZE);
}

static struct cpu *percpu_init(const struct boot_info *bi, uint64_t entry_rsp)
{
	struct cpu *c = (struct cpu *)(bi->cpu_region_base + PERCPU_CPU_OFF);

	memset(c, 0, sizeof(*c));
	c->self = c;
	c->exc_vector = EXC_NONE;
	c->index = bi->cpu_index;
	c->boot = bi;
	c->region_base = bi->cpu_region_base;
	c->entry_rsp = entry_rsp;
	c->user_stack_top = bi->cpu_region_base + PERCPU_USER_STACK_TOP;
	return c;
}

__attribute__((weak)) void guest_ap_main(const struct boot_info *bi)
{
	(void)bi;
}

/* Overridden by pvh.c: what the PVH boot had to say, as TAP diagnostics. */
__attribute__((weak)) void fw_boot_diag(void)
{
}

static __attribute__((noreturn)) void bsp_run(const struct boot_info *bi)
{
	int status;

	tap_begin();
	fw_boot_diag();
	atomic_store_release(&bsp_started, 1);
	status = guest_main(bi);
	console_end_line();
	guest_exit((uint32_t)status);
}

/*
 * Waits for vCPU 0 so that nothing precedes its "TAP version 13". Halting
 * afterwards is safe: vCPU 0 never halts, so the VM never has all vCPUs
 * halted (which the VMM treats as a hang).
 */
static __attribute__((noreturn)) void ap_run(const struct boot_info *bi)
{
	while (!atomic_load_acquire(&bsp_started))
		cpu_relax();
	guest_ap_main(bi);
	console_end_line();
	halt_forever();
}

/* Called by _start in entry.S with the VMM's RDI and the entry RSP. */
void fw_start(struct boot_info *bi, uint64_t entry_rsp)
{
	struct cpu *c;

	check_boot_info(bi, entry_rsp);
	c = percpu_init(bi, entry_rsp);
	desc_init(c);
	/* As a real kernel would; RFLAGS.AC then decides, at CPL3 only. */
	write_cr0(read_cr0() | X86_CR0_AM);
	if (bi->cpu_index == 0)
		bsp_run(bi);
	ap_run(bi);
}
