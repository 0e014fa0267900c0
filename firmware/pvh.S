/* SPDX-License-Identifier: MIT */
/*
 * PVH entry: how the same image boots under QEMU, Firecracker or
 * cloud-hypervisor, which enter a PVH kernel in 32-bit protected mode with
 * paging off and EBX = hvm_start_info. The BSP enables long mode on page
 * tables of its own and lets pvh.c build what the VMM would have built;
 * the APs arrive through the real-mode trampoline below (INIT, SIPI, SIPI).
 * Both end at _start exactly as under the VMM, RDI = boot_info and RSP at
 * the top of their region. The VMM never runs any of this: it jumps to the
 * first byte of guest.bin, which stays _start.
 */
#include "pvh.h"
#include "x86.h"

#define PTE_FLAGS       (X86_PTE_P | X86_PTE_RW | X86_PTE_US) /* as the VMM's */

#define BOOT_PML4_ADDR  0x2000  /* vmm_boot.h; asm cannot include it */
#define BOOT_INFO_ADDR  0x8000

/* The loader reads this note; QEMU reads the address as 8 bytes. */
	.section .note.pvh, "a", @note
	.p2align 2
	.long 4, 8, XEN_ELFNOTE_PHYS32_ENTRY
	.asciz "Xen"
	.p2align 2
	.quad pvh_start32

/*
 * Same control-register values as the VMM's entry state
 * (docs/boot-protocol.md), so that the boot tests hold on both paths. CD
 * and NW are cleared too, which an AP fresh from INIT needs.
 */
.macro ENTER_LONG_MODE cr3, target
	movl \cr3, %eax
	movl %eax, %cr3
	movl $(X86_CR4_PAE | X86_CR4_OSFXSR | X86_CR4_OSXMMEXCPT), %eax
	movl %eax, %cr4
	movl $MSR_EFER, %ecx
	rdmsr
	orl $X86_EFER_LME, %eax
	wrmsr
	movl $(X86_CR0_PE | X86_CR0_MP | X86_CR0_ET | X86_CR0_NE | X86_CR0_WP | X86_CR0_PG), %eax
	movl %eax, %cr0
	ljmp $PVH_SEL_CODE64, $\target
.endm

	.section .text.pvh, "ax"
	.code32
	.globl pvh_start32
pvh_start32:
	cli
	cld
	lgdt pvh_gdtr
	movl $PVH_SEL_DATA, %eax
	movl %eax, %ds
	movl %eax, %es
	movl %eax, %ss
	movl $pvh_stack_top, %esp
	/*
	 * An ELF loader zeroes .bss (p_memsz beyond p_filesz), but nothing
	 * in the PVH ABI says so; the runtime's statics rely on it. EBX
	 * survives: the start_info address is only stored after this.
	 */
	xorl %eax, %eax
	movl $__bss_start, %edi
	movl $__image_end, %ecx
	subl %edi, %ecx
	rep stosb
	movl %ebx, pvh_start_info
	/*
	 * Early tables in .bss, identity-mapping 4 GiB: hvm_start_info, the
	 * command line and the memory map may lie anywhere below 4 GiB,
	 * including where the final tables go (Firecracker puts them at
	 * 0x6000), so pvh.c copies them out before it builds those.
	 */
	xorl %eax, %eax
	movl $pvh_early_pml4, %edi
	movl $(2 * 4096 / 4), %ecx
	rep stosl			/* PML4 and PDPT */
	movl $(pvh_early_pdpt + PTE_FLAGS), pvh_early_pml4
	xorl %ecx, %ecx
1:	movl %ecx, %eax
	shll $12, %eax
	addl $(pvh_early_pd + PTE_FLAGS), %eax
	movl %eax, pvh_early_pdpt(, %ecx, 8)
	incl %ecx
	cmpl $4, %ecx
	jb 1b
	xorl %ecx, %ecx
2:	movl %ecx, %eax
	shll $21, %eax
	orl $(PTE_FLAGS | X86_PTE_PS), %eax
	movl %eax, pvh_early_pd(, %ecx, 8)
	movl $0, pvh_early_pd + 4(, %ecx, 8)
	incl %ecx
	cmpl $2048, %ecx
	jb 2b
	ENTER_LONG_MODE $pvh_early_pml4, pvh_bsp64

/* From the trampoline, in protected mode on the transition GDT. */
pvh_ap32:
	movl $PVH_SEL_DATA, %eax
	movl %eax, %ds
	movl %eax, %es
	movl %eax, %ss
	/* The BSP built these before it sent the SIPIs. */
	ENTER_LONG_MODE $BOOT_PML4_ADDR, pvh_ap64

	.code64
pvh_bsp64:
	movq $pvh_stack_top, %rsp
	xorl %ebp, %ebp
	movl pvh_start_info(%rip), %edi
	call pvh_main
	movq %rax, %rdi
	jmp 3f

pvh_ap64:
	movl $1, %eax
	lock xaddl %eax, pvh_ap_next(%rip)
	/* Beyond VMM_MAX_VCPUS, or after the BSP stopped counting: park. */
	cmpl $255, %eax
	ja 5f
4:	pause
	cmpl $0, pvh_ap_go(%rip)
	je 4b
	shll $BI_SIZE_SHIFT, %eax
	leaq BOOT_INFO_ADDR(%rax), %rdi
3:	movq BI_REGION_BASE(%rdi), %rsp
	addq BI_REGION_SIZE(%rdi), %rsp
	xorl %eax, %eax
	movl %eax, %fs
	movl %eax, %gs
	jmp _start
5:	cli
	hlt
	jmp 5b

/*
 * Copied to PVH_TRAMPOLINE_ADDR; the SIPI starts an AP here in real mode
 * with CS = PVH_TRAMPOLINE_ADDR >> 4, IP = 0 (as kvm-unit-tests' and
 * Linux's trampolines do). It only gets to protected mode and leaves.
 */
	.code16
	.globl pvh_tramp_start, pvh_tramp_end
pvh_tramp_start:
	cli
	cld
	movw %cs, %ax
	movw %ax, %ds
	lgdtl pvh_tramp_gdtr - pvh_tramp_start
	movl %cr0, %eax
	orl $X86_CR0_PE, %eax
	movl %eax, %cr0
	ljmpl $PVH_SEL_CODE32, $pvh_ap32
	.p2align 2
pvh_tramp_gdtr:
	.word pvh_gdt_end - pvh_gdt - 1
	.long pvh_gdt
pvh_tramp_end:

	.section .rodata
	.p2align 3
pvh_gdt:
	.quad 0
	.quad 0x00af9a000000ffff	/* 0x08 code64 */
	.quad 0x00cf92000000ffff	/* 0x10 data */
	.quad 0x00cf9a000000ffff	/* 0x18 code32 */
pvh_gdt_end:
	.p2align 2
pvh_gdtr:
	.word pvh_gdt_end - pvh_gdt - 1
	.long pvh_gdt

	.data
	.p2align 2
	.globl pvh_ap_next, pvh_ap_go
pvh_ap_next:
	.long 1
pvh_ap_go:
	.long 0
pvh_start_info:
	.long 0

	.bss
	.p2align 12
pvh_early_pml4:
	.skip 4096
pvh_early_pdpt:
	.skip 4096
pvh_early_pd:
	.skip 4 * 4096
	.p2align 4
pvh_stack:
	.skip 8192
pvh_stack_top:

	.section .note.GNU-stack, "", @progbits
