/* SPDX-License-Identifier: MIT */
/* Guest-to-VMM I/O ports. docs/port-abi.md describes each one. */
#ifndef VMM_PORTS_H
#define VMM_PORTS_H

/*
 * COM1, a write-only 16550 as far as the guest needs it: bytes written to
 * the data register go to the VMM's stdout, one whole line at a time per
 * vCPU, so that lines from different vCPUs never interleave. String I/O
 * (rep outsb) is accepted; where KVM batches it, that is one exit per
 * string (not on the project's hosts: one exit per byte there).
 */
#define PORT_COM1            0x3f8u
#define PORT_COM1_LSR        (PORT_COM1 + 5u)
#define COM1_LSR_THRE        0x20u  /* transmit holding register empty */
#define COM1_LSR_TEMT        0x40u  /* transmitter empty */

/*
 * Exit port: a 32-bit OUT ends the whole VM; vmm exits with that value
 * (0-63, see vmm_status.h). Other access sizes are ignored with a warning.
 */
#define PORT_EXIT            0xf4u

#endif
