/* SPDX-License-Identifier: MIT */
/*
 * TAP 13 output as meson's parser reads it: "TAP version 13" first (the
 * runtime prints it before guest_main), one line per test, the plan "1..N"
 * last (tap_done). Test descriptions must not contain '#', which starts a
 * directive. Numbering is atomic and each line goes out under a lock, but
 * the order only makes sense if one vCPU reports tests.
 */
#ifndef FW_TAP_H
#define FW_TAP_H

#include <stdbool.h>

#include "console.h"

/* "ok N - desc" or "not ok N - desc"; returns cond. */
bool tap_ok(bool cond, const char *fmt, ...) FW_PRINTF(2, 3);
/* "ok N - desc # SKIP reason" */
void tap_skip(const char *reason, const char *fmt, ...) FW_PRINTF(2, 3);
/* "# ..." (a newline is added) */
void tap_diag(const char *fmt, ...) FW_PRINTF(1, 2);
/* Prints the plan; GUEST_STATUS_PASS if no test failed, else _FAIL. */
int tap_done(void);

unsigned tap_count(void);
unsigned tap_failed(void);

#endif
