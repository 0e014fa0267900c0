/* SPDX-License-Identifier: MIT */
/*
 * The boot protocol of include/vmm_boot.h, as pure code: it writes page
 * tables, the GDT and boot_info into a buffer that stands for guest RAM and
 * computes each vCPU's registers, so unit tests can check all of it without
 * /dev/kvm.
 */
#ifndef VMM_BOOT_BUILD_H
#define VMM_BOOT_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include <linux/kvm.h>

#include "vmm_boot.h"
#include "x86.h"

struct boot_layout {
	uint64_t ram_size;
	unsigned cpus;
	uint64_t image_size;
	const char *cmdline;
	uint32_t flags;          /* BOOT_FLAG_* */
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
void boot_init_regs(struct kvm_regs *r, const struct boot_layout *l, unsigned cpu);

#endif
