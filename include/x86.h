/* SPDX-License-Identifier: MIT */
/*
 * Facts of the x86-64 architecture (Intel SDM vol. 3, AMD APM vol. 2) that
 * the VMM, the guest runtime and the tests share: exception vectors, MSR
 * numbers, control-register, RFLAGS and paging-entry bits. The project's
 * own ABI (split-lock MSR model, ports, boot protocol) lives in the vmm_*.h
 * headers beside this one. Usable from C and from assembly.
 */
#ifndef VMM_X86_H
#define VMM_X86_H

#ifdef __ASSEMBLER__
#define X86_BIT(n) (1 << (n))
#else
#define X86_BIT(n) (1ull << (n))
#endif

/* Exception vectors. */
#define X86_VEC_DE   0
#define X86_VEC_DB   1
#define X86_VEC_BP   3
#define X86_VEC_OF   4
#define X86_VEC_UD   6
#define X86_VEC_DF   8
#define X86_VEC_TS   10
#define X86_VEC_NP   11
#define X86_VEC_SS   12
#define X86_VEC_GP   13
#define X86_VEC_PF   14
#define X86_VEC_AC   17
/*
 * The vectors that are faults (SDM vol. 3 6.5, table 6-1), one bit each:
 * #DE #BR #UD #NM #TS #NP #SS #GP #PF #MF #AC #XM #VE #CP. A fault's frame
 * holds RF set (17.3.1.1); #DB is a fault or a trap, and never pushes RF.
 */
#define X86_VEC_FAULTS 0x3b7ce1u

/* Architectural MSRs (no u suffix: assembly includes them too). */
#define MSR_EFER                0xc0000080
#define MSR_FS_BASE             0xc0000100
#define MSR_GS_BASE             0xc0000101
#define MSR_STAR                0xc0000081      /* SYSCALL's selectors */
#define MSR_LSTAR               0xc0000082      /* SYSCALL's target, 64-bit code */
#define MSR_CSTAR               0xc0000083      /* SYSCALL's target, compatibility mode */
#define MSR_SYSCALL_MASK        0xc0000084      /* IA32_FMASK */
#define MSR_IA32_SYSENTER_EIP   0x176

/* CR0. */
#define X86_CR0_PE   X86_BIT(0)
#define X86_CR0_MP   X86_BIT(1)
#define X86_CR0_ET   X86_BIT(4)
#define X86_CR0_NE   X86_BIT(5)
#define X86_CR0_WP   X86_BIT(16)
#define X86_CR0_AM   X86_BIT(18)
#define X86_CR0_PG   X86_BIT(31)

/* CR4. */
#define X86_CR4_VME        X86_BIT(0)
#define X86_CR4_PVI        X86_BIT(1)
#define X86_CR4_DE         X86_BIT(3)
#define X86_CR4_PSE        X86_BIT(4)
#define X86_CR4_PAE        X86_BIT(5)
#define X86_CR4_OSFXSR     X86_BIT(9)
#define X86_CR4_OSXMMEXCPT X86_BIT(10)
#define X86_CR4_LA57       X86_BIT(12)
#define X86_CR4_VMXE       X86_BIT(13)
#define X86_CR4_OSXSAVE    X86_BIT(18)
#define X86_CR4_SMEP       X86_BIT(20)
#define X86_CR4_SMAP       X86_BIT(21)
#define X86_CR4_PKE        X86_BIT(22)
#define X86_CR4_CET        X86_BIT(23)

/* EFER. */
#define X86_EFER_SCE X86_BIT(0)
#define X86_EFER_LME X86_BIT(8)
#define X86_EFER_LMA X86_BIT(10)
#define X86_EFER_NXE X86_BIT(11)
#define X86_EFER_SVME X86_BIT(12)

/* CPUID.0:EBX, the vendor string's first four bytes. */
#define X86_CPUID_VENDOR_AMD   0x68747541u /* "Auth"enticAMD */
#define X86_CPUID_VENDOR_HYGON 0x6f677948u /* "Hygo"nGenuine */
#define X86_CPUID_VENDOR_INTEL 0x756e6547u /* "Genu"ineIntel */

/* CPUID bits: virtualization of the guest's own (nested) guests. */
#define X86_CPUID_1_ECX_VMX        X86_BIT(5)
#define X86_CPUID_1_ECX_HYPERVISOR X86_BIT(31)   /* "running under a hypervisor" */
#define X86_CPUID_80000001_ECX_SVM X86_BIT(2)
#define X86_CPUID_SVM_LEAF         0x8000000au /* SVM revision and features */
/* CPUID.(7,0):EBX[11]: restricted transactional memory (XBEGIN, XEND, XABORT, XTEST). */
#define X86_CPUID_7_EBX_RTM        X86_BIT(11)
/* EAX after an RTM abort (SDM vol. 1 table 16-1): a debug exception caused it. */
#define X86_RTM_ABORT_DEBUG        X86_BIT(4)

/* RFLAGS. */
#define X86_RFLAGS_CF    X86_BIT(0)
#define X86_RFLAGS_FIXED X86_BIT(1)     /* reads as 1 */
#define X86_RFLAGS_PF    X86_BIT(2)
#define X86_RFLAGS_AF    X86_BIT(4)
#define X86_RFLAGS_ZF    X86_BIT(6)
#define X86_RFLAGS_SF    X86_BIT(7)
#define X86_RFLAGS_TF    X86_BIT(8)
#define X86_RFLAGS_IF    X86_BIT(9)
#define X86_RFLAGS_DF    X86_BIT(10)
#define X86_RFLAGS_OF    X86_BIT(11)
#define X86_RFLAGS_IOPL(f) ((unsigned)((f) >> 12) & 3)
#define X86_RFLAGS_NT    X86_BIT(14)
#define X86_RFLAGS_RF    X86_BIT(16)
#define X86_RFLAGS_VM    X86_BIT(17)
#define X86_RFLAGS_AC    X86_BIT(18)
#define X86_RFLAGS_VIF   X86_BIT(19)
#define X86_RFLAGS_VIP   X86_BIT(20)
#define X86_RFLAGS_ID    X86_BIT(21)
/* The six status flags that arithmetic writes: OF SF ZF AF PF CF (0x8d5). */
#define X86_RFLAGS_ARITH (X86_RFLAGS_OF | X86_RFLAGS_SF | X86_RFLAGS_ZF | \
			  X86_RFLAGS_AF | X86_RFLAGS_PF | X86_RFLAGS_CF)

/* DR6 (bits 4-11 and 17-31 read as 1; RTM, bit 16, is active low). */
#define X86_DR6_B0_3       0xf
#define X86_DR6_BD         X86_BIT(13)
#define X86_DR6_BS         X86_BIT(14)
#define X86_DR6_BT         X86_BIT(15)
#define X86_DR6_RTM        X86_BIT(16)
#define X86_DR6_ACTIVE_LOW 0xffff0ff0
#define X86_DR6_VOLATILE   (X86_DR6_B0_3 | X86_DR6_BD | X86_DR6_BS | X86_DR6_BT | X86_DR6_RTM)

/* DR7: L0 enables DR0; R/W0 and LEN0 zero make it a one-byte execute breakpoint. */
#define X86_DR7_L0         X86_BIT(0)
#define X86_DR7_GD         X86_BIT(13)     /* MOV DR faults with #DB; cleared on #DB delivery */
#define X86_DR7_ENABLES    0xff            /* L0-3 and G0-3 */

/* Segment selectors. */
#define X86_SEL_RPL        0x3
#define X86_SEL_TI         0x4      /* the LDT */

/* Segment descriptors, as one 64-bit word. */
#define X86_DESC_A         X86_BIT(40)     /* accessed */
#define X86_DESC_W         X86_BIT(41)     /* data type: writable */
#define X86_DESC_CONFORMING X86_BIT(42)    /* code type: runs at the caller's CPL */
#define X86_DESC_E         X86_BIT(42)     /* data type: expand-down */
#define X86_DESC_CODE      X86_BIT(43)     /* type: executable */
#define X86_DESC_S         X86_BIT(44)     /* code or data, not system */
#define X86_DESC_DPL_SHIFT 45
#define X86_DESC_P         X86_BIT(47)
#define X86_DESC_L         X86_BIT(53)     /* 64-bit code */
#define X86_DESC_DB        X86_BIT(54)
#define X86_DESC_G         X86_BIT(55)     /* limit in 4 KiB units */
#define X86_DESC_A_BYTE    5               /* the byte that holds the accessed bit (bit 0) */

/* 16-byte long-mode IDT gates: byte 5 holds P, DPL and the type. */
#define X86_GATE_TYPE_BYTE 5
#define X86_GATE_P         0x80

/* Paging-structure entries (4-level and 5-level long mode). */
#define X86_PTE_P    X86_BIT(0)
#define X86_PTE_RW   X86_BIT(1)
#define X86_PTE_US   X86_BIT(2)
#define X86_PTE_PWT  X86_BIT(3)
#define X86_PTE_PCD  X86_BIT(4)
#define X86_PTE_A    X86_BIT(5)
#define X86_PTE_D    X86_BIT(6)
#define X86_PTE_PS   X86_BIT(7)
#define X86_PTE_XD   X86_BIT(63)
#define X86_PTE_PKEY_SHIFT 59     /* bits 62:59 of a leaf entry: its protection key */
#define X86_PTE_ADDR 0x000ffffffffff000ull

/* #PF error code. */
#define X86_PF_P     X86_BIT(0)
#define X86_PF_W     X86_BIT(1)
#define X86_PF_U     X86_BIT(2)
#define X86_PF_RSVD  X86_BIT(3)
#define X86_PF_I     X86_BIT(4)
#define X86_PF_PK    X86_BIT(5)

#endif
