/* SPDX-License-Identifier: MIT */
/*
 * Outside IA-32e mode: the page tables legacy.S's modes use, its 32-bit
 * gates, and the executor that runs one of the generator's programs in
 * protected mode, 32-bit or 16-bit code, at any CPL, or in real mode
 * (exec_legacy.S), as exec_insn does in long mode.
 */
#include "diff.h"

extern uint32_t lg_pd32[1024];
extern uint64_t lg_pdpt[4], lg_pdpae[512], lg_pml5[512];
extern uint32_t lg_x_paging, lg_x_ss, lg_x_cs, lg_x_real, lg_x_vm86_end, lg_x_error, lg_x_eip,
	lg_xidt[512], lg_x_stub_addr[33];
/*
 * Real mode (exec_legacy.S): RX_OFF, RX_PROG, RX_IVT, rx_back's IP and
 * rx_gate16's (offsets in LEGACY_REAL_BASE); the IVT's IPs.
 */
extern const uint16_t lg_rx_layout[5], lg_rx_ip[32];
extern char lg_rx[], lg_rx_end[];
extern int32_t lg_x_vector;
extern struct exec_regs exec_in, exec_out;
extern uint8_t exec_buf32[64], exec_page16[64];
extern char lg_x_back[], lg_x_gate[], lg_x_task[], lg_x_task_stack[];
extern uint32_t lg_x_task_on;

uint32_t lg_pd32[1024] __attribute__((aligned(4096)));
uint64_t lg_pdpt[4] __attribute__((aligned(32)));
uint64_t lg_pdpae[512] __attribute__((aligned(4096)));
uint64_t lg_pml5[512] __attribute__((aligned(4096)));
/* 32-bit paging's page table for the test window (its first 4 MiB). */
static uint32_t lg_pt32[1024] __attribute__((aligned(4096)));
/* PAE: the page directory of the window's GiB, pointing at long mode's own table. */
static uint64_t lg_pdwin[512] __attribute__((aligned(4096)));
/* PAE, virtual-8086 mode: the first 2 MiB in 4 KiB pages, the window's again at VM86_WIN. */
static uint64_t lg_ptlow[512] __attribute__((aligned(4096)));

/* PAE's identity map of the first GiB: 2 MiB page i (P, W, U, PS). */
static uint64_t pae_identity_pde(uint64_t i)
{
	return (i << 21) | 0x87;
}

void legacy_tables(void)
{
	/* The first GiB, identity: 4 MiB pages (PSE) and 2 MiB pages (PAE). */
	for (uint32_t i = 0; i < 256; i++)
		lg_pd32[i] = (i << 22) | 0x87;	/* P, W, U, PS */
	for (uint64_t i = 0; i < 512; i++) {
		lg_pdpae[i] = pae_identity_pde(i);
		lg_ptlow[i] = (i << 12) | 7;	/* P, W, U */
	}
	lg_pdpt[0] = (uint64_t)lg_pdpae | 1;	/* PAE PDPTEs: P only */
	/*
	 * The window at WIN_BASE (3 GiB) as long mode maps it: PAE's entries
	 * are long mode's own (one format); 32-bit paging's hold their low
	 * halves (no XD, no bit 51), copied per program by legacy_exec().
	 */
	lg_pd32[WIN_BASE >> 22] = (uint32_t)(uint64_t)lg_pt32 | 7;
	lg_pdwin[0] = ((uint64_t)win_pte(0) & ~0xfffull) | 7;
	lg_pdpt[WIN_BASE >> 30] = (uint64_t)lg_pdwin | 1;
	/* 5-level: the PML4 in use at linear 0 and again at 2^48. */
	lg_pml5[0] = lg_pml5[1] = (read_cr3() & ~0xfffull) | 7;	/* P, W, U */
}

void legacy_gate(uint32_t *g, uint16_t sel, uint32_t handler, uint8_t type)
{
	g[0] = (handler & 0xffff) | (uint32_t)sel << 16;
	g[1] = (handler & 0xffff0000u) | (uint32_t)type << 8;
}

void legacy_tss_a_clear(void)
{
	uint32_t iomap = 104u << 16;	/* the I/O map base past the limit: no bitmap */

	memset(lg_tss_a, 0, 104);
	memcpy(lg_tss_a + 0x64, &iomap, 4);
}

/* The blob lg_rx at LEGACY_REAL_BASE + RX_OFF: real mode's executor, the 16-bit gate's handler. */
static void rx_copy(void)
{
	memcpy((uint8_t *)(uint64_t)LEGACY_REAL_BASE + lg_rx_layout[0], lg_rx,
	       (size_t)(lg_rx_end - lg_rx));
}

/* Real mode: the executor at LEGACY_REAL_BASE + RX_OFF, its IVT, the program and its way back. */
static void real_setup(const struct exec_req *req)
{
	uint8_t *rb = (uint8_t *)(uint64_t)LEGACY_REAL_BASE;
	uint8_t *prog = rb + lg_rx_layout[1];
	uint16_t seg = LEGACY_REAL_BASE >> 4;

	rx_copy();
	for (unsigned v = 0; v < 32; v++) {
		memcpy(rb + lg_rx_layout[2] + 4 * v, &lg_rx_ip[v], 2);
		memcpy(rb + lg_rx_layout[2] + 4 * v + 2, &seg, 2);
	}
	memcpy(prog, req->insn, req->len);
	prog[req->len] = 0xea;			/* ljmp $seg, $rx_back */
	memcpy(prog + req->len + 1, &lg_rx_layout[3], 2);
	memcpy(prog + req->len + 3, &seg, 2);
}

/*
 * Virtual-8086 mode: the program where real mode's goes, then a HLT,
 * whose #GP (any IOPL: CPL3) at lg_x_vm86_end ends it; the window's
 * pages again at VM86_WIN, with the states long mode gave them.
 */
static void vm86_setup(const struct exec_req *req)
{
	uint8_t *prog = (uint8_t *)(uint64_t)legacy_real_code();

	memcpy(prog, req->insn, req->len);
	prog[req->len] = 0xf4;
	lg_x_vm86_end = lg_rx_layout[1] + req->len;
	for (unsigned i = 0; i < WIN_PAGES; i++)
		lg_ptlow[(VM86_WIN >> 12) + i] = *win_pte(i);
	lg_pdpae[0] = (uint64_t)lg_ptlow | 7;
}

/* Vectors 0-31 and 32 (the way back from CPL1-3); the others not present. */
static void legacy_xidt(void)
{
	static bool ready;

	if (ready)
		return;
	legacy_tables();
	/* DPL3 where CPL1-3 code may enter: INT3, INT 1, INT $32 (the way back). */
	for (unsigned v = 0; v < 33; v++)
		legacy_gate(&lg_xidt[2 * v], SEL_K_CODE32, lg_x_stub_addr[v],
			    v == 1 || v == 3 || v == 32 ? 0xee : 0x8e);
	ready = true;
}

uint64_t legacy_xidt_gate(unsigned v)
{
	uint64_t gate;

	legacy_xidt();
	memcpy(&gate, &lg_xidt[2 * v], 8);
	return gate;
}

uint32_t legacy_xidt_base(void)
{
	legacy_xidt();
	return (uint32_t)(uint64_t)lg_xidt;
}

uint64_t legacy_gate_borrow(unsigned v, uint8_t type)
{
	uint64_t old;

	legacy_xidt();
	memcpy(&old, &lg_xidt[2 * v], 8);
	if ((type & 0x1f) == 0x05) {
		/* A task gate: TSS B's task is lg_x_task; TSS A the program's (legacy_exec). */
		legacy_task_b_image((uint32_t)(uint64_t)lg_x_task, (uint32_t)(uint64_t)lg_x_task_stack);
		lg_x_task_on = 1;
		legacy_gate(&lg_xidt[2 * v], SEL_TSS_B, 0, type);
	} else if (type & 8) {
		legacy_gate(&lg_xidt[2 * v], SEL_K_CODE32, (uint32_t)(uint64_t)lg_x_gate, type);
	} else {
		rx_copy();	/* a 16-bit gate: rx_gate16 in 16-bit code */
		legacy_gate(&lg_xidt[2 * v], SEL_K_CODE16R, lg_rx_layout[4], type);
	}
	return old;
}

void legacy_gate_restore(unsigned v, uint64_t gate)
{
	memcpy(&lg_xidt[2 * v], &gate, 8);
	lg_x_task_on = 0;
}

void legacy_task_b_image(uint32_t eip, uint32_t esp)
{
	/* Offsets in a 32-bit TSS (SDM vol. 3 7.2.1); lg_exec_entry sets CR3 for a paged task. */
	const uint32_t image[][2] = {
		{ 0x1c, (uint32_t)read_cr3() }, { 0x20, eip }, { 0x24, 0x2 }, { 0x38, esp },
		{ 0x48, SEL_KERNEL_DS }, { 0x4c, SEL_K_CODE32 }, { 0x50, SEL_KERNEL_DS },
		{ 0x54, SEL_KERNEL_DS }, { 0x64, 104u << 16 },	/* ES, CS, SS, DS; no I/O bitmap */
	};

	memset(lg_tss_b, 0, 104);
	for (unsigned i = 0; i < sizeof(image) / sizeof(image[0]); i++)
		memcpy(lg_tss_b + image[i][0], &image[i][1], 4);
}

uint64_t legacy_real_code(void)
{
	return LEGACY_REAL_BASE + lg_rx_layout[1];
}

void legacy_exec(const struct exec_req *req, unsigned paging, enum legacy_how how,
		 struct exec_result *res)
{
	bool real = how == LEGACY_REAL, vm86 = how == LEGACY_VM86;
	bool code16 = req->mode == MODE_16;
	uint8_t *buf = code16 ? exec_page16 : exec_buf32;
	unsigned n = req->len;
	uint32_t pde = lg_pd32[WIN_BASE >> 22];
	int32_t rel;

	legacy_xidt();
	if (req->cpl || lg_x_task_on)
		legacy_tss_a_clear();	/* IN above IOPL faults */
	for (unsigned i = 0; i < WIN_PAGES; i++)
		lg_pt32[i] = (uint32_t)*win_pte(i);
	/* KVM's walker finds no RAM behind that PDE's table: a #PF for any access there. */
	if ((win_get(0) | win_get(1)) & PG_PTNORAM)
		lg_pd32[WIN_BASE >> 22] = 0x80010000u | 7;
	/*
	 * PAE's PDPTEs again: in the lab (--split-lock=inherit too) bit 5 of
	 * the PDPTEs a walk used comes back set, as if an accessed bit (a
	 * nested walk of QEMU's TCG, most likely). It is reserved in a PAE
	 * PDPTE, so the next MOV to CR0 that loads them raises #GP, with long
	 * mode's IDT still loaded: a triple fault.
	 */
	lg_pdpt[0] = (uint64_t)lg_pdpae | 1;
	lg_pdpt[WIN_BASE >> 30] = (uint64_t)lg_pdwin | 1;
	lg_x_vm86_end = 0;
	if (real || vm86) {
		if (vm86)
			vm86_setup(req);
		else
			real_setup(req);
		exec_code = lg_rx_layout[1];	/* IP: faults' at= against it */
	} else if (code16) {
		/* The program at offset 0 of its segment, then ljmpl to lg_x_back (32-bit, same CPL). */
		uint32_t back = (uint32_t)(uint64_t)lg_x_back;
		uint16_t cs32 = code_sel(CODE_32, req->cpl);

		memcpy(buf, req->insn, n);
		buf[n] = 0x66;
		buf[n + 1] = 0xea;
		memcpy(buf + n + 2, &back, 4);
		memcpy(buf + n + 6, &cs32, 2);
		lg_x_cs = code_sel(CODE_16, req->cpl);
		exec_code = 0;
	} else {
		/* The program, then jmp lg_x_back (rel32). */
		memcpy(buf, req->insn, n);
		rel = (int32_t)((uint64_t)lg_x_back - ((uint64_t)buf + n + 5));
		buf[n] = 0xe9;
		memcpy(buf + n + 1, &rel, 4);
		lg_x_cs = code_sel(CODE_32, req->cpl);
		exec_code = (uint64_t)buf;
	}
	lg_x_paging = real ? 0 : paging;
	lg_x_real = real;
	/* Virtual-8086 mode is entered by its own IRET frame (exec_legacy.S). */
	lg_x_ss = req->cpl && !real && !vm86 ? stack_sel(req->cpl) : 0;
	lg_x_vector = -1;
	exec_in = req->in;
	exec_in.r[R_FLAGS] = exec_entry_flags(req);
	memset(&exec_out, 0, sizeof(exec_out));
	barrier();
	legacy_run(14);
	barrier();
	lg_pd32[WIN_BASE >> 22] = pde;
	lg_pdpae[0] = pae_identity_pde(0);	/* vm86_setup's table off again */
	if (req->cpl || lg_x_task_on)
		gdt_tss_reset();	/* TR back to long mode's TSS, TSS A and B available */

	res->vector = lg_x_vector < 0 ? EXC_NONE : lg_x_vector;
	res->error_code = res->vector == EXC_NONE ? 0 : lg_x_error;
	res->cr2 = res->vector == X86_VEC_PF ? read_cr2() : 0;
	res->at_insn = res->vector == EXC_NONE || lg_x_eip == (uint32_t)exec_code;
	res->at = res->vector == EXC_NONE ? 0 : lg_x_eip - (uint32_t)exec_code;
	res->frame_rflags = res->vector == EXC_NONE ? 0 : exec_out.r[R_FLAGS];
	res->out = exec_out;
}
