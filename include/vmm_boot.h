/* SPDX-License-Identifier: MIT */
/*
 * Boot protocol shared by the VMM and the guest runtime.
 *
 * The VMM enters every vCPU directly in 64-bit long mode at CPL0: the host
 * KVM on the project's machines shuts the VM down when a guest sets
 * EFER.LME itself, so there is no real-mode or INIT/SIPI path at all.
 * docs/boot-protocol.md is the prose version of this file.
 */
#ifndef VMM_BOOT_H
#define VMM_BOOT_H

#include <stdint.h>

/* Guest-physical layout. Everything below 1 MiB belongs to the VMM. */
#define BOOT_GDT_ADDR        0x1000u  /* null, code64, data, TSS */
#define BOOT_TSS_ADDR        0x1800u  /* placeholder TSS so that TR is valid */
#define BOOT_PML4_ADDR       0x2000u
#define BOOT_PDPT_ADDR       0x3000u
#define BOOT_PD_ADDR         0x4000u  /* BOOT_PD_PAGES pages of 2 MiB entries */
#define BOOT_PD_PAGES        4u       /* 4 x 512 x 2 MiB = 4 GiB of RAM */
#define BOOT_INFO_ADDR       0x8000u  /* struct boot_info[VMM_MAX_VCPUS] */
#define BOOT_IMAGE_ADDR      0x100000u /* guest.bin is loaded here; entry = first byte */

/* Selectors of the GDT the VMM builds; the guest may replace it. */
#define BOOT_SEL_CODE64      0x08u
#define BOOT_SEL_DATA        0x10u
#define BOOT_SEL_TSS         0x18u  /* 16 bytes */
#define BOOT_SEL_CODE32      0x28u  /* kernels entered in 32-bit protected mode */

/*
 * Every vCPU gets a private region at the top of RAM, vCPU 0 highest.
 * RSP starts at its top; the guest runtime may carve its exception and user
 * stacks and per-CPU tables out of it as it likes.
 */
#define BOOT_CPU_REGION_SIZE 0x10000u /* 64 KiB */

#define VMM_MAX_VCPUS        256u
#define VMM_MIN_RAM          (4ull << 20)
#define VMM_MAX_RAM          ((uint64_t)BOOT_PD_PAGES << 30)
#define VMM_DEFAULT_RAM      (64ull << 20)

#define BOOT_INFO_MAGIC      0x31544f4f424d4d56ull /* "VMMBOOT1" */
#define BOOT_ABI_VERSION     1u
#define BOOT_CMDLINE_MAX     128u

/*
 * boot_info.flags. SPLIT_LOCK_CPL0_ONLY: split-lock detection is emulated by
 * single-stepping, and this host's KVM cannot single-step CPL3 code, so
 * split locks at CPL3 are neither reported (#AC) nor emulated.
 */
#define BOOT_FLAG_SPLIT_LOCK_CPL0_ONLY (1u << 0)
/*
 * NO_ALIGNMENT_CHECK: this host's CPU, probed by vmm at start, raises no
 * legacy alignment-check #AC (CR0.AM, RFLAGS.AC, CPL3): QEMU's TCG. The
 * guest cannot pass a check of it there, and says so as a skip.
 */
#define BOOT_FLAG_NO_ALIGNMENT_CHECK   (1u << 1)
/*
 * CPUID_7_EDX30_SET: vmm set CPUID.(7,0):EDX[30] for this vCPU and its probe
 * saw such a bit reach a guest, so a guest that reads 0 there has found a
 * defect, not a KVM that answers leaf 7 from the host.
 */
#define BOOT_FLAG_CPUID_7_EDX30_SET    (1u << 2)

/* RDI points at the vCPU's own copy at entry. */
struct boot_info {
	uint64_t magic;            /* BOOT_INFO_MAGIC */
	uint32_t abi_version;      /* BOOT_ABI_VERSION */
	uint32_t size;             /* sizeof(struct boot_info) */
	uint32_t cpu_index;        /* 0 .. cpu_count-1; 0 is the boot vCPU */
	uint32_t cpu_count;
	uint64_t ram_size;         /* bytes, identity-mapped from 0 */
	uint64_t image_base;       /* BOOT_IMAGE_ADDR */
	uint64_t image_size;       /* bytes of guest.bin as loaded */
	uint64_t cpu_region_base;  /* this vCPU's private region ... */
	uint64_t cpu_region_size;  /* ... of this many bytes; RSP = base + size */
	uint32_t flags;            /* BOOT_FLAG_* */
	uint32_t reserved0;
	uint64_t reserved[7];
	char cmdline[BOOT_CMDLINE_MAX]; /* --append text, NUL-terminated */
};

_Static_assert(sizeof(struct boot_info) == 256, "boot_info is ABI");
_Static_assert(BOOT_INFO_ADDR + VMM_MAX_VCPUS * 256u <= BOOT_IMAGE_ADDR,
	       "boot_info array overlaps the image");

#endif
