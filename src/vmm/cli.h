/* SPDX-License-Identifier: MIT */
/* Command line: pure parsing, no I/O, so that unit tests drive it directly. */
#ifndef VMM_CLI_H
#define VMM_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cpuid.h"
#include "policy.h"

struct cli_options {
	unsigned cpus;
	uint64_t ram_size;
	uint64_t timeout_ms;          /* 0: no watchdog */
	enum policy split_lock;
	uint64_t split_lock_ratelimit; /* emulated split locks a second, 0: no limit */
	enum split_lock_watch split_lock_watch; /* under emulate: which vCPUs are stepped */
	bool split_lock_watch_given;  /* --split-lock-watch: emulate's only */
	enum cpuid_hypervisor cpuid_hypervisor; /* CPUID.1:ECX[31]: auto, on, off */
	unsigned host_quirks;         /* --host-quirks: enum profile_quirk bits */
	bool quiet;
	bool stats;
	const char *stats_path;       /* --stats=FILE; NULL: stderr */
	bool host_info;
	bool json;
	bool self_test;               /* image: the installed self-test guest */
	const char *append;           /* guest command line, may be NULL */
	const char *initrd;           /* --initrd FILE, may be NULL */
	const char *image;            /* NULL only with --host-info or --self-test */
};

enum cli_result {
	CLI_RUN,        /* options are valid, go on */
	CLI_HELP,       /* --help: print cli_usage() and exit 0 */
	CLI_VERSION,    /* --version */
	CLI_ERROR,      /* err holds a one-line message; exit VMM_EXIT_USAGE */
};

enum cli_result cli_parse(int argc, char *const argv[], struct cli_options *opts,
			  char *err, size_t errlen);
void cli_usage(FILE *out);

/* "64M", "1G", "4096K", plain decimal numbers are MiB. 0 on success. */
int cli_parse_size(const char *s, uint64_t *bytes);
/*
 * "10", "0.5", "2.": decimal seconds to milliseconds (rounded, at least 1),
 * more than 0 and at most a week; no sign, exponent, hex or blanks, as
 * with every other number on the command line. 0 on success.
 */
int cli_parse_seconds(const char *s, uint64_t *ms);

#endif
