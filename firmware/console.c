/* SPDX-License-Identifier: MIT */
#include "console.h"

#include "atomic.h"
#include "fw_string.h"
#include "internal.h"
#include "processor.h"
#include "vmm_ports.h"

/*
 * The VMM puts each vCPU's lines out whole. A plain 16550 (QEMU's, under
 * the PVH entry) does not: two CPUs' `rep outsb` interleave byte by byte,
 * so pvh.c sets this and lines go out one at a time. The lock is in RAM
 * that CPL3 can reach, like everything here.
 */
bool fw_console_serialize;
static struct spinlock com1_lock;

static void com1_write(const char *s, size_t len)
{
	bool serialize = atomic_load_acquire(&fw_console_serialize);

	if (serialize)
		spin_lock(&com1_lock);
	/* CPL3 has no I/O permission: the exception handler does the OUT. */
	if (read_cs() & 3)
		fw_user_console_write(s, len);
	else
		outsb(PORT_COM1, s, len);
	if (serialize)
		spin_unlock(&com1_lock);
}

static void flush(struct cpu *c)
{
	if (c->con_len)
		com1_write(c->con_buf, c->con_len);
	c->con_len = 0;
}

void console_write(const char *s, size_t len)
{
	struct cpu *c = this_cpu();

	for (size_t i = 0; i < len; i++) {
		c->con_buf[c->con_len++] = s[i];
		if (s[i] == '\n' || c->con_len == CON_BUF_SIZE)
			flush(c);
	}
}

void putc(int ch)
{
	char b = (char)ch;

	console_write(&b, 1);
}

void puts(const char *s)
{
	console_write(s, strlen(s));
}

void console_end_line(void)
{
	if (this_cpu()->con_len)
		putc('\n');
}

void console_write_raw(const char *s)
{
	com1_write(s, strlen(s));
}

int vprintf(const char *fmt, va_list ap)
{
	char buf[PRINTF_MAX];
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	size_t flen = strlen(fmt);

	if ((size_t)n < sizeof(buf)) {
		console_write(buf, (size_t)n);
		return n;
	}
	/* Cut, but keep the line break so that the line still goes out. */
	console_write(buf, sizeof(buf) - 1);
	if (flen && fmt[flen - 1] == '\n')
		putc('\n');
	return n;
}

int printf(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vprintf(fmt, ap);
	va_end(ap);
	return n;
}
