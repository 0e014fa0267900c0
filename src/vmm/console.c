/* SPDX-License-Identifier: MIT */
/* Console input for the PC machine (console.h). */
#include "console.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "vmm_status.h"

void console_init(struct console *c, int fd)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
}

size_t console_filter(struct console *c, const uint8_t *in, size_t n, uint8_t *out, bool *quit)
{
	size_t k = 0;

	*quit = false;
	for (size_t i = 0; i < n; i++) {
		if (!c->escaped && in[i] == CONSOLE_ESCAPE) {
			c->escaped = true;
			continue;
		}
		if (c->escaped) {
			c->escaped = false;
			if (in[i] == CONSOLE_QUIT) {
				*quit = true;
				break;
			}
			if (in[i] != CONSOLE_ESCAPE)
				out[k++] = CONSOLE_ESCAPE;
		}
		out[k++] = in[i];
	}
	return k;
}

int console_poll_fd(struct console *c, struct vm *vm, bool *retry)
{
	*retry = false;
	if (c->done || vm->machine != MACHINE_PC)
		return -1;
	/* One byte spare: a Ctrl-A held from the last read may come out beside the next. */
	if (pc_input_room(&vm->pc) < 2) {
		*retry = true;
		return -1;
	}
	return c->fd;
}

void console_read(struct console *c, struct vm *vm)
{
	uint8_t in[256], out[sizeof(in) + 1];
	size_t room = pc_input_room(&vm->pc) - 1, n;
	ssize_t got;
	bool quit;

	got = read(c->fd, in, room < sizeof(in) ? room : sizeof(in));
	if (got < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (got <= 0) {
		if (got < 0)
			warn("reading the console's input failed: %s; the guest gets no more input",
			     strerror(errno));
		c->done = true;
		return;
	}
	n = console_filter(c, in, (size_t)got, out, &quit);
	(void)pc_input(&vm->pc, out, n);
	if (quit && vm_stop(vm, VMM_EXIT_ESCAPE))
		info("Ctrl-A x: stopping the VM; vmm exits with %d", VMM_EXIT_ESCAPE);
}
