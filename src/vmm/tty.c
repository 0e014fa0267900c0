/* SPDX-License-Identifier: MIT */
/* Raw mode for a terminal console (tty.h). */
#include "tty.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "log.h"

static struct {
	int fd;
	bool raw;
	struct termios saved;
} tty = { .fd = -1 };

void tty_restore(void)
{
	if (!tty.raw)
		return;
	tty.raw = false;
	if (tcsetattr(tty.fd, TCSANOW, &tty.saved) < 0)
		warn("restoring the terminal's mode failed: %s; 'stty sane' restores it",
		     strerror(errno));
}

bool tty_in_background(int fd)
{
	pid_t fg;

	if (!isatty(fd))
		return false;
	fg = tcgetpgrp(fd);
	return fg >= 0 && fg != getpgrp();
}

bool tty_raw(int fd)
{
	static bool registered;
	struct termios t;

	if (!isatty(fd))
		return false;
	if (tcgetattr(fd, &tty.saved) < 0) {
		warn("reading the terminal's mode failed: %s; the console stays in line mode",
		     strerror(errno));
		return false;
	}
	t = tty.saved;
	cfmakeraw(&t);
	t.c_oflag |= OPOST;	/* vmm's own lines still end in CR LF */
	if (tcsetattr(fd, TCSANOW, &t) < 0) {
		warn("setting the terminal to raw mode failed: %s; the console stays in line mode",
		     strerror(errno));
		return false;
	}
	tty.fd = fd;
	tty.raw = true;
	if (!registered && atexit(tty_restore) == 0)
		registered = true;
	return true;
}
