/* SPDX-License-Identifier: MIT */
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmm_status.h"

static int quiet;

void log_set_quiet(int q)
{
	quiet = q;
}

/* One fprintf per line so that lines from vCPU threads do not mix. */
static void vlog(const char *level, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	fprintf(stderr, "vmm: %s%s\n", level, msg);
}

void info(const char *fmt, ...)
{
	va_list ap;

	if (quiet)
		return;
	va_start(ap, fmt);
	vlog("", fmt, ap);
	va_end(ap);
}

void warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("warning: ", fmt, ap);
	va_end(ap);
}

void errmsg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("error: ", fmt, ap);
	va_end(ap);
}

void die(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("error: ", fmt, ap);
	va_end(ap);
	exit(status);
}

void die_errno(const char *call, int err, const char *hint)
{
	if (hint && *hint)
		die(VMM_EXIT_HOST, "%s failed: %s (errno %d); %s", call,
		    strerror(err), err, hint);
	die(VMM_EXIT_HOST, "%s failed: %s (errno %d)", call, strerror(err), err);
}
