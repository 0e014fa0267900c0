/* SPDX-License-Identifier: MIT */
/*
 * Performing a locked read-modify-write for the guest, with exactly the
 * architectural result: memory, destination registers, RFLAGS, RIP. The
 * operation runs on the host CPU itself, on an aligned private copy of the
 * operand, so results (undefined flags included) are those of a real CPU,
 * and the host never makes a split lock of its own. Pure code: the caller
 * copies the bytes in and out with the other vCPUs paused.
 */
#ifndef VMM_EMULATE_H
#define VMM_EMULATE_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/kvm.h>

#include "decode.h"
#include "pagewalk.h"

#define EMULATE_CACHE_LINE 64

/* The bytes an instruction reads and writes: linear address and size. */
struct emulate_access {
	uint64_t la;
	unsigned size;
};

uint64_t emulate_reg_get(const struct kvm_regs *r, int reg);
void emulate_reg_set(struct kvm_regs *r, int reg, uint64_t v);

/* An exception as the CPU would raise it; cr2 for #PF. */
struct emulate_exception {
	uint8_t vector;
	bool has_error_code;
	uint32_t error_code;
	bool has_cr2;
	uint64_t cr2;
};

/* The mode the CPU decodes in, from sregs and RFLAGS. */
enum decode_mode emulate_cpu_mode(const struct kvm_sregs *s, uint64_t rflags);
/*
 * The linear address of CS:RIP and of SS:RSP (plus an offset already in
 * rsp) as the CPU forms them: outside 64-bit code with the segment base,
 * RIP as EIP or IP, RSP as ESP or SP by SS.B, wrapped at 4 GiB.
 */
uint64_t emulate_code_la(const struct kvm_sregs *s, uint64_t rflags, uint64_t rip);
uint64_t emulate_stack_la(const struct kvm_sregs *s, uint64_t rflags, uint64_t rsp);
/*
 * The CPL: 0 in real mode, 3 in virtual-8086 mode, else SS.DPL (the CPL on
 * VMX, and what KVM reports as it on SVM; CS.DPL is not, in a conforming
 * segment).
 */
unsigned emulate_cpl(const struct kvm_sregs *s, uint64_t rflags);
/* The guest's paging state for an access it makes at its current CPL. */
void emulate_paging(struct paging *p, const struct kvm_sregs *s, const struct kvm_regs *r,
		    uint32_t pkru, unsigned maxphyaddr);

/*
 * The operand's offset in its segment, wrapped at the address size. For
 * BTS, BTR and BTC with a register bit offset it is not the operand itself
 * but the word the offset selects, as on the CPU: the offset's bytes are
 * added before the wrap (67 f0 0f ab wraps at 32 bits).
 */
uint64_t emulate_effective(const struct decode_insn *i, const struct kvm_regs *r);
/*
 * Segmentation (SDM vol. 3 3.4.4, 5.3): the linear address of `size`
 * bytes written at offset ea of i's segment, or false and the fault:
 * #GP(0), or #SS(0) for a reference through SS; no error code in real
 * mode. 64-bit mode adds only FS and GS bases and checks canonicity;
 * other modes check the segment's limit, type and usability, and wrap at
 * 32 bits.
 */
bool emulate_linear(const struct decode_insn *i, const struct kvm_sregs *s, uint64_t rflags,
		    uint64_t ea, unsigned size, uint64_t *la, struct emulate_exception *fault);
/*
 * The same for an access that may only read (write false): a readable code
 * segment and a read-only data segment let it through (SDM vol. 3 5.5).
 */
bool emulate_linear_access(const struct decode_insn *i, const struct kvm_sregs *s,
			   uint64_t rflags, uint64_t ea, unsigned size, bool write, uint64_t *la,
			   struct emulate_exception *fault);
/* The split-lock rule: the access spans two cache lines. */
bool emulate_crosses_line(uint64_t la, unsigned size);

/*
 * Performs i on `mem` (its operand's bytes, in a 16-byte aligned buffer)
 * and updates r: destination registers, RFLAGS and RIP (which wraps at
 * 32 or 16 bits outside 64-bit mode).
 */
void emulate_execute(const struct decode_insn *i, struct kvm_regs *r, uint8_t *mem);

/* ---- the one decision for a caught split lock, as pure code */

/* How a split lock was caught. */
enum emulate_source {
	EMULATE_SOURCE_HARDWARE,        /* #AC exit from a split_lock_detect=fatal host */
	EMULATE_SOURCE_SOFTWARE,        /* --split-lock=emulate's check before each step */
	/*
	 * Not a split lock: a locked RMW KVM could not run (its internal
	 * error, gap.c), completed whether it crosses a line or not, with the
	 * faults the CPU raises instead computed for injection, a misaligned
	 * CMPXCHG16B's #GP(0) among them; #AC only for a split lock the guest
	 * asked it for.
	 */
	EMULATE_SOURCE_KVM,
};

/* What the decision reads: the vCPU stopped at the instruction. */
struct emulate_snapshot {
	enum emulate_source source;
	bool ac_requested;          /* the guest's TEST_CTRL bit 29 */
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	bool pkru_known;            /* PKRU is read only when CR4.PKE is set */
	uint32_t pkru;
	unsigned maxphyaddr;        /* CPUID.80000008H:EAX[7:0] of the vCPU */
	struct guest_mem mem;
};

enum emulate_plan_kind {
	EMULATE_PLAN_NONE,       /* no split lock here: the CPU runs it */
	/*
	 * Let the CPU run the instruction itself: it raises a fault or legacy
	 * #AC before any lock, exactly as it would without the VMM (on the
	 * hardware path: the fetch now faults, so resuming lets the CPU say so).
	 */
	EMULATE_PLAN_NATIVE,
	EMULATE_PLAN_INJECT,     /* deliver plan.ex, RIP left on the instruction */
	EMULATE_PLAN_EMULATE,    /* perform it at plan.part[] with emulate_perform() */
	EMULATE_PLAN_STOP,       /* stop the VM: plan.why */
};

/* Operand bytes in guest-physical space; outside RAM is KVM's MMIO. */
struct emulate_part {
	uint64_t gpa;
	unsigned len;
	bool ram;
};

struct emulate_plan {
	enum emulate_plan_kind kind;
	const char *why;            /* the reason, for messages and tests */
	struct emulate_exception ex;     /* EMULATE_PLAN_INJECT */
	uint8_t bytes[DECODE_INSN_MAX];
	size_t nbytes;
	bool decoded;
	bool split;                 /* the operand is a split lock, whatever kind says */
	struct decode_insn insn;
	struct emulate_access access;    /* valid when decoded and no segment fault */
	struct emulate_part part[2];     /* EMULATE_PLAN_EMULATE */
	unsigned nparts;
	struct walk fetch[2], op[2]; /* for the accessed and dirty bits */
	unsigned nfetch;
	bool fetch_faults;          /* the fetch stopped where the CPU would fault */
	bool needs_pkru;            /* decided without PKRU: read it and decide again */
};

/*
 * Decides what to do with the instruction at RIP. Pure: reads guest memory,
 * writes nothing. The order is the CPU's: legacy alignment check (hardware
 * path, as KVM tells it apart), fetch, decode in the CPU's mode, segment
 * faults, paging faults, then #AC if the guest asked for it, else
 * emulation. On the software path everything the CPU itself would fault on
 * is left to the CPU; on the hardware path, where the CPU has raised #AC
 * instead, the fault is computed for injection.
 */
void emulate_plan(const struct emulate_snapshot *s, struct emulate_plan *p);
/*
 * Carries out an EMULATE_PLAN_EMULATE plan on guest memory and r, with every
 * other vCPU out of guest mode: accessed and dirty bits as the CPU sets
 * them, the operation, MMIO bytes read as all-ones and their writes
 * dropped (what KVM does without the VMM).
 */
void emulate_perform(const struct emulate_plan *p, const struct guest_mem *m, struct kvm_regs *r);
/* Sets the accessed bits of the fetch, for a plan that delivers an exception. */
void emulate_plan_fetched(const struct emulate_plan *p, const struct guest_mem *m);

/*
 * The exception the CPU is about to raise for the first explicit memory
 * operand of the instruction in `bytes` (at snap's RIP), as segmentation
 * and the page tables stand: #GP or #SS (segment checks, non-canonical
 * addresses), #PF (the walk, both pages of a split operand), or -1 (none
 * foreseen, no such operand, paging this walker does not know), and in
 * *out (may be NULL) the details. Writes nothing. A forecast, not a plan: an earlier fault, a stale TLB or a
 * protection key may decide otherwise, so the caller must watch for both.
 */
struct emulate_forecast {
	struct emulate_exception ex;     /* the vector above, with its error code */
	/*
	 * Nothing else can come first: a segmentation or non-canonical fault
	 * (no page walk, so no accessed bits the CPU may set on the way) of a
	 * plain integer instruction (decode_access). Enough for the VMM to
	 * deliver it itself, where nothing can watch the CPU's delivery.
	 */
	bool certain;
	/*
	 * Part of the access is no RAM (MMIO): KVM emulates the instruction
	 * and may queue a fault of its own (a #PF on the other part).
	 */
	bool mmio;
};
int emulate_predict_fault(const struct emulate_snapshot *snap, const uint8_t *bytes, size_t n,
		     struct emulate_forecast *out);
/*
 * The same without the page walk: #GP and #SS only, the faults that can be
 * certain. For hosts where only those are of use (no breakpoint to watch a
 * #PF handler with), at a fraction of the cost on every step.
 */
int emulate_predict_segment_fault(const struct emulate_snapshot *snap, const uint8_t *bytes,
				  size_t n, struct emulate_forecast *out);

#endif
