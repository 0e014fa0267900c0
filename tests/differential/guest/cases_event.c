/* SPDX-License-Identifier: MIT */
/*
 * Issue 18: every place the CPU saves RFLAGS or delivers an event sees the
 * guest's own values, and events behave as on the CPU: SYSCALL's R11, INT3
 * and INT n with the guest's TF, faulting IRET/SYSCALL/HLT/MOV DR (their
 * handlers checked or counted), DR7.GD, a #GP gate with a non-canonical
 * offset (#DF), and a CPL3 MMIO exit followed by CPL0 split locks, and a
 * CPL3 excursion followed by a CPL0 I/O, MMIO or MSR exit and split locks.
 */
#include "diff.h"

#define MSR_STAR    0xc0000081
#define MSR_LSTAR   0xc0000082
#define MSR_FMASK   0xc0000084
#define EFER_SCE    0x1ull
#define LINE_SPLIT  (WIN_PAGE(1) + 62)

#define SEQ(name) void name(void); extern char name##_start[]
SEQ(seq_syscall0);
SEQ(seq_syscall3);
SEQ(seq_int3_tf);
SEQ(seq_intn_tf);
SEQ(seq_iret_fault);
SEQ(seq_ud_tf);
SEQ(seq_gp_tf);
SEQ(seq_iret_rf_tf);
SEQ(seq_dr7_gd);
uint64_t seq_movss_pushf(void);
extern char seq_movss_pushf_start[];
SEQ(seq_movss_popf_tf);
SEQ(seq_movss_syscall0);
SEQ(seq_movss_int3);
SEQ(seq_movss_iretq);
SEQ(seq_popss_iretd_compat);
SEQ(seq_movss_gp);
uint64_t seq_movss_mem_pushf(void);
extern char seq_movss_mem_pushf_start[];
SEQ(seq_movss_mem_syscall0);
SEQ(seq_movss_mem_iretq);
SEQ(seq_movss_mem_iretd_compat);
SEQ(seq_movss_mem_gp);
SEQ(seq_movss_mem_sel);
SEQ(seq_movss_reg_sel);
extern uint16_t movss_load;
SEQ(seq_movss_ud2);
SEQ(seq_movss_hlt);
SEQ(seq_movss_mem_ud2);
void ud_skip_stub(void);
void gp_skip_stub(void);
void ss_skip_stub(void);
extern uint64_t skip_rflags, skip_error, skip_vector;
uint64_t seq_sti_pushf(void);
void sc_entry0(void);
void sc_entry3(void);
void ev_stub(void);
void ud_split_stub(void);
void gp_split_stub(void);
void df_stub(void);
void seq_df(void);
int try_syscall_ud(void);
int try_hlt(void);
int try_movdr(void);
extern uint64_t sc_r11, sc_rcx, sc_tf, ev_frames[8 * 6], ev_nframes, df_hit;
extern uint8_t gp_area[128];

/* --------------------------------------------------------------- SYSCALL */
/* The SYSCALL MSRs a case changes, as they were before syscall_on(). */
struct syscall_msrs {
	uint64_t efer, star, lstar, fmask;
};

/* SYSCALL on (EFER.SCE): CS 0x08, SS 0x10; SYSRET: CS 0x23, SS 0x1b. LSTAR and FMASK are the case's. */
static struct syscall_msrs syscall_on(void)
{
	struct syscall_msrs was = { rdmsr(MSR_EFER), rdmsr(MSR_STAR), rdmsr(MSR_LSTAR),
				    rdmsr(MSR_FMASK) };

	wrmsr(MSR_STAR, (0x10ull << 48) | (0x08ull << 32));
	wrmsr(MSR_EFER, was.efer | EFER_SCE);
	return was;
}

static void syscall_off(const struct syscall_msrs *was)
{
	wrmsr(MSR_EFER, was->efer);
	wrmsr(MSR_STAR, was->star);
	wrmsr(MSR_LSTAR, was->lstar);
	wrmsr(MSR_FMASK, was->fmask);
}

static uint64_t user_syscall(uint64_t arg)
{
	(void)arg;
	seq_syscall3();
	return 0;
}

static void syscall_once(const char *what, unsigned cpl, bool tf, uint64_t fmask)
{
	char label[96];

	dbg_reset();
	dbg_tf_limit = 1000;
	sc_tf = tf;
	sc_r11 = sc_rcx = 0;
	wrmsr(MSR_FMASK, fmask);
	wrmsr(MSR_LSTAR, (uint64_t)(cpl ? sc_entry3 : sc_entry0));
	if (cpl)
		run_user(user_syscall, 0, 0);
	else
		seq_syscall0();
	/* TF, IF, DF, AC and bit 1: what R11 holds that the case fixes. */
	printf("%s: r11 & 0x40702 = %lx, rcx = start+%ld\n", what,
	       (unsigned long)(sc_r11 & 0x40702),
	       (long)(sc_rcx - (uint64_t)(cpl ? seq_syscall3_start : seq_syscall0_start)));
	snprintf(label, sizeof(label), "%s", what);
	dbg_print(label, (uint64_t)(cpl ? seq_syscall3_start : seq_syscall0_start));
	dbg_reset();
}

static int syscall_r11(const struct boot_info *bi)
{
	struct syscall_msrs was = syscall_on();

	(void)bi;
	syscall_once("syscall cpl0 fmask 0, tf 0", 0, false, 0);
	syscall_once("syscall cpl0 fmask tf, tf 0", 0, false, 0x100);
	syscall_once("syscall cpl0 fmask 0, tf 1", 0, true, 0);
	syscall_once("syscall cpl0 fmask tf, tf 1", 0, true, 0x100);
	syscall_once("syscall cpl3 fmask 0, tf 0", 3, false, 0);
	syscall_once("syscall cpl3 fmask 0x200, tf 1", 3, true, 0x200);
	syscall_off(&was);
	nothing_unchecked();
	return 0;
}

/* ------------------------------------------------- behind MOV SS */
/*
 * The instruction in MOV SS's shadow runs in the same step as MOV SS (and
 * on some CPUs the one in STI's): PUSHF's image, POPF's TF and SYSCALL's
 * R11 must still be the guest's.
 */
static int movss_shadow_flags(const struct boot_info *bi)
{
	struct syscall_msrs was;
	uint64_t f;

	(void)bi;
	for (int tf = 0; tf < 2; tf++) {
		dbg_reset();
		dbg_tf_limit = 1000;
		sc_tf = (uint64_t)tf;
		f = seq_movss_pushf();
		printf("pushfq behind mov ss, tf %d: pushed tf %d\n", tf, (int)((f >> 8) & 1));
		dbg_print(tf ? "pushfq behind mov ss, tf 1" : "pushfq behind mov ss, tf 0",
			  (uint64_t)seq_movss_pushf_start);
	}
	dbg_reset();
	dbg_tf_limit = 1000;
	seq_movss_popf_tf();
	dbg_print("popfq setting tf behind mov ss", (uint64_t)seq_movss_popf_tf_start);
	f = seq_sti_pushf();
	printf("pushfq behind sti: pushed tf %d, if %d\n", (int)((f >> 8) & 1), (int)((f >> 9) & 1));
	was = syscall_on();
	wrmsr(MSR_LSTAR, (uint64_t)sc_entry0);
	for (int tf = 0; tf < 2; tf++) {
		dbg_reset();
		dbg_tf_limit = 1000;
		sc_tf = (uint64_t)tf;
		sc_r11 = 0;
		wrmsr(MSR_FMASK, 0);
		seq_movss_syscall0();
		printf("syscall behind mov ss, tf %d: r11 & 0x40702 = %lx\n", tf,
		       (unsigned long)(sc_r11 & 0x40702));
		dbg_print(tf ? "syscall behind mov ss, tf 1" : "syscall behind mov ss, tf 0",
			  (uint64_t)seq_movss_syscall0_start);
	}
	dbg_reset();
	syscall_off(&was);
	return 0;
}

/*
 * INT3 behind MOV SS: delivered in MOV SS's step. Emulate watches its
 * handler with a breakpoint; without one it fixes the frame where the CPU
 * stops at the handler with the trap MOV SS held, which QEMU's TCG does
 * not do (it drops that trap), hence --needs hw_breakpoint.
 */
static int movss_shadow_int3(const struct boot_info *bi)
{
	(void)bi;
	dbg_reset();
	seq_movss_int3();
	dbg_print("int3 behind mov ss", (uint64_t)seq_movss_int3_start);
	dbg_reset();
	return 0;
}

/*
 * IRET behind MOV SS (IRETQ) and POP SS (IRETD, compatibility mode): the
 * TF it loads is the guest's from the target on, whether it sets or
 * clears the guest's own.
 */
static int movss_shadow_iret(const struct boot_info *bi)
{
	static const char *const what[2][2] = {
		{ "iretq behind mov ss, tf 0 -> 1", "iretq behind mov ss, tf 1 -> 0" },
		{ "iretd behind pop ss (compat), tf 0 -> 1", "iretd behind pop ss (compat), tf 1 -> 0" },
	};

	(void)bi;
	for (int compat = 0; compat < 2; compat++) {
		for (int tf = 0; tf < 2; tf++) {
			dbg_reset();
			dbg_tf_limit = 1000;
			sc_tf = (uint64_t)tf;
			if (compat)
				seq_popss_iretd_compat();
			else
				seq_movss_iretq();
			dbg_print(what[compat][tf], (uint64_t)(compat ? seq_popss_iretd_compat_start
								 : seq_movss_iretq_start));
		}
	}
	dbg_reset();
	return 0;
}

/*
 * run, whose #GP or #SS (and #UD with ud_too, which run_user() cannot
 * share: it returns through UD2) the skip stubs step over, with the
 * guest's TF clear and set (sc_tf; labels what[0] and what[1], or clear
 * only where what[1] is NULL): which fault, its error code and its
 * frame's TF, and the #DBs (from start).
 */
static void fault_skipped(const char *const what[2], void (*run)(void), const char *start,
			  bool ud_too)
{
	struct gate gp = idt()[X86_VEC_GP], ss = idt()[X86_VEC_SS], ud = idt()[X86_VEC_UD];

	idt()[X86_VEC_GP] = make_gate((uint64_t)gp_skip_stub, 0x8e, 0);
	idt()[X86_VEC_SS] = make_gate((uint64_t)ss_skip_stub, 0x8e, 0);
	if (ud_too)
		idt()[X86_VEC_UD] = make_gate((uint64_t)ud_skip_stub, 0x8e, 0);
	for (int tf = 0; tf < 2 && what[tf]; tf++) {
		dbg_reset();
		dbg_tf_limit = 1000;
		sc_tf = (uint64_t)tf;
		skip_rflags = skip_error = skip_vector = 0;
		run();
		printf("%s: vector %lu error 0x%lx frame tf %d\n", what[tf],
		       (unsigned long)skip_vector, (unsigned long)skip_error,
		       (int)((skip_rflags >> 8) & 1));
		dbg_print(what[tf], (uint64_t)start);
	}
	idt()[X86_VEC_GP] = gp;
	idt()[X86_VEC_SS] = ss;
	idt()[X86_VEC_UD] = ud;
	dbg_reset();
}

/*
 * MOV SS from memory, whose length only a decoder knows, in front of
 * PUSHFQ, SYSCALL (FMASK 0), IRETQ and (compatibility mode) IRETD, with
 * and without the guest's TF: as behind MOV SS from a register; and its
 * own #GP (a non-canonical operand, a selector past the GDT), whose frame
 * holds the guest's TF. Nothing runs unchecked.
 */
static int movss_mem_shadow(const struct boot_info *bi)
{
	static const char *const iret[2][2] = {
		{ "iretq behind mov ss from memory, tf 0 -> 1",
		  "iretq behind mov ss from memory, tf 1 -> 0" },
		{ "iretd behind mov ss from memory (compat), tf 0 -> 1",
		  "iretd behind mov ss from memory (compat), tf 1 -> 0" },
	};
	struct syscall_msrs was;
	uint64_t f;
	static const char *const gp[2] = { "#gp of mov ss from memory, tf 0",
					   "#gp of mov ss from memory, tf 1" };
	static const char *const sel_gp[2] = { "#gp of mov ss loading a selector past the gdt, tf 0",
					       "#gp of mov ss loading a selector past the gdt, tf 1" };

	(void)bi;
	was = syscall_on();
	wrmsr(MSR_LSTAR, (uint64_t)sc_entry0);
	wrmsr(MSR_FMASK, 0);
	for (int tf = 0; tf < 2; tf++) {
		dbg_reset();
		dbg_tf_limit = 1000;
		sc_tf = (uint64_t)tf;
		f = seq_movss_mem_pushf();
		printf("pushfq behind mov ss from memory, tf %d: pushed tf %d\n", tf,
		       (int)((f >> 8) & 1));
		dbg_print(tf ? "pushfq behind mov ss from memory, tf 1"
			     : "pushfq behind mov ss from memory, tf 0",
			  (uint64_t)seq_movss_mem_pushf_start);
		dbg_reset();
		dbg_tf_limit = 1000;
		sc_r11 = 0;
		seq_movss_mem_syscall0();
		printf("syscall behind mov ss from memory, tf %d: r11 & 0x40702 = %lx\n", tf,
		       (unsigned long)(sc_r11 & 0x40702));
		dbg_print(tf ? "syscall behind mov ss from memory, tf 1"
			     : "syscall behind mov ss from memory, tf 0",
			  (uint64_t)seq_movss_mem_syscall0_start);
		for (int compat = 0; compat < 2; compat++) {
			dbg_reset();
			dbg_tf_limit = 1000;
			if (compat)
				seq_movss_mem_iretd_compat();
			else
				seq_movss_mem_iretq();
			dbg_print(iret[compat][tf], (uint64_t)(compat ? seq_movss_mem_iretd_compat_start
								     : seq_movss_mem_iretq_start));
		}
	}
	fault_skipped(gp, seq_movss_mem_gp, seq_movss_mem_gp_start, false);
	movss_load = 0xfff8;
	fault_skipped(sel_gp, seq_movss_mem_sel, seq_movss_mem_sel_start, false);
	syscall_off(&was);
	nothing_unchecked();
	return 0;
}

/*
 * A #GP of the instruction behind MOV SS: its frame holds the guest's TF
 * as the instruction began, and the guest's own stepping goes on after its
 * handler returns as on the CPU. With the guest's TF clear the VMM
 * performs the pair (the operand's #GP is certain); with it set the pair
 * is stepped, the frame fixed where the CPU stops at the handler with the
 * trap MOV SS held, or where a breakpoint stops it.
 */
static int movss_shadow_fault(const struct boot_info *bi)
{
	static const char *const what[2] = { "#gp behind mov ss, tf 0", "#gp behind mov ss, tf 1" };

	(void)bi;
	fault_skipped(what, seq_movss_gp, seq_movss_gp_start, false);
	return 0;
}

/* seq_at_cpl3() runs cpl3_seq at CPL3, for fault_skipped(), whose runs take no argument. */
static void (*cpl3_seq)(void);

static uint64_t cpl3_call(uint64_t arg)
{
	(void)arg;
	cpl3_seq();
	return 0;
}

static void seq_at_cpl3(void)
{
	run_user(cpl3_call, 0, 0);
}

/*
 * MOV SS of a selector whose descriptor the CPU rejects (SDM vol. 2 MOV):
 * a code segment, a system one, a DPL other than the CPL, a read-only
 * data segment (#GP(selector)), one not present (#SS(selector)), an LDT
 * selector with no LDT; from AX and from memory, at CPL0 and CPL3, beside
 * the selectors the CPU takes. Certain: the VMM delivers each, its frame
 * holds the guest's TF and nothing runs unchecked.
 */
static int movss_descriptor_faults(const struct boot_info *bi)
{
	static const struct {
		uint16_t sel;
		unsigned cpl;
		const char *what;
	} cases[] = {
		{ SEL_KERNEL_DS, 0, "flat data, dpl0" },
		{ SEL_KERNEL_CS, 0, "code" },
		{ SEL_R1_DATA & ~3, 0, "data of dpl1, rpl0" },
		{ SEL_TSS_A, 0, "a tss" },
		{ SEL_DATA_RO, 0, "read-only data" },
		{ SEL_DATA_NP, 0, "data not present" },
		{ 0x04, 0, "the ldt's first, no ldt" },
		{ SEL_USER_DS, 3, "flat data, dpl3" },
		{ SEL_KERNEL_DS | 3, 3, "data of dpl0, rpl3" },
	};
	char label[2][96];

	(void)bi;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		for (int mem = 0; mem < 2; mem++) {
			const char *what[2];

			cpl3_seq = mem ? seq_movss_mem_sel : seq_movss_reg_sel;

			for (int tf = 0; tf < 2; tf++) {
				snprintf(label[tf], sizeof(label[tf]),
					 "mov ss %s 0x%x (%s) at cpl%u, tf %d", mem ? "from memory" : "from ax",
					 cases[i].sel, cases[i].what, cases[i].cpl, tf);
				what[tf] = label[tf];
			}
			movss_load = cases[i].sel;
			fault_skipped(what, cases[i].cpl ? seq_at_cpl3 : cpl3_seq,
				      mem ? seq_movss_mem_sel_start : seq_movss_reg_sel_start, false);
		}
	}
	nothing_unchecked();
	return 0;
}

/*
 * Behind MOV SS, with the guest's TF clear, an instruction certain to
 * fault whatever its operands: UD2 (#UD), HLT at CPL3 (#GP(0)), UD2 behind
 * MOV SS from memory. The VMM performs MOV SS and delivers the fault, so
 * the frame holds the guest's TF whether or not the CPU stops at the
 * handler with the trap MOV SS held (QEMU's TCG does not), and nothing
 * runs unchecked. With the guest's TF set, #UD too, which KVM would
 * otherwise intercept and queue with TF lost from its frame (before: frame
 * tf 0 under emulate, and the guest's stepping gone after the handler);
 * HLT's #GP there depends on the CPU (event-mov-ss-shadow-fault-frame).
 */
static int movss_shadow_certain_faults(const struct boot_info *bi)
{
	static const char *const ud[2] = { "#ud of ud2 behind mov ss, tf 0",
					   "#ud of ud2 behind mov ss, tf 1" };
	static const char *const hlt[2] = { "#gp of hlt at cpl3 behind mov ss, tf 0", NULL };
	static const char *const mem_ud[2] = { "#ud of ud2 behind mov ss from memory, tf 0",
					       "#ud of ud2 behind mov ss from memory, tf 1" };

	(void)bi;
	fault_skipped(ud, seq_movss_ud2, seq_movss_ud2_start, true);
	cpl3_seq = seq_movss_hlt;
	fault_skipped(hlt, seq_at_cpl3, seq_movss_hlt_start, false);
	fault_skipped(mem_ud, seq_movss_mem_ud2, seq_movss_mem_ud2_start, true);
	nothing_unchecked();
	return 0;
}

/* --------------------------------------------------------------- INT3 */
static uint64_t user_int3(uint64_t arg)
{
	(void)arg;
	seq_int3_tf();
	return 0;
}

/*
 * Runs seq (at CPL3 through user) with #DBs logged and prints their log;
 * watched: emulate must check every instruction of it.
 */
static void logged_seq(const char *label, void (*seq)(void), uint64_t (*user)(uint64_t),
		       const char *start, unsigned cpl, bool watched)
{
	dbg_reset();
	dbg_tf_limit = 1000;
	if (cpl)
		run_user(user, 0, 0);
	else
		seq();
	printf("last exception: %s\n", exception_mnemonic((unsigned)exception_vector()));
	dbg_print(label, (uint64_t)start);
	dbg_reset();
	if (watched)
		nothing_unchecked();
}

static int int3_tf(const struct boot_info *bi, unsigned cpl)
{
	(void)bi;
	logged_seq(cpl ? "int3 tf iretq cpl3" : "int3 tf iretq cpl0", seq_int3_tf, user_int3,
		   seq_int3_tf_start, cpl, true);
	return 0;
}

static int int3_tf_cpl0(const struct boot_info *bi)
{
	return int3_tf(bi, 0);
}

static int int3_tf_cpl3(const struct boot_info *bi)
{
	return int3_tf(bi, 3);
}

/* ------------------------------------------------- #UD that KVM injects */
static uint64_t user_ud(uint64_t arg)
{
	(void)arg;
	seq_ud_tf();
	return 0;
}

static int ud_tf(const struct boot_info *bi, unsigned cpl)
{
	(void)bi;
	logged_seq(cpl ? "kvm-injected #UD tf cpl3" : "kvm-injected #UD tf cpl0", seq_ud_tf,
		   user_ud, seq_ud_tf_start, cpl, true);
	return 0;
}

static int gp_tf_cpl0(const struct boot_info *bi)
{
	(void)bi;
	/*
	 * CPL0 only: at CPL3 the CPU raises both #GPs itself. Where the CPU
	 * does not stop at the first instruction of a handler KVM injected
	 * (the lab, for RDPMC's #GP), the handler runs unchecked, counted.
	 */
	logged_seq("kvm-injected #GP tf cpl0", seq_gp_tf, NULL, seq_gp_tf_start, 0, false);
	return 0;
}

static int ud_tf_cpl0(const struct boot_info *bi)
{
	return ud_tf(bi, 0);
}

static int ud_tf_cpl3(const struct boot_info *bi)
{
	return ud_tf(bi, 3);
}

/* ------------------------------------------- IRET loading RF and TF */
static int iret_rf_tf(const struct boot_info *bi)
{
	uint32_t before, after;

	(void)bi;
	memcpy(&before, gp_area + 62, 4);
	logged_seq("iretq with rf and tf, split locks at its target", seq_iret_rf_tf, NULL,
		   seq_iret_rf_tf_start, 0, true);
	memcpy(&after, gp_area + 62, 4);
	printf("split-lock counter %u -> %u\n", before, after);
	printf("# split locks at CPL0: 2\n");
	return 0;
}

/* --------------------------------------------------------------- INT n */
static int intn_tf(const struct boot_info *bi)
{
	static const unsigned vecs[] = { 13, 14, 17 };
	struct gate saved[3];

	(void)bi;
	for (unsigned i = 0; i < 3; i++) {
		saved[i] = idt()[vecs[i]];
		idt()[vecs[i]] = make_gate((uint64_t)ev_stub, 0x8e, 0);
	}
	ev_nframes = 0;
	dbg_reset();
	dbg_tf_limit = 1000;
	seq_intn_tf();
	for (unsigned i = 0; i < 3; i++)
		idt()[vecs[i]] = saved[i];
	dbg_print("int n tf", (uint64_t)seq_intn_tf_start);
	dbg_reset();
	for (uint64_t i = 0; i < ev_nframes && i < 8; i++) {
		const uint64_t *w = &ev_frames[i * 6 + 1];

		/* No error code: RIP, CS, RFLAGS, RSP, SS. */
		printf("  frame %lu: rip start+%ld cs %lx rflags tf=%lu if=%lu ss %lx\n",
		       (unsigned long)i, (long)(w[0] - (uint64_t)seq_intn_tf_start),
		       (unsigned long)w[1], (unsigned long)(w[2] >> 8 & 1),
		       (unsigned long)(w[2] >> 9 & 1), (unsigned long)w[4]);
	}
	printf("int n: %lu frames\n", (unsigned long)ev_nframes);
	nothing_unchecked();
	return 0;
}

/* --------------------------------------------------------------- faults */
/*
 * IRET that faults with TF in the RFLAGS it never loads: no #DB may follow.
 * Then the faults of several classes enter #GP and #UD handlers that make
 * two split locks each: every one detected, or counted as unchecked.
 */
static uint64_t user_hlt(uint64_t arg)
{
	(void)arg;
	return (uint64_t)try_hlt();
}

static uint64_t user_movdr(uint64_t arg)
{
	(void)arg;
	return (uint64_t)try_movdr();
}

static uint64_t user_syscall_ud(uint64_t arg)
{
	(void)arg;
	return (uint64_t)try_syscall_ud();
}

static int iret_fault_tf(const struct boot_info *bi)
{
	(void)bi;
	dbg_reset();
	seq_iret_fault();
	printf("iret #GP: vector %d error %lx\n", exception_vector(),
	       (unsigned long)exception_error_code());
	dbg_print("iret fault, tf in its frame", (uint64_t)seq_iret_fault_start);
	dbg_reset();
	nothing_unchecked();
	return 0;
}

static int faults_in_handlers(const struct boot_info *bi)
{
	struct gate gp = idt()[X86_VEC_GP], ud = idt()[X86_VEC_UD];
	uint64_t efer = rdmsr(MSR_EFER);
	uint32_t before, after;
	int v[6];

	(void)bi;
	idt()[X86_VEC_GP] = make_gate((uint64_t)gp_split_stub, 0x8e, 0);
	idt()[X86_VEC_UD] = make_gate((uint64_t)ud_split_stub, 0x8e, 0);
	memcpy(&before, gp_area + 62, 4);
	seq_iret_fault();
	v[0] = exception_vector();
	wrmsr(MSR_EFER, efer & ~EFER_SCE);
	v[1] = try_syscall_ud();
	v[2] = (int)run_user(user_syscall_ud, 0, 0);
	wrmsr(MSR_EFER, efer);
	v[3] = (int)run_user(user_hlt, 0, 0);
	v[4] = (int)run_user(user_movdr, 0, 0);
	v[5] = try_ud2();
	memcpy(&after, gp_area + 62, 4);
	idt()[X86_VEC_GP] = gp;
	idt()[X86_VEC_UD] = ud;
	printf("iret %s, syscall sce=0 %s / cpl3 %s, hlt cpl3 %s, mov dr cpl3 %s, ud2 %s\n",
	       exception_mnemonic((unsigned)v[0]), exception_mnemonic((unsigned)v[1]),
	       exception_mnemonic((unsigned)v[2]), exception_mnemonic((unsigned)v[3]),
	       exception_mnemonic((unsigned)v[4]), exception_mnemonic((unsigned)v[5]));
	printf("split-lock counter %u -> %u\n", before, after);
	printf("# split locks at CPL0: %u\n", after - before);
	printf("# in exception handlers: %u\n", after - before);
	nothing_unchecked();
	return 0;
}

/* --------------------------------------------------------------- DR7.GD */
static int dr7_gd(const struct boot_info *bi)
{
	uint64_t dr7;

	(void)bi;
	dbg_reset();
	write_dr(7, 0x400 | (1ull << 13));
	seq_dr7_gd();
	asm volatile("mov %%dr7, %0" : "=r"(dr7));
	dbg_print("dr7.gd", (uint64_t)seq_dr7_gd_start);
	printf("dr7 after: %lx\n", (unsigned long)dr7);
	dbg_reset();
	return 0;
}

/* --------------------------------------------------------------- #DF */
static int gate_noncanonical(const struct boot_info *bi)
{
	struct gate gp = idt()[X86_VEC_GP], df = idt()[X86_VEC_DF];

	(void)bi;
	df_hit = 0;
	idt()[X86_VEC_DF] = make_gate((uint64_t)df_stub, 0x8e, 1);
	idt()[X86_VEC_GP] = make_gate(0x8000000000001000ull, 0x8e, 0);
	seq_df();
	idt()[X86_VEC_GP] = gp;
	idt()[X86_VEC_DF] = df;
	printf("#GP through a gate with a non-canonical offset: #DF %s\n", df_hit ? "yes" : "no");
	return 0;
}

/* --------------------------------------------------------------- CPL3 MMIO */
static uint64_t user_mmio(uint64_t arg)
{
	volatile uint32_t *p = (volatile uint32_t *)arg;

	*p = 0x12345678;
	return *p;
}

/*
 * A CPL3 MMIO exit, back to CPL0 through UD2's #UD, two split locks. Needs
 * a KVM that steps CPL3 (--needs singlestep_cpl3): elsewhere nothing exits
 * between the excursion and the split locks, which run unchecked, counted
 * (step-cpl3-return-exit-then-cpl0-split-locks has an exit there).
 */
static int cpl3_mmio_then_cpl0(const struct boot_info *bi)
{
	uint64_t addr = LINE_SPLIT, got;
	uint32_t before, after;

	(void)bi;
	win_set(2, PG_NORMAL | PG_NORAM);
	win_fill(addr - 64, 128, 5);
	win_read(addr, &before, 4);
	for (int i = 0; i < 5; i++) {
		got = run_user(user_mmio, WIN_PAGE(2) + 16, 0);
		asm volatile("lock addl $1, (%0)" : : "r"(addr) : "memory");
		asm volatile("lock addl $1, (%0)" : : "r"(addr) : "memory");
	}
	win_read(addr, &after, 4);
	win_set(2, PG_NORMAL);
	printf("cpl3 read of no RAM: %lx; operand 0x%08x -> 0x%08x\n", (unsigned long)got,
	       before, after);
	printf("# split locks at CPL0: 10\n");
	return 0;
}

/* ------------------------------------------------- CPL3, then an exit at CPL0 */
static uint64_t user_add(uint64_t arg)
{
	return arg + 1;
}

/*
 * A CPL3 excursion, then at CPL0 an I/O, MMIO or MSR exit, then two split
 * locks. Where the KVM cannot step CPL3 (or with --host-quirks=no-cpl3-step)
 * the excursion and the CPL0 code up to that exit run unchecked, counted;
 * the split locks behind the exit must be stepped and detected.
 */
static int cpl3_then_exit(const struct boot_info *bi)
{
	uint64_t addr = LINE_SPLIT, sum = 0;
	uint32_t before, after;

	(void)bi;
	win_set(2, PG_NORMAL | PG_NORAM);
	win_fill(addr - 64, 128, 6);
	win_read(addr, &before, 4);
	for (unsigned i = 0; i < 6; i++) {
		sum += run_user(user_add, i, 0);
		switch (i % 3) {
		case 0:
			outb(0x80, (uint8_t)i);	/* no device: an I/O exit */
			break;
		case 1:
			*(volatile uint32_t *)(WIN_PAGE(2) + 16) = i;	/* no RAM: MMIO */
			break;
		default:
			(void)rdmsr(MSR_IA32_CORE_CAPABILITIES);	/* the VMM's */
			break;
		}
		asm volatile("lock addl $1, (%0)" : : "r"(addr) : "memory");
		asm volatile("lock addl $1, (%0)" : : "r"(addr) : "memory");
	}
	win_read(addr, &after, 4);
	win_set(2, PG_NORMAL);
	printf("cpl3 sum %lu; operand 0x%08x -> 0x%08x\n", (unsigned long)sum, before, after);
	printf("# split locks at CPL0: 12\n");
	return 0;
}

static const struct diff_case cases[] = {
	{ "event-syscall-r11-fmask0", syscall_r11 },
	{ "event-mov-ss-shadow-saves-flags", movss_shadow_flags },
	{ "event-mov-ss-shadow-int3-frame", movss_shadow_int3 },
	{ "event-mov-ss-shadow-iret-loads-tf", movss_shadow_iret },
	{ "event-mov-ss-shadow-fault-frame", movss_shadow_fault },
	{ "event-mov-ss-from-memory-shadow", movss_mem_shadow },
	{ "event-mov-ss-descriptor-faults", movss_descriptor_faults },
	{ "event-mov-ss-shadow-certain-faults", movss_shadow_certain_faults },
	{ "event-int3-guest-tf-iretq-cpl0", int3_tf_cpl0 },
	{ "event-int3-guest-tf-iretq-cpl3", int3_tf_cpl3 },
	{ "event-intn-error-code-vectors-tf", intn_tf },
	{ "event-iret-fault-tf-not-loaded", iret_fault_tf },
	{ "event-kvm-injected-ud-guest-tf-cpl0", ud_tf_cpl0 },
	{ "event-kvm-injected-ud-guest-tf-cpl3", ud_tf_cpl3 },
	{ "event-kvm-injected-gp-guest-tf-cpl0", gp_tf_cpl0 },
	{ "event-iret-rf-tf-split-lock-at-target", iret_rf_tf },
	{ "event-faulting-insns-handlers-counted", faults_in_handlers },
	{ "event-dr7-gd-cleared-for-handler", dr7_gd },
	{ "event-gate-noncanonical-double-fault", gate_noncanonical },
	{ "step-cpl3-mmio-exit-then-cpl0-split-locks", cpl3_mmio_then_cpl0 },
	{ "step-cpl3-return-exit-then-cpl0-split-locks", cpl3_then_exit },
};
CASE_TABLE(event_cases, cases);
