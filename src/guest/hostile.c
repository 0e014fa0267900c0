/* SPDX-License-Identifier: MIT */
/*
 * Hostile guests: "--append hostile=MODE" makes every vCPU misbehave in one
 * particular way instead of running the self-test, so that the end-to-end
 * tests (tests/e2e/hostile_test.py) can hold the VMM to its documented
 * outcome for each. The product is not weakened: this is ordinary guest
 * code doing what any guest may do. docs/testing.md, "Hostile guests", lists the modes,
 * the outcomes and the tests.
 *
 *   triple-fault   hostile.cpu=N (default 0) loads an empty IDT and runs
 *                  ud2; the others spin. VMM: status 80 and a dump.
 *   hang-cli       every vCPU spins with interrupts off at one `jmp .`,
 *                  whose address it prints. VMM: --timeout gives 85 and
 *                  names each vCPU's RIP.
 *   msr-storm      every vCPU runs hostile.iters=N (default 500) rounds
 *                  of RDMSR/WRMSR on TEST_CTRL and CORE_CAPABILITIES at
 *                  once, checking each result or fault; vCPU 0 reports TAP.
 *   reserved-bits  vCPU 0 writes every bit of TEST_CTRL and many values
 *                  to CORE_CAPABILITIES, checking each #GP; TAP.
 *   com1-flood     every vCPU sends hostile.bytes=N (default 1M; 0 means
 *                  forever) to COM1 with rep outsb: even vCPUs without a
 *                  newline, odd ones in lines of 0 to 4000 bytes with CR
 *                  and NUL mixed in. vCPU i writes only the letter 'a'+i
 *                  (mod 26), so mixed lines are easy to spot.
 *   unmapped-memory vCPU 0 maps guest-physical addresses beyond RAM into
 *                  its page tables and reads and writes them at CPL0 and
 *                  CPL3, then probes unknown ports; TAP.
 *   exit-race      every vCPU writes its own status to the exit port at
 *                  once after a barrier: hostile.status=good (10+i), bad
 *                  (64+i) or mixed (even good, odd bad).
 *   split-lock-progress  vCPUs 1.. split-lock in a loop; vCPU 0,
 *                  which never does, waits for hostile.splits=N (default
 *                  3) of theirs, then counts hostile.iters=N (default
 *                  30000) loop iterations of its own and reports TAP. Under
 *                  --split-lock=emulate with a low --split-lock-ratelimit
 *                  the split lockers spend their time waiting out the
 *                  ratelimit, and vCPU 0 must still make progress. Then it
 *                  stops the others and prints how many split locks they
 *                  made in all (split_locks_made.cpl0=N), for the harness
 *                  to hold against --stats.
 */
#include "guest.h"

/* A pause-loop iteration at CPL0 costs ~5 us here: ~5 s. */
#define BARRIER_SPINS     1000000u
/* vCPU 0 waiting for the others' share of a storm or flood: ~5 min. */
#define DONE_SPINS        60000000u

#define HOSTILE_MODE_MAX  24
#define FLOOD_BUF         0x10000u   /* per vCPU, in free RAM above the image */
#define SCRATCH_SLOT      0x20000u

static uint32_t arrived;     /* the one barrier of a run */
static uint32_t finished;    /* vCPUs done with their share */

/* ------------------------------------------------------------ helpers */

static bool param_u64(const char *key, uint64_t *out)
{
	char buf[24];
	uint64_t v = 0;
	size_t i = 0;

	if (!cmdline_value(key, buf, sizeof(buf)) || !buf[0])
		return false;
	for (; buf[i] >= '0' && buf[i] <= '9'; i++)
		v = v * 10 + (uint64_t)(buf[i] - '0');
	if (buf[i] == 'K' || buf[i] == 'k')
		v <<= 10, i++;
	else if (buf[i] == 'M' || buf[i] == 'm')
		v <<= 20, i++;
	if (buf[i])
		return false;
	*out = v;
	return true;
}

static uint64_t param(const char *key, uint64_t dflt)
{
	uint64_t v;

	return param_u64(key, &v) ? v : dflt;
}

/* Every vCPU calls this once; false if some vCPU never arrived. */
static bool all_vcpus_meet(const struct boot_info *bi)
{
	atomic_fetch_add(&arrived, 1);
	return spin_wait_eq32(&arrived, bi->cpu_count, BARRIER_SPINS);
}

static __attribute__((noreturn)) void spin_forever(void)
{
	for (;;)
		cpu_relax();
}

/*
 * Free RAM between the image and the lowest per-vCPU region, a slot per
 * vCPU. NULL if RAM is too small for it.
 */
static uint8_t *scratch(const struct boot_info *bi, uint64_t size)
{
	uint64_t base = (bi->image_base + bi->image_size + 0xfffff) & ~0xfffffull;
	uint64_t p = base + (uint64_t)bi->cpu_index * SCRATCH_SLOT;
	uint64_t floor = bi->ram_size - (uint64_t)bi->cpu_count * bi->cpu_region_size;

	if (size > SCRATCH_SLOT || p + size > floor)
		return NULL;
	return (uint8_t *)(uintptr_t)p;
}

/* ------------------------------------------------------------ triple-fault */

extern const char hostile_ud2_insn[];

static __attribute__((noinline, noreturn)) void triple_fault(void)
{
	static const struct {
		uint16_t limit;
		uint64_t base;
	} __attribute__((packed)) empty_idt = { 0, 0 };

	/* #UD finds no gate, nor does the #GP nor the #DF that follow. */
	asm volatile("lidt %0\n\t"
		     ".globl hostile_ud2_insn\n"
		     "hostile_ud2_insn: ud2"
		     : : "m"(empty_idt) : "memory");
	__builtin_unreachable();
}

static __attribute__((noreturn)) void mode_triple_fault(const struct boot_info *bi)
{
	uint64_t who = param("hostile.cpu", 0);

	if (who >= bi->cpu_count) {
		if (bi->cpu_index == 0) {
			printf("Bail out! hostile.cpu=%lu, but there are %u vCPUs\n", who,
			       bi->cpu_count);
			guest_exit(GUEST_STATUS_FAIL);
		}
		spin_forever();
	}
	if (bi->cpu_index != who)
		spin_forever();
	tap_diag("cpu %u: empty IDT, then ud2 at %p", bi->cpu_index, hostile_ud2_insn);
	triple_fault();
}

/* ------------------------------------------------------------ hang-cli */

extern const char hostile_hang_insn[];

static __attribute__((noinline, noreturn)) void hang(void)
{
	asm volatile("cli\n\t"
		     ".globl hostile_hang_insn\n"
		     "hostile_hang_insn: jmp hostile_hang_insn"
		     : : : "memory");
	__builtin_unreachable();
}

static __attribute__((noreturn)) void mode_hang_cli(const struct boot_info *bi)
{
	tap_diag("cpu %u: interrupts off, spinning at %p", bi->cpu_index, hostile_hang_insn);
	hang();
}

/* ------------------------------------------------------------ MSR storm */

struct storm_result {
	uint32_t errors;
	uint32_t first_iter;
	const char *first_what;
	int first_vector;
	bool enumerated;
	bool done;
};

static struct storm_result storm[VMM_MAX_VCPUS];

/* What a faulting access must raise: #GP with error code 0. */
static bool is_gp(int vec)
{
	return vec == X86_VEC_GP && exception_error_code() == 0;
}

static void storm_check(struct storm_result *r, uint32_t iter, bool ok, const char *what,
			int vec)
{
	if (ok)
		return;
	if (!r->errors++) {
		r->first_iter = iter;
		r->first_what = what;
		r->first_vector = vec;
	}
}

static void storm_run(const struct boot_info *bi, uint64_t iters)
{
	struct storm_result *r = &storm[bi->cpu_index];
	uint64_t caps, val, want_tc = 0;
	int vec;

	vec = rdmsr_safe(MSR_IA32_CORE_CAPABILITIES, &caps);
	storm_check(r, 0, vec == EXC_NONE, "first CORE_CAPABILITIES read", vec);
	r->enumerated = caps & CORE_CAP_SPLIT_LOCK_DETECT;
	if (!all_vcpus_meet(bi))
		storm_check(r, 0, false, "barrier: some vCPU never arrived", EXC_NONE);
	for (uint32_t i = 0; i < iters; i++) {
		vec = rdmsr_safe(MSR_IA32_CORE_CAPABILITIES, &val);
		storm_check(r, i, vec == EXC_NONE && val == caps, "CORE_CAPABILITIES read", vec);
		vec = rdmsr_safe(MSR_TEST_CTRL, &val);
		storm_check(r, i, r->enumerated ? vec == EXC_NONE && val == want_tc : is_gp(vec),
			    "TEST_CTRL read", vec);
		vec = wrmsr_safe(MSR_TEST_CTRL, 0);
		storm_check(r, i, r->enumerated ? vec == EXC_NONE : is_gp(vec),
			    "TEST_CTRL write 0", vec);
		vec = wrmsr_safe(MSR_TEST_CTRL, TEST_CTRL_SPLIT_LOCK_DETECT);
		storm_check(r, i, r->enumerated ? vec == EXC_NONE : is_gp(vec),
			    "TEST_CTRL write bit 29", vec);
		if (r->enumerated)
			want_tc = TEST_CTRL_SPLIT_LOCK_DETECT;
		vec = wrmsr_safe(MSR_IA32_CORE_CAPABILITIES, (i & 1) ? caps : ~0ull);
		storm_check(r, i, is_gp(vec), "CORE_CAPABILITIES write", vec);
	}
	atomic_store_release(&r->done, true);
	atomic_fetch_add(&finished, 1);
}

static int mode_msr_storm(const struct boot_info *bi)
{
	uint64_t iters = param("hostile.iters", 500);
	bool all;

	if (bi->cpu_index != 0) {
		storm_run(bi, iters);
		return 0;
	}
	tap_diag("msr-storm: %lu rounds on each of %u vCPUs, 5 accesses a round", iters,
		 bi->cpu_count);
	storm_run(bi, iters);
	all = spin_wait_eq32(&finished, bi->cpu_count, DONE_SPINS);
	tap_ok(all, "every vCPU finished its rounds (%u of %u)", atomic_load(&finished),
	       bi->cpu_count);
	tap_diag("sld=%s", storm[0].enumerated ? "enumerated" : "not-enumerated");
	for (uint32_t c = 0; c < bi->cpu_count; c++) {
		struct storm_result *r = &storm[c];

		if (!atomic_load_acquire(&r->done)) {
			tap_ok(false, "vCPU %u: did not finish", c);
			continue;
		}
		if (r->errors)
			tap_diag("vCPU %u: first wrong result in round %u: %s (vector %d)", c,
				 r->first_iter, r->first_what, r->first_vector);
		tap_ok(r->errors == 0 && r->enumerated == storm[0].enumerated,
		       "vCPU %u: %lu rounds, every result the architected one (%u wrong, enumeration %s)",
		       c, iters, r->errors, r->enumerated == storm[0].enumerated ? "agrees" : "differs");
	}
	return tap_done();
}

/* ------------------------------------------------------------ reserved bits */

static int mode_reserved_bits(const struct boot_info *bi)
{
	uint64_t caps, val, want_tc = 0;
	bool en;
	int vec, first = -1;
	unsigned wrong = 0;

	if (bi->cpu_index != 0)
		return 0;
	vec = rdmsr_safe(MSR_IA32_CORE_CAPABILITIES, &caps);
	tap_ok(vec == EXC_NONE, "CORE_CAPABILITIES reads (0x%lx, vector %d)", caps, vec);
	en = caps & CORE_CAP_SPLIT_LOCK_DETECT;
	tap_diag("sld=%s", en ? "enumerated" : "not-enumerated");

	/* Each bit alone: only bit 29, and only when enumerated, is writable. */
	for (int bit = 0; bit < 64; bit++) {
		bool writable = en && bit == TEST_CTRL_SPLIT_LOCK_DETECT_BIT;
		bool ok;

		vec = wrmsr_safe(MSR_TEST_CTRL, 1ull << bit);
		ok = writable ? vec == EXC_NONE : is_gp(vec);
		if (writable)
			want_tc = 1ull << bit;
		vec = rdmsr_safe(MSR_TEST_CTRL, &val);
		ok = ok && (en ? vec == EXC_NONE && val == want_tc : is_gp(vec));
		if (!ok && !wrong++)
			first = bit;
	}
	tap_ok(!wrong, "TEST_CTRL: a write of each bit 0-63 alone raises #GP%s and leaves the value (%u wrong, first bit %d)",
	       en ? " except bit 29" : ", bit 29 too (not enumerated)", wrong, first);

	/* Bit 29 together with any reserved bit: still #GP, value unchanged. */
	wrong = 0;
	first = -1;
	for (int bit = 0; bit <= 64; bit++) {
		uint64_t v = bit == 64 ? ~0ull : TEST_CTRL_SPLIT_LOCK_DETECT | (1ull << bit);
		bool ok;

		if (bit == TEST_CTRL_SPLIT_LOCK_DETECT_BIT)
			continue;
		vec = wrmsr_safe(MSR_TEST_CTRL, v);
		ok = is_gp(vec);
		vec = rdmsr_safe(MSR_TEST_CTRL, &val);
		ok = ok && (en ? vec == EXC_NONE && val == want_tc : is_gp(vec));
		if (!ok && !wrong++)
			first = bit;
	}
	tap_ok(!wrong, "TEST_CTRL: bit 29 plus any reserved bit, and all-ones, raise #GP and leave the value (%u wrong, first bit %d)",
	       wrong, first);

	vec = wrmsr_safe(MSR_TEST_CTRL, 0);
	tap_ok(en ? vec == EXC_NONE : is_gp(vec), "TEST_CTRL: writing 0 %s (vector %d)",
	       en ? "works" : "raises #GP", vec);

	/* CORE_CAPABILITIES is read-only whatever is written, its own value included. */
	wrong = 0;
	first = -1;
	for (int i = -4; i < 64; i++) {
		static const uint64_t special[] = { 0, ~0ull, CORE_CAP_SPLIT_LOCK_DETECT, 0 };
		uint64_t v = i >= 0 ? 1ull << i : i == -1 ? caps : special[i + 4];
		bool ok;

		vec = wrmsr_safe(MSR_IA32_CORE_CAPABILITIES, v);
		ok = is_gp(vec);
		vec = rdmsr_safe(MSR_IA32_CORE_CAPABILITIES, &val);
		ok = ok && vec == EXC_NONE && val == caps;
		if (!ok && !wrong++)
			first = i;
	}
	tap_ok(!wrong, "CORE_CAPABILITIES: every write (0, all-ones, bit 5, its own value, each bit) raises #GP and leaves the value (%u wrong, first case %d)",
	       wrong, first);
	return tap_done();
}

/* ------------------------------------------------------------ COM1 flood */

struct flood_result {
	uint64_t bytes, letters, newlines;
};

static struct flood_result flood[VMM_MAX_VCPUS];

/* Lines of these lengths, around the VMM's 1024-byte piece size. */
static const uint32_t flood_lines[] = { 0, 1, 79, 1023, 1024, 1025, 2047, 2048, 4000, 200 };

/* Fills buf with one pattern; returns its length and counts what is in it. */
static uint32_t flood_fill(uint8_t *buf, char letter, bool lines, struct flood_result *r)
{
	uint32_t len = 0;

	if (!lines) {
		memset(buf, letter, FLOOD_BUF);
		r->letters = FLOOD_BUF;
		return FLOOD_BUF;
	}
	for (uint32_t n = 0;; n++) {
		uint32_t l = flood_lines[n % ARRAY_SIZE(flood_lines)];

		if (len + l + 3 > FLOOD_BUF)
			break;
		/* NUL and CR are dropped by the VMM; they must not count anywhere. */
		if (n % 3 == 1)
			buf[len++] = '\0';
		memset(buf + len, letter, l);
		len += l;
		r->letters += l;
		if (n % 2)
			buf[len++] = '\r';
		buf[len++] = '\n';
		r->newlines++;
	}
	return len;
}

static void flood_run(const struct boot_info *bi, uint64_t bytes)
{
	uint32_t me = bi->cpu_index;
	struct flood_result *r = &flood[me], per = { 0 };
	bool lines = me & 1;
	char letter = (char)('a' + me % 26);
	uint8_t *buf = scratch(bi, FLOOD_BUF);
	uint32_t len;

	if (!buf) {
		printf("Bail out! cpu %u: no room for a flood buffer\n", me);
		guest_exit(GUEST_STATUS_FAIL);
	}
	len = flood_fill(buf, letter, lines, &per);
	all_vcpus_meet(bi);
	for (uint64_t sent = 0; bytes == 0 || sent < bytes; sent += len) {
		outsb(PORT_COM1, buf, len);
		r->bytes += len;
		r->letters += per.letters;
		r->newlines += per.newlines;
	}
	if (!lines) {
		outb(PORT_COM1, '\n');
		r->bytes++;
		r->newlines++;
	}
	atomic_fetch_add(&finished, 1);
}

static int mode_com1_flood(const struct boot_info *bi)
{
	uint64_t bytes = param("hostile.bytes", 1 << 20);
	bool all;

	if (bi->cpu_index == 0)
		tap_diag("com1-flood: %lu bytes from each of %u vCPUs%s", bytes, bi->cpu_count,
			 bytes ? "" : " (forever)");
	flood_run(bi, bytes);
	if (bi->cpu_index != 0)
		return 0;
	all = spin_wait_eq32(&finished, bi->cpu_count, DONE_SPINS);
	for (uint32_t c = 0; c < bi->cpu_count; c++)
		tap_diag("com1-flood: cpu %u sent %lu bytes: %lu letters '%c', %lu newlines", c,
			 flood[c].bytes, flood[c].letters, 'a' + c % 26, flood[c].newlines);
	tap_ok(all, "every vCPU finished its flood (%u of %u)", atomic_load(&finished),
	       bi->cpu_count);
	return tap_done();
}

/* ------------------------------------------------------------ unmapped memory */

#define PDE_FLAGS (X86_PTE_P | X86_PTE_RW | X86_PTE_US | X86_PTE_PS)
#define TWO_MIB   (2ull << 20)

/*
 * Maps the 2 MiB page around `pa` (below 4 GiB) at the same virtual address,
 * in the VMM's page tables: its BOOT_PD_PAGES directories are contiguous
 * and zeroed, but the PDPT only links those that cover RAM.
 */
static bool map_identity(uint64_t pa)
{
	volatile uint64_t *pdpt = (volatile uint64_t *)(uintptr_t)BOOT_PDPT_ADDR;
	volatile uint64_t *pd = (volatile uint64_t *)(uintptr_t)BOOT_PD_ADDR;
	uint64_t page = pa & ~(TWO_MIB - 1);

	if (pa >= (uint64_t)BOOT_PD_PAGES << 30)
		return false;
	if (!(pdpt[pa >> 30] & 1))
		pdpt[pa >> 30] = (BOOT_PD_ADDR + (pa >> 30) * 0x1000) | (PDE_FLAGS & ~X86_PTE_PS);
	if (!(pd[page >> 21] & 1))
		pd[page >> 21] = page | PDE_FLAGS;
	/* A new PDPT entry: reload CR3 rather than invlpg. */
	asm volatile("mov %0, %%cr3" : : "r"(read_cr3()) : "memory");
	return true;
}

struct mmio_probe {
	uint64_t addr;
	unsigned wrong;
	const char *first;
};

static void mmio_check(struct mmio_probe *p, bool ok, const char *what)
{
	if (!ok && !p->wrong++)
		p->first = what;
}

/* Every size reads all-ones; writes vanish. */
static uint64_t mmio_probe_all(uint64_t arg)
{
	struct mmio_probe *p = (struct mmio_probe *)(uintptr_t)arg;
	uintptr_t a = p->addr;

	mmio_check(p, *(volatile uint8_t *)a == 0xff, "8-bit read");
	mmio_check(p, *(volatile uint16_t *)a == 0xffff, "16-bit read");
	mmio_check(p, *(volatile uint32_t *)a == 0xffffffffu, "32-bit read");
	mmio_check(p, *(volatile uint64_t *)a == ~0ull, "64-bit read");
	*(volatile uint8_t *)a = 0x12;
	*(volatile uint16_t *)(a + 2) = 0x1234;
	*(volatile uint32_t *)(a + 4) = 0x12345678u;
	*(volatile uint64_t *)(a + 8) = 0x123456789abcdef0ull;
	mmio_check(p, *(volatile uint64_t *)a == ~0ull, "read after 8-, 16- and 32-bit writes");
	mmio_check(p, *(volatile uint64_t *)(a + 8) == ~0ull, "read after a 64-bit write");
	return 0;
}

static uint64_t mmio_probe_user(uint64_t arg)
{
	struct mmio_probe *p = (struct mmio_probe *)(uintptr_t)arg;
	uintptr_t a = p->addr;

	mmio_check(p, *(volatile uint32_t *)a == 0xffffffffu, "32-bit read at CPL3");
	*(volatile uint32_t *)a = 0;
	mmio_check(p, *(volatile uint64_t *)a == ~0ull, "64-bit read at CPL3 after a write");
	return 0;
}

static uint64_t user_port_read(uint64_t arg)
{
	uint8_t v = 0;

	(void)arg;
	asm volatile(ASM_TRY("1f") "inb %%dx, %%al\n\t" "1:"
		     : "+a"(v) : "d"(0x80) : "memory");
	return (uint64_t)exception_vector();
}

static void insb(uint16_t port, void *buf, uint64_t len)
{
	asm volatile("rep insb" : "+D"(buf), "+c"(len) : "d"(port) : "memory");
}

static uint16_t inw(uint16_t port)
{
	uint16_t v;

	asm volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static uint32_t inl(uint16_t port)
{
	uint32_t v;

	asm volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static void outw(uint16_t port, uint16_t v)
{
	asm volatile("outw %0, %1" : : "a"(v), "Nd"(port));
}

static void unknown_ports(void)
{
	uint8_t buf[16];
	bool ok = true;

	memset(buf, 0, sizeof(buf));
	outb(0x80, 0x42);
	outw(0x70, 0x1234);
	outl(0xcf8, 0x80000000u);
	/* Each access happens whatever the ones before it read. */
	ok &= inb(0x80) == 0xff;
	ok &= inw(0x61) == 0xffff;
	ok &= inl(0xcfc) == 0xffffffffu;
	ok &= inb(0xffff) == 0xff;
	ok &= inw(0x80) == 0xffff;
	insb(0x80, buf, sizeof(buf));
	for (size_t i = 0; i < sizeof(buf); i++)
		ok &= buf[i] == 0xff;
	tap_ok(ok, "unknown ports 0x61, 0x70, 0x80, 0xcf8, 0xcfc, 0xffff: writes dropped, reads (rep insb too) all-ones");

	/* The exit port only ends the VM on a 32-bit write. */
	outb(PORT_EXIT, 9);
	outw(PORT_EXIT, 9);
	ok = inl(PORT_EXIT) == 0xffffffffu;
	ok &= inb(PORT_EXIT) == 0xff;
	tap_ok(ok,
	       "8- and 16-bit writes to the exit port are ignored, reads are all-ones");
	ok = inb(PORT_COM1_LSR) == (COM1_LSR_THRE | COM1_LSR_TEMT);
	ok &= inb(PORT_COM1 + 1) == 0;
	ok &= inb(PORT_COM1 + 7) == 0;
	tap_ok(ok,
	       "COM1: LSR reads 0x60, other registers 0");
	tap_ok(run_user(user_port_read, 0, 0) == X86_VEC_GP,
	       "IN at CPL3 raises #GP in the guest (never reaches the VMM)");
}

static int mode_unmapped_memory(const struct boot_info *bi)
{
	uint64_t ram = bi->ram_size;
	uint64_t above = (ram + TWO_MIB - 1) & ~(TWO_MIB - 1);
	const uint64_t targets[] = { ram, above, above + 0x123458, 0xc0000000ull,
				     0xfee00000ull, 0xfffff000ull - 16 };

	if (bi->cpu_index != 0)
		return 0;
	tap_diag("unmapped-memory: RAM is 0x%lx bytes", ram);
	for (size_t i = 0; i < ARRAY_SIZE(targets); i++) {
		struct mmio_probe p = { .addr = targets[i] };

		if (targets[i] < ram || !map_identity(targets[i])) {
			tap_skip("inside RAM or above 4 GiB", "guest-physical 0x%lx", targets[i]);
			continue;
		}
		mmio_probe_all((uint64_t)(uintptr_t)&p);
		run_user(mmio_probe_user, (uint64_t)(uintptr_t)&p, 0);
		tap_ok(!p.wrong, "guest-physical 0x%lx (no RAM): reads all-ones at every size, writes dropped, at CPL0 and CPL3 (%u wrong, first: %s)",
		       targets[i], p.wrong, p.wrong ? p.first : "none");
	}

	/*
	 * Half in RAM, half beyond: the RAM bytes, then ones. The last RAM
	 * bytes are the top of vCPU 0's stack, the upper half of _start's
	 * return address into a noreturn call: 0 before and after.
	 */
	if (!(ram & (TWO_MIB - 1)) && map_identity(ram)) {
		volatile uint32_t *last = (volatile uint32_t *)(uintptr_t)(ram - 4);
		uint64_t both;

		*last = 0x5aa5c33cu;
		both = *(volatile uint64_t *)(uintptr_t)(ram - 4);
		*last = 0;
		tap_ok(both == 0xffffffff5aa5c33cull,
		       "an 8-byte read across the end of RAM gives the RAM half and all-ones (0x%lx)",
		       both);
	}
	unknown_ports();
	return tap_done();
}

/* ------------------------------------------------------------ exit race */

static __attribute__((noreturn)) void mode_exit_race(const struct boot_info *bi)
{
	char how[8] = "good";
	uint32_t i = bi->cpu_index, status;

	cmdline_value("hostile.status", how, sizeof(how));
	if (!strcmp(how, "bad"))
		status = 64 + i;
	else if (!strcmp(how, "mixed"))
		status = i & 1 ? 64 + i : 10 + i;
	else
		status = 10 + i;
	tap_diag("cpu %u will write %u", i, status);
	all_vcpus_meet(bi);
	outl(PORT_EXIT, status);
	/* The VM is over; halting here only waits for the VMM's kick. */
	halt_forever();
}

/* ------------------------------------------------------------ split-lock progress */

static uint8_t split_line[128] __attribute__((aligned(64)));
static uint32_t splits_done, splits_stop, splitters_parked;

/* Each split lock is counted before the next look at splits_stop. */
static __attribute__((noreturn)) void split_lock_until_stopped(void)
{
	/* 4 bytes from offset 62: across the first 64-byte line. */
	uint32_t *p = (uint32_t *)(uintptr_t)(split_line + 62);

	while (!atomic_load_acquire(&splits_stop)) {
		asm volatile("lock addl $1, %0" : "+m"(*p) : : "memory");
		atomic_fetch_add(&splits_done, 1);
	}
	atomic_fetch_add(&splitters_parked, 1);
	halt_forever();
}

static bool splits_reach(uint32_t want, uint64_t max_spins)
{
	for (uint64_t i = 0; i < max_spins; i++) {
		if (atomic_load_acquire(&splits_done) >= want)
			return true;
		cpu_relax();
	}
	return atomic_load_acquire(&splits_done) >= want;
}

static int mode_split_lock_progress(const struct boot_info *bi)
{
	uint64_t want = param("hostile.splits", 3), iters = param("hostile.iters", 30000);
	volatile uint64_t count = 0;
	uint32_t before, after;
	bool seen, parked;

	if (bi->cpu_index != 0)
		split_lock_until_stopped();
	if (bi->cpu_count < 3) {
		printf("Bail out! split-lock-progress needs 3 vCPUs or more, got %u\n",
		       bi->cpu_count);
		return GUEST_STATUS_FAIL;
	}
	tap_diag("split-lock-progress: %u vCPUs split-lock, vCPU 0 counts", bi->cpu_count - 1);
	seen = splits_reach((uint32_t)want, DONE_SPINS);
	before = atomic_load(&splits_done);
	tap_ok(seen, "the others made %u split locks (waited for %lu)", before, want);
	for (uint64_t i = 0; i < iters; i++)
		count++;
	after = atomic_load(&splits_done);
	tap_ok(count == iters, "vCPU 0 ran %lu iterations", (uint64_t)count);
	/* The host judges this against the ratelimit: the guest has no clock. */
	tap_diag("split locks while vCPU 0 counted: %u", after - before);
	atomic_store(&splits_stop, 1);
	parked = spin_wait_eq32(&splitters_parked, bi->cpu_count - 1, DONE_SPINS);
	tap_ok(parked, "the %u split-locking vCPUs stopped (%u did)", bi->cpu_count - 1,
	       atomic_load(&splitters_parked));
	/* Exact once they have all stopped: the host holds it against --stats. */
	tap_diag("split_locks_made.cpl0=%u", atomic_load(&splits_done));
	return tap_done();
}

/* ------------------------------------------------------------ dispatch */

enum hostile_mode {
	HOSTILE_NONE,
	HOSTILE_UNKNOWN,
	HOSTILE_TRIPLE_FAULT,
	HOSTILE_HANG_CLI,
	HOSTILE_MSR_STORM,
	HOSTILE_RESERVED_BITS,
	HOSTILE_COM1_FLOOD,
	HOSTILE_UNMAPPED_MEMORY,
	HOSTILE_EXIT_RACE,
	HOSTILE_SPLIT_LOCK_PROGRESS,
};

static const char *const mode_names[] = {
	[HOSTILE_TRIPLE_FAULT] = "triple-fault",
	[HOSTILE_HANG_CLI] = "hang-cli",
	[HOSTILE_MSR_STORM] = "msr-storm",
	[HOSTILE_RESERVED_BITS] = "reserved-bits",
	[HOSTILE_COM1_FLOOD] = "com1-flood",
	[HOSTILE_UNMAPPED_MEMORY] = "unmapped-memory",
	[HOSTILE_EXIT_RACE] = "exit-race",
	[HOSTILE_SPLIT_LOCK_PROGRESS] = "split-lock-progress",
};

static enum hostile_mode hostile_mode(char *name, size_t size)
{
	if (!cmdline_value("hostile", name, size))
		return HOSTILE_NONE;
	for (size_t m = 0; m < ARRAY_SIZE(mode_names); m++)
		if (mode_names[m] && !strcmp(name, mode_names[m]))
			return (enum hostile_mode)m;
	return HOSTILE_UNKNOWN;
}

bool hostile_selected(void)
{
	char name[HOSTILE_MODE_MAX];

	return hostile_mode(name, sizeof(name)) != HOSTILE_NONE;
}

static int run_mode(const struct boot_info *bi)
{
	char name[HOSTILE_MODE_MAX];

	switch (hostile_mode(name, sizeof(name))) {
	case HOSTILE_NONE:
		return 0;
	case HOSTILE_UNKNOWN:
		if (bi->cpu_index == 0)
			printf("Bail out! hostile=%s: no such mode\n", name);
		return GUEST_STATUS_FAIL;
	case HOSTILE_TRIPLE_FAULT:
		mode_triple_fault(bi);
	case HOSTILE_HANG_CLI:
		mode_hang_cli(bi);
	case HOSTILE_MSR_STORM:
		return mode_msr_storm(bi);
	case HOSTILE_RESERVED_BITS:
		return mode_reserved_bits(bi);
	case HOSTILE_COM1_FLOOD:
		return mode_com1_flood(bi);
	case HOSTILE_UNMAPPED_MEMORY:
		return mode_unmapped_memory(bi);
	case HOSTILE_EXIT_RACE:
		mode_exit_race(bi);
	case HOSTILE_SPLIT_LOCK_PROGRESS:
		return mode_split_lock_progress(bi);
	}
	return GUEST_STATUS_FAIL;
}

int hostile_main(const struct boot_info *bi)
{
	return run_mode(bi);
}

void hostile_ap_main(const struct boot_info *bi)
{
	run_mode(bi);
}
