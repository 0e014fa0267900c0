/* SPDX-License-Identifier: MIT */
#include "ioport.h"

#include <string.h>

#include "log.h"
#include "vmm_ports.h"
#include "vmm_status.h"

static void guest_exit(struct vcpu *v, uint32_t status)
{
	if (status > GUEST_STATUS_MAX) {
		if (vm_stop(v->vm, VMM_EXIT_BAD_STATUS))
			warn("vCPU %u wrote exit status %u to port 0x%x; guests may use 0-%d, so vmm exits with %d",
			     v->index, status, PORT_EXIT, GUEST_STATUS_MAX, VMM_EXIT_BAD_STATUS);
		return;
	}
	vm_stop(v->vm, (int)status);
}

static void com1(struct vcpu *v, struct kvm_run *run, uint8_t *data, size_t bytes)
{
	if (run->io.direction == KVM_EXIT_IO_IN) {
		uint8_t val = run->io.port == PORT_COM1_LSR ? COM1_LSR_THRE | COM1_LSR_TEMT : 0;

		memset(data, val, bytes);
		return;
	}
	if (run->io.port != PORT_COM1)
		return;	/* divisor, FIFO and modem settings change nothing here */
	/* Only the low byte of each element reaches the wire, as on a 16550. */
	for (size_t i = 0; i < bytes; i += run->io.size)
		serial_write(&v->vm->serial, v->index, data + i, 1);
}

void ioport_handle(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	uint8_t *data = (uint8_t *)run + run->io.data_offset;
	size_t bytes = (size_t)run->io.size * run->io.count;
	bool out = run->io.direction == KVM_EXIT_IO_OUT;

	if (run->io.port >= PORT_COM1 && run->io.port <= PORT_COM1 + 7) {
		com1(v, run, data, bytes);
		return;
	}
	if (run->io.port == PORT_EXIT && out && run->io.size == 4) {
		uint32_t status;

		memcpy(&status, data, sizeof(status));
		guest_exit(v, status);
		return;
	}
	if (run->io.port == PORT_EXIT && vm_port_first_use(v->vm, run->io.port)) {
		warn("vCPU %u: %s of %u byte(s) at the exit port 0x%x ignored; it takes a 32-bit write (warned once)",
		     v->index, out ? "write" : "read", run->io.size, run->io.port);
	} else if (vm_port_first_use(v->vm, run->io.port)) {
		warn("vCPU %u: %s of %u byte(s) at unknown port 0x%x; reads return all-ones, writes are dropped (warned once per port)",
		     v->index, out ? "write" : "read", run->io.size, run->io.port);
	}
	if (!out)
		memset(data, 0xff, bytes);
}
