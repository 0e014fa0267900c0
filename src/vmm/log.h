/* SPDX-License-Identifier: MIT */
/* One-line diagnostics on stderr, every one prefixed with "vmm: ". */
#ifndef VMM_LOG_H
#define VMM_LOG_H

#include <stdarg.h>

void log_set_quiet(int quiet);
/* Informational line; -q silences it. */
void info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * "vmm: error: ..." and carry on: the caller decides the exit status. Not
 * error(), which glibc already exports with another signature.
 */
void errmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "vmm: error: ..." then exit(status). */
void die(int status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
/*
 * For failed syscalls and ioctls: names the call, errno's text and what the
 * user can do about it, then exits with VMM_EXIT_HOST.
 */
void die_errno(const char *call, int err, const char *hint)
	__attribute__((noreturn));

#endif
