/* SPDX-License-Identifier: MIT */
/* Register dumps for a person reading why a VM stopped. */
#ifndef VMM_DUMP_H
#define VMM_DUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <linux/kvm.h>

/* "0f 0b 90 ..." into buf, or "(unreadable)" when len is 0. */
void dump_format_bytes(char *buf, size_t buflen, const uint8_t *bytes, size_t len);

/* The vCPU's INIT state, where KVM on AMD SVM leaves it after a triple
 * fault (the VMCB is undefined after a shutdown intercept). */
bool dump_is_reset_state(const struct kvm_regs *r, const struct kvm_sregs *s);

struct vcpu;
/* Prints v's registers and the bytes at RIP on stderr (through the vcpu_ops). */
void dump_vcpu(struct vcpu *v);

#endif
