/* SPDX-License-Identifier: MIT */
/*
 * PVH boot, long-mode half: turns hvm_start_info into what the VMM hands a
 * guest (docs/boot-protocol.md), the same page tables at the same address
 * and one struct boot_info per CPU, then starts the other CPUs through the
 * local APIC. pvh.S calls pvh_main on the BSP, on early page tables of its
 * own, and goes on to _start with what it returns.
 */
#include <stddef.h>

#include "acpi.h"
#include "fw.h"
#include "internal.h"
#include "pvh.h"
#include "x86.h"

_Static_assert(offsetof(struct boot_info, cpu_region_base) == BI_REGION_BASE, "pvh.S");
_Static_assert(offsetof(struct boot_info, cpu_region_size) == BI_REGION_SIZE, "pvh.S");
_Static_assert(sizeof(struct boot_info) == 1u << BI_SIZE_SHIFT, "pvh.S");

#define MEMMAP_MAX      128
#define NOTES_MAX       6
#define NOTE_LEN        160

#define MSR_APIC_BASE       0x1b
#define APIC_BASE_EXTD      (1ull << 10)  /* x2APIC mode */
#define APIC_BASE_EN        (1ull << 11)
#define APIC_SVR            0xf0
#define APIC_SVR_ENABLE     0x100
#define APIC_ICR_LO         0x300
#define APIC_ICR_HI         0x310
#define APIC_ICR_BUSY       (1u << 12)
#define X2APIC_MSR(reg)     (0x800u + ((reg) >> 4))
/* Destination shorthand "all excluding self", level assert. */
#define ICR_INIT            0xc4500u
#define ICR_STARTUP         0xc4600u

/*
 * How long the BSP waits for the APs the MADT lists: whichever comes first
 * of 10^10 TSC ticks (3-10 s at the TSC rates of today's hosts) and 2*10^7
 * pause loops (a PAUSE can cost microseconds when it exits to a nested
 * hypervisor, and a TSC's rate is not known here). QEMU, TCG or KVM, had
 * every AP in within milliseconds.
 */
#define AP_WAIT_TSC         10000000000ull
#define AP_WAIT_SPINS       20000000ull
#define ICR_WAIT_SPINS      1000000ull

extern char __image_start[], __image_end[];

/* What hvm_start_info said, copied before anything can overwrite it. */
static struct {
	uint32_t version;
	uint64_t rsdp;
	uint32_t memmap_entries;
	struct hvm_memmap_table_entry memmap[MEMMAP_MAX];
	char cmdline[BOOT_CMDLINE_MAX];
	size_t cmdline_len;  /* the whole line's, maybe longer than the copy */
} info;

static bool booted_pvh;
static char notes[NOTES_MAX][NOTE_LEN];
static unsigned note_count;

/* Kept until "TAP version 13" is out: nothing may precede it. */
static FW_PRINTF(1, 2) void note(const char *fmt, ...)
{
	va_list ap;

	if (note_count == NOTES_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(notes[note_count++], NOTE_LEN, fmt, ap);
	va_end(ap);
}

void fw_boot_diag(void)
{
	if (!booted_pvh)
		return;
	for (unsigned i = 0; i < note_count; i++)
		tap_diag("pvh: %s", notes[i]);
}

static __attribute__((noreturn)) FW_PRINTF(1, 2) void pvh_fail(const char *fmt, ...)
{
	char line[PRINTF_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	console_write_raw("Bail out! pvh: ");
	console_write_raw(line);
	console_write_raw("\n");
	guest_exit(GUEST_STATUS_FAIL);
}

static void copy_start_info(uint32_t paddr)
{
	const struct hvm_start_info *si = (const void *)(uintptr_t)paddr;
	const char *cmd;

	if (si->magic != HVM_START_MAGIC)
		pvh_fail("hvm_start_info at 0x%x: magic 0x%x, want 0x%x", paddr,
			 si->magic, HVM_START_MAGIC);
	info.version = si->version;
	info.rsdp = si->rsdp_paddr;
	if (si->cmdline_paddr && si->cmdline_paddr < VMM_MAX_RAM) {
		cmd = (const char *)(uintptr_t)si->cmdline_paddr;
		info.cmdline_len = strnlen(cmd, 4096);
		memcpy(info.cmdline, cmd, info.cmdline_len < BOOT_CMDLINE_MAX ?
		       info.cmdline_len : BOOT_CMDLINE_MAX - 1);
	}
	if (si->version >= 1 && si->memmap_paddr && si->memmap_paddr < VMM_MAX_RAM) {
		info.memmap_entries = si->memmap_entries < MEMMAP_MAX ?
				      si->memmap_entries : MEMMAP_MAX;
		memcpy(info.memmap, (const void *)(uintptr_t)si->memmap_paddr,
		       info.memmap_entries * sizeof(info.memmap[0]));
	}
}

/*
 * The RAM the guest may use is the RAM range that holds the image, as the
 * VMM's is [0, ram_size). Without a memory map (hvm_start_info version 0)
 * only the smallest RAM any loader of this image must have is safe.
 */
static uint64_t ram_size_from_memmap(void)
{
	uint64_t end = pvh_ram_end(info.memmap, info.memmap_entries, BOOT_IMAGE_ADDR);

	if (!info.memmap_entries) {
		note("hvm_start_info version %u has no memory map: assuming %llu MiB of RAM",
		     info.version, VMM_MIN_RAM >> 20);
		return VMM_MIN_RAM;
	}
	if (!end)
		pvh_fail("no RAM range of the memory map (%u entries) holds 0x%x",
			 info.memmap_entries, BOOT_IMAGE_ADDR);
	if (end > VMM_MAX_RAM)
		end = VMM_MAX_RAM;
	return end & ~0xfffull;
}

/*
 * The VMM's layout and flags (all RAM user-accessible), but all 4 GiB:
 * the local APIC and the ACPI tables are above RAM. Uncached up there.
 */
static void build_page_tables(uint64_t ram_size)
{
	uint64_t *pml4 = (uint64_t *)(uintptr_t)BOOT_PML4_ADDR;
	uint64_t *pdpt = (uint64_t *)(uintptr_t)BOOT_PDPT_ADDR;
	uint64_t *pd = (uint64_t *)(uintptr_t)BOOT_PD_ADDR;
	const uint64_t flags = X86_PTE_P | X86_PTE_RW | X86_PTE_US;

	memset(pml4, 0, 4096);
	memset(pdpt, 0, 4096);
	pml4[0] = BOOT_PDPT_ADDR | flags;
	for (uint64_t i = 0; i < BOOT_PD_PAGES; i++)
		pdpt[i] = (BOOT_PD_ADDR + i * 4096) | flags;
	for (uint64_t i = 0; i < BOOT_PD_PAGES * 512; i++) {
		uint64_t pa = i << 21;

		pd[i] = pa | flags | X86_PTE_PS | (pa >= ram_size ? X86_PTE_PCD | X86_PTE_PWT : 0);
	}
	asm volatile("mov %0, %%cr3" : : "r"((uint64_t)BOOT_PML4_ADDR) : "memory");
}

/* gcc takes constant addresses below 4 KiB for null pointer arithmetic. */
static const volatile void *phys(uint64_t pa)
{
	asm("" : "+r"(pa));
	return (const volatile void *)(uintptr_t)pa;
}

/* Firmware tables are identity-mapped: all 4 GiB are. */
static const uint8_t *identity(uint64_t paddr, size_t len, void *ctx)
{
	(void)ctx;
	if (paddr >= VMM_MAX_RAM || len > VMM_MAX_RAM - paddr)
		return NULL;
	return (const uint8_t *)phys(paddr);
}

/* hvm_start_info's, or where a BIOS leaves it (EBDA, then 0xe0000). */
static uint64_t find_rsdp(void)
{
	uint64_t ebda = (uint64_t)*(const volatile uint16_t *)phys(0x40e) << 4;
	uint64_t a = 0;

	if (info.rsdp)
		return info.rsdp;
	if (ebda >= 0x80000 && ebda < 0xa0000)
		a = acpi_rsdp_scan(ebda, ebda + 1024, identity, NULL);
	return a ? a : acpi_rsdp_scan(0xe0000, 0x100000, identity, NULL);
}

/* Enabled processors in the MADT, or 0 when there is none. */
static uint32_t madt_cpu_count(void)
{
	uint64_t rsdp = find_rsdp();
	const uint8_t *madt;

	if (!rsdp) {
		note("no ACPI RSDP: only the boot CPU runs");
		return 0;
	}
	madt = acpi_find_madt(rsdp, identity, NULL);
	if (!madt) {
		note("no valid ACPI MADT: only the boot CPU runs");
		return 0;
	}
	return acpi_madt_cpus(madt);
}

static volatile uint32_t *apic_reg(uint64_t base, unsigned reg)
{
	return (volatile uint32_t *)(uintptr_t)(base + reg);
}

static bool apic_send(uint64_t apic_base, uint32_t icr)
{
	uint64_t base = apic_base & ~0xfffull;

	if (apic_base & APIC_BASE_EXTD) {
		wrmsr(X2APIC_MSR(APIC_ICR_LO), icr);
		return true;
	}
	*apic_reg(base, APIC_ICR_HI) = 0;
	*apic_reg(base, APIC_ICR_LO) = icr;
	for (uint64_t i = 0; i < ICR_WAIT_SPINS; i++) {
		if (!(*apic_reg(base, APIC_ICR_LO) & APIC_ICR_BUSY))
			return true;
		cpu_relax();
	}
	return false;
}

static void fill_boot_info(struct boot_info *bi, uint32_t index, uint32_t count,
			   uint64_t ram_size)
{
	memset(bi, 0, sizeof(*bi));
	bi->magic = BOOT_INFO_MAGIC;
	bi->abi_version = BOOT_ABI_VERSION;
	bi->size = sizeof(*bi);
	bi->cpu_index = index;
	bi->cpu_count = count;
	bi->ram_size = ram_size;
	bi->image_base = BOOT_IMAGE_ADDR;
	bi->image_size = (uint64_t)(__image_end - __image_start);
	bi->cpu_region_size = BOOT_CPU_REGION_SIZE;
	bi->cpu_region_base = ram_size - (uint64_t)BOOT_CPU_REGION_SIZE * (index + 1);
	memcpy(bi->cmdline, info.cmdline, sizeof(bi->cmdline));
}

/*
 * INIT, SIPI, SIPI to all but self, as kvm-unit-tests does; each AP takes
 * the next index in pvh.S and waits for pvh_ap_go. Returns how many came.
 */
static uint32_t start_aps(uint32_t want)
{
	uint64_t apic_base = rdmsr(MSR_APIC_BASE);
	uint64_t base = apic_base & ~0xfffull;
	size_t tramp_len = (size_t)(pvh_tramp_end - pvh_tramp_start);
	uint32_t vector = PVH_TRAMPOLINE_ADDR >> 12;
	uint32_t arrived;
	uint64_t start;
	bool sent;

	if (!(apic_base & APIC_BASE_EN)) {
		note("the local APIC is disabled (IA32_APIC_BASE 0x%llx): only the boot CPU runs",
		     (unsigned long long)apic_base);
		return 0;
	}
	memcpy((void *)(uintptr_t)PVH_TRAMPOLINE_ADDR, pvh_tramp_start, tramp_len);
	if (apic_base & APIC_BASE_EXTD)
		wrmsr(X2APIC_MSR(APIC_SVR), rdmsr(X2APIC_MSR(APIC_SVR)) | APIC_SVR_ENABLE);
	else
		*apic_reg(base, APIC_SVR) |= APIC_SVR_ENABLE;
	sent = apic_send(apic_base, ICR_INIT) &&
	       apic_send(apic_base, ICR_STARTUP | vector) &&
	       apic_send(apic_base, ICR_STARTUP | vector);
	if (!sent)
		note("the local APIC never finished sending INIT/SIPI");
	start = rdtsc();
	for (uint64_t i = 0; sent && i < AP_WAIT_SPINS && rdtsc() - start < AP_WAIT_TSC; i++) {
		if (atomic_load_acquire(&pvh_ap_next) == want + 1)
			break;
		cpu_relax();
	}
	/* Latecomers get an index past any boot_info and park (pvh.S). */
	arrived = atomic_xchg(&pvh_ap_next, 0x80000000u) - 1;
	if (arrived > want)
		arrived = want;
	if (arrived < want)
		note("%u of the %u APs the MADT lists came up after INIT-SIPI-SIPI (%s APIC); the rest stay parked",
		     arrived, want, apic_base & APIC_BASE_EXTD ? "x2" : "x");
	return arrived;
}

struct boot_info *pvh_main(uint32_t start_info_paddr)
{
	struct boot_info *bis = (struct boot_info *)(uintptr_t)BOOT_INFO_ADDR;
	uint64_t image_end = (uint64_t)(uintptr_t)__image_end;
	uint64_t ram_size, fit;
	uint32_t want, count;

	booted_pvh = true;
	fw_console_serialize = true;
	copy_start_info(start_info_paddr);
	ram_size = ram_size_from_memmap();
	if (ram_size < image_end + BOOT_CPU_REGION_SIZE)
		pvh_fail("RAM ends at 0x%llx, below the image end 0x%llx plus one CPU region",
			 (unsigned long long)ram_size, (unsigned long long)image_end);
	build_page_tables(ram_size);
	if (info.cmdline_len >= BOOT_CMDLINE_MAX)
		note("command line cut to %u bytes (it has %zu)", BOOT_CMDLINE_MAX - 1,
		     info.cmdline_len);

	/* Before any CPU region is written: SeaBIOS keeps ACPI at the top of RAM. */
	want = madt_cpu_count();
	fit = (ram_size - image_end) / BOOT_CPU_REGION_SIZE;
	count = want ? want : 1;
	if (count > VMM_MAX_VCPUS)
		count = VMM_MAX_VCPUS;
	if (count > fit)
		count = (uint32_t)fit;
	if (count < want)
		note("the MADT lists %u CPUs; %u fit (VMM_MAX_VCPUS, RAM)", want, count);
	count = 1 + (count > 1 ? start_aps(count - 1) : 0);
	note("entered through PVH: hvm_start_info version %u, %u memory map entries, RAM to 0x%llx, %u CPU(s) running, %u in the MADT",
	     info.version, info.memmap_entries, (unsigned long long)ram_size, count, want);

	for (uint32_t i = 0; i < count; i++)
		fill_boot_info(&bis[i], i, count, ram_size);
	atomic_store_release(&pvh_ap_go, 1);
	return &bis[0];
}
