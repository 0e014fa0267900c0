/* SPDX-License-Identifier: MIT */
/* Machinery every case uses: CPU features, the window, segments, executor. */
#include "diff.h"

/* --------------------------------------------------------------- CPU */
bool cpu_has_smap(void)
{
	return cpuid_count(7, 0).b >> 20 & 1;
}

bool cpu_has_pku(void)
{
	return cpuid_count(7, 0).c >> 3 & 1;
}

bool cpu_has_la57(void)
{
	return cpuid_count(7, 0).c >> 16 & 1;
}

bool cpu_has_nx(void)
{
	return cpuid(0x80000000).a >= 0x80000001 && (cpuid(0x80000001).d >> 20 & 1);
}

void wrpkru(uint32_t v)
{
	asm volatile(".byte 0x0f, 0x01, 0xef" : : "a"(v), "c"(0), "d"(0) : "memory");
}

bool split_lock_cpl0_only(void)
{
	return this_cpu()->boot->flags & BOOT_FLAG_SPLIT_LOCK_CPL0_ONLY;
}

int diff_skip(const char *fmt, ...)
{
	va_list ap;

	puts("SKIP: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	puts("\n");
	return DIFF_SKIP;
}

uint64_t rnd_next(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

/* --------------------------------------------------------------- paging */
#define PTE_ADDR 0x000ffffffffff000ull
#define PTE_PS   0x80ull

static uint64_t win_pd[512] __attribute__((aligned(4096)));
static uint64_t win_pt[512] __attribute__((aligned(4096)));
static unsigned win_state[WIN_PAGES];
static uint64_t ram_size;

static uint64_t *table(uint64_t entry)
{
	return (uint64_t *)(entry & PTE_ADDR);
}

static void flush_tlb(void)
{
	write_cr3(read_cr3());
}

uint64_t win_phys(unsigned page)
{
	unsigned s = win_state[page];

	if (s & PG_NORAM)
		return 0x80000000ull + (uint64_t)page * 4096;
	if (s & PG_LASTRAM)
		return ram_size - 4096;
	return WIN_PHYS + (uint64_t)page * 4096;
}

void win_set(unsigned page, unsigned state)
{
	uint64_t e;

	win_state[page] = state;
	e = win_phys(page);
	if (state & PG_P)
		e |= 1;
	if (state & PG_W)
		e |= 2;
	if (state & PG_U)
		e |= 4;
	if (state & PG_XD)
		e |= 1ull << 63;
	if (state & PG_RSVD)
		e |= 1ull << 51;
	e |= (uint64_t)(state >> 8 & 0xf) << 59;
	win_pt[page] = e;
	flush_tlb();
}

uint64_t *win_pte(unsigned page)
{
	return &win_pt[page];
}

void win_init(const struct boot_info *bi)
{
	uint64_t *pdpt = table(table(read_cr3())[0]);

	ram_size = bi->ram_size;
	if (ram_size > 3ull << 30 || ram_size < WIN_PHYS + WIN_PAGES * 4096 + (1 << 20)) {
		printf("Bail out! the window needs 17 MiB to 3 GiB of RAM, not 0x%lx\n", ram_size);
		guest_exit(GUEST_STATUS_FAIL);
	}
	win_pd[0] = (uint64_t)win_pt | 7;
	pdpt[3] = (uint64_t)win_pd | 7;
	for (unsigned i = 0; i < WIN_PAGES; i++)
		win_set(i, PG_NORMAL);
}

void identity_user(bool user)
{
	uint64_t *pdpt = table(table(read_cr3())[0]);

	for (unsigned i = 0; i < 3; i++) {
		uint64_t *pd;

		if (!(pdpt[i] & 1))
			continue;
		pd = table(pdpt[i]);
		for (unsigned j = 0; j < 512; j++)
			if ((pd[j] & 1) && (pd[j] & PTE_PS))
				pd[j] = user ? pd[j] | 4 : pd[j] & ~4ull;
	}
	flush_tlb();
}

/* The RAM behind a linear address: the window's backing, or identity. */
static uint8_t *backing(uint64_t va)
{
	if (va >= WIN_BASE && va < WIN_BASE + WIN_PAGES * 4096) {
		unsigned page = (unsigned)((va - WIN_BASE) / 4096);

		if (win_state[page] & PG_NORAM)
			return NULL;
		return (uint8_t *)(win_phys(page) + (va & 0xfff));
	}
	if (va < ram_size)
		return (uint8_t *)va;
	return NULL;
}

void win_fill(uint64_t va, size_t len, uint32_t seed)
{
	uint64_t s = seed | (uint64_t)seed << 32;

	for (size_t i = 0; i < len; i++) {
		uint64_t a = va + i;
		uint8_t *p = backing(a);
		uint8_t v = (uint8_t)(rnd_next(&s) >> 24);

		/* The last RAM page is vCPU 0's stack: only its top 8 bytes are dead. */
		if (p && (uint64_t)p >= ram_size - 4096 && (uint64_t)p < ram_size - 8)
			continue;
		if (p)
			*p = v;
	}
}

bool win_read(uint64_t va, void *buf, size_t len)
{
	bool all = true;

	for (size_t i = 0; i < len; i++) {
		uint8_t *p = backing(va + i);

		((uint8_t *)buf)[i] = p ? *p : 0;
		all = all && p;
	}
	return all;
}

/* --------------------------------------------------------------- segments */
#define GDT_N 13
static uint64_t gdt[GDT_N] __attribute__((aligned(16)));

struct dtr {
	uint16_t limit;
	uint64_t base;
} __attribute__((packed));

static uint64_t data_desc(uint32_t base, uint32_t limit, unsigned dpl)
{
	uint64_t d;
	bool g = limit > 0xfffff;

	if (g)
		limit >>= 12;
	d = (limit & 0xffff) | ((uint64_t)(base & 0xffffff) << 16) |
	    ((uint64_t)(0x92 | dpl << 5) << 40) | ((uint64_t)(limit >> 16 & 0xf) << 48) |
	    (1ull << 54) | ((uint64_t)g << 55) | ((uint64_t)(base >> 24) << 56);
	return d;
}

void seg_set_data(uint32_t base, uint32_t limit)
{
	gdt[SEL_K_DATA_B >> 3] = data_desc(base, limit, 0);
	gdt[SEL_U_DATA_B >> 3] = data_desc(base, limit, 3);
}

void gdt_init(void)
{
	struct dtr d = { sizeof(gdt) - 1, (uint64_t)gdt };

	memcpy(gdt, this_cpu()->gdt, sizeof(this_cpu()->gdt));
	gdt[SEL_K_CODE32 >> 3] = 0x00cf9a000000ffffull;
	gdt[SEL_U_CODE32 >> 3] = 0x00cffa000000ffffull;
	gdt[SEL_K_CODE16 >> 3] = 0x008f9a000000ffffull;
	gdt[SEL_U_CODE16 >> 3] = 0x008ffa000000ffffull;
	seg_set_data(0, 0xffffffff);
	asm volatile("lgdt %0" : : "m"(d) : "memory");
}

/* --------------------------------------------------------------- executor */
extern struct exec_regs exec_in, exec_out;
extern uint64_t exec_code, exec_cs;
extern uint16_t exec_ds, exec_es, exec_fs;
extern uint8_t exec_farptr[6];
extern uint8_t exec_buf64[64], exec_buf32[64];
extern char exec_back64[];
void exec_run64(void);
void exec_run32(void);

static uint64_t run_at_cpl3(uint64_t arg)
{
	if (arg == MODE_64)
		exec_run64();
	else
		exec_run32();
	return 0;
}

void exec_insn(const struct exec_req *req, struct exec_result *res)
{
	uint64_t code = req->code_va;
	uint8_t *buf;
	unsigned n = req->len;
	uint16_t back_cs = req->cpl ? SEL_USER_CS : SEL_KERNEL_CS;

	if (!code)
		code = (uint64_t)(req->mode == MODE_64 ? exec_buf64 : exec_buf32);
	buf = backing(code);
	memcpy(buf, req->insn, n);
	if (req->mode == MODE_64) {
		/*
		 * nop...; jmp *0(%rip); .quad exec_back64, the pointer 8-aligned:
		 * with RFLAGS.AC at CPL3 a misaligned one would raise #AC itself.
		 */
		static const uint8_t jmp[6] = { 0xff, 0x25, 0, 0, 0, 0 };
		uint64_t back = (uint64_t)exec_back64;

		while ((code + n + 6) % 8)
			buf[n++] = 0x90;
		memcpy(buf + n, jmp, 6);
		memcpy(buf + n + 6, &back, 8);
	} else {
		/* ljmp *%cs:exec_farptr */
		uint32_t fp = (uint32_t)(uint64_t)exec_farptr;

		buf[n] = 0x2e;
		buf[n + 1] = 0xff;
		buf[n + 2] = 0x2d;
		memcpy(buf + n + 3, &fp, 4);
		memcpy(exec_farptr + 4, &back_cs, 2);
		if (req->mode == MODE_32)
			exec_cs = req->cpl ? SEL_U_CODE32 : SEL_K_CODE32;
		else
			exec_cs = req->cpl ? SEL_U_CODE16 : SEL_K_CODE16;
		exec_ds = req->ds;
		exec_es = req->es;
		exec_fs = req->fs;
	}
	exec_code = code;
	exec_in = req->in;
	exec_in.r[R_FLAGS] = (req->in.r[R_FLAGS] & ARITH_FLAGS) | 0x2 |
			     (req->ac ? X86_RFLAGS_AC : 0);
	memset(&exec_out, 0, sizeof(exec_out));
	this_cpu()->exc_vector = EXC_NONE;
	barrier();
	if (req->cpl == 3)
		run_user(run_at_cpl3, req->mode, 0);
	else if (req->mode == MODE_64)
		exec_run64();
	else
		exec_run32();
	barrier();
	res->vector = exception_vector();
	res->error_code = res->vector == EXC_NONE ? 0 : exception_error_code();
	res->cr2 = res->vector == X86_VEC_PF ? read_cr2() : 0;
	res->at_insn = res->vector == EXC_NONE || exception_rip() == code;
	res->out = exec_out;
}

static const char *const reg_names[R_COUNT] = {
	"ax", "cx", "dx", "bx", "sp", "bp", "si", "di",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "fl",
};

void print_result(const char *label, const struct exec_req *req,
		  const struct exec_result *res)
{
	bool narrow = req->mode != MODE_64;
	unsigned nregs = narrow ? R_8 : R_FLAGS;

	printf("%s:", label);
	if (res->vector == EXC_NONE)
		printf(" ok");
	else
		printf(" %s err=0x%lx", exception_mnemonic((unsigned)res->vector), res->error_code);
	if (res->vector == X86_VEC_PF)
		printf(" cr2=0x%lx", res->cr2);
	if (!res->at_insn)
		printf(" not-at-insn");
	for (unsigned i = 0; i < nregs; i++) {
		uint64_t a = req->in.r[i], b = res->out.r[i];

		if (i == R_SP)
			continue;
		if (narrow) {
			a = (uint32_t)a;
			b = (uint32_t)b;
		}
		if (a != b)
			printf(" %s=%lx", reg_names[i], b);
	}
	printf(" fl=%03lx\n", (unsigned long)(res->out.r[R_FLAGS] & ARITH_FLAGS));
}

static uint32_t fnv(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

void print_mem(const char *label, uint64_t va, size_t len)
{
	uint8_t b[32], lines[128];
	uint64_t l0 = va & ~63ull;

	if (len > sizeof(b))
		len = sizeof(b);
	win_read(va, b, len);
	win_read(l0, lines, sizeof(lines));
	printf("%s:", label);
	for (size_t i = 0; i < len; i++)
		printf(" %02x", b[i]);
	printf(" lines=%08x\n", fnv(lines, sizeof(lines)));
}

/* --------------------------------------------------------------- debug */
struct dbg_event_raw {
	uint64_t vector, rip, dr6, rflags, cs;
};

struct idt_gate {
	uint16_t off0, sel;
	uint8_t ist, type;
	uint16_t off1;
	uint32_t off2, zero;
};

extern char dbg_stub_db[], dbg_stub_bp[];

static void set_gate(unsigned vec, void *handler, uint8_t type)
{
	struct idt_gate *idt = (struct idt_gate *)(this_cpu()->region_base + PERCPU_IDT_OFF);
	uint64_t h = (uint64_t)handler;

	idt[vec] = (struct idt_gate){ (uint16_t)h, SEL_KERNEL_CS, 0, type,
				      (uint16_t)(h >> 16), (uint32_t)(h >> 32), 0 };
}

void dbg_install(void)
{
	set_gate(X86_VEC_DB, dbg_stub_db, 0x8e);
	/* DPL3: INT3 at CPL3 must reach it, as a kernel's does. */
	set_gate(X86_VEC_BP, dbg_stub_bp, 0xee);
}

void dbg_reset(void)
{
	memset(dbg_log, 0, sizeof(dbg_log));
	dbg_count = 0;
	dbg_tf_limit = 0;
	dbg_skip_rip = 0;
	write_dr(7, 0x400);
	write_dr(6, 0xffff0ff0);
}

void dbg_print(const char *what, uint64_t base)
{
	const struct dbg_event_raw *e = (const struct dbg_event_raw *)dbg_log;

	printf("%s: %u debug events\n", what, dbg_count);
	for (uint32_t i = 0; i < dbg_count && i < DBG_LOG_MAX; i++)
		printf("  %s at %s+%ld dr6=%lx cs=%lx tf=%lu\n",
		       e[i].vector == 1 ? "#DB" : "#BP", what,
		       (long)(e[i].rip - base), e[i].dr6, e[i].cs & 3,
		       e[i].rflags >> 8 & 1);
}

/* --------------------------------------------------------------- run_op */
void seed_regs(struct exec_regs *r, uint32_t seed)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;

	for (unsigned i = 0; i < R_COUNT; i++)
		r->r[i] = rnd_next(&s);
	/* Small bit offsets so that BT* stays near the operand. */
	r->r[R_SI] = (r->r[R_SI] & 0x1f) + 1;
	r->r[R_FLAGS] &= ARITH_FLAGS;
}

void run_op(const char *label, struct exec_req *req, unsigned addr_reg,
	    uint64_t addr, uint32_t seed)
{
	struct exec_result res;
	uint64_t l0 = (addr & ~63ull) - 64;
	char memlabel[48];

	seed_regs(&req->in, seed);
	if (addr_reg < R_COUNT)
		req->in.r[addr_reg] = addr;
	win_fill(l0, 256, seed);
	exec_insn(req, &res);
	print_result(label, req, &res);
	snprintf(memlabel, sizeof(memlabel), "%s mem", label);
	print_mem(memlabel, addr - 4, 16);
}
