/* SPDX-License-Identifier: MIT */
/* COM1 line assembly: whole lines per vCPU, bounded buffers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "serial.h"
#include "array_size.h"

static struct serial s;
static int pipefd[2];

static int setup(void **state)
{
	(void)state;
	if (pipe(pipefd))
		return -1;
	return serial_init(&s, pipefd[1], 2);
}

static int teardown(void **state)
{
	(void)state;
	serial_destroy(&s);
	close(pipefd[0]);
	close(pipefd[1]);
	return 0;
}

static size_t drain(char *buf, size_t len)
{
	ssize_t n;

	close(pipefd[1]);
	pipefd[1] = -1;
	n = read(pipefd[0], buf, len - 1);
	assert_true(n >= 0);
	buf[n] = '\0';
	return (size_t)n;
}

static void put(unsigned cpu, const char *text)
{
	serial_write(&s, cpu, (const uint8_t *)text, strlen(text));
}

static void lines_do_not_interleave(void **state)
{
	char out[256];

	(void)state;
	put(0, "ok 1 - fi");
	put(1, "# cpu 1 ch");
	put(0, "rst\nok 2");
	put(1, "ecked in\n");
	put(0, " - second\n");
	drain(out, sizeof(out));
	assert_string_equal(out, "ok 1 - first\n# cpu 1 checked in\nok 2 - second\n");
}

static void flush_ends_partial_lines(void **state)
{
	char out[256];

	(void)state;
	put(1, "no newline");
	put(0, "a\r\nb");
	serial_flush_all(&s);
	drain(out, sizeof(out));
	/* Whole lines as they end, then leftovers in vCPU order. */
	assert_string_equal(out, "a\nb\nno newline\n");
}

static void long_lines_are_bounded(void **state)
{
	char *big = malloc(3 * SERIAL_LINE_MAX + 1);
	char *out = malloc(4 * SERIAL_LINE_MAX);
	size_t n;

	(void)state;
	memset(big, 'x', 3 * SERIAL_LINE_MAX);
	big[3 * SERIAL_LINE_MAX] = '\0';
	put(0, big);
	/* Written out as it fills, not held back until a newline. */
	n = drain(out, 4 * SERIAL_LINE_MAX);
	assert_int_equal(n, 3 * SERIAL_LINE_MAX);
	free(big);
	free(out);
}

/* A partial line at or one short of the buffer's size ends with one newline. */
static void flush_at_the_buffer_edge(void **state)
{
	size_t sizes[] = { SERIAL_LINE_MAX - 1, SERIAL_LINE_MAX, SERIAL_LINE_MAX + 1 };
	char *text = malloc(SERIAL_LINE_MAX + 2), *want = malloc(4 * SERIAL_LINE_MAX);
	char *out = malloc(4 * SERIAL_LINE_MAX);
	size_t w = 0;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		memset(text, 'a' + (int)i, sizes[i]);
		text[sizes[i]] = '\0';
		put(0, text);
		serial_flush_all(&s);
		memcpy(want + w, text, sizes[i]);
		w += sizes[i];
		want[w++] = '\n';
	}
	want[w] = '\0';
	assert_int_equal(drain(out, 4 * SERIAL_LINE_MAX), w);
	assert_string_equal(out, want);
	free(text);
	free(want);
	free(out);
}

/* A console whose reader is gone: output is dropped, once said, and never blocks. */
static void reader_gone(void **state)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;

	(void)state;
	assert_int_equal(sigaction(SIGPIPE, &ign, &old), 0);
	close(pipefd[0]);
	pipefd[0] = -1;
	put(0, "lost\n");
	assert_true(s.broken);
	put(1, "lost too\n");
	assert_true(s.broken);
	assert_int_equal(sigaction(SIGPIPE, &old, NULL), 0);
}

/*
 * A reader that stopped reading while the VM stops: once the pipe is
 * full, output waits SERIAL_STOP_WAIT_MS for it, then is dropped.
 */
static void reader_stuck_while_stopping(void **state)
{
	static atomic_bool stopping = true;
	char line[SERIAL_LINE_MAX];
	unsigned lines = 0;

	(void)state;
	assert_int_equal(fcntl(pipefd[1], F_SETFL, O_NONBLOCK), 0);
	memset(line, 'x', sizeof(line) - 1);
	line[sizeof(line) - 2] = '\n';
	line[sizeof(line) - 1] = '\0';
	/* Fill the pipe; a nonblocking write that fails now is taken as the end. */
	while (!s.broken && lines < 4096) {
		put(0, line);
		lines++;
	}
	assert_true(s.broken);
	s.broken = false;
	assert_int_equal(fcntl(pipefd[1], F_SETFL, 0), 0);
	s.stopping = &stopping;
	put(1, "waits, then is dropped\n");
	assert_true(s.broken);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(lines_do_not_interleave, setup, teardown),
		cmocka_unit_test_setup_teardown(flush_ends_partial_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(long_lines_are_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(flush_at_the_buffer_edge, setup, teardown),
		cmocka_unit_test_setup_teardown(reader_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(reader_stuck_while_stopping, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
