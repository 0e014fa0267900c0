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

static void unknown_port(struct vcpu *v, const struct kvm_run *run, uint8_t *data, size_t bytes)
{
	bool out = run->io.direction == KVM_EXIT_IO_OUT;

	if (vm_port_first_use(v->vm, run->io.port))
		warn("vCPU %u: %s of %u byte(s) at unknown port 0x%x; reads return all-ones, writes are dropped (warned once per port)",
		     v->index, out ? "write" : "read", run->io.size, run->io.port);
	if (!out)
		memset(data, 0xff, bytes);
}

/* isa-debug-exit: value V ends vmm with (V << 1) | 1, a guest status up to 63. */
static void pc_debug_exit(struct vcpu *v, uint32_t value)
{
	if (value > GUEST_STATUS_MAX >> 1) {
		if (vm_stop(v->vm, VMM_EXIT_BAD_STATUS))
			warn("vCPU %u wrote %u to the exit port 0x%x, whose status (%u << 1) | 1 is above %d; vmm exits with %d",
			     v->index, value, PC_DEBUG_EXIT, value, GUEST_STATUS_MAX, VMM_EXIT_BAD_STATUS);
		return;
	}
	vm_stop(v->vm, (int)(value << 1 | 1));
}

/* The PC machine: every element of a string I/O goes to pc.c in turn. */
static void pc_port(struct vcpu *v, struct kvm_run *run, uint8_t *data)
{
	bool out = run->io.direction == KVM_EXIT_IO_OUT;

	for (uint32_t i = 0; i < run->io.count && !vm_stopping(v->vm); i++) {
		uint8_t *d = data + (size_t)i * run->io.size;
		uint32_t value;

		switch (pc_io(&v->vm->pc, run->io.port, out, run->io.size, d, &value)) {
		case PC_EVENT_NONE:
			break;
		case PC_EVENT_UNKNOWN:
			unknown_port(v, run, d, run->io.size);
			break;
		case PC_EVENT_RESET:
			if (vm_stop(v->vm, VMM_EXIT_RESET))
				info("vCPU %u reset the machine; vmm does not reboot, it exits with %d",
				     v->index, VMM_EXIT_RESET);
			break;
		case PC_EVENT_POWEROFF:
			if (vm_stop(v->vm, VMM_EXIT_POWEROFF))
				info("the guest powered off; vmm exits with %d", VMM_EXIT_POWEROFF);
			break;
		case PC_EVENT_EXIT:
			pc_debug_exit(v, value);
			break;
		}
	}
}

void ioport_handle(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	uint8_t *data = (uint8_t *)run + run->io.data_offset;
	size_t bytes = (size_t)run->io.size * run->io.count;
	bool out = run->io.direction == KVM_EXIT_IO_OUT;

	if (v->vm->machine == MACHINE_PC) {
		pc_port(v, run, data);
		return;
	}
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
		if (!out)
			memset(data, 0xff, bytes);
		return;
	}
	unknown_port(v, run, data, bytes);
}
