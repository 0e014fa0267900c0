/* SPDX-License-Identifier: MIT */
/* vCPU creation, boot state and the run loop (one thread per vCPU). */
#ifndef VMM_VCPU_H
#define VMM_VCPU_H

#include "boot.h"
#include "vm.h"

void vcpu_create(struct vcpu *v, const struct kvm_cpuid2 *cpuid,
		 const struct boot_layout *layout);
void vcpu_destroy(struct vcpu *v);
/* pthread entry: runs v until the VM stops. */
void *vcpu_thread(void *v);
/* Installs the kick signal handler; call once before any vCPU thread starts. */
void vcpu_signals_init(void);
/* Prints registers and the bytes at RIP on stderr. */
void vcpu_dump(struct vcpu *v);
/* One line: where v is now. For a VM stopped from outside (--timeout). */
void vcpu_report_rip(struct vcpu *v);

#endif
