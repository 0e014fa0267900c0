/* SPDX-License-Identifier: MIT */
/*
 * The boot protocol of include/vmm_boot.h, as pure code: it writes page
 * tables, the GDT and boot_info into a buffer that stands for guest RAM and
 * computes each vCPU's registers, so unit tests can check all of it without
 * /dev/kvm.
 */
#ifndef VMM_BOOT_BUILD_H
#define VMM_BOOT_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/kvm.h>

#include "vmm_boot.h"
#include "x86.h"

/*
 * The machine a guest gets (docs/design.md, "Machines"): the bare one of
 * flat images (no interrupt controller, HLT exits, COM1 line-buffered per
 * vCPU, the exit port's status as written), or a PC for kernels (KVM's
 * interrupt controllers and PIT, pc.c's ports, ACPI and MP tables).
 */
enum machine { MACHINE_BARE, MACHINE_PC };

/* Guest-physical layout of MACHINE_PC below 1 MiB, besides the page tables. */
#define BOOT_PC_STACK_TOP     0x10000u  /* RSP of the 64-bit kernel entry */
#define BOOT_PC_PARAMS_ADDR   0x10000u  /* zero page, start_info or multiboot info */
#define BOOT_PC_PARAMS_SIZE   0x10000u
#define BOOT_PC_CMDLINE_ADDR  0x20000u
#define BOOT_PC_CMDLINE_SIZE  0x10000u  /* with its NUL */
/* Kernels load at or above this; below is the VMM's. */
#define BOOT_PC_KERNEL_LOW    0x100000u

/*
 * How vCPU 0 starts. FLAT: the VMM's own protocol (every vCPU, RDI =
 * boot_info). LONG: long mode on the VMM's page tables, CS 0x08, at rip
 * with RSI (Linux's 64-bit entry). PROT32: 32-bit protected mode, paging
 * off, flat CS 0x28 and data 0x10, at rip with EAX and EBX (PVH, multiboot).
 */
enum boot_entry_mode { BOOT_ENTRY_FLAT, BOOT_ENTRY_LONG, BOOT_ENTRY_PROT32 };

struct boot_entry {
	enum boot_entry_mode mode;
	uint64_t rip, rax, rbx, rsi;
};

struct boot_layout {
	uint64_t ram_size;
	unsigned cpus;
	uint64_t image_size;
	const char *cmdline;
	uint32_t flags;          /* BOOT_FLAG_* */
	enum machine machine;
	struct boot_entry entry; /* MACHINE_PC: the kernel loader's */
};

/* Highest guest-physical address the image may end at (exclusive). */
uint64_t boot_image_limit(uint64_t ram_size, unsigned cpus);

/* Identity map [0, ram_size) with 2 MiB pages. ram_size <= VMM_MAX_RAM. */
void boot_build_page_tables(uint8_t *mem, uint64_t ram_size);
void boot_build_gdt(uint8_t *mem);
void boot_build_info(uint8_t *mem, const struct boot_layout *l, unsigned cpu);
/* All of the above. */
void boot_setup_memory(uint8_t *mem, const struct boot_layout *l);

/* Long mode, CPL0, flat segments; the caller starts from KVM_GET_SREGS. */
void boot_init_sregs(struct kvm_sregs *s);
/* 32-bit protected mode, paging off, flat CS and data, CPL0. */
void boot_init_sregs_prot32(struct kvm_sregs *s);
/* boot_init_sregs() or _prot32(), as the layout's entry says. */
void boot_init_entry_sregs(struct kvm_sregs *s, const struct boot_layout *l);
void boot_init_regs(struct kvm_regs *r, const struct boot_layout *l, unsigned cpu);
/*
 * Whether vCPU `cpu` gets the entry state: every vCPU of a flat image;
 * only vCPU 0 of a kernel, whose other vCPUs keep KVM's reset state for
 * the PC machine's INIT and SIPI.
 */
bool boot_vcpu_entered(const struct boot_layout *l, unsigned cpu);

#endif
