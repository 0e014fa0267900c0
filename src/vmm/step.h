/* SPDX-License-Identifier: MIT */
/*
 * The decisions of --split-lock=emulate's single-stepping, as pure
 * functions of their inputs: the guest's own TF (KVM hides it), whose #DB a
 * debug exit is, when TF must be written back. stepping.c acts on them; why
 * they are needed: docs/design.md, "Stepping that survives the guest".
 */
#ifndef VMM_STEP_H
#define VMM_STEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/kvm.h>

#include "x86.h"

enum step_kind {
	STEP_OTHER,
	STEP_HLT,
	STEP_PUSHF,
	STEP_POPF,
	STEP_IRET,
	STEP_SYSCALL,
	STEP_SYSRET,
	STEP_MOV_SS,     /* MOV SS / POP SS: the next instruction runs in its shadow */
	STEP_INT3,
	STEP_INTN,       /* INT imm8 */
	STEP_INTO,
	STEP_INT1,       /* ICEBP, f1 */
	STEP_BRANCH,     /* may legitimately land on its own address */
	STEP_MOV_DR,     /* MOV to a debug register */
	STEP_STI,        /* some CPUs (the lab's) run the next instruction in the same step */
	STEP_LTR,        /* loads TR without a task switch */
	STEP_SYSENTER,   /* to IA32_SYSENTER_EIP, or a fault (#UD on AMD in long mode) */
	STEP_SYSEXIT,    /* to RDX (EDX without REX.W), or a fault */
	STEP_XBEGIN,     /* C7 F8 rel16/rel32 without LOCK (LOCK: #UD, as any) */
};

enum { STEP_KVM_NEEDS_NONE, STEP_KVM_NEEDS_OSXSAVE, STEP_KVM_NEEDS_VMXE, STEP_KVM_NEEDS_SVME };

struct step_insn {
	enum step_kind kind;
	unsigned opsize;     /* 2, 4 or 8: PUSHF/POPF/IRET/SYSRET/POP SS operand size */
	unsigned len;        /* bytes, where known (0 otherwise) */
	uint8_t vector;      /* INT n's n, 3 for INT3, 4 for INTO, 1 for INT1 */
	int32_t rel;         /* XBEGIN: its offset, sign-extended */
	bool rep;            /* F2/F3 prefix: a string instruction repeats in place */
	bool falls;          /* set by the caller from a full length decode: len is the
				whole instruction and what runs next is right behind it */
	bool jump;           /* a STEP_BRANCH that leaves the stack alone: JMP near
				and far, Jcc, LOOPcc, JCXZ (not a task switch's) */
	bool kvm_faults;     /* KVM intercepts it and may queue a fault of its own:
				RDPMC, XSETBV, MOV to CR, CPUID, MONITOR/MWAIT,
				VMX and SVM instructions */
	uint8_t kvm_needs;   /* for those: STEP_KVM_NEEDS_*, the enable bit without
				which KVM's fault is #UD rather than #GP */
};

/* CS state that changes how bytes decode. */
struct step_mode {
	bool cs_l;           /* 64-bit code */
	bool cs_d;           /* default operand size 32 outside 64-bit code */
};

/* Looks at raw bytes at RIP; len may be short where the fetch was. */
void step_classify(const uint8_t *b, size_t len, struct step_mode mode, struct step_insn *out);

/* The guest's own TF after a completed instruction of this kind. */
struct step_tf_inputs {
	bool tf;             /* before the instruction */
	uint64_t popped;     /* POPF: the value at RSP; IRET: the RFLAGS slot of the frame */
	bool popped_valid;   /* false: reading it failed, the instruction will fault */
	uint64_t r11;        /* SYSRET */
	uint64_t fmask;      /* SYSCALL: IA32_FMASK */
	bool of;             /* INTO: RFLAGS.OF, without which it delivers nothing */
};
bool step_tf_after(enum step_kind kind, const struct step_tf_inputs *in);

/*
 * Must hardware TF be written back before the next entry? After a step, yes
 * (KVM loses it: docs/design.md, "Stepping that survives the guest"); after an exit KVM completes, no.
 */
bool step_rearm_after_exit(uint32_t exit_reason);
/*
 * Exits after which KVM finishes the instruction only on the next KVM_RUN
 * (I/O, MMIO, userspace MSRs): nothing may be checked or written before it.
 */
bool step_completes_in_kvm(uint32_t exit_reason);

/* What the vCPU's debug hardware does for the VMM (KVM_SET_GUEST_DEBUG). */
enum step_debug {
	STEP_DEBUG_OFF,
	STEP_DEBUG_STEP,         /* single-step */
	STEP_DEBUG_WATCH,        /* a breakpoint at addr stands in for TF */
	STEP_DEBUG_PREDICT,      /* single-step, and a breakpoint at addr: the handler
				    of the fault the instruction is expected to raise */
};

struct step_debug_state {
	enum step_debug mode;
	uint64_t addr;           /* WATCH and PREDICT */
	uint64_t mine;           /* WATCH and PREDICT: the DR6 B bit of addr's slot */
	uint64_t guests;         /* WATCH and PREDICT: B bits of the guest's breakpoints armed beside */
};

/*
 * Where a branch can complete: at one of to[0..n), or nowhere (`faults`:
 * the CPU faults on it, its target unreadable or its selector one it
 * cannot go through); n 0 and not `faults`: not known.
 */
struct step_branch {
	uint64_t to[2];
	unsigned n;
	bool faults;
};

/*
 * Why a stepped vCPU's next run is set up as it is (docs/design.md,
 * "Phases of a stepped vCPU"); what the debug hardware does meanwhile is
 * hw.mode. OUTER and TO_EXIT give detection up: stepping_after_exit()
 * turns it back on at the first exit KVM completes. UNWATCHED is no
 * stepping at all, while --split-lock-watch=armed and the guest's TEST_CTRL
 * bit 29 is clear: only the WRMSR that sets it leaves.
 */
enum step_phase {
	STEP_PHASE_FREE,        /* nothing checked: the next entry plans at RIP */
	STEP_PHASE_CHECKED,     /* `insn` at `rip` was checked; the run ends behind it */
	STEP_PHASE_OUTER,       /* unstepped while code outside CPL0 runs (KVM cannot step CPL3) */
	STEP_PHASE_TO_EXIT,     /* unstepped up to the next exit (INT n through a task gate) */
	STEP_PHASE_UNWATCHED,   /* not stepped: the guest does not ask for #AC (TEST_CTRL bit 29) */
	STEP_PHASE_COUNT,
};

/* What moves a stepped vCPU from one phase to another. */
enum step_event {
	STEP_ON_ENTRY,          /* an entry that starts an instruction is planned */
	STEP_ON_CPL0,           /* planning finds the vCPU at CPL0 */
	STEP_ON_ARMED,          /* the instruction at RIP is checked, its step armed */
	STEP_ON_DONE,           /* the checked step is over: its exit judged, or it faulted */
	STEP_ON_OUTER,          /* code outside CPL0 this KVM cannot step runs next */
	STEP_ON_TASK_GATE,      /* INT n through a task gate runs next */
	STEP_ON_UNWATCH,        /* an entry finds the vCPU not to be watched, nothing pending */
	STEP_ON_WATCH,          /* a WRMSR exit set TEST_CTRL bit 29 of an unwatched vCPU */
	STEP_EVENT_COUNT,
};

/*
 * The phase after `e` in phase `p`: the one transition table, which
 * docs/design.md's table shows (docs-figures holds the two together).
 */
enum step_phase step_phase_next(enum step_phase p, enum step_event e);

/* Per vCPU, written by its thread only. */

struct step_state {
	struct step_debug_state hw;   /* set through one function (stepping.c) */
	bool guest_tf;          /* the guest's own RFLAGS.TF, which KVM hides */
	bool rearm;             /* write TF back before the next entry */
	enum step_phase phase;  /* why the next run is set up as it is */
	bool tf_at_start;       /* guest_tf when `insn` began */
	bool tf_after;          /* guest_tf once `insn` completes */
	uint64_t rip, rsp;      /* as `insn` began */
	struct step_insn insn;
	struct step_insn shadowed; /* behind a MOV SS, POP SS or STI `insn`: runs in its step */
	bool shadowed_unchecked; /* and may be a split lock, or could not be read */
	bool shadowed_frame_valid; /* an IRET there: shadowed_frame holds what it pops */
	uint64_t shadowed_frame[3]; /* RIP, CS, RFLAGS, read before the step */
	bool shadowed_faulted;  /* it faulted, and the step stopped at the handler */
	struct step_mode mode;  /* CS as `insn` began */
	uint64_t resync_rip;    /* RIP of an exit completed with immediate_exit */
	uint64_t resync_rcx;    /* and RCX: a REP string I/O's completed round moves it, not RIP */
	bool resync_done;       /* that exit's instruction was complete already (MMIO write) */
	bool dr_valid;          /* db/dr7 hold the guest's debug registers */
	uint64_t db[4], dr7;
	int inject_vector;      /* an event was injected for the next entry, or -1 */
	int frame_vector;       /* delivered with the VMM's TF: its frame to fix, or -1 */
	uint64_t frame_handler;
	unsigned frame_slot;    /* bytes per slot of that frame: 8, 4 or 2 */
	bool frame_err;         /* it starts with an error code */
	bool frame_tf;          /* the guest's TF, for that frame */
	uint64_t popped;        /* POPF/IRET: the RFLAGS value they load */
	uint64_t to;            /* IRET, SYSENTER, SYSEXIT: where a completed one goes */
	struct step_branch branch;  /* a branch: where a completed one may be */
	bool to_known;          /* `to` was read, and is where it goes */
	bool iret_rf;           /* the last IRET loaded RF, which not every exit shows */
	struct kvm_segment tr;  /* TR as `insn` began: a step that changes it switched tasks */
	bool rf;                /* RFLAGS.RF as the instruction at RIP begins */
	bool resume_tf;         /* stepping back on to complete an exit: the guest's TF owes a trap */
	bool left_split;        /* `insn` is a split lock left to the CPU to fault on */
	bool holds_pause;       /* the other vCPUs stay paused until this step's exit */
};

/*
 * HLT runs with single-step off: stepped, KVM completes it as a step and the
 * vCPU never halts. At CPL > 0 HLT is #GP, which stepping must see.
 */
bool step_hlt_unstepped(const struct step_insn *insn, unsigned cpl);

/*
 * Delivers through the IDT by itself (INT3, INT n, INTO with OF set): run
 * with a hardware breakpoint on the handler instead of TF, so the frame
 * holds the guest's own TF and the handler's first instruction is checked.
 */
bool step_delivers(const struct step_insn *insn, uint64_t rflags);

/* A KVM_EXIT_DEBUG while stepping: what the guest is owed. */
struct step_db {
	bool inject;         /* deliver #DB to the guest */
	uint64_t payload;    /* its DR6 bits, in pending-debug format (active high) */
	bool completed;      /* the stepped instruction ran (a trap, not a fault) */
};
/*
 * exit_dr6: run->debug.arch.dr6. tf_at_start: the guest's TF when the
 * instruction began. guest_dr7: to tell the guest's enabled breakpoints from
 * bits the CPU sets for disabled ones (only consulted when B0-3 are set).
 * beside: step_exec_beside()'s bits, added to the payload of a #DB.
 */
struct step_db step_debug_exit(uint64_t exit_dr6, bool tf_at_start, uint64_t guest_dr7,
			       uint64_t beside);

/* The guest's DR6 once a #DB with this payload is delivered (as the CPU does). */
uint64_t step_dr6_deliver(uint64_t dr6, uint64_t payload);

/*
 * After a stepped run, did guest code run that was never checked? True when
 * the exit lands back on the checked instruction although it completed as a
 * trap (an exception was delivered natively and its handler returned there)
 * for an instruction that cannot land on itself.
 */
bool step_escaped(const struct step_insn *insn, uint64_t checked_rip, uint64_t exit_rip,
		  bool debug_exit, bool completed);

/* RIP len bytes on, wrapping as EIP and IP do outside 64-bit code. */
uint64_t step_advance(uint64_t rip, unsigned len, struct step_mode mode);

/*
 * An instruction the decoder rejects (a LOCK it does not accept, an
 * undefined opcode, bytes that end first): the CPU may answer #UD, which
 * KVM intercepts and injects back on its own, or run it. Its step can end
 * only behind it or at a handler whose frame holds its RIP.
 */
bool step_undecodable(const struct step_insn *insn);
/*
 * Whether KVM may inject a fault of this instruction by itself, keeping the
 * step's TF only where single-step was issued at its RIP: the #UD of what
 * the decoder rejects and the legacy #AC (CPL3 with CR0.AM and RFLAGS.AC),
 * both of which KVM intercepts and queues back, and the #GP or #UD of the
 * instructions KVM runs itself (`kvm_faults`).
 */
/*
 * A handler's first instruction, for a KVM that reports the step after it
 * rather than at the handler (the nested PVM KVM): its length in *len and
 * the slots it pushed, 1 for PUSH imm8/imm32/reg, 0 for ENDBR, CLAC, CLD or
 * NOP (a REX prefix at most); -1 for anything else (the frame cannot be
 * found behind it).
 */
int step_handler_first_push(const uint8_t *b, size_t n, bool long64, unsigned *len);
#define STEP_HANDLER_FIRST_MAX 5	/* the longest of them, PUSH imm32 */

/*
 * The fault KVM queues for a `kvm_faults` instruction where it does not
 * complete: #UD for XSETBV without CR4.OSXSAVE, VMX instructions without
 * CR4.VMXE, SVM ones without EFER.SVME (VMCALL and VMMCALL aside: KVM's
 * hypercalls); else #GP (RDPMC's counter, XSETBV's value, MOV to CR ...).
 */
int step_kvm_fault_vector(const struct step_insn *insn, uint64_t cr4, uint64_t efer);

bool step_kvm_may_inject(const struct step_insn *insn, unsigned cpl, uint64_t cr0,
			 uint64_t rflags);

/*
 * A completed step of an instruction that falls through, ending anywhere
 * but right behind it: an exception was delivered on the way, by the CPU
 * itself (#GP, #PF, #UD, ...) or by KVM on its own account (a failed MSR
 * access), which neither the VMM nor its step saw.
 */
bool step_diverted(const struct step_insn *insn, uint64_t checked_rip, uint64_t exit_rip,
		   struct step_mode mode);

/*
 * A step of an instruction the decoder rejected (no length) that KVM's
 * emulator ended anywhere but within 15 bytes behind it: not the
 * instruction completing, but a fault KVM injected for it (#UD), whose
 * handler ran without the step's TF (delivery cleared it) up to an
 * instruction KVM emulated.
 */
bool step_undecodable_diverted(const struct step_insn *insn, uint64_t checked_rip,
			       uint64_t exit_rip, struct step_mode mode);

/*
 * A step of a jump (`jump`) that ended with RSP moved: it did not complete,
 * which leaves the stack alone, but faulted, and the fault's frame went on
 * the stack; its handler ran (the caller leaves out task switches).
 */
bool step_jump_faulted(const struct step_insn *insn, uint64_t rsp_before, uint64_t rsp_after);

/*
 * A step of a branch that ended anywhere but where it can complete (`b`,
 * from the caller's decode and reads): it faulted, and the fault's
 * handler was reached, or ran.
 */
bool step_branch_missed(const struct step_insn *insn, const struct step_branch *b,
			uint64_t exit_rip);

/*
 * A completed step of an IRET, SYSENTER or SYSEXIT that ends anywhere but
 * where the instruction goes (`to`, read as it began: the frame's RIP,
 * IA32_SYSENTER_EIP, RDX; to_known false where it could not be, or where
 * the frame is not where an IRET returns, a task switch): it faulted (a
 * bad CS or SS, a non-canonical RIP, an unreadable frame, SYSENTER_CS 0,
 * SYSENTER in long mode on AMD) and loaded nothing, TF included; the
 * fault's handler was reached, or ran and returned, instead (SDM vol. 2:
 * every check comes before any load).
 */
bool step_missed_target(const struct step_insn *insn, bool to_known, uint64_t to,
			uint64_t exit_rip);

/* The CPU pushes an error code for this exception vector (64-bit IDT delivery). */
bool step_vector_error_code(unsigned vector);

/*
 * The words at RSP right after the CPU delivered an exception through a
 * 64-bit gate for an instruction at fault_rip (a fault) or ending at
 * next_rip (a trap): the index of the RFLAGS word (2, or 3 behind an error
 * code), or -1 where they are no such frame.
 */
int step_frame_rflags(const uint64_t w[4], bool error_code, uint64_t fault_rip,
		      uint64_t next_rip);

/*
 * The segment cache the CPU loads from a code or data descriptor (base,
 * limit, D/B and L as it says; accessed set), for the selector sel.
 */
void step_segment_cache(uint64_t desc, uint16_t sel, struct kvm_segment *out);
/* A descriptor's limit (G applied: the last byte) and its 32-bit base. */
uint32_t step_desc_limit(uint64_t desc);
uint32_t step_desc_base(uint64_t desc);

/*
 * INT n in virtual-8086 mode under CR4.VME (SDM vol. 3 20.3.3, table 20-2),
 * by vector's bit in the TSS's interrupt redirection bitmap: set, through
 * the IDT at IOPL 3 (method 4) and #GP(0) below it (method 3); clear, to
 * the 8086 program's handler in the IVT at linear 0 (methods 5 and 6).
 * There *image is the FLAGS pushed (below IOPL 3: IOPL 3, IF as VIF) and
 * *handler_flags the handler's (TF and RF clear; IF at IOPL 3, VIF below).
 * flags holds the guest's own TF.
 */
enum step_vme_int { STEP_VME_IDT, STEP_VME_GP, STEP_VME_IVT };
enum step_vme_int step_vme_int(uint32_t flags, bool redirect_bit, uint16_t *image,
			       uint32_t *handler_flags);

/*
 * SYSCALL performed by the VMM in IA-32e mode (SDM vol. 2 SYSCALL): RCX the
 * next RIP, R11 the guest's RFLAGS (its own TF, RF clear), RFLAGS masked by
 * IA32_FMASK, CS and SS flat from IA32_STAR[47:32], RIP from LSTAR (64-bit
 * code) or CSTAR (compatibility mode).
 */
struct step_syscall {
	uint64_t rcx, r11, rflags, rip;
	struct kvm_segment cs, ss;
};
void step_syscall_plan(uint64_t next_rip, uint64_t rflags, uint64_t star, uint64_t target,
		       uint64_t fmask, struct step_syscall *out);

/*
 * An IRET, or a far JMP, CALL or RET, certain to fault on the CS selector
 * it loads, before anything is loaded (SDM vol. 2 IRET, JMP, CALL, RET): a
 * null selector, or one beyond the GDT's (LDT's) limit, is
 * #GP(selector). The vector, or -1.
 */
int step_code_selector_fault(uint16_t cs, const struct kvm_dtable *gdt,
			     const struct kvm_segment *ldt, uint32_t *err);

/*
 * SYSRET performed by the VMM at CPL0 (SDM vol. 2 SYSRET): RIP from RCX
 * (ECX for the 32-bit form, into compatibility mode), RFLAGS from R11, CS
 * and SS flat at DPL3 from IA32_STAR[63:48]. false where the CPU raises
 * #GP: a non-canonical RCX.
 */
bool step_sysret_plan(uint64_t rcx, uint64_t r11, uint64_t star, bool rex_w, bool la57,
		      struct step_syscall *out);

/*
 * IRETQ in 64-bit code at CPL0 back to CPL0 with the SS it has, performed
 * by the VMM (SDM vol. 2 IRET, IA-32e mode, same privilege level): a KVM
 * may run it without its single-step trap (docs/design.md). frame: RIP,
 * CS, RFLAGS, RSP, SS as it pops them; cs_desc, ss_desc: the descriptors
 * their selectors name (0: unread). SS's must give the cache the vCPU has,
 * CS's a present DPL0 code segment (64-bit, or compatibility mode with RIP
 * within its limit), accessed bits set (no write): *new_cs, its cache.
 * RFLAGS: the frame's, VM and the reserved bits as they are. false:
 * anything else (a fault, another level, NT), left to the CPU.
 */
bool step_iret_plan(const uint64_t frame[5], uint64_t cs_desc, uint64_t ss_desc,
		    const struct kvm_segment *ss, uint64_t rflags, bool la57,
		    struct kvm_segment *new_cs, uint64_t *new_rflags);

/*
 * XBEGIN performed by the VMM as a transaction that aborts at once, which
 * the architecture allows for any reason (SDM vol. 1 16.3.5, 16.3.8):
 * stepped, the trap after it is a #DB inside the transaction, which aborts
 * it and is not delivered (16.3.7), so the fallback's first instruction
 * would run unchecked. RIP is the fallback, EAX the status: 0 ("another
 * reason", as for CPUID), or bit 4 (a debug exception) where the guest's
 * own TF is set, as the CPU's abort has it then. Nothing else changes,
 * RF aside, and no trap is owed. rip is XBEGIN's; false: #GP(0), the
 * fallback not canonical (64-bit code) or past CS's limit (elsewhere;
 * EIP + rel is not cut to 16 bits, even in 16-bit code).
 */
struct step_xbegin {
	uint64_t rip;
	uint32_t status;
};
bool step_xbegin_abort(const struct step_insn *insn, uint64_t rip, bool long64, bool la57,
		       uint32_t cs_limit, bool guest_tf, struct step_xbegin *out);

/*
 * Where the single-step trap after an instruction depends on TF at its end,
 * not its start: SYSCALL and SYSRET (kvm-unit-tests' msr test, Xen XSA-204).
 */
bool step_trap_owed(enum step_kind kind, bool tf_at_start, bool tf_after);

/* What step_certain_fault() looks at besides the bytes. */
struct step_cpu {
	unsigned cpl;
	uint64_t dr7, rflags, cr4;
	bool long64;            /* 64-bit code (EFER.LMA and CS.L) */
	bool cs_d;              /* CS.D: 32-bit code outside 64-bit mode */
	bool lma;               /* long mode (EFER.LMA), compatibility mode included */
	bool real;              /* real-address or virtual-8086 mode (then rflags.VM, cpl 3) */
	bool amd;               /* the guest's CPUID vendor is AMD's (or Hygon's) */
	bool la57;
	const uint64_t *gpr;    /* RAX..R15 in encoding order, or NULL */
	/* The selector MOV SS or POP SS loads, read by the caller (so no fault of that read's comes first). */
	bool ss_sel_valid;
	uint16_t ss_sel;
	/* Its descriptor, read by the caller as the CPU reads it (ss_sel_valid too). */
	bool ss_desc_valid;
	uint64_t ss_desc;
	bool ret_valid;         /* ret_target holds the 8 bytes at RSP */
	uint64_t ret_target;
	bool popped_valid;      /* popped: the FLAGS a 16-bit POPF or IRET loads (virtual-8086 mode) */
	uint16_t popped;
	uint16_t gdt_limit;
	int64_t ldt_limit;      /* -1: no usable LDT */
	bool lock_ud;           /* decode_lock_faults() of the bytes */
};

/*
 * An instruction certain to fault, decided from its bytes and the state
 * above (prefix-free forms only: a prefix may change which fault comes
 * first): UD2 and a LOCK the instruction does not take (#UD, every mode); MOV DR with DR7.GD at CPL0 (#DB, DR6.BD); HLT, MOV DR
 * (DR7.GD clear), and CLI/STI above IOPL at CPL > 0 (#GP(0)); in 64-bit code a RET, or a JMP/CALL through a
 * register, to a non-canonical address (#GP(0)); MOV SS from a register
 * (or the selector ss_sel) with a null selector at CPL3 or outside 64-bit
 * code (#GP(0)), a selector past its table, an RPL other than the CPL, or
 * (ss_desc) a descriptor that is no writable data segment or whose DPL is
 * not the CPL (#GP(selector)), or one not present (#SS(selector)); JMP and CALL
 * far direct in protected mode to a null selector (#GP(0)) or one past its
 * table, or into no LDT (#GP(selector)); SYSEXIT above CPL0 (#GP(0)); SYSENTER in
 * long mode on AMD; in virtual-8086 mode below IOPL 3 (vol. 3 20.2.7,
 * 20.4) PUSHF, POPF, IRET, CLI, STI and INT n without CR4.VME, and with it
 * PUSHFD, POPFD, IRETD, STI with VIP set, and a 16-bit POPF or IRET whose
 * popped FLAGS have TF, or IF with VIP (#GP(0)); a one-byte opcode invalid in 64-bit code such as
 * INTO (#UD: KVM intercepts every #UD to emulate what it can, and the
 * #UD it injects back holds no TF of the VMM's to step its handler). The vector
 * and *err, or -1. The VMM delivers it itself, so that its handler is
 * checked.
 */
int step_certain_fault(const uint8_t *b, size_t len, const struct step_cpu *c, uint32_t *err);

/*
 * What step_certain_fault() needs of the stack for the instruction at b,
 * for the caller to read into c first (c's mode and RFLAGS decide): RET's
 * target in 64-bit code (ret_target), or the FLAGS a 16-bit POPF (at SP)
 * or IRET (at SP + 4) loads in virtual-8086 mode (popped).
 */
enum step_stack_read {
	STEP_STACK_NONE,
	STEP_STACK_RET,
	STEP_STACK_FLAGS_AT_0,
	STEP_STACK_FLAGS_AT_4,
};
enum step_stack_read step_certain_fault_stack(const uint8_t *b, size_t len,
					      const struct step_cpu *c);

/*
 * The guest's own breakpoints, for the instructions the VMM completes
 * itself (emulated split locks), which the CPU never sees: B0-3 bits of
 * the enabled execute breakpoints at the linear address rip (CS base
 * included; none when RFLAGS.RF is set), and
 * of the enabled write or read/write breakpoints that [la, la+size) touches.
 */
uint64_t step_exec_hits(const uint64_t db[4], uint64_t dr7, uint64_t rip, uint64_t rflags);
/*
 * The B0-3 bits the CPU reports beside a #DB (SDM vol. 3 17.2.3) for the
 * execute breakpoints at la, the next instruction, that the hardware could
 * not: those DR7 leaves disabled (while KVM steps the guest only enabled ones
 * are in the hardware), and the enabled ones too where the step's #DB was
 * made up by KVM or the VMM (made_up: a MOV DR KVM emulated, a split lock
 * the VMM completed) on a CPU that reports them beside a step trap (the
 * probe's exec_bp_beside_step).
 */
uint64_t step_exec_beside(const uint64_t db[4], uint64_t dr7, uint64_t la, bool made_up);
uint64_t step_data_hits(const uint64_t db[4], uint64_t dr7, uint64_t la, unsigned size);
bool step_has_data_bp(uint64_t dr7);
/* The DR6 B0-3 bits of the breakpoints DR7 enables (L or G). */
uint64_t step_enabled_bps(uint64_t dr7);
/*
 * KVM_SET_GUEST_DEBUG's DR0-3 and DR7 (out[0-3], out[7]) for the VMM's
 * execute breakpoint at addr, beside the guest's own: its enabled
 * breakpoints keep their slots, address, type and length (not GD), and the
 * VMM's takes the lowest slot DR7 leaves disabled, which is returned; -1,
 * out untouched, where the guest enables all four.
 */
int step_merge_breakpoint(const uint64_t db[4], uint64_t dr7, uint64_t addr, uint64_t out[8]);

/*
 * R11 once SYSCALL completed under single-step: the RFLAGS SYSCALL saved
 * hold the VMM's TF; the guest's own goes in (SDM vol. 2 SYSCALL: R11 :=
 * RFLAGS, whatever IA32_FMASK then clears).
 */
uint64_t step_syscall_r11(uint64_t r11, bool guest_tf);

/*
 * Where a TSS holds the (E)FLAGS a task switch saves and loads: 0x24 in a
 * 32-bit TSS (types 9 and 11), 0x10 in a 16-bit one (1 and 3), else -1.
 */
int step_tss_flags_offset(unsigned type);

/* Linear address of vector's handler from a 16-byte long-mode IDT gate. */
uint64_t step_gate_offset(const uint8_t gate[16]);

/* How the CPU reads the IDT: IA-32e mode, protected mode, real mode. */
enum step_idt { STEP_IDT_LONG, STEP_IDT_PROT, STEP_IDT_REAL };

/* Bytes per IDT entry in that format: 16, 8, 4. */
unsigned step_idt_entry_size(enum step_idt f);

/*
 * The handler an IDT entry names (its offset in the gate's code segment)
 * and the width of the slots of the frame delivery pushes: 8 in IA-32e
 * mode, 4 through a 32-bit gate, 2 through a 16-bit one and in real mode
 * (SDM vol. 3 6.11, 6.14.1, 20.1.4). false: nothing to watch (not
 * present; a task gate, whose handler is the new task's).
 */
bool step_idt_handler(enum step_idt f, const uint8_t *entry, uint64_t *offset, unsigned *slot);

#endif
