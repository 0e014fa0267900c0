/* SPDX-License-Identifier: MIT */
#include "tap.h"

#include "atomic.h"
#include "internal.h"
#include "vmm_status.h"

#define TAP_DESC_MAX 200

static unsigned tests, failures;
/* Keeps numbers in output order if two vCPUs report at once. */
static struct spinlock tap_lock;

void tap_begin(void)
{
	printf("TAP version 13\n");
}

static void tap_line(bool ok, const char *directive, const char *fmt, va_list ap)
{
	char desc[TAP_DESC_MAX];

	vsnprintf(desc, sizeof(desc), fmt, ap);
	spin_lock(&tap_lock);
	unsigned n = atomic_fetch_add(&tests, 1) + 1;
	if (!ok)
		atomic_fetch_add(&failures, 1);
	printf("%sok %u - %s%s\n", ok ? "" : "not ", n, desc, directive);
	spin_unlock(&tap_lock);
}

bool tap_ok(bool cond, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_line(cond, "", fmt, ap);
	va_end(ap);
	return cond;
}

void tap_skip(const char *reason, const char *fmt, ...)
{
	char directive[TAP_DESC_MAX];
	va_list ap;

	snprintf(directive, sizeof(directive), " # SKIP %s", reason);
	va_start(ap, fmt);
	tap_line(true, directive, fmt, ap);
	va_end(ap);
}

void tap_diag(const char *fmt, ...)
{
	char line[PRINTF_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	printf("# %s\n", line);
}

unsigned tap_count(void)
{
	return atomic_load(&tests);
}

unsigned tap_failed(void)
{
	return atomic_load(&failures);
}

int tap_done(void)
{
	unsigned n = tap_count();

	printf("1..%u\n", n);
	if (tap_failed())
		tap_diag("%u of %u tests failed", tap_failed(), n);
	return tap_failed() ? GUEST_STATUS_FAIL : GUEST_STATUS_PASS;
}
