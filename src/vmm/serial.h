/* SPDX-License-Identifier: MIT */
/*
 * COM1 output. Each vCPU has its own line buffer and only whole lines are
 * written, under one lock, so that lines from different vCPUs never mix.
 * A line longer than SERIAL_LINE_MAX is written in pieces: a guest cannot
 * make the VMM buffer without bound.
 */
#ifndef VMM_SERIAL_H
#define VMM_SERIAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SERIAL_LINE_MAX 1024

struct serial_line {
	size_t len;
	char buf[SERIAL_LINE_MAX];
};

struct serial {
	pthread_mutex_t lock;
	int fd;
	bool broken;             /* output failed once; drop the rest */
	unsigned ncpus;
	struct serial_line *lines;
	/*
	 * The vCPU whose last piece went out without a newline (a line
	 * longer than SERIAL_LINE_MAX), or -1. Another vCPU's output starts
	 * with a newline then, so that lines of different vCPUs never mix.
	 */
	int open_cpu;
	/*
	 * When set and true (the VM is stopping), output waits at most
	 * SERIAL_STOP_WAIT_MS for the reader, then is dropped: a reader that
	 * stopped reading must not keep the VMM from exiting.
	 */
	const atomic_bool *stopping;
};

#define SERIAL_STOP_WAIT_MS 1000

int serial_init(struct serial *s, int fd, unsigned ncpus);
void serial_destroy(struct serial *s);
void serial_write(struct serial *s, unsigned cpu, const uint8_t *data, size_t n);
/*
 * The PC machine's COM1: bytes as the guest sends them, every byte kept,
 * no line assembly (a kernel's console is one stream).
 */
void serial_put(struct serial *s, const uint8_t *data, size_t n);
/* Writes what is left in every buffer, each ended with a newline. */
void serial_flush_all(struct serial *s);

#endif
