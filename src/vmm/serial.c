/* SPDX-License-Identifier: MIT */
#include "serial.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

int serial_init(struct serial *s, int fd, unsigned ncpus)
{
	s->fd = fd;
	s->broken = false;
	s->ncpus = ncpus;
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

/* Caller holds s->lock. */
static void emit(struct serial *s, const char *buf, size_t len)
{
	while (len && !s->broken) {
		ssize_t n = write(s->fd, buf, len);

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
	pthread_mutex_lock(&s->lock);
	emit(s, l->buf, l->len);
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

void serial_flush_all(struct serial *s)
{
	for (unsigned cpu = 0; cpu < s->ncpus; cpu++) {
		struct serial_line *l = &s->lines[cpu];

		if (l->len == 0)
			continue;
		if (l->len == SERIAL_LINE_MAX)
			flush_line(s, l);
		l->buf[l->len++] = '\n';
		flush_line(s, l);
	}
}
