/* SPDX-License-Identifier: MIT */
/*
 * The PC machine's console input: bytes read from stdin go to COM1's
 * receiver (pc_input), as fast as the guest takes them and never dropped:
 * while pc.c's queue is full stdin is not read. Ctrl-A x stops the VM
 * (VMM_EXIT_ESCAPE), Ctrl-A Ctrl-A sends one Ctrl-A, Ctrl-A and any other
 * byte send both, as QEMU's -nographic console does. End of input stops
 * reading; the guest runs on. tty.c puts a terminal in raw mode.
 */
#ifndef VMM_CONSOLE_H
#define VMM_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vm.h"

#define CONSOLE_ESCAPE 0x01u    /* Ctrl-A */
#define CONSOLE_QUIT   'x'

struct console {
	int fd;
	bool done;              /* end of input, or a read error */
	bool escaped;           /* the last byte was a lone Ctrl-A */
};

void console_init(struct console *c, int fd);
/*
 * Copies in[0..n) to out, which holds n + 1 bytes, taking out the escapes.
 * Ctrl-A x sets *quit and ends the copy. Returns the bytes in out.
 */
size_t console_filter(struct console *c, const uint8_t *in, size_t n, uint8_t *out, bool *quit);
/*
 * The fd to poll for input, or -1: none (end of input), or none for now
 * (the queue is full: *retry, poll again soon).
 */
int console_poll_fd(struct console *c, struct vm *vm, bool *retry);
/* Reads what is there, hands it to COM1, or stops the VM on Ctrl-A x. */
void console_read(struct console *c, struct vm *vm);

#endif
