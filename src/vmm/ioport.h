/* SPDX-License-Identifier: MIT */
/* Port I/O exits: COM1, the exit port, and warnings for everything else. */
#ifndef VMM_IOPORT_H
#define VMM_IOPORT_H

#include "vcpu.h"

/* Handles a KVM_EXIT_IO in v->run; may stop the VM. */
void ioport_handle(struct vcpu *v);

#endif
