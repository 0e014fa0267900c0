/* SPDX-License-Identifier: MIT */
/*
 * The split-lock exit handlers, driven through a fake KVM layer (as
 * tests/unit/test_splitlock.c does) with random RDMSR, WRMSR and EXCEPTION
 * exits on a VM of 1-4 vCPUs.
 *
 * Input: u8 set-up (bits 0-1: vCPUs - 1, bit 2: enumerated), a
 * kvm_vcpu_events image that the fake returns (stale state the handler
 * must overwrite), then records:
 *   u8 kind (bits 0-1: rdmsr, wrmsr, exception, exception;
 *            bits 2-3: vCPU; bit 4: MSR exit reason not FILTER;
 *            bits 5-6: index 0x33, 0xcf, raw, raw; bit 7: value bit 29 only)
 *   u32 index or vector (exception: vector 17 unless bit 5 of kind)
 *   u64 value or RIP
 *   u8 fake (bit 0: SIGBUS pending, bit 1: get_events fails,
 *            bit 2: set_events fails, bits 4-7: bytes readable at RIP)
 *
 * The VM has no guest RAM (so no page tables either), so a split lock the
 * guest did not ask #AC for can be neither decoded nor emulated: it stops the VM, with or without
 * the emulation path of --split-lock=emulate. (Emulation itself is
 * covered by fuzz-decode, fuzz-emulate and fuzz-pagewalk.)
 *
 * Oracles, against a model of per-vCPU TEST_CTRL, counters and the VM's
 * first-wins stop status:
 *  - MSR exits: unexpected ones (reason not FILTER, index not emulated) get
 *    #GP, a warning, and count nothing else; others follow the MSR model,
 *    data set only on success; counters per MSR and #GP exactly as the
 *    model;
 *  - exceptions: a pending SIGBUS is counted and cleared; a vector other
 *    than 17 stops the VM with VMM_EXIT_UNHANDLED; #AC with bit 29 clear
 *    at a non-canonical RIP is left to the CPU (its fetch faults), else
 *    stops the VM with VMM_EXIT_SPLIT_LOCK, counted, and when first names
 *    the vCPU and RIP; with bit 29 set it is injected as a fault with error
 *    code 0, nothing else pending and every other event as KVM gave it
 *    (but no payload flag: the exception carries none),
 *    or, when the fake fails, the VM stops with VMM_EXIT_HOST;
 *  - only the first stop of the VM sets its status and prints.
 */
#include <fcntl.h>
#include <inttypes.h>

#include "fuzz.h"

#include "boot.h"
#include "splitlock.h"
#include "vm.h"
#include "vmm_msr.h"
#include "vmm_status.h"

static struct {
	struct kvm_vcpu_events events;
	bool get_events_fails, set_events_fails;
	uint64_t rip;
	uint8_t code[15];
	size_t code_len;
	int set_calls;
} fake;

static int fake_get_regs(struct vcpu *v, struct kvm_regs *r)
{
	(void)v;
	memset(r, 0, sizeof(*r));
	r->rip = fake.rip;
	return 0;
}

/* The boot protocol's long mode, whose page tables are not there. */
static int fake_get_sregs(struct vcpu *v, struct kvm_sregs *s)
{
	(void)v;
	memset(s, 0, sizeof(*s));
	boot_init_sregs(s);
	return 0;
}

static int fake_set_sregs(struct vcpu *v, const struct kvm_sregs *s)
{
	(void)v;
	(void)s;
	return -22;	/* no paging here, so no #PF to give CR2 to */
}

static int fake_get_events(struct vcpu *v, struct kvm_vcpu_events *ev)
{
	(void)v;
	if (fake.get_events_fails)
		return -22;
	*ev = fake.events;
	return 0;
}

static int fake_set_events(struct vcpu *v, const struct kvm_vcpu_events *ev)
{
	(void)v;
	fake.set_calls++;
	if (fake.set_events_fails)
		return -22;
	fake.events = *ev;
	return 0;
}

static size_t fake_read_virt(struct vcpu *v, uint64_t gva, uint8_t *buf, size_t len)
{
	(void)v;
	if (gva != fake.rip)
		return 0;
	if (len > fake.code_len)
		len = fake.code_len;
	memcpy(buf, fake.code, len);
	return len;
}

static const struct vcpu_ops fake_ops = {
	.get_regs = fake_get_regs,
	.get_sregs = fake_get_sregs,
	.get_events = fake_get_events,
	.set_events = fake_set_events,
	.set_sregs = fake_set_sregs,
	.read_virt = fake_read_virt,
};

struct model {
	uint64_t tc;
	struct vcpu_stats st;
};

static int devnull(void)
{
	static int fd = -1;

	if (fd < 0) {
		fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		FUZZ_SETUP(fd >= 0);
	}
	return fd;
}

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
	struct fuzz_capture cap;

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

static void exception_exit(struct vm *vm, struct vcpu *v, struct model *m, uint32_t vector,
			   bool sigbus, int *status)
{
	struct kvm_vcpu_events before = fake.events;
	int set_calls = fake.set_calls;
	bool first = *status < 0;
	struct fuzz_capture cap;
	char want[128];

	v->run->exit_reason = KVM_EXIT_EXCEPTION;
	v->run->ex.exception = vector;
	v->run->ex.error_code = 0;
	v->sigbus = sigbus;
	fuzz_capture_begin(&cap);
	splitlock_handle_exception(v);
	fuzz_capture_end(&cap);

	FUZZ_CHECK(v->sigbus == 0, "SIGBUS left pending");
	if (sigbus)
		m->st.sigbus++;
	if (vector != X86_VEC_AC) {
		if (first) {
			*status = VMM_EXIT_UNHANDLED;
			snprintf(want, sizeof(want), "exception %u ", vector);
			FUZZ_CHECK(strstr(cap.buf, want), "no message for vector %u: %s", vector, cap.buf);
		}
	} else if (!(m->tc & TEST_CTRL_SPLIT_LOCK_DETECT) &&
		   (uint64_t)((int64_t)(fake.rip << 16) >> 16) != fake.rip) {
		/* The fetch faults (#GP) now: the CPU raises it on re-entry. */
		FUZZ_CHECK(fake.set_calls == set_calls, "something injected for a non-canonical RIP");
	} else if (!(m->tc & TEST_CTRL_SPLIT_LOCK_DETECT)) {
		m->st.split_lock_stops++;
		if (first) {
			*status = VMM_EXIT_SPLIT_LOCK;
			snprintf(want, sizeof(want), "vCPU %u: split lock at RIP 0x%" PRIx64 " (",
				 v->index, fake.rip);
			FUZZ_CHECK(strstr(cap.buf, want), "want \"%s\" in: %s", want, cap.buf);
		}
	} else if (fake.get_events_fails || fake.set_events_fails) {
		if (first) {
			*status = VMM_EXIT_HOST;
			FUZZ_CHECK(strstr(cap.buf, "KVM_SET_VCPU_EVENTS failed"), "message: %s", cap.buf);
		}
		FUZZ_CHECK(fake.set_calls == set_calls + !fake.get_events_fails, "set_events calls");
	} else {
		const struct kvm_vcpu_events *e = &fake.events;

		m->st.ac_injected++;
		FUZZ_CHECK(fake.set_calls == set_calls + 1, "set_events not called once");
		FUZZ_CHECK(e->exception.injected == 1 && e->exception.pending == 0 &&
			   e->exception.nr == X86_VEC_AC && e->exception.has_error_code == 1 &&
			   e->exception.error_code == 0 && e->exception_has_payload == 0 &&
			   e->exception_payload == 0,
			   "#AC injected as injected=%u pending=%u nr=%u has_error_code=%u error_code=%u payload=%u/%llx",
			   e->exception.injected, e->exception.pending, e->exception.nr,
			   e->exception.has_error_code, e->exception.error_code,
			   e->exception_has_payload, e->exception_payload);
		/* Everything else is handed back as KVM gave it. */
		FUZZ_CHECK(memcmp(&e->interrupt, &before.interrupt, sizeof(e->interrupt)) == 0 &&
			   memcmp(&e->nmi, &before.nmi, sizeof(e->nmi)) == 0 &&
			   e->sipi_vector == before.sipi_vector &&
			   e->flags == (before.flags & ~(uint32_t)KVM_VCPUEVENT_VALID_PAYLOAD),
			   "#AC injection changed other events");
	}
	/* Only the stop that wins prints; an injection prints nothing. */
	if (!(first && *status >= 0))
		FUZZ_CHECK(cap.len == 0, "printed: %s", cap.buf);
	free(cap.buf);
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
	struct vmm_options opts = { 0 };
	struct kvm_run *runs;
	struct model models[4];
	struct vm vm;
	int status = -1;

	memset(&fake, 0, sizeof(fake));
	fuzz_bytes(&in, &fake.events, sizeof(fake.events));
	memset(models, 0, sizeof(models));
	runs = calloc(ncpus, sizeof(*runs));
	FUZZ_SETUP(runs);
	FUZZ_SETUP(vm_init_common(&vm, &opts, ncpus, devnull()) == 0);
	vm.split_lock_enumerated = en;
	vm.host_mode = "fatal";
	for (unsigned i = 0; i < ncpus; i++) {
		vm.vcpus[i].run = &runs[i];
		vm.vcpus[i].ops = &fake_ops;
		msr_reset(&vm.vcpus[i].msrs);
	}

	while (in.n) {
		uint8_t kind = fuzz_u8(&in);
		uint32_t raw = fuzz_u32(&in);
		uint64_t val = fuzz_u64(&in);
		uint8_t f = fuzz_u8(&in);
		unsigned cpu = ((kind >> 2) & 3) % ncpus;
		struct vcpu *v = &vm.vcpus[cpu];

		if (kind & 0x80)
			val &= TEST_CTRL_SPLIT_LOCK_DETECT;
		if ((kind & 3) < 2) {
			uint32_t index = (kind & 0x60) == 0 ? MSR_TEST_CTRL :
					 (kind & 0x60) == 0x20 ? MSR_IA32_CORE_CAPABILITIES : raw;
			uint32_t reason = kind & 0x10 ? (raw & 1 ? KVM_MSR_EXIT_REASON_UNKNOWN :
							 KVM_MSR_EXIT_REASON_INVAL) :
					  KVM_MSR_EXIT_REASON_FILTER;

			msr_exit(v, &models[cpu], en, kind & 1, reason, index, val);
		} else {
			fake.get_events_fails = f & 2;
			fake.set_events_fails = f & 4;
			fake.code_len = f >> 4;
			if (fake.code_len > sizeof(fake.code))
				fake.code_len = sizeof(fake.code);
			fake.rip = val;
			for (size_t i = 0; i < fake.code_len; i++)
				fake.code[i] = (uint8_t)(raw >> (8 * (i & 3))) ^ (uint8_t)i;
			exception_exit(&vm, v, &models[cpu], kind & 0x20 ? raw : X86_VEC_AC, f & 1,
				       &status);
		}
		for (unsigned i = 0; i < ncpus; i++)
			check_stats(&vm.vcpus[i], &models[i]);
	}

	vm_destroy_common(&vm);
	free(runs);
	return 0;
}
