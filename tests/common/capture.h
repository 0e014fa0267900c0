/* SPDX-License-Identifier: MIT */
/*
 * Output caught in memory, for the unit tests and the fuzz harnesses: a
 * stream a function under test writes to, or the stdio stream stderr
 * itself for the duration of a call.
 *
 * vmm's diagnostics go through the stream stderr; the sanitizers, cmocka's
 * failure reports and FUZZ_CHECK write to file descriptor 2 directly.
 * Pointing the stream (not the descriptor) at a memory buffer lets a test
 * read what vmm said, keeps a fuzzer from spending its time printing, and
 * still lets crash reports reach the terminal.
 */
#ifndef VMM_TEST_CAPTURE_H
#define VMM_TEST_CAPTURE_H

#include <stddef.h>
#include <stdio.h>

struct capture {
	FILE *f;        /* write here between capture_open() and capture_close() */
	char *buf;      /* after capture_close(): NUL-terminated, len bytes; free() it */
	size_t len;
	FILE *saved;    /* stderr's stream, while it is redirected */
};

/* A memory stream in c->f. 0, or -1 with errno. */
int capture_open(struct capture *c);
/* capture_open(), and stderr pointed at it until capture_close(). */
int capture_stderr(struct capture *c);
/* Restores stderr if it was redirected and closes the stream: 0 or -1. */
int capture_close(struct capture *c);

#endif
