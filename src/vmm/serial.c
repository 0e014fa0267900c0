/* SPDX-License-Identifier: MIT */
#include "serial.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

int serial_init(struct serial *s, int fd, unsigned ncpus)
{
	s->fd = fd;
	s->broken = false;
	s->ncpus = ncpus;
	s->open_cpu = -1;
	s->stopping = NULL;
	s->lines = calloc(ncpus, sizeof(*s->lines));
	if (!s->lines)
		return -1;
	pthread_mutex_init(&s->lock, NULL);
	return 0;
}

void serial_destroy(struct serial *s)
{
	free(s->lines);
	s->lines = NULL;
	pthread_mutex_destroy(&s->lock);
}

/*
 * Once the VM is stopping, whether the reader takes more within the grace
 * time. A vCPU blocked in write() is kicked out with EINTR by vm_stop().
 */
static bool reader_alive(struct serial *s)
{
	struct pollfd p = { .fd = s->fd, .events = POLLOUT };
	int n;

	if (!s->stopping || !atomic_load(s->stopping))
		return true;
	do
		n = poll(&p, 1, SERIAL_STOP_WAIT_MS);
	while (n < 0 && errno == EINTR);
	if (n != 0)
		return true;	/* writable, or an error that write() will report */
	s->broken = true;
	warn("the guest console's reader has not taken any output for %d ms while the VM stops; dropping the rest",
	     SERIAL_STOP_WAIT_MS);
	return false;
}

/* Caller holds s->lock. */
static void emit(struct serial *s, const char *buf, size_t len)
{
	while (len && !s->broken) {
		ssize_t n;

		if (!reader_alive(s))
			return;
		n = write(s->fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			s->broken = true;
			warn("writing guest console output failed: %s; dropping the rest",
			     n < 0 ? strerror(errno) : "short write");
			return;
		}
		buf += n;
		len -= (size_t)n;
	}
}

static void flush_line(struct serial *s, struct serial_line *l)
{
	int cpu = (int)(l - s->lines);

	pthread_mutex_lock(&s->lock);
	if (s->open_cpu >= 0 && s->open_cpu != cpu)
		emit(s, "\n", 1);
	emit(s, l->buf, l->len);
	s->open_cpu = l->len && l->buf[l->len - 1] != '\n' ? cpu : -1;
	pthread_mutex_unlock(&s->lock);
	l->len = 0;
}

void serial_write(struct serial *s, unsigned cpu, const uint8_t *data, size_t n)
{
	struct serial_line *l = &s->lines[cpu];

	for (size_t i = 0; i < n; i++) {
		/* A NUL would end the line early for anyone reading it as text. */
		if (data[i] == '\0' || data[i] == '\r')
			continue;
		l->buf[l->len++] = (char)data[i];
		if (data[i] == '\n' || l->len == SERIAL_LINE_MAX)
			flush_line(s, l);
	}
}

void serial_put(struct serial *s, const uint8_t *data, size_t n)
{
	pthread_mutex_lock(&s->lock);
	emit(s, (const char *)data, n);
	pthread_mutex_unlock(&s->lock);
}

void serial_flush_all(struct serial *s)
{
	for (unsigned cpu = 0; cpu < s->ncpus; cpu++) {
		struct serial_line *l = &s->lines[cpu];

		/* serial_write flushes a full buffer, so the newline fits. */
		if (l->len == 0)
			continue;
		l->buf[l->len++] = '\n';
		flush_line(s, l);
	}
	/* A last piece that filled the buffer exactly still gets its newline. */
	pthread_mutex_lock(&s->lock);
	if (s->open_cpu >= 0)
		emit(s, "\n", 1);
	s->open_cpu = -1;
	pthread_mutex_unlock(&s->lock);
}
