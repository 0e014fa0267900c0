/* SPDX-License-Identifier: MIT */
/*
 * Split-lock detection as each vCPU sees it against what the others do:
 * TEST_CTRL is per vCPU in both directions, #AC follows the faulting vCPU's
 * own bit 29, and every vCPU is told the same. vCPU 0 drives; vCPUs 1 to
 * PERCPU_MAX_APS answer its requests (ap_call) and the other APs halt, so
 * that a VM of 64 vCPUs does not spin 63 of them on a small host.
 *
 * TAP identifiers start "percpu." (tests/conformance/run.py's rows), and the
 * verdicts are the architecture's: this group also runs under QEMU.
 */
#include "guest.h"

/* ~5 s at CPL0 on the project's hosts; plenty on real hardware. */
#define AP_WAIT_SPINS 1000000u

#define BIT29 TEST_CTRL_SPLIT_LOCK_DETECT

/* vCPU 0's request: every AP in `mask` runs `op` once per new `seq`. */
static struct {
	uint32_t seq;
	uint32_t op;
	uint64_t arg;
	uint64_t mask;
} req;
static uint32_t ack[PERCPU_MAX_APS + 1];
static struct ap_reply replies[PERCPU_MAX_APS + 1];
static uint32_t released;

/* CPUID.(7,0):EDX as each AP read it when it started. */
static uint32_t cpuid_edx[VMM_MAX_VCPUS];
static uint32_t cpuid_recorded;

/* One operand per vCPU, bytes 62-65 of its block: across a cache line. */
static uint8_t operands[PERCPU_MAX_APS + 1][128] __attribute__((aligned(64)));

/* The lines that need TEST_CTRL; each prints as a skip without it. */
#define DESC_CORE_CAPS "percpu.core_caps: IA32_CORE_CAPABILITIES reads the same on every vCPU"
#define DESC_SET "percpu.set: each AP sets its own TEST_CTRL bit 29 and reads it back"
#define DESC_ISOLATED "percpu.isolated: an AP's TEST_CTRL is seen neither by vCPU 0 nor by another AP"
#define DESC_RESERVED "percpu.reserved_gp: on each AP, each reserved TEST_CTRL bit raises #GP and leaves the value"
#define DESC_AC_AP "percpu.ac_ap_asked: bit 29 set on the APs and clear on vCPU 0, each AP's split lock raises #AC and vCPU 0's completes"
#define DESC_CLEAR "percpu.clear: each AP clears its own bit 29 and reads 0, and vCPU 0's stays set"
#define DESC_AC_BSP "percpu.ac_bsp_asked: bit 29 set on vCPU 0 and clear on the APs, vCPU 0's split lock raises #AC and each AP's completes"

static const char *const needs_test_ctrl[] = {
	DESC_CORE_CAPS, DESC_SET, DESC_ISOLATED, DESC_RESERVED, DESC_AC_AP, DESC_CLEAR, DESC_AC_BSP,
};

unsigned percpu_aps(const struct boot_info *bi)
{
	return bi->cpu_count - 1 < PERCPU_MAX_APS ? bi->cpu_count - 1 : PERCPU_MAX_APS;
}

uint64_t percpu_mask(unsigned aps)
{
	return ((2ull << aps) - 1) & ~1ull;
}

const struct ap_reply *ap_reply(unsigned cpu)
{
	return &replies[cpu];
}

void ap_release(void)
{
	atomic_store(&released, 1);
}

/* LOCK INC of cpu's operand, seeded with `seed`: the vector and what memory holds after. */
static void split_lock(unsigned cpu, uint32_t seed, struct ap_reply *r)
{
	uint8_t *p = operands[cpu] + 62;
	uint32_t after;

	memcpy(p, &seed, sizeof(seed));
	asm volatile(ASM_TRY("1f") "lock incl (%0)\n\t1:" : : "r"(p) : "memory", "cc");
	r->vector = exception_vector();
	memcpy(&after, p, sizeof(after));
	r->value = after;
}

/* With bit 29 set, each other bit beside it must #GP and leave the value. */
static uint32_t reserved_bits_wrong(void)
{
	uint32_t bad = 0;
	uint64_t v;

	for (unsigned bit = 0; bit < 64; bit++) {
		if (bit == TEST_CTRL_SPLIT_LOCK_DETECT_BIT)
			continue;
		if (wrmsr_safe(MSR_TEST_CTRL, BIT29 | 1ull << bit) != X86_VEC_GP ||
		    rdmsr_safe(MSR_TEST_CTRL, &v) != EXC_NONE || v != BIT29)
			bad++;
	}
	return bad;
}

static void ap_do(unsigned me, uint32_t op, uint64_t arg, struct ap_reply *r)
{
	switch (op) {
	case AP_OP_READ:
		r->vector = rdmsr_safe(MSR_TEST_CTRL, &r->value);
		break;
	case AP_OP_WRITE:
		r->vector = wrmsr_safe(MSR_TEST_CTRL, arg);
		break;
	case AP_OP_CORE_CAPS:
		r->vector = rdmsr_safe(MSR_IA32_CORE_CAPABILITIES, &r->value);
		break;
	case AP_OP_RESERVED:
		r->bad = reserved_bits_wrong();
		r->vector = EXC_NONE;
		break;
	case AP_OP_SPLIT_LOCK:
		split_lock(me, (uint32_t)arg, r);
		break;
	}
}

void percpu_ap_main(const struct boot_info *bi)
{
	unsigned me = bi->cpu_index;
	uint32_t seen = 0, seq;
	uint64_t idle = 0;

	atomic_store(&cpuid_edx[me], cpuid_count(7, 0).d);
	atomic_fetch_add(&cpuid_recorded, 1);
	if (me > PERCPU_MAX_APS)
		return;
	/* Bounded: a vCPU 0 that died must not leave this one spinning for ever. */
	while (!atomic_load(&released) && idle++ < 20ull * AP_WAIT_SPINS) {
		seq = atomic_load(&req.seq);
		if (seq == seen) {
			cpu_relax();
			continue;
		}
		seen = seq;
		idle = 0;
		if (req.mask >> me & 1) {
			ap_do(me, req.op, req.arg, &replies[me]);
			atomic_store(&ack[me], seq);
		}
	}
}

bool ap_call(enum ap_op op, uint64_t arg, uint64_t mask)
{
	static uint32_t seq;
	bool all = true;

	/* An AP that does not answer leaves a reply no check accepts. */
	for (unsigned i = 1; i <= PERCPU_MAX_APS; i++)
		if (mask >> i & 1)
			replies[i] = (struct ap_reply){ .vector = -2, .bad = ~0u, .value = ~0ull };
	req.op = op;
	req.arg = arg;
	req.mask = mask;
	atomic_store(&req.seq, ++seq);
	for (unsigned i = 1; i <= PERCPU_MAX_APS; i++)
		if (mask >> i & 1 && !spin_wait_eq32(&ack[i], seq, AP_WAIT_SPINS))
			all = false;
	return all;
}

unsigned ap_replies_not(uint64_t mask, int vector, uint64_t want)
{
	unsigned wrong = 0;

	for (unsigned i = 1; i <= PERCPU_MAX_APS; i++)
		if (mask >> i & 1 && (replies[i].vector != vector || replies[i].value != want))
			wrong++;
	return wrong;
}

static void check_cpuid(const struct boot_info *bi)
{
	uint32_t n = bi->cpu_count, differ = 0;
	uint32_t mine = cpuid_count(7, 0).d >> CPUID_7_EDX_CORE_CAPABILITIES_BIT & 1;
	bool all;

	if (n < 2) {
		tap_skip("needs 2 vCPUs", "percpu.cpuid: CPUID.(7,0):EDX[30] is the same on every vCPU");
		return;
	}
	all = spin_wait_eq32(&cpuid_recorded, n - 1, AP_WAIT_SPINS);
	for (uint32_t i = 1; i < n; i++)
		if ((atomic_load(&cpuid_edx[i]) >> CPUID_7_EDX_CORE_CAPABILITIES_BIT & 1) != mine)
			differ++;
	tap_ok(all && differ == 0,
	       "percpu.cpuid: CPUID.(7,0):EDX[30] is the same on every vCPU (%u on vCPU 0, %u of %u APs said, %u differ)",
	       mine, atomic_load(&cpuid_recorded), n - 1, differ);
}

static void check_core_caps(unsigned n)
{
	bool answered = ap_call(AP_OP_CORE_CAPS, 0, percpu_mask(n));
	unsigned wrong = ap_replies_not(percpu_mask(n), EXC_NONE, CORE_CAP_SPLIT_LOCK_DETECT);

	tap_ok(answered && wrong == 0, "%s (0x20 on vCPU 0, %u of %u APs differ)", DESC_CORE_CAPS, wrong, n);
}

/*
 * AP k sets bit 29; vCPU 0 and the APs after k, which have not yet set
 * theirs, must still read 0; at the end each AP still holds its own bit.
 */
static void check_set_isolated(unsigned n)
{
	unsigned set = 0, seen = 0;
	uint64_t v, later;

	for (unsigned k = 1; k <= n; k++) {
		if (ap_call(AP_OP_WRITE, BIT29, 1ull << k) && replies[k].vector == EXC_NONE &&
		    ap_call(AP_OP_READ, 0, 1ull << k) && !ap_replies_not(1ull << k, EXC_NONE, BIT29))
			set++;
		if (rdmsr_safe(MSR_TEST_CTRL, &v) != EXC_NONE || v != 0)
			seen++;
		later = percpu_mask(n) & ~percpu_mask(k);
		if (later) {
			ap_call(AP_OP_READ, 0, later);
			seen += ap_replies_not(later, EXC_NONE, 0);
		}
	}
	ap_call(AP_OP_READ, 0, percpu_mask(n));
	seen += ap_replies_not(percpu_mask(n), EXC_NONE, BIT29);
	tap_ok(set == n, "%s (%u of %u did)", DESC_SET, set, n);
	tap_ok(seen == 0, "%s (%u reads wrong)", DESC_ISOLATED, seen);
}

static void check_reserved(unsigned n)
{
	bool answered = ap_call(AP_OP_RESERVED, 0, percpu_mask(n));
	unsigned wrong = 0;

	for (unsigned k = 1; k <= n; k++)
		wrong += replies[k].bad;
	tap_ok(answered && wrong == 0, "%s (%u wrong of 63 bits on each of %u APs)", DESC_RESERVED, wrong, n);
}

/*
 * The APs' bit 29 is set, vCPU 0's clear and written last: a VMM that took
 * one vCPU's TEST_CTRL, or the last one written, for another's fails.
 */
static void check_ac_ap_asked(unsigned n)
{
	struct ap_reply bsp;
	bool answered;
	unsigned wrong;

	wrmsr_safe(MSR_TEST_CTRL, 0);
	split_lock(0, 41, &bsp);
	answered = ap_call(AP_OP_SPLIT_LOCK, 41, percpu_mask(n));
	wrong = ap_replies_not(percpu_mask(n), X86_VEC_AC, 41);
	splitlock_made_cpl0(1 + n);
	tap_ok(answered && bsp.vector == EXC_NONE && bsp.value == 42 && wrong == 0,
	       "%s (vCPU 0: vector %d, 0x%llx after; %u of %u APs wrong)", DESC_AC_AP,
	       bsp.vector, (unsigned long long)bsp.value, wrong, n);
}

static void check_clear(unsigned n)
{
	bool ok = wrmsr_safe(MSR_TEST_CTRL, BIT29) == EXC_NONE;
	unsigned wrong = 0;
	uint64_t v = ~0ull;

	ok = ap_call(AP_OP_WRITE, 0, percpu_mask(n)) && ok;
	for (unsigned k = 1; k <= n; k++)
		if (replies[k].vector != EXC_NONE)
			wrong++;
	ok = ap_call(AP_OP_READ, 0, percpu_mask(n)) && ok;
	wrong += ap_replies_not(percpu_mask(n), EXC_NONE, 0);
	ok = rdmsr_safe(MSR_TEST_CTRL, &v) == EXC_NONE && v == BIT29 && ok;
	tap_ok(ok && wrong == 0, "%s (%u AP accesses wrong, vCPU 0 reads 0x%llx)", DESC_CLEAR, wrong,
	       (unsigned long long)v);
}

/* vCPU 0's bit 29 set, the APs' clear and written last. */
static void check_ac_bsp_asked(unsigned n)
{
	struct ap_reply bsp;
	bool answered;
	unsigned wrong;

	split_lock(0, 41, &bsp);
	answered = ap_call(AP_OP_SPLIT_LOCK, 41, percpu_mask(n));
	wrong = ap_replies_not(percpu_mask(n), EXC_NONE, 42);
	splitlock_made_cpl0(1 + n);
	wrmsr_safe(MSR_TEST_CTRL, 0);
	tap_ok(answered && bsp.vector == X86_VEC_AC && bsp.value == 41 && wrong == 0,
	       "%s (vCPU 0: vector %d, 0x%llx after; %u of %u APs wrong)", DESC_AC_BSP,
	       bsp.vector, (unsigned long long)bsp.value, wrong, n);
}

static void test_per_vcpu(const struct boot_info *bi)
{
	unsigned n = percpu_aps(bi);
	const char *why = !splitlock_enumerated() ? "TEST_CTRL is not enumerated" :
			  n == 0 ? "needs 2 vCPUs" : NULL;

	check_cpuid(bi);
	if (why) {
		for (size_t i = 0; i < ARRAY_SIZE(needs_test_ctrl); i++)
			tap_skip(why, "%s", needs_test_ctrl[i]);
		ap_release();
		return;
	}
	check_core_caps(n);
	check_set_isolated(n);
	check_reserved(n);
	check_ac_ap_asked(n);
	check_clear(n);
	check_ac_bsp_asked(n);
	ap_call(AP_OP_WRITE, 0, percpu_mask(n));
	ap_release();
}

static const struct guest_test tests[] = {
	{ "per_vcpu", test_per_vcpu },
	/* Last: the split locks of both groups are made by then. */
	{ "count", splitlock_count_made },
};

TEST_GROUP(percpu_tests, "split-lock detection per vCPU", tests);
