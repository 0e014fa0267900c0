/* SPDX-License-Identifier: MIT */
/*
 * Guest runtime: everything a test guest needs, in one include.
 * docs/guest-runtime.md describes it.
 */
#ifndef FW_H
#define FW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atomic.h"
#include "cmdline.h"
#include "console.h"
#include "except.h"
#include "fw_string.h"
#include "percpu.h"
#include "processor.h"
#include "tap.h"
#include "user.h"
#include "vmm_boot.h"
#include "vmm_msr.h"
#include "x86.h"
#include "vmm_ports.h"
#include "vmm_status.h"

/*
 * Supplied by the test guest. vCPU 0 runs guest_main after "TAP version 13"
 * has been printed, and its return value becomes the VM's exit status. The
 * other vCPUs run guest_ap_main (the runtime has an empty weak one) once
 * vCPU 0 has started guest_main, and then halt for good.
 */
int guest_main(const struct boot_info *bi);
void guest_ap_main(const struct boot_info *bi);

/*
 * Ends the whole VM with this status (GUEST_STATUS_*). Does not flush an
 * unfinished console line: end it with console_end_line() first.
 */
__attribute__((noreturn)) void guest_exit(uint32_t status);

#endif
