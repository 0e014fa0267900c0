/* SPDX-License-Identifier: MIT */
/*
 * A terminal on the PC machine's console is put in raw mode (no line
 * editing, no echo, Ctrl-C and Ctrl-Z go to the guest; output processing
 * kept, so vmm's own lines stay readable) and restored on every way out.
 */
#ifndef VMM_TTY_H
#define VMM_TTY_H

#include <stdbool.h>

/*
 * Raw mode on fd if it is a terminal; the old mode is kept for
 * tty_restore(), which it also registers with atexit. False if fd
 * is not a terminal (nothing changed) or its mode could not be set (a
 * warning said so).
 */
bool tty_raw(int fd);
/*
 * True if fd is a terminal whose foreground is another process group (vmm
 * runs in the background): reading it or setting its mode would stop vmm
 * with SIGTTIN or SIGTTOU.
 */
bool tty_in_background(int fd);
/* The mode as it was; does nothing the second time or without raw mode. */
void tty_restore(void);

#endif
