/* SPDX-License-Identifier: MIT */
#include "dump.h"

#include <string.h>

#include "emulate.h"
#include "log.h"
#include "pagewalk.h"
#include "vcpu.h"

static void seg(FILE *out, const char *name, const struct kvm_segment *s)
{
	fprintf(out, "vmm:   %-3s sel 0x%04x base 0x%016llx limit 0x%08x type 0x%x dpl %u%s%s%s\n",
		name, s->selector, (unsigned long long)s->base, s->limit, s->type,
		s->dpl, s->l ? " L" : "", s->db ? " D" : "",
		s->unusable ? " unusable" : (s->present ? "" : " not-present"));
}

static void dump_regs(FILE *out, unsigned cpu, const struct kvm_regs *r,
		      const struct kvm_sregs *s)
{
	fprintf(out, "vmm: vCPU %u registers:\n", cpu);
	fprintf(out, "vmm:   RIP 0x%016llx RSP 0x%016llx RFLAGS 0x%08llx\n",
		r->rip, r->rsp, r->rflags);
	fprintf(out, "vmm:   RAX 0x%016llx RBX 0x%016llx RCX 0x%016llx RDX 0x%016llx\n",
		r->rax, r->rbx, r->rcx, r->rdx);
	fprintf(out, "vmm:   RSI 0x%016llx RDI 0x%016llx RBP 0x%016llx R8  0x%016llx\n",
		r->rsi, r->rdi, r->rbp, r->r8);
	fprintf(out, "vmm:   R9  0x%016llx R10 0x%016llx R11 0x%016llx R12 0x%016llx\n",
		r->r9, r->r10, r->r11, r->r12);
	fprintf(out, "vmm:   R13 0x%016llx R14 0x%016llx R15 0x%016llx\n",
		r->r13, r->r14, r->r15);
	fprintf(out, "vmm:   CR0 0x%016llx CR2 0x%016llx CR3 0x%016llx CR4 0x%016llx\n",
		s->cr0, s->cr2, s->cr3, s->cr4);
	fprintf(out, "vmm:   EFER 0x%016llx CPL %u GDT 0x%llx/0x%x IDT 0x%llx/0x%x\n",
		s->efer, s->cs.dpl, (unsigned long long)s->gdt.base, s->gdt.limit,
		(unsigned long long)s->idt.base, s->idt.limit);
	seg(out, "CS", &s->cs);
	seg(out, "SS", &s->ss);
	seg(out, "DS", &s->ds);
	seg(out, "TR", &s->tr);
}

void dump_format_bytes(char *buf, size_t buflen, const uint8_t *bytes, size_t len)
{
	size_t off = 0;

	if (buflen == 0)
		return;
	buf[0] = '\0';
	if (len == 0) {
		snprintf(buf, buflen, "(unreadable)");
		return;
	}
	for (size_t i = 0; i < len && off + 4 <= buflen; i++)
		off += (size_t)snprintf(buf + off, buflen - off, "%s%02x",
					i ? " " : "", bytes[i]);
}

bool dump_is_reset_state(const struct kvm_regs *r, const struct kvm_sregs *s)
{
	return r->rip == 0xfff0 && s->cs.selector == 0xf000 && s->cs.base == 0xffff0000 &&
	       !(s->cr0 & X86_CR0_PE);
}

void dump_vcpu(struct vcpu *v)
{
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	struct guest_mem m = { v->vm->mem, v->vm->ram_size };
	struct paging p;
	uint8_t insn[16];
	char bytes[64];
	size_t n;
	const char *call = "KVM_GET_REGS";
	int r = v->ops->get_regs(v, &regs);

	if (!r) {
		call = "KVM_GET_SREGS";
		r = v->ops->get_sregs(v, &sregs);
	}
	if (r) {
		warn("vCPU %u: no register dump: %s failed: %s (errno %d)", v->index, call,
		     strerror(-r), -r);
		return;
	}
	if (dump_is_reset_state(&regs, &sregs)) {
		/* Only KVM puts it there: the VMM starts every vCPU in long mode. */
		fprintf(stderr, "vmm: vCPU %u registers: lost: KVM reset the vCPU to its INIT state "
			"(RIP 0xfff0, CS 0xf000), as KVM on AMD SVM does after a triple fault\n",
			v->index);
		return;
	}
	flockfile(stderr);
	dump_regs(stderr, v->index, &regs, &sregs);
	/* The bytes the CPU would fetch, through the walker the decoder uses. */
	emulate_paging(&p, &sregs, &regs, 0, v->maxphyaddr);
	n = pagewalk_read(&m, &p, regs.rip, insn, sizeof(insn));
	dump_format_bytes(bytes, sizeof(bytes), insn, n);
	fprintf(stderr, "vmm:   bytes at RIP: %s\n", bytes);
	funlockfile(stderr);
}
