/* SPDX-License-Identifier: MIT */
#include "capture.h"

int capture_open(struct capture *c)
{
	*c = (struct capture){ 0 };
	c->f = open_memstream(&c->buf, &c->len);
	return c->f ? 0 : -1;
}

int capture_stderr(struct capture *c)
{
	/* What was buffered before belongs on the real stderr, not here. */
	fflush(stderr);
	if (capture_open(c))
		return -1;
	c->saved = stderr;
	stderr = c->f;
	return 0;
}

int capture_close(struct capture *c)
{
	int r;

	if (c->saved) {
		stderr = c->saved;
		c->saved = NULL;
	}
	r = fclose(c->f);
	c->f = NULL;
	return r ? -1 : 0;
}
