/* SPDX-License-Identifier: MIT */
/*
 * The split-lock exit handlers, driven through the shared fake KVM
 * (tests/common/fake_kvm.h, as tests/unit/test_splitlock.c) with random
 * RDMSR, WRMSR and EXCEPTION exits on a VM of 1-4 vCPUs and 2 MiB of guest
 * RAM under the boot protocol's identity map. The instruction of an #AC
 * exit is written into guest RAM at RIP, where the handler reads it
 * through the page walker.
 *
 * Input: u8 set-up (bits 0-1: vCPUs - 1, bit 2: enumerated), a
 * kvm_vcpu_events image that every vCPU's fake starts with (stale state
 * the handler must overwrite), then records:
 *   u8 kind (bits 0-1: rdmsr, wrmsr, exception, exception;
 *            bits 2-3: vCPU; bit 4: MSR exit reason not FILTER;
 *            bits 5-6: index 0x33, 0xcf, raw, raw; bit 7: value bit 29 only;
 *            exceptions: bit 5: vector from u32, else #AC; bit 6: RIP as
 *            is, else 0x100000 + u64 % 1 MiB; bit 7: registers as is,
 *            else their value % 2 MiB)
 *   u32 MSR index, or vector (exception with kind bit 5), else PKRU
 *   u64 MSR value, or RIP
 *   u8 fake (exceptions: bit 0: SIGBUS pending; bits 1-3: the op that
 *            fails with EINVAL: none, get_regs, get_sregs, get_events,
 *            set_events, set_sregs, set_regs, get_pkru)
 * and for exceptions:
 *   u8 CPU (bit 0: CPL3, bit 1: CR0.AM, bit 2: RFLAGS.AC, bit 3: CR4.PKE,
 *           bit 4: CR0.WP clear, bit 5: CR4.SMAP, bit 6: RAM's 2 MiB
 *           page read-only, bit 7: compatibility mode (CS.L 0, CS.D 1))
 *   u64 the value of every general-purpose register (so that any
 *       [reg] or [reg+reg*s] operand lands near it)
 *   u8 n (low 4 bits), then n instruction bytes written at RIP.
 *
 * Oracles, against a model of per-vCPU TEST_CTRL, counters, the VM's
 * first-wins stop status and guest RAM:
 *  - MSR exits: unexpected ones (reason not FILTER, index not emulated) get
 *    #GP, a warning, and count nothing else; others follow the MSR model,
 *    data set only on success; counters per MSR and #GP exactly as the
 *    model;
 *  - exceptions: a pending SIGBUS is counted and cleared; a vector other
 *    than 17 stops the VM with VMM_EXIT_UNHANDLED;
 *  - #AC, from the architecture: with TEST_CTRL bit 29 set, or a legacy
 *    alignment check (CPL3, CR0.AM, RFLAGS.AC), it is injected as #AC(0)
 *    whatever the instruction; otherwise nothing injected is #AC, and an
 *    injected fault is #PF, #GP or #SS with CR2 (#PF only) inside the
 *    operand; at a non-canonical 64-bit RIP the handler leaves it to the
 *    CPU (the fetch faults); an emulated instruction moves RIP past its
 *    own length;
 *  - #AC, against the decision (emulate_plan on the vCPU's state before the
 *    exit, PKRU read only if it asks): the executor does exactly that:
 *    injects its exception as a fault with nothing else pending and every
 *    other event as KVM gave it (no payload flag), CR2 first for #PF, and
 *    the fetch's accessed bits; emulates it so that RAM and registers are
 *    what emulate_perform gives on a copy (and nothing happens once the VM is
 *    stopping: the other vCPUs cannot be paused); stops the VM with
 *    VMM_EXIT_SPLIT_LOCK naming the vCPU, RIP and the reason, with the
 *    bytes at RIP in the dump; leaves it to the CPU (nothing set, RAM
 *    unchanged); a failing op stops the VM with VMM_EXIT_HOST naming it;
 *  - only the first stop of the VM sets its status and prints; an
 *    injection prints nothing, an emulation one warning line.
 */
#include <errno.h>
#include <inttypes.h>

#include "fuzz.h"

#include "array_size.h"
#include "boot.h"
#include "dump.h"
#include "emulate.h"
#include "fake_kvm.h"
#include "splitlock.h"
#include "vcpu.h"
#include "vmm_boot.h"
#include "vmm_msr.h"
#include "x86.h"
#include "vmm_status.h"

#define RAM (2ull << 20)

struct model {
	uint64_t tc;
	struct stats st;
};

/* The ops bits 1-3 of an exception's fake byte make fail. */
static const size_t failing_op[8] = {
	FAKE_NOPS, FAKE_OP(get_regs), FAKE_OP(get_sregs), FAKE_OP(get_events),
	FAKE_OP(set_events), FAKE_OP(set_sregs), FAKE_OP(set_regs), FAKE_OP(get_pkru),
};

static void check_stats(const struct vcpu *v, const struct model *m)
{
	FUZZ_CHECK(memcmp(v->stats.msr_reads, m->st.msr_reads, sizeof(m->st.msr_reads)) == 0 &&
		   memcmp(v->stats.msr_writes, m->st.msr_writes, sizeof(m->st.msr_writes)) == 0,
		   "vCPU %u MSR counters", v->index);
	FUZZ_CHECK(v->stats.gp_injected == m->st.gp_injected, "vCPU %u: %" PRIu64 " #GP, model %" PRIu64,
		   v->index, v->stats.gp_injected, m->st.gp_injected);
	FUZZ_CHECK(v->stats.ac_injected == m->st.ac_injected, "vCPU %u: %" PRIu64 " #AC, model %" PRIu64,
		   v->index, v->stats.ac_injected, m->st.ac_injected);
	FUZZ_CHECK(v->stats.split_lock_stops == m->st.split_lock_stops, "vCPU %u split-lock stops",
		   v->index);
	FUZZ_CHECK(v->stats.split_locks_emulated == m->st.split_locks_emulated,
		   "vCPU %u: %" PRIu64 " emulated, model %" PRIu64, v->index,
		   v->stats.split_locks_emulated, m->st.split_locks_emulated);
	FUZZ_CHECK(v->stats.split_locks_detected == 0, "the hardware path counted a software check");
	FUZZ_CHECK(v->stats.sigbus == m->st.sigbus, "vCPU %u SIGBUS count", v->index);
	FUZZ_CHECK(v->msrs.test_ctrl == m->tc, "vCPU %u TEST_CTRL 0x%" PRIx64 ", model 0x%" PRIx64,
		   v->index, v->msrs.test_ctrl, m->tc);
}

static void msr_exit(struct vcpu *v, struct model *m, bool en, bool write, uint32_t reason,
		     uint32_t index, uint64_t val)
{
	bool is_tc = index == MSR_TEST_CTRL, is_cc = index == MSR_IA32_CORE_CAPABILITIES;
	unsigned slot = is_tc ? STATS_MSR_TEST_CTRL : STATS_MSR_CORE_CAPABILITIES;
	bool expected = reason == KVM_MSR_EXIT_REASON_FILTER && (is_tc || is_cc);
	bool ok;
	struct capture cap;

	v->run->exit_reason = write ? KVM_EXIT_X86_WRMSR : KVM_EXIT_X86_RDMSR;
	v->run->msr.reason = reason;
	v->run->msr.index = index;
	v->run->msr.data = write ? val : 0x0badbadbadbadbadull;
	v->run->msr.error = 0xff;
	fuzz_capture_begin(&cap);
	if (write)
		splitlock_handle_wrmsr(v);
	else
		splitlock_handle_rdmsr(v);
	fuzz_capture_end(&cap);

	if (!expected) {
		m->st.gp_injected++;
		FUZZ_CHECK(v->run->msr.error == 1, "unexpected MSR exit 0x%x: error %u", index,
			   v->run->msr.error);
		FUZZ_CHECK(strstr(cap.buf, "unexpected MSR exit"), "no warning: %s", cap.buf);
		free(cap.buf);
		return;
	}
	FUZZ_CHECK(cap.len == 0, "MSR exit printed: %s", cap.buf);
	free(cap.buf);
	if (write) {
		m->st.msr_writes[slot]++;
		ok = is_tc && en && !(val & ~TEST_CTRL_SPLIT_LOCK_DETECT);
		if (ok)
			m->tc = val;
		FUZZ_CHECK(v->run->msr.data == val, "wrmsr changed the run page's data");
	} else {
		m->st.msr_reads[slot]++;
		ok = is_cc || (is_tc && en);
		if (ok)
			FUZZ_CHECK(v->run->msr.data == (is_cc ? (en ? CORE_CAP_SPLIT_LOCK_DETECT : 0) : m->tc),
				   "rdmsr 0x%x = 0x%llx", index, v->run->msr.data);
		else
			FUZZ_CHECK(v->run->msr.data == 0x0badbadbadbadbadull, "#GP rdmsr wrote data");
	}
	if (!ok)
		m->st.gp_injected++;
	FUZZ_CHECK(v->run->msr.error == (ok ? 0 : 1), "MSR 0x%x %s (enumerated %d): error %u",
		   index, write ? "write" : "read", en, v->run->msr.error);
}

/* The CPU state of an #AC exit, from the input. */
struct ac_state {
	uint64_t rip, gpr;
	uint32_t pkru;
	uint8_t cpu;
	uint8_t code[15];
	size_t ncode;
	size_t fail;            /* FAKE_OP slot, or FAKE_NOPS */
};

static void load_state(struct vcpu *v, const struct ac_state *a)
{
	struct fake_vcpu *fc = fake_vcpu(v);
	uint8_t *ram = v->vm->mem;
	__u64 *gprs[] = { &fc->regs.rax, &fc->regs.rbx, &fc->regs.rcx, &fc->regs.rdx,
			  &fc->regs.rsi, &fc->regs.rdi, &fc->regs.rsp, &fc->regs.rbp,
			  &fc->regs.r8, &fc->regs.r9, &fc->regs.r10, &fc->regs.r11,
			  &fc->regs.r12, &fc->regs.r13, &fc->regs.r14, &fc->regs.r15 };
	uint64_t pde;

	for (size_t i = 0; i < ARRAY_SIZE(gprs); i++)
		*gprs[i] = a->gpr;
	fc->regs.rip = a->rip;
	fc->regs.rflags = X86_RFLAGS_FIXED | (a->cpu & 4 ? X86_RFLAGS_AC : 0);
	memset(&fc->sregs, 0, sizeof(fc->sregs));
	boot_init_sregs(&fc->sregs);
	if (a->cpu & 1)
		fc->sregs.cs.dpl = fc->sregs.ss.dpl = 3;
	if (a->cpu & 2)
		fc->sregs.cr0 |= X86_CR0_AM;
	if (a->cpu & 8)
		fc->sregs.cr4 |= X86_CR4_PKE;
	if (a->cpu & 16)
		fc->sregs.cr0 &= ~X86_CR0_WP;
	if (a->cpu & 32)
		fc->sregs.cr4 |= X86_CR4_SMAP;
	if (a->cpu & 128) {
		fc->sregs.cs.l = 0;
		fc->sregs.cs.db = 1;
	}
	fc->pkru = a->pkru;
	memset(fc->fail, 0, sizeof(fc->fail));
	if (a->fail < FAKE_NOPS)
		fc->fail[a->fail] = EINVAL;
	memcpy(&pde, ram + BOOT_PD_ADDR, sizeof(pde));
	pde = a->cpu & 64 ? pde & ~X86_PTE_RW : pde | X86_PTE_RW;
	memcpy(ram + BOOT_PD_ADDR, &pde, sizeof(pde));
	for (size_t i = 0; i < a->ncode && a->rip < RAM && i < RAM - a->rip; i++)
		ram[a->rip + i] = a->code[i];
}

static bool canonical48(uint64_t a)
{
	return (uint64_t)((int64_t)(a << 16) >> 16) == a;
}

static void ac_exit(struct vm *vm, struct vcpu *v, struct model *m, const struct ac_state *a,
		    int *status, struct capture *cap)
{
	static uint8_t want[RAM];	/* RAM before the exit, then as the model has it after */
	struct fake_vcpu *fc = fake_vcpu(v);
	struct kvm_vcpu_events ev0, want_ev;
	unsigned sets = 0;	/* KVM_SET_VCPU_EVENTS calls outside an injection */
	struct kvm_regs regs0, wregs;
	struct kvm_sregs sregs0;
	struct guest_mem wmem = { want, RAM };
	struct emulate_snapshot s;
	struct emulate_plan p;
	unsigned calls[FAKE_NOPS];
	bool first = *status < 0, asked = m->tc & TEST_CTRL_SPLIT_LOCK_DETECT;
	bool legacy = (a->cpu & 7) == 7, host = false;
	char want_text[160];

	load_state(v, a);
	ev0 = want_ev = fc->events;
	regs0 = fc->regs;
	sregs0 = fc->sregs;
	memcpy(want, vm->mem, RAM);
	memcpy(calls, fc->calls, sizeof(calls));

	/* The decision, as splitlock.c takes it. */
	memset(&s, 0, sizeof(s));
	s.source = EMULATE_SOURCE_HARDWARE;
	s.ac_requested = asked;
	s.regs = regs0;
	s.sregs = sregs0;
	s.maxphyaddr = v->maxphyaddr;
	s.mem = (struct guest_mem){ want, RAM };
	emulate_plan(&s, &p);
	if (p.needs_pkru && a->fail != FAKE_OP(get_pkru)) {
		s.pkru_known = true;
		s.pkru = a->pkru;
		emulate_plan(&s, &p);
	}

	fuzz_capture_begin(cap);
	splitlock_handle_exception(v);
	fuzz_capture_end(cap);

	wregs = regs0;
	if (a->fail == FAKE_OP(get_regs) || a->fail == FAKE_OP(get_sregs)) {
		host = true;
		if (first)
			FUZZ_CHECK(strstr(cap->buf, "reading registers after a split-lock #AC failed"),
				   "message: %s", cap->buf);
		p.kind = EMULATE_PLAN_NONE;	/* nothing else may happen */
	} else if (p.needs_pkru && a->fail == FAKE_OP(get_pkru)) {
		host = true;
		if (first)
			FUZZ_CHECK(strstr(cap->buf, "reading PKRU with KVM_GET_XSAVE failed"),
				   "message: %s", cap->buf);
		p.kind = EMULATE_PLAN_NONE;
	}
	/* The architecture, whatever the plan says. */
	if (!host && (asked || legacy))
		FUZZ_CHECK(p.kind == EMULATE_PLAN_INJECT && p.ex.vector == X86_VEC_AC,
			   "#AC (asked %d, legacy %d) became plan %d", asked, legacy, (int)p.kind);
	if (!host && !asked && !legacy && !(a->cpu & 128) && !canonical48(a->rip))
		FUZZ_CHECK(p.kind == EMULATE_PLAN_NATIVE, "non-canonical RIP: plan %d", (int)p.kind);

	switch (p.kind) {
	case EMULATE_PLAN_NONE:
	case EMULATE_PLAN_NATIVE:
		break;
	case EMULATE_PLAN_STOP:
		m->st.split_lock_stops++;
		if (first) {
			*status = VMM_EXIT_SPLIT_LOCK;
			snprintf(want_text, sizeof(want_text), "vCPU %u: split lock at RIP 0x%" PRIx64 " (",
				 v->index, a->rip);
			FUZZ_CHECK(strstr(cap->buf, want_text), "want \"%s\" in: %s", want_text, cap->buf);
			FUZZ_CHECK(strstr(cap->buf, p.why), "no reason \"%s\" in: %s", p.why, cap->buf);
			/* The instruction reached the dump through the fake's walker. */
			if (a->rip >= BOOT_IMAGE_ADDR && a->rip + 16 <= RAM) {
				char bytes[64];

				dump_format_bytes(bytes, sizeof(bytes), want + a->rip, 16);
				snprintf(want_text, sizeof(want_text), "bytes at RIP: %s\n", bytes);
				FUZZ_CHECK(strstr(cap->buf, want_text), "want \"%s\" in: %s", want_text,
					   cap->buf);
			}
		}
		break;
	case EMULATE_PLAN_INJECT: {
		const struct kvm_vcpu_events *e = &fc->events;
		uint8_t vec = p.ex.vector;

		FUZZ_CHECK(vec == X86_VEC_AC || vec == X86_VEC_PF || vec == X86_VEC_GP ||
			   vec == X86_VEC_SS, "injects vector %u", vec);
		FUZZ_CHECK((vec == X86_VEC_AC) == (asked || legacy), "#AC injected (asked %d, legacy %d)",
			   asked, legacy);
		FUZZ_CHECK(p.ex.has_cr2 == (vec == X86_VEC_PF) &&
			   (!p.ex.has_cr2 || p.ex.cr2 - p.access.la < p.access.size),
			   "vector %u with CR2 %d 0x%" PRIx64 " for %u bytes at 0x%" PRIx64, vec,
			   p.ex.has_cr2, p.ex.cr2, p.access.size, p.access.la);
		/* Every vector planned is a fault: RF goes into RFLAGS first. */
		if (a->fail == FAKE_OP(get_events) || a->fail == FAKE_OP(set_events) ||
		    a->fail == FAKE_OP(get_regs) || a->fail == FAKE_OP(set_regs) ||
		    (p.ex.has_cr2 && a->fail == FAKE_OP(set_sregs))) {
			host = true;
			if (first)
				FUZZ_CHECK(strstr(cap->buf, p.ex.has_cr2 ? "KVM_SET_SREGS and KVM_SET_VCPU_EVENTS failed"
								       : "KVM_SET_VCPU_EVENTS failed"),
					   "message: %s", cap->buf);
			/* CR2, then RFLAGS, then the event: RF stays where only the last failed. */
			if (a->fail == FAKE_OP(get_events) || a->fail == FAKE_OP(set_events))
				wregs.rflags |= X86_RFLAGS_RF;
			break;
		}
		wregs.rflags |= X86_RFLAGS_RF;
		emulate_plan_fetched(&p, &wmem);
		if (vec == X86_VEC_AC)
			m->st.ac_injected++;
		FUZZ_CHECK(fc->calls[FAKE_OP(set_events)] == calls[FAKE_OP(set_events)] + 1,
			   "set_events not called once");
		FUZZ_CHECK(e->exception.injected == 1 && e->exception.pending == 0 &&
			   e->exception.nr == vec && e->exception.has_error_code == p.ex.has_error_code &&
			   e->exception.error_code == p.ex.error_code && e->exception_has_payload == 0 &&
			   e->exception_payload == 0,
			   "vector %u injected as injected=%u pending=%u nr=%u has_error_code=%u error_code=%u payload=%u/%llx",
			   vec, e->exception.injected, e->exception.pending, e->exception.nr,
			   e->exception.has_error_code, e->exception.error_code,
			   e->exception_has_payload, e->exception_payload);
		/* Everything else is handed back as KVM gave it. */
		FUZZ_CHECK(memcmp(&e->interrupt, &ev0.interrupt, sizeof(e->interrupt)) == 0 &&
			   memcmp(&e->nmi, &ev0.nmi, sizeof(e->nmi)) == 0 &&
			   e->sipi_vector == ev0.sipi_vector &&
			   e->flags == (ev0.flags & ~(uint32_t)KVM_VCPUEVENT_VALID_PAYLOAD),
			   "the injection changed other events");
		FUZZ_CHECK(fc->sregs.cr2 == (p.ex.has_cr2 ? p.ex.cr2 : sregs0.cr2), "CR2 0x%llx",
			   fc->sregs.cr2);
		break;
	}
	case EMULATE_PLAN_EMULATE:
		FUZZ_CHECK(!asked && !legacy, "emulated what the guest asked #AC for");
		if (!first)
			break;	/* the other vCPUs cannot be paused: nothing happens */
		emulate_perform(&p, &wmem, &wregs);
		FUZZ_CHECK(wregs.rip == ((regs0.rip + p.insn.length) &
					 (a->cpu & 128 ? 0xffffffffull : ~0ull)),
			   "RIP 0x%llx after %u bytes at 0x%llx", wregs.rip, p.insn.length, regs0.rip);
		if (a->fail == FAKE_OP(set_regs)) {
			host = true;
			wregs = regs0;
			if (first)
				FUZZ_CHECK(strstr(cap->buf, "KVM_SET_REGS failed"), "message: %s", cap->buf);
			break;
		}
		/* Completed in the guest's place: an interrupt shadow it sat in ends. */
		if (a->fail == FAKE_OP(get_events) ||
		    (ev0.interrupt.shadow && a->fail == FAKE_OP(set_events))) {
			host = true;
			sets = a->fail == FAKE_OP(set_events);
			FUZZ_CHECK(strstr(cap->buf, sets ? "KVM_SET_VCPU_EVENTS (interrupt shadow) failed"
							 : "KVM_GET_VCPU_EVENTS failed"),
				   "message: %s", cap->buf);
			break;
		}
		if (ev0.interrupt.shadow) {
			want_ev.interrupt.shadow = 0;
			want_ev.flags = (ev0.flags & KVM_VCPUEVENT_VALID_NMI_PENDING) |
					KVM_VCPUEVENT_VALID_SHADOW;
			sets = 1;
		}
		m->st.split_locks_emulated++;
		snprintf(want_text, sizeof(want_text), "vCPU %u: split lock at RIP 0x%" PRIx64 " (",
			 v->index, a->rip);
		FUZZ_CHECK(strstr(cap->buf, want_text) && strstr(cap->buf, ") emulated") &&
			   strchr(cap->buf, '\n') == cap->buf + cap->len - 1, "want one line \"%s...emulated\" in: %s", want_text,
			   cap->buf);
		break;
	}
	if (host && first)
		*status = VMM_EXIT_HOST;
	if (p.kind != EMULATE_PLAN_INJECT)
		FUZZ_CHECK(fc->calls[FAKE_OP(set_events)] == calls[FAKE_OP(set_events)] + sets &&
			   memcmp(&fc->events, &want_ev, sizeof(want_ev)) == 0,
			   "events set for plan %d (shadow %u)", (int)p.kind, ev0.interrupt.shadow);
	if (p.kind != EMULATE_PLAN_INJECT || host)
		FUZZ_CHECK(fc->sregs.cr2 == sregs0.cr2 || (host && p.ex.has_cr2), "CR2 changed");
	FUZZ_CHECK(memcmp(&fc->regs, &wregs, sizeof(wregs)) == 0, "registers (plan %d)", (int)p.kind);
	if (memcmp(vm->mem, want, RAM)) {
		size_t i = 0;

		while (vm->mem[i] == want[i])
			i++;
		FUZZ_CHECK(0, "plan %d: RAM at 0x%zx is 0x%02x, model 0x%02x", (int)p.kind, i,
			   vm->mem[i], want[i]);
	}
	/* Only the stop that wins prints; an injection prints nothing. */
	if (!(first && *status >= 0) && !(p.kind == EMULATE_PLAN_EMULATE && !host && first))
		FUZZ_CHECK(cap->len == 0, "printed: %s", cap->buf);
}

static void exception_exit(struct vm *vm, struct vcpu *v, struct model *m, uint32_t vector,
			   bool sigbus, const struct ac_state *a, int *status)
{
	bool first = *status < 0;
	struct capture cap;
	char want[128];

	v->run->exit_reason = KVM_EXIT_EXCEPTION;
	v->run->ex.exception = vector;
	v->run->ex.error_code = 0;
	v->sigbus = sigbus;
	if (sigbus)
		m->st.sigbus++;
	if (vector == X86_VEC_AC) {
		ac_exit(vm, v, m, a, status, &cap);
	} else {
		fuzz_capture_begin(&cap);
		splitlock_handle_exception(v);
		fuzz_capture_end(&cap);
		if (first) {
			*status = VMM_EXIT_UNHANDLED;
			snprintf(want, sizeof(want), "exception %u ", vector);
			FUZZ_CHECK(strstr(cap.buf, want), "no message for vector %u: %s", vector, cap.buf);
		} else {
			FUZZ_CHECK(cap.len == 0, "printed: %s", cap.buf);
		}
	}
	free(cap.buf);
	FUZZ_CHECK(v->sigbus == 0, "SIGBUS left pending");
	FUZZ_CHECK(vm_stopping(vm) == (*status >= 0), "stopping %d, model status %d",
		   vm_stopping(vm), *status);
	if (*status >= 0)
		FUZZ_CHECK(vm->status == *status, "VM status %d, model %d", vm->status, *status);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = fuzz_in(data, size);
	uint8_t setup = fuzz_u8(&in);
	unsigned ncpus = 1 + (setup & 3);
	bool en = setup & 4;
	struct kvm_vcpu_events events;
	struct model models[4];
	struct fake_vm f;
	int status = -1;

	memset(&events, 0, sizeof(events));
	fuzz_bytes(&in, &events, sizeof(events));
	memset(models, 0, sizeof(models));
	FUZZ_SETUP(fake_vm_init(&f, ncpus, RAM) == 0);
	f.vm.split_lock_enumerated = en;
	for (unsigned i = 0; i < ncpus; i++)
		f.cpus[i].events = events;

	while (in.n) {
		uint8_t kind = fuzz_u8(&in);
		uint32_t raw = fuzz_u32(&in);
		uint64_t val = fuzz_u64(&in);
		uint8_t fb = fuzz_u8(&in);
		unsigned cpu = ((kind >> 2) & 3) % ncpus;
		struct vcpu *v = &f.vm.vcpus[cpu];

		if ((kind & 3) < 2) {
			uint32_t index = (kind & 0x60) == 0 ? MSR_TEST_CTRL :
					 (kind & 0x60) == 0x20 ? MSR_IA32_CORE_CAPABILITIES : raw;
			uint32_t reason = kind & 0x10 ? (raw & 1 ? KVM_MSR_EXIT_REASON_UNKNOWN :
							 KVM_MSR_EXIT_REASON_INVAL) :
					  KVM_MSR_EXIT_REASON_FILTER;

			if (kind & 0x80)
				val &= TEST_CTRL_SPLIT_LOCK_DETECT;
			msr_exit(v, &models[cpu], en, kind & 1, reason, index, val);
		} else {
			struct ac_state a = { 0 };

			a.rip = kind & 0x40 ? val : BOOT_IMAGE_ADDR + val % (RAM - BOOT_IMAGE_ADDR);
			a.pkru = raw;
			a.fail = failing_op[(fb >> 1) & 7];
			a.cpu = fuzz_u8(&in);
			a.gpr = fuzz_u64(&in);
			if (!(kind & 0x80))
				a.gpr %= RAM;
			a.ncode = fuzz_u8(&in) & 15;
			if (a.ncode > sizeof(a.code))
				a.ncode = sizeof(a.code);
			a.ncode = fuzz_bytes(&in, a.code, a.ncode);
			exception_exit(&f.vm, v, &models[cpu], kind & 0x20 ? raw : X86_VEC_AC, fb & 1,
				       &a, &status);
		}
		for (unsigned i = 0; i < ncpus; i++)
			check_stats(&f.vm.vcpus[i], &models[i]);
	}

	fake_vm_destroy(&f);
	return 0;
}
