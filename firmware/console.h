/* SPDX-License-Identifier: MIT */
/*
 * COM1 output, line-buffered per CPU: a line leaves in one `rep outsb` (one
 * VM exit) when '\n' is written or the buffer fills. The VMM prints whole
 * lines per vCPU, so lines of different vCPUs never interleave.
 * Usable at CPL3 as well: there the flush goes through a DPL3 gate.
 */
#ifndef FW_CONSOLE_H
#define FW_CONSOLE_H

#include <stdarg.h>
#include <stddef.h>

#define FW_PRINTF(f, a) __attribute__((format(printf, f, a)))

void putc(int ch);
void puts(const char *s);            /* no newline appended */
void console_write(const char *s, size_t len);
/* Terminates a partial line, e.g. before a report from an exception handler. */
void console_end_line(void);
/* Bypasses the per-CPU buffer: before GS is set up, or when it is suspect. */
void console_write_raw(const char *s);

/* printf output longer than PRINTF_MAX bytes is cut. */
#define PRINTF_MAX 320
int printf(const char *fmt, ...) FW_PRINTF(1, 2);
int vprintf(const char *fmt, va_list ap) FW_PRINTF(1, 0);

/*
 * %d %i %u %x %X %p %s %c %%, flags '0' and '-', width and precision
 * (digits or '*'), lengths hh h l ll z. Returns the length the whole
 * output would have had, like C's.
 */
int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap) FW_PRINTF(3, 0);
int snprintf(char *buf, size_t size, const char *fmt, ...) FW_PRINTF(3, 4);

#endif
