/* SPDX-License-Identifier: MIT */
/*
 * The differential guest: one small case per VM launch, chosen with
 * `--append case=NAME`, that prints everything it can observe. The harness
 * (tests/differential/difftest.py) runs it under --split-lock=inherit (the
 * CPU unwatched: the oracle) and --split-lock=emulate and compares status
 * and console output. So a case must print only what the architecture
 * fixes: no timings, no counts of steps or exits.
 */
#ifndef DIFF_H
#define DIFF_H

#include "fw.h"

/* --------------------------------------------------------------- cases */
struct diff_case {
	const char *name;
	/* Returns the VM's exit status (0 when it ran to its end). */
	int (*run)(const struct boot_info *bi);
};

/* What vCPU 1 does in a case of two vCPUs (difftest.py --cpus 2). */
struct diff_ap_part {
	const char *name;
	void (*run)(const struct boot_info *bi);
};

extern const struct diff_ap_part diff_ap_parts[];
extern const size_t diff_ap_part_count;

struct case_table {
	const struct diff_case *cases;
	size_t count;
};

#define CASE_TABLE(sym, array) \
	const struct case_table sym = { array, ARRAY_SIZE(array) }

extern const struct case_table fault_cases, mode_cases, ac_cases, step_cases,
	matrix_cases, gen_cases, event_cases, legacy_cases, ring_cases, gap_cases;

/* A case that cannot run here prints this and returns DIFF_SKIP. */
#define DIFF_SKIP 63
int diff_skip(const char *fmt, ...) FW_PRINTF(1, 2);

/* --------------------------------------------------------------- CPU */
/* x86 facts come from include/x86.h, through fw.h. */

bool cpu_has_smap(void);
bool cpu_has_pku(void);
bool cpu_has_la57(void);
bool cpu_has_nx(void);
void wrpkru(uint32_t v);

/* --------------------------------------------------------------- paging */
/*
 * The test window: WIN_PAGES 4 KiB pages at linear WIN_BASE (3 GiB, below
 * 4 GiB so that compatibility-mode code reaches it too), backed by RAM at
 * WIN_PHYS unless a page's state says otherwise. Pages 0..WIN_PAGES-1 start
 * present, writable, user.
 */
#define WIN_BASE   0xc0000000ull
#define WIN_PHYS   0x01000000ull /* 16 MiB */
#define WIN_PAGES  16
#define WIN_PAGE(i) (WIN_BASE + (uint64_t)(i) * 4096)

/* Page states: bit set = that property of the PTE. */
#define PG_P       0x001  /* present */
#define PG_W       0x002  /* writable */
#define PG_U       0x004  /* user */
#define PG_XD      0x008  /* execute-disable (bit 63) */
#define PG_RSVD    0x010  /* a reserved address bit (51) set */
#define PG_NORAM   0x020  /* backed by guest-physical space without RAM */
#define PG_LASTRAM 0x040  /* backed by the last page of RAM */
/* 32-bit paging (legacy_exec) only: the window's page table in guest-physical space without RAM. */
#define PG_PTNORAM 0x080
#define PG_PKEY(k) ((unsigned)(k) << 8)  /* protection key 0-15 */
#define PG_NORMAL  (PG_P | PG_W | PG_U)

void win_init(const struct boot_info *bi);
void win_set(unsigned page, unsigned state);
unsigned win_get(unsigned page);
/* The PTE of window page `page`, to look at its A and D bits. */
uint64_t *win_pte(unsigned page);
/* Guest-physical address behind window page `page` (RAM or not). */
uint64_t win_phys(unsigned page);
/* Identity map user-accessible (the boot state) or supervisor-only. */
void identity_user(bool user);
/* Reads/writes through the RAM behind a window address, whatever its PTE. */
void win_fill(uint64_t va, size_t len, uint32_t seed);
bool win_read(uint64_t va, void *buf, size_t len);

/* --------------------------------------------------------------- IDT */
/* A 16-byte long-mode IDT gate. */
struct gate {
	uint16_t off0, sel;
	uint8_t ist, type;
	uint16_t off1;
	uint32_t off2, zero;
};

/* This CPU's IDT (the runtime's), which cases patch and put back. */
static inline struct gate *idt(void)
{
	return (struct gate *)(this_cpu()->region_base + PERCPU_IDT_OFF);
}

/* A gate to h in the kernel's code segment: type (0x8e, 0xee, ...), IST slot. */
static inline struct gate make_gate(uint64_t h, uint8_t type, uint8_t ist)
{
	return (struct gate){ (uint16_t)h, SEL_KERNEL_CS, ist, type, (uint16_t)(h >> 16),
			      (uint32_t)(h >> 32), 0 };
}

/* --------------------------------------------------------------- segments */
/* Selectors of the guest's extended GDT (after the runtime's own). */
#define SEL_K_CODE32  0x38  /* CS.L=0 CS.D=1, DPL0 */
#define SEL_U_CODE32  0x43  /* CS.L=0 CS.D=1, DPL3 */
#define SEL_K_DATA_B  0x48  /* data, base/limit from seg_set_data(), DPL0 */
#define SEL_U_DATA_B  0x53  /* the same, DPL3 */
#define SEL_K_CODE16  0x58  /* CS.L=0 CS.D=0, DPL0, 64 KiB at exec.S's exec_page16 */
#define SEL_U_CODE16  0x63  /* CS.L=0 CS.D=0, DPL3 */
#define SEL_K_CODE32B 0x68  /* CS.L=0 CS.D=1, DPL0, base exec_page16 (MODE_32B) */
#define SEL_U_CODE32B 0x73  /* the same, DPL3 */
#define SEL_K_CODE16R 0x78  /* CS.D=0, DPL0, 64 KiB at LEGACY_REAL_BASE: the way to real mode */
#define SEL_K_DATA16  0x80  /* data, base 0, limit 0xffff, B=0: real-mode-like limits */
#define SEL_R1_CODE   0x89  /* 64-bit code, DPL1 (RPL1) */
#define SEL_R1_DATA   0x91  /* flat data, DPL1 */
#define SEL_R2_CODE   0x9a  /* 64-bit code, DPL2 (RPL2) */
#define SEL_R2_DATA   0xa2  /* flat data, DPL2 */
#define SEL_TSS_A     0xa8  /* 32-bit TSS (legacy.S's lg_tss_a), available */
#define SEL_TSS_B     0xb0  /* 32-bit TSS (lg_tss_b), available */
/* Where legacy.S's real-mode part runs (copied there, below 1 MiB, free RAM). */
#define LEGACY_REAL_BASE 0x70000u
#define SEL_CALLGATE  0xb8  /* a 64-bit call gate (16 bytes), seg_set_callgate() */
/*
 * SYSENTER/SYSEXIT's fixed layout from IA32_SYSENTER_CS = SEL_SE_K_CODE:
 * CS, SS; SYSEXIT to 32-bit code: +16, +24; to 64-bit code: +32, +40.
 */
#define SEL_SE_K_CODE 0xc8  /* 64-bit code, DPL0 */
#define SEL_SE_K_DATA 0xd0  /* flat data, DPL0 */
#define SEL_SE_U_CODE32 0xdb /* CS.D=1, DPL3 */
#define SEL_SE_U_DATA32 0xe3 /* flat data, DPL3 */
#define SEL_SE_U_CODE 0xeb  /* 64-bit code, DPL3 */
#define SEL_SE_U_DATA 0xf3  /* flat data, DPL3 */
#define SEL_K_CODE32C 0xf8  /* CS.D=1, DPL0, conforming: runs at the caller's CPL */
/* CPL1 and CPL2's code segments for the executor, as the DPL0/DPL3 ones above. */
#define SEL_R1_CODE32  0x101
#define SEL_R2_CODE32  0x10a
#define SEL_R1_CODE16  0x111
#define SEL_R2_CODE16  0x11a
#define SEL_R1_CODE32B 0x121
#define SEL_R2_CODE32B 0x12a
/* What MOV SS rejects: flat data at DPL0, not present (#SS), and read-only (#GP). */
#define SEL_DATA_NP    0x130
#define SEL_DATA_RO    0x138
/* The executor's code segments of each kind, by CPL (RPL = CPL). */
enum code_kind { CODE_64, CODE_32, CODE_16, CODE_32B };
uint16_t code_sel(enum code_kind kind, unsigned cpl);
/* The stack segment of a CPL: 64-bit and 32-bit code alike (flat, B=1). */
uint16_t stack_sel(unsigned cpl);
void gdt_init(void);
/* TSS A and B available again, and the runtime's 64-bit TSS back in TR. */
void gdt_tss_reset(void);
void seg_set_callgate(uint64_t target, unsigned dpl);
/* SEL_TSS_B as a 16-bit TSS at lg_tss_b (gdt_tss_reset() makes it 32-bit again). */
void seg_set_tss16_b(void);
/* Base and limit (bytes-1, page granular if > 1 MiB) of the two DATA_B selectors. */
void seg_set_data(uint32_t base, uint32_t limit);

/* --------------------------------------------------------------- executor */
/*
 * One instruction run from a buffer with every general register chosen and
 * the arithmetic flags loaded, then everything it left captured. A fault
 * (any vector the instruction raises at its own RIP) is caught.
 */
enum { R_AX, R_CX, R_DX, R_BX, R_SP, R_BP, R_SI, R_DI,
       R_8, R_9, R_10, R_11, R_12, R_13, R_14, R_15, R_FLAGS, R_COUNT };

struct exec_regs {
	uint64_t r[R_COUNT]; /* r[R_SP] is ignored: the real stack is used */
};

/* MODE_32B: compatibility mode with a non-zero CS base (exec_page16's page). */
enum exec_mode { MODE_64, MODE_32, MODE_16, MODE_32B };

struct exec_req {
	enum exec_mode mode;
	unsigned cpl;            /* 0-3 (real mode: 0) */
	const uint8_t *insn;
	unsigned len;
	uint16_t ds, es, fs;     /* selectors loaded for MODE_32/16; 0 = null */
	uint64_t code_va;        /* 0: the image's buffer; else a window address */
	bool ac;                 /* RFLAGS.AC while it runs */
	bool tf;                 /* RFLAGS.TF while it runs: #DB traps (dbg_count) */
	uint8_t iopl;            /* RFLAGS.IOPL while it runs (legacy_exec's virtual-8086 mode) */
	struct exec_regs in;
};

struct exec_result {
	int vector;              /* EXC_NONE or the vector */
	uint64_t error_code;
	uint64_t cr2;
	bool at_insn;            /* the fault's RIP was the instruction */
	uint64_t at;             /* the fault's RIP - the first instruction's */
	uint64_t frame_rflags;   /* legacy_exec: the fault frame's (E)FLAGS; else 0 */
	struct exec_regs out;
};

void exec_insn(const struct exec_req *req, struct exec_result *res);
/* The last program's first instruction, as its RIP, EIP or IP holds it (exec.S). */
extern uint64_t exec_code;
/* The RFLAGS a program starts with: its arithmetic flags, AC, TF and IOPL as asked. */
uint64_t exec_entry_flags(const struct exec_req *req);

/*
 * Outside IA-32e mode (exec_legacy.c, legacy.S): legacy_run(kind) leaves
 * long mode, runs legacy.S's `kind` and comes back; legacy_exec runs
 * req's program at req->cpl in protected mode (MODE_32: 32-bit code;
 * MODE_16: 16-bit code at offset 0 of exec_page16's segment) with
 * no paging (0), 32-bit paging (1) or PAE paging (2), or (how) in real
 * mode (16-bit code at CPL0, flat 4 GiB data segments) or in virtual-8086
 * mode (16-bit code, PAE paging; DS, ES, FS and GS at VM86_WIN), the test
 * window mapped at WIN_BASE as long mode maps it (paging 1: without XD
 * and bit 51), and in virtual-8086 mode at VM86_WIN too. #DB and #BP are
 * logged as exec_insn's are; another vector ends the program, its
 * frame's EFLAGS in res->frame_rflags.
 */
enum legacy_how { LEGACY_PROTECTED, LEGACY_REAL, LEGACY_VM86 };
/* Where virtual-8086 mode, which reaches the first MiB only, sees the window's pages. */
#define VM86_WIN 0x80000u
void legacy_run(uint32_t kind);
/* legacy.S's 32-bit TSS A (SEL_TSS_A): SS0:ESP0 for events from CPL3. */
extern uint8_t lg_tss_a[104];
/* TSS A zeroed, without an I/O bitmap (I/O above IOPL faults); SS0:ESP0 are legacy.S's to set. */
void legacy_tss_a_clear(void);
void legacy_tables(void);
/* A 32-bit IDT gate: type 0x8e a present DPL0 32-bit interrupt gate, 0x86 a 16-bit one; | 0x60 DPL3. */
void legacy_gate(uint32_t *g, uint16_t sel, uint32_t handler, uint8_t type);
void legacy_exec(const struct exec_req *req, unsigned paging, enum legacy_how how,
		 struct exec_result *res);
/*
 * legacy_exec's gate for vector v (the generator's ENV_GATE): of type
 * `type`, a 32-bit gate to exec_legacy.S's lg_x_gate, a 16-bit one to
 * its rx_gate16 (for 16-bit code at CPL0: its 16-bit IRET keeps no more
 * than SP of a stack it switches back to) or a task gate to TSS B, whose
 * task is lg_x_task (the program then runs in TSS A at any CPL); returns
 * the gate it replaced, for legacy_gate_restore.
 */
uint64_t legacy_gate_borrow(unsigned v, uint8_t type);
/* legacy_exec's own gate for vector v (0-32): to its stub in 32-bit code. */
uint64_t legacy_xidt_gate(unsigned v);
/* The linear (and physical) address of legacy_exec's IDT, 256 8-byte gates. */
uint32_t legacy_xidt_base(void);
void legacy_gate_restore(unsigned v, uint64_t gate);
/* legacy.S's 32-bit TSS B (SEL_TSS_B): CPL0 at eip, flat segments, stack esp, IF clear. */
extern uint8_t lg_tss_b[104];
void legacy_task_b_image(uint32_t eip, uint32_t esp);
/* Where legacy_exec puts a real-mode or virtual-8086 program (linear). */
uint64_t legacy_real_code(void);

/* Prints the result: vector/error/CR2, every register that changed, flags. */
void print_result(const char *label, const struct exec_req *req,
		  const struct exec_result *res);
/* One line: outcome, the operand's first bytes, a hash of all the rest. */
void print_compact(const char *label, const struct exec_req *req,
		   const struct exec_result *res, uint64_t addr, unsigned size);
/* Prints len bytes at va (through the RAM behind it for window addresses). */
void print_mem(const char *label, uint64_t va, size_t len);

/*
 * The usual shape of a case: registers from `seed`, the operand's two
 * cache lines filled from it too, reg[addr_reg] = addr, run, print the
 * result and the operand's memory (both lines).
 */
void run_op(const char *label, struct exec_req *req, unsigned addr_reg,
	    uint64_t addr, uint32_t seed);
void seed_regs(struct exec_regs *r, uint32_t seed);

/* Cheap line building: appends to line at n (keep it under 160), returns n. */
size_t put_str(char *line, size_t n, const char *s);
size_t put_hex(char *line, size_t n, uint64_t v);
size_t put_dec(char *line, size_t n, uint64_t v);
/* Appended to print_compact's line before its newline ("" by default). */
extern char compact_tail[64];

/* FNV-1a. */
uint32_t fnv(const uint8_t *p, size_t n);

/* xorshift, so that both runs see the same "random" values. */
uint64_t rnd_next(uint64_t *state);

/* --------------------------------------------------------------- debug */
#define DBG_LOG_MAX 32
/* {vector, RIP, DR6, RFLAGS, CS} per event (exec.S fills it). */
extern uint64_t dbg_log[DBG_LOG_MAX * 5];
extern uint32_t dbg_count;
/* After this many #DB, the handler clears RFLAGS.TF in the frame. */
extern uint32_t dbg_tf_limit;
/* An event whose RIP is this one-byte instruction resumes after it. */
extern uint64_t dbg_skip_rip;
/* Installs the recording handlers for #DB and #BP on this vCPU. */
void dbg_install(void);
void dbg_reset(void);
/* Prints each event, RIPs relative to `base` (named `what`). */
void dbg_print(const char *what, uint64_t base);
/*
 * Says that emulate watches all of the case (difftest.py holds --stats to
 * it), on a host that steps CPL3.
 */
void nothing_unchecked(void);

static inline void write_dr(unsigned n, uint64_t v)
{
	switch (n) {
	case 0: asm volatile("mov %0, %%dr0" : : "r"(v)); break;
	case 1: asm volatile("mov %0, %%dr1" : : "r"(v)); break;
	case 2: asm volatile("mov %0, %%dr2" : : "r"(v)); break;
	case 3: asm volatile("mov %0, %%dr3" : : "r"(v)); break;
	case 6: asm volatile("mov %0, %%dr6" : : "r"(v)); break;
	case 7: asm volatile("mov %0, %%dr7" : : "r"(v)); break;
	}
}

static inline uint64_t read_dr6(void)
{
	uint64_t v;

	asm volatile("mov %%dr6, %0" : "=r"(v));
	return v;
}

/*
 * Never print boot_info.flags (BOOT_FLAG_SPLIT_LOCK_CPL0_ONLY) or the
 * split-lock enumeration: they differ between the two policies by design.
 */
#endif
