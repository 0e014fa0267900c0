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

/*
 * Copies in qwords: rep movsb (the runtime's memcpy) is one single-step
 * per byte under emulate, and this code runs for every combination.
 */
static void copy_fast(void *dst, const void *src, size_t n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;

	for (; n >= 8; n -= 8, d += 8, s += 8)
		*(volatile uint64_t *)d = *(const uint64_t *)s;
	for (; n; n--)
		*d++ = *s++;
}

static void zero_fast(void *dst, size_t n)
{
	uint8_t *d = dst;

	for (; n >= 8; n -= 8, d += 8)
		*(volatile uint64_t *)d = 0;
	for (; n; n--)
		*d++ = 0;
}

/* --------------------------------------------------------------- paging */

static uint64_t win_pd[512] __attribute__((aligned(4096)));
static uint64_t win_pt[512] __attribute__((aligned(4096)));
static unsigned win_state[WIN_PAGES];
static uint64_t ram_size;

static uint64_t *table(uint64_t entry)
{
	return (uint64_t *)(entry & X86_PTE_ADDR);
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
	e |= (uint64_t)(state >> 8 & 0xf) << X86_PTE_PKEY_SHIFT;
	win_pt[page] = e;
	flush_tlb();
}

unsigned win_get(unsigned page)
{
	return win_state[page];
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
			if ((pd[j] & 1) && (pd[j] & X86_PTE_PS))
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

/*
 * Page by page, so that the backing is looked up once per page: CPL0 code
 * is emulated on some hosts and single-stepped under emulate, so every
 * instruction here counts.
 */
void win_fill(uint64_t va, size_t len, uint32_t seed)
{
	uint64_t s = seed | (uint64_t)seed << 32;

	while (len) {
		size_t chunk = 4096 - (va & 0xfff);
		uint8_t *p;

		if (chunk > len)
			chunk = len;
		p = backing(va);
		/* The last RAM page is vCPU 0's stack: only its top 8 bytes are dead. */
		if (p && (uint64_t)p + chunk > ram_size - 8 && (uint64_t)p < ram_size) {
			size_t skip = (uint64_t)p < ram_size - 8 ? ram_size - 8 - (uint64_t)p : 0;

			p += skip;
			chunk -= skip;
			va += skip;
			len -= skip;
		}
		for (size_t i = 0; i < chunk; i += 8) {
			uint64_t v = rnd_next(&s);

			if (p)
				copy_fast(p + i, &v, chunk - i < 8 ? chunk - i : 8);
		}
		va += chunk;
		len -= chunk;
	}
}

bool win_read(uint64_t va, void *buf, size_t len)
{
	uint8_t *out = buf;
	bool all = true;

	while (len) {
		size_t chunk = 4096 - (va & 0xfff);
		uint8_t *p;

		if (chunk > len)
			chunk = len;
		p = backing(va);
		if (p)
			copy_fast(out, p, chunk);
		else
			zero_fast(out, chunk);
		all = all && p;
		out += chunk;
		va += chunk;
		len -= chunk;
	}
	return all;
}

/* --------------------------------------------------------------- segments */
/*
 * 23-24: cases_gen.c's call gate (SEL_CALLGATE); 25-30 SYSENTER's; 32-37
 * CPL1-2's code; 38-39 data segments MOV SS rejects.
 */
#define GDT_N 40
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

uint16_t code_sel(enum code_kind kind, unsigned cpl)
{
	static const uint16_t sel[4][4] = {
		[CODE_64] = { SEL_KERNEL_CS, SEL_R1_CODE, SEL_R2_CODE, SEL_USER_CS },
		[CODE_32] = { SEL_K_CODE32, SEL_R1_CODE32, SEL_R2_CODE32, SEL_U_CODE32 },
		[CODE_16] = { SEL_K_CODE16, SEL_R1_CODE16, SEL_R2_CODE16, SEL_U_CODE16 },
		[CODE_32B] = { SEL_K_CODE32B, SEL_R1_CODE32B, SEL_R2_CODE32B, SEL_U_CODE32B },
	};

	return sel[kind][cpl & 3];
}

uint16_t stack_sel(unsigned cpl)
{
	static const uint16_t sel[4] = { SEL_KERNEL_DS, SEL_R1_DATA, SEL_R2_DATA, SEL_USER_DS };

	return sel[cpl & 3];
}

void seg_set_data(uint32_t base, uint32_t limit)
{
	gdt[SEL_K_DATA_B >> 3] = data_desc(base, limit, 0);
	gdt[SEL_U_DATA_B >> 3] = data_desc(base, limit, 3);
}

extern uint8_t exec_page16[64];

static uint64_t code16_desc(uint32_t base, unsigned dpl)
{
	return 0xffff | ((uint64_t)(base & 0xffffff) << 16) |
	       ((uint64_t)(0x9a | dpl << 5) << 40) | ((uint64_t)(base >> 24) << 56);
}

extern uint8_t lg_tss_a[], lg_tss_b[];

/* An available 32-bit TSS of 104 bytes at base (type 9, DPL0). */
static uint64_t tss32_desc(uint32_t base)
{
	return 0x67 | ((uint64_t)(base & 0xffffff) << 16) | (0x89ull << 40) |
	       ((uint64_t)(base >> 24) << 56);
}

void seg_set_tss16_b(void)
{
	uint32_t base = (uint32_t)(uint64_t)lg_tss_b;

	/* Limit 0x2b (a 16-bit TSS's 44 bytes), type 1: available 16-bit TSS. */
	gdt[SEL_TSS_B >> 3] = 0x2b | ((uint64_t)(base & 0xffffff) << 16) | (0x81ull << 40) |
			      ((uint64_t)(base >> 24) << 56);
}

void gdt_tss_reset(void)
{
	gdt[SEL_TSS_A >> 3] = tss32_desc((uint32_t)(uint64_t)lg_tss_a);
	gdt[SEL_TSS_B >> 3] = tss32_desc((uint32_t)(uint64_t)lg_tss_b);
	gdt[SEL_TSS >> 3] &= ~(2ull << 40);	/* busy -> available, to load it again */
	asm volatile("ltr %w0" : : "r"((uint16_t)SEL_TSS) : "memory");
}

/* A 64-bit call gate at SEL_CALLGATE to target (SEL_KERNEL_CS), DPL dpl. */
void seg_set_callgate(uint64_t target, unsigned dpl)
{
	gdt[SEL_CALLGATE >> 3] = (target & 0xffff) | (uint64_t)SEL_KERNEL_CS << 16 |
				 (uint64_t)(0x8c | (dpl & 3) << 5) << 40 |
				 (target >> 16 & 0xffff) << 48;
	gdt[(SEL_CALLGATE >> 3) + 1] = target >> 32;
}

void gdt_init(void)
{
	struct dtr d = { sizeof(gdt) - 1, (uint64_t)gdt };

	memcpy(gdt, this_cpu()->gdt, sizeof(this_cpu()->gdt));
	for (unsigned cpl = 0; cpl < 4; cpl++) {
		uint32_t page16 = (uint32_t)(uint64_t)exec_page16;

		gdt[code_sel(CODE_32, cpl) >> 3] = 0x00cf9a000000ffffull | (uint64_t)cpl << 45;
		/* 64 KiB at exec_page16, byte granular, CS.D=0. */
		gdt[code_sel(CODE_16, cpl) >> 3] = code16_desc(page16, cpl);
		/* The same base, CS.D=1 and a 4 GiB limit: compatibility mode with a CS base. */
		gdt[code_sel(CODE_32B, cpl) >> 3] = code16_desc(page16, cpl) | 0xfull << 48 | 3ull << 54;
	}
	gdt[SEL_K_CODE16R >> 3] = code16_desc(LEGACY_REAL_BASE, 0);
	gdt[SEL_K_DATA16 >> 3] = 0x000092000000ffffull;
	/* 64-bit code and flat data at DPL1 and DPL2 (cases_ring.c). */
	gdt[SEL_R1_CODE >> 3] = 0x00afba000000ffffull;
	gdt[SEL_R1_DATA >> 3] = 0x00cfb2000000ffffull;
	gdt[SEL_R2_CODE >> 3] = 0x00afda000000ffffull;
	gdt[SEL_R2_DATA >> 3] = 0x00cfd2000000ffffull;
	gdt[SEL_TSS_A >> 3] = tss32_desc((uint32_t)(uint64_t)lg_tss_a);
	gdt[SEL_TSS_B >> 3] = tss32_desc((uint32_t)(uint64_t)lg_tss_b);
	/* What SYSENTER and SYSEXIT load (their caches are fixed, not read from here). */
	gdt[SEL_SE_K_CODE >> 3] = 0x00af9a000000ffffull;
	gdt[SEL_SE_K_DATA >> 3] = 0x00cf92000000ffffull;
	gdt[SEL_SE_U_CODE32 >> 3] = 0x00cffa000000ffffull;
	gdt[SEL_SE_U_DATA32 >> 3] = 0x00cff2000000ffffull;
	gdt[SEL_SE_U_CODE >> 3] = 0x00affa000000ffffull;
	gdt[SEL_SE_U_DATA >> 3] = 0x00cff2000000ffffull;
	gdt[SEL_K_CODE32C >> 3] = 0x00cf9e000000ffffull;
	gdt[SEL_DATA_NP >> 3] = 0x00cf12000000ffffull;
	gdt[SEL_DATA_RO >> 3] = 0x00cf90000000ffffull;
	seg_set_data(0, 0xffffffff);
	asm volatile("lgdt %0" : : "m"(d) : "memory");
}

/* --------------------------------------------------------------- executor */
extern struct exec_regs exec_in, exec_out;
extern uint64_t exec_cs;
extern uint16_t exec_ds, exec_es, exec_fs;
extern uint8_t exec_farptr[6];
extern uint8_t exec_buf64[64], exec_buf32[64];
extern char exec_back32[];
extern char exec_back64[];
void exec_run64(void);
void exec_run32(void);

static uint64_t run_outer(uint64_t arg)
{
	if (arg == MODE_64)
		exec_run64();
	else
		exec_run32();
	return 0;
}

uint64_t exec_entry_flags(const struct exec_req *req)
{
	return (req->in.r[R_FLAGS] & X86_RFLAGS_ARITH) | 0x2 | (req->ac ? X86_RFLAGS_AC : 0) |
	       (req->tf ? X86_RFLAGS_TF : 0) | (uint64_t)(req->iopl & 3) << 12;
}

void exec_insn(const struct exec_req *req, struct exec_result *res)
{
	uint64_t code = req->code_va;
	uint8_t *buf;
	unsigned n = req->len;
	uint16_t back_cs = code_sel(CODE_64, req->cpl);

	if (req->mode == MODE_16 || req->mode == MODE_32B) {
		/*
		 * 66 2e ff 2e 38 00: ljmp *%cs:0x38 (m16:32), after it and at 0x30;
		 * in 32-bit code 2e ff 2d 38 00 00 00, the same jump.
		 */
		static const uint8_t back[6] = { 0x66, 0x2e, 0xff, 0x2e, 0x38, 0x00 };
		static const uint8_t back32[7] = { 0x2e, 0xff, 0x2d, 0x38, 0x00, 0x00, 0x00 };
		uint32_t target = (uint32_t)(uint64_t)exec_back32;
		bool b = req->mode == MODE_32B;

		memcpy(exec_page16, req->insn, n);
		memcpy(exec_page16 + n, b ? back32 : back, b ? 7 : 6);
		memcpy(exec_page16 + 0x30, b ? back32 : back, b ? 7 : 6);
		memcpy(exec_page16 + 0x38, &target, 4);
		memcpy(exec_page16 + 0x3c, &back_cs, 2);
		exec_cs = code_sel(b ? CODE_32B : CODE_16, req->cpl);
		exec_ds = req->ds;
		exec_es = req->es;
		exec_fs = req->fs;
		code = 0;
		goto run;
	}
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
		exec_cs = code_sel(CODE_32, req->cpl);
		exec_ds = req->ds;
		exec_es = req->es;
		exec_fs = req->fs;
	}
run:
	exec_code = code;
	exec_in = req->in;
	exec_in.r[R_FLAGS] = exec_entry_flags(req);
	zero_fast(&exec_out, sizeof(exec_out));
	this_cpu()->exc_vector = EXC_NONE;
	barrier();
	if (req->cpl)
		run_ring(run_outer, req->mode, 0, code_sel(CODE_64, req->cpl), stack_sel(req->cpl));
	else if (req->mode == MODE_64)
		exec_run64();
	else
		exec_run32();
	barrier();
	res->vector = exception_vector();
	res->error_code = res->vector == EXC_NONE ? 0 : exception_error_code();
	res->cr2 = res->vector == X86_VEC_PF ? read_cr2() : 0;
	res->at_insn = res->vector == EXC_NONE || exception_rip() == code;
	res->at = res->vector == EXC_NONE ? 0 : exception_rip() - code;
	res->frame_rflags = 0;
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
	printf(" fl=%03lx\n", (unsigned long)(res->out.r[R_FLAGS] & X86_RFLAGS_ARITH));
}

/* FNV-1a over qwords (n a multiple of 8), folded to 32 bits. */
uint32_t fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 14695981039346656037ull;

	for (size_t i = 0; i + 8 <= n; i += 8)
		h = (h ^ *(const uint64_t *)(p + i)) * 1099511628211ull;
	return (uint32_t)(h ^ h >> 32);
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

void nothing_unchecked(void)
{
	printf("# unchecked runs: 0\n");
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
	r->r[R_FLAGS] &= X86_RFLAGS_ARITH;
}

void run_op(const char *label, struct exec_req *req, unsigned addr_reg,
	    uint64_t addr, uint32_t seed)
{
	struct exec_result res;
	uint64_t l0 = (addr & ~63ull) - 64;
	char memlabel[96];

	seed_regs(&req->in, seed);
	if (addr_reg < R_COUNT)
		req->in.r[addr_reg] = addr;
	win_fill(l0, 256, seed);
	exec_insn(req, &res);
	print_result(label, req, &res);
	snprintf(memlabel, sizeof(memlabel), "%s mem", label);
	print_mem(memlabel, addr - 4, 16);
}

size_t put_str(char *line, size_t n, const char *s)
{
	while (*s && n < 140)
		line[n++] = *s++;
	return n;
}

size_t put_hex(char *line, size_t n, uint64_t v)
{
	char tmp[16];
	unsigned k = 0;

	do {
		tmp[k++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	while (k)
		line[n++] = tmp[--k];
	return n;
}

size_t put_dec(char *line, size_t n, uint64_t v)
{
	char tmp[20];
	unsigned k = 0;

	do {
		tmp[k++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (k)
		line[n++] = tmp[--k];
	return n;
}

char compact_tail[64];

/*
 * One short line for big sweeps: the outcome in words, then one hash over
 * everything else that can be observed (registers as the mode sees them,
 * arithmetic flags, the operand's two cache lines).
 */
void print_compact(const char *label, const struct exec_req *req,
		   const struct exec_result *res, uint64_t addr, unsigned size)
{
	struct {
		uint64_t regs[R_COUNT];
		uint8_t lines[128];
	} obs;
	uint8_t op[8] = { 0 };
	bool narrow = req->mode != MODE_64;

	zero_fast(&obs, sizeof(obs));
	for (unsigned i = 0; i < R_COUNT; i++) {
		if (i == R_SP || (narrow && i >= R_8 && i < R_FLAGS))
			continue;
		obs.regs[i] = narrow ? (uint32_t)res->out.r[i] : res->out.r[i];
	}
	obs.regs[R_FLAGS] = res->out.r[R_FLAGS] & X86_RFLAGS_ARITH;
	win_read(addr & ~63ull, obs.lines, sizeof(obs.lines));
	win_read(addr, op, size > 8 ? 8 : size);
	/* Built by hand: vsnprintf costs several times more single-steps. */
	{
		char line[160];
		size_t n = 0;

		n = put_str(line, n, label);
		n = put_str(line, n, ": ");
		if (res->vector == EXC_NONE) {
			n = put_str(line, n, "ok");
		} else {
			n = put_str(line, n, exception_mnemonic((unsigned)res->vector));
			n = put_str(line, n, " ");
			n = put_hex(line, n, res->error_code);
			n = put_str(line, n, " cr2=");
			n = put_hex(line, n, res->cr2);
		}
		n = put_str(line, n, " op=");
		n = put_hex(line, n, *(uint64_t *)op);
		n = put_str(line, n, " h=");
		n = put_hex(line, n, fnv((const uint8_t *)&obs, sizeof(obs)));
		n = put_str(line, n, compact_tail);
		line[n++] = '\n';
		console_write(line, n);
	}
}
