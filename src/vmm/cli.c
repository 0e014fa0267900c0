/* SPDX-License-Identifier: MIT */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "boot.h"
#include "profile.h"
#include "vmm_boot.h"
#include "vmm_status.h"
#include "array_size.h"

#define CLI_STR_(x) #x
#define CLI_STR(x) CLI_STR_(x)

enum {
	OPT_SPLIT_LOCK = 0x100,
	OPT_SPLIT_LOCK_RATELIMIT,
	OPT_SPLIT_LOCK_WATCH,
	OPT_CPUID_HYPERVISOR,
	OPT_HOST_QUIRKS,
	OPT_STATS,
	OPT_HOST_INFO,
	OPT_JSON,
	OPT_SELF_TEST,
	OPT_INITRD,
};

/*
 * One table feeds getopt_long and --help, so the two cannot drift apart.
 * has_arg is getopt_long's own: a required value follows '=' or a space,
 * an optional one (--stats[=FILE]) only '='. vm_only ones mean nothing to
 * --host-info, which refuses them.
 */
static const struct cli_option {
	const char *name;
	int has_arg;
	int val;
	bool vm_only;
	const char *arg;
	const char *help;
} options[] = {
	{ "cpus", required_argument, 'c', true, "N", "number of vCPUs (default 1)" },
	{ "memory", required_argument, 'm', true, "SIZE",
	  "guest RAM, e.g. 64M or 1G; a plain number is MiB (default 64M)" },
	{ "timeout", required_argument, 't', true, "SECONDS",
	  "stop the VM after this long, e.g. 10 or 0.5 (exit status " CLI_STR(VMM_EXIT_TIMEOUT) ")" },
	{ "split-lock", required_argument, OPT_SPLIT_LOCK, true, "POLICY",
	  "inherit (default), on, off or emulate" },
	{ "split-lock-ratelimit", required_argument, OPT_SPLIT_LOCK_RATELIMIT, true, "N",
	  "emulate at most N split locks a second per VM, delaying the vCPU beyond "
	  "(default: no limit); any policy: counts the split locks that reach vmm, "
	  "under emulate or on a split_lock_detect=fatal host" },
	{ "split-lock-watch", required_argument, OPT_SPLIT_LOCK_WATCH, true, "WHICH",
	  "under emulate, single-step a vCPU only while its guest asks for #AC "
	  "(armed, the default: the others run at full speed), or every vCPU "
	  "all the time (all: warns of and ratelimits every split lock, tens to "
	  "hundreds of times slower)" },
	{ "hypervisor-bit", required_argument, OPT_CPUID_HYPERVISOR, true, "WHEN",
	  "CPUID.1:ECX[31], 'a hypervisor runs this guest': auto (the default: "
	  "set unless the VM enumerates split-lock detection, which Linux "
	  "ignores under a hypervisor), on or off" },
	{ "host-quirks", required_argument, OPT_HOST_QUIRKS, true, "LIST",
	  "run as on a KVM with these quirks, whatever the probes found (names in "
	  "vmm(1)); for tests and for reproducing another host" },
	{ "append", required_argument, 'a', true, "TEXT",
	  "the guest's command line: a kernel's (up to what it takes), or a flat "
	  "image's boot_info.cmdline (up to 127 bytes)" },
	{ "initrd", required_argument, OPT_INITRD, true, "FILE",
	  "initrd of a Linux kernel, module of a PVH or multiboot kernel" },
	{ "stats", optional_argument, OPT_STATS, true, "FILE",
	  "at exit, per-vCPU counters as JSON on stderr or in FILE" },
	{ "host-info", no_argument, OPT_HOST_INFO, false, NULL,
	  "describe what this host and its KVM offer, then exit" },
	{ "json", no_argument, OPT_JSON, false, NULL, "with --host-info: print JSON" },
	{ "self-test", no_argument, OPT_SELF_TEST, false, NULL,
	  "boot the installed self-test guest instead of a named image" },
	{ "quiet", no_argument, 'q', false, NULL, "no informational lines on stderr" },
	{ "help", no_argument, 'h', false, NULL, "show this help and exit" },
	{ "version", no_argument, 'V', false, NULL, "show the version and exit" },
};

#define N_OPTIONS ARRAY_SIZE(options)

#define USAGE_COLUMNS 80
#define USAGE_HELP_COLUMN 31   /* "  " + 28 for "-c, --cpus N" + " " */

/*
 * Words of text from column col on, each line broken before USAGE_COLUMNS
 * and continued at column indent, so that --help fits an 80-column terminal.
 */
static void put_wrapped(FILE *out, size_t col, size_t indent, const char *text)
{
	bool line_start = true;

	for (text += strspn(text, " "); *text; text += strspn(text, " ")) {
		size_t n = strcspn(text, " ");

		if (!line_start && col + 1 + n > USAGE_COLUMNS) {
			fprintf(out, "\n%*s", (int)indent, "");
			col = indent;
			line_start = true;
		}
		if (!line_start) {
			fputc(' ', out);
			col++;
		}
		fwrite(text, 1, n, out);
		col += n;
		text += n;
		line_start = false;
	}
	fputc('\n', out);
}

void cli_usage(FILE *out)
{
	char left[48], tail[320];

	fprintf(out, "usage: vmm [options] guest.bin\n"
		     "       vmm --self-test [options]\n"
		     "       vmm --host-info [--json]\n\n"
		     "Boots guest.bin on /dev/kvm with split-lock detection "
		     "virtualised per VM.\n\noptions:\n");
	for (size_t i = 0; i < N_OPTIONS; i++) {
		const struct cli_option *o = &options[i];
		int len;

		if (o->val < 0x100)
			len = snprintf(left, sizeof(left), "  -%c, --%s%s%s", o->val,
				       o->name, o->arg ? " " : "", o->arg ? o->arg : "");
		else if (o->has_arg == optional_argument)
			len = snprintf(left, sizeof(left), "      --%s[=%s]", o->name, o->arg);
		else
			len = snprintf(left, sizeof(left), "      --%s%s%s", o->name,
				       o->arg ? "=" : "", o->arg ? o->arg : "");
		/* A name too long for its column puts the help on the next line. */
		if (len + 1 > USAGE_HELP_COLUMN)
			fprintf(out, "%s\n%*s", left, USAGE_HELP_COLUMN, "");
		else
			fprintf(out, "%-*s", USAGE_HELP_COLUMN, left);
		put_wrapped(out, USAGE_HELP_COLUMN, USAGE_HELP_COLUMN, o->help);
	}
	snprintf(tail, sizeof(tail), "exit status: the guest's own (0-%d), %d for usage errors, "
		 "%d-%d for other errors of vmm (as sysexits(3)), %d-%d for a VM "
		 "that vmm stopped; killed by the signal that stopped it (see vmm(1)).",
		 GUEST_STATUS_MAX, VMM_EXIT_USAGE, VMM_EXIT_USAGE + 1, VMM_EXIT_SYSEXITS_LAST,
		 VMM_EXIT_VM_FIRST, VMM_EXIT_VM_LAST);
	fputc('\n', out);
	put_wrapped(out, 0, 0, tail);
}

int cli_parse_size(const char *s, uint64_t *bytes)
{
	char *end;
	unsigned long long v;
	unsigned shift = 20;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case '\0': break;
	default: return -1;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B')
		end++;
	if (*end || v > (UINT64_MAX >> shift))
		return -1;
	*bytes = (uint64_t)v << shift;
	return 0;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * Plain decimal only, as for sizes and counts: strtod would also take
 * "0x10", "1e2", "0x1p3" and leading blanks, none of which a user means
 * as a number of seconds, and would make --timeout the odd one out.
 * A digit on either side of the point is enough: ".5" and "5." as strtod.
 */
int cli_parse_seconds(const char *s, uint64_t *ms)
{
	const uint64_t max_s = 7 * 86400;
	uint64_t whole = 0, frac_ms = 0, total;
	bool nonzero = false, round_up = false;

	if (!s || !(is_digit(s[0]) || (s[0] == '.' && is_digit(s[1]))))
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		whole = whole * 10 + (uint64_t)(*s - '0');
		nonzero |= *s != '0';
		if (whole > max_s)
			return -1;
	}
	if (*s == '.') {
		unsigned digits = 0;

		/* Milliseconds, the watchdog's unit, rounded half up. */
		for (s++; *s >= '0' && *s <= '9'; s++, digits++) {
			unsigned d = (unsigned)(*s - '0');

			nonzero |= d != 0;
			if (digits < 3)
				frac_ms = frac_ms * 10 + d;
			else if (digits == 3)
				round_up = d >= 5;
		}
		for (; digits < 3; digits++)
			frac_ms *= 10;
	}
	if (*s || !nonzero)
		return -1;
	total = whole * 1000 + frac_ms + round_up;
	if (total > max_s * 1000)
		return -1;
	/* A failed parse leaves *ms alone. */
	*ms = total ? total : 1;
	return 0;
}

static enum cli_result fail(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static enum cli_result fail(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return CLI_ERROR;
}

/* A decimal number from 1 to max. */
static int parse_count(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v == 0 || v > max)
		return -1;
	*out = v;
	return 0;
}

static void build_getopt_tables(struct option *longopts, char *shortopts)
{
	char *p = shortopts;

	for (size_t i = 0; i < N_OPTIONS; i++) {
		longopts[i] = (struct option){ options[i].name, options[i].has_arg, NULL,
					       options[i].val };
		if (options[i].val < 0x100) {
			*p++ = (char)options[i].val;
			if (options[i].has_arg == required_argument)
				*p++ = ':';
		}
	}
	*p = '\0';
	longopts[N_OPTIONS] = (struct option){ 0 };
}

static const struct cli_option *option_of(int val)
{
	for (size_t i = 0; i < N_OPTIONS; i++)
		if (options[i].val == val)
			return &options[i];
	return NULL;
}

/* getopt_long found no value for opt at the end of the line. */
static enum cli_result missing_value(const struct cli_option *opt, const char *given,
				     char *err, size_t errlen)
{
	if (strncmp(given, "--", 2) == 0)
		return fail(err, errlen, "option '--%s' needs a value (%s)", opt->name, opt->arg);
	return fail(err, errlen, "option '-%c' needs a value (%s)", opt->val, opt->arg);
}

/*
 * "--split": getopt_long calls a prefix of several names unknown too, so
 * the candidates are found again here to name them.
 */
static enum cli_result unknown_long(const char *given, char *err, size_t errlen)
{
	const char *name = given + 2;
	size_t len = strcspn(name, "="), n = 0, used;
	const struct cli_option *match[N_OPTIONS];

	for (size_t i = 0; len && i < N_OPTIONS; i++)
		if (strncmp(options[i].name, name, len) == 0)
			match[n++] = &options[i];
	if (n < 2)
		return fail(err, errlen, "unknown option '%s' (see vmm --help)", given);
	used = (size_t)snprintf(err, errlen, "option '--%.*s' is ambiguous: ", (int)len, name);
	for (size_t i = 0; i < n && used < errlen; i++)
		used += (size_t)snprintf(err + used, errlen - used, "%s--%s",
					 i == 0 ? "" : i + 1 < n ? ", " : " or ", match[i]->name);
	return CLI_ERROR;
}

/*
 * getopt_long's '?': optopt is 0 for an unknown or ambiguous long option,
 * the option's val for one given a value it does not take, and the letter
 * for an unknown letter (whose argument optind may not have passed yet).
 */
static enum cli_result bad_option(char *const argv[], char *err, size_t errlen)
{
	const struct cli_option *opt = optopt ? option_of(optopt) : NULL;
	const char *given = argv[optind - 1];

	if (optopt && !opt)
		return fail(err, errlen, "unknown option '-%c' (see vmm --help)", optopt);
	if (opt)
		return fail(err, errlen, "--%s takes no value, got '%s'", opt->name, given);
	return unknown_long(given, err, errlen);
}

/* One option's value into o: CLI_RUN, or CLI_ERROR with the reason in err. */
static enum cli_result take_value(int c, const char *arg, struct cli_options *o,
				  char *err, size_t errlen)
{
	uint64_t n;

	switch (c) {
	case 'c':
		if (parse_count(arg, VMM_MAX_VCPUS, &n))
			return fail(err, errlen, "--cpus: '%s' is not a number from 1 to %u",
				    arg, VMM_MAX_VCPUS);
		o->cpus = (unsigned)n;
		break;
	case 'm':
		if (cli_parse_size(arg, &o->ram_size))
			return fail(err, errlen, "--memory: '%s' is not a size such as 64M or 1G",
				    arg);
		if (o->ram_size < VMM_MIN_RAM || o->ram_size > VMM_MAX_RAM)
			return fail(err, errlen, "--memory: %s is outside %lluM-%lluM", arg,
				    (unsigned long long)(VMM_MIN_RAM >> 20),
				    (unsigned long long)(VMM_MAX_RAM >> 20));
		break;
	case 't':
		if (cli_parse_seconds(arg, &o->timeout_ms))
			return fail(err, errlen,
				    "--timeout: '%s' is not a positive number of seconds (at most a week)",
				    arg);
		break;
	case 'a':
		/* The image's kind sets the real bound (loader.c); this is the most any takes. */
		if (strlen(arg) >= BOOT_PC_CMDLINE_SIZE)
			return fail(err, errlen, "--append: text is %zu bytes, the limit is %u",
				    strlen(arg), BOOT_PC_CMDLINE_SIZE - 1);
		o->append = arg;
		break;
	case OPT_INITRD:
		if (!*arg)
			return fail(err, errlen, "--initrd: the file name is empty");
		o->initrd = arg;
		break;
	case OPT_SPLIT_LOCK:
		if (policy_parse(arg, &o->split_lock))
			return fail(err, errlen,
				    "--split-lock: '%s' is not one of inherit, on, off, emulate",
				    arg);
		break;
	case OPT_SPLIT_LOCK_RATELIMIT:
		if (parse_count(arg, 1000000, &o->split_lock_ratelimit))
			return fail(err, errlen,
				    "--split-lock-ratelimit: '%s' is not a number from 1 to 1000000",
				    arg);
		break;
	case OPT_SPLIT_LOCK_WATCH:
		if (policy_watch_parse(arg, &o->split_lock_watch))
			return fail(err, errlen, "--split-lock-watch: '%s' is not one of armed, all", arg);
		o->split_lock_watch_given = true;
		break;
	case OPT_CPUID_HYPERVISOR:
		if (cpuid_hypervisor_parse(arg, &o->cpuid_hypervisor))
			return fail(err, errlen, "--hypervisor-bit: '%s' is not one of auto, on, off", arg);
		break;
	case OPT_HOST_QUIRKS: {
		char why[256];

		if (profile_parse_quirks(arg, &o->host_quirks, why, sizeof(why)))
			return fail(err, errlen, "--host-quirks: %s", why);
		break;
	}
	}
	return CLI_RUN;
}

/*
 * What is left after the options: the image, or nothing for --host-info and
 * --self-test. stats_next is the argument after a bare --stats, if any.
 */
static enum cli_result check_operands(int argc, char *const argv[], struct cli_options *o,
				      const struct cli_option *vm_option,
				      const char *stats_next, char *err, size_t errlen)
{
	if (o->json && !o->host_info)
		return fail(err, errlen, "--json only goes with --host-info");
	if (o->host_info && o->self_test)
		return fail(err, errlen, "--host-info and --self-test exclude each other");
	if (o->host_info && vm_option)
		return fail(err, errlen,
			    "--host-info runs no VM: --%s does not go with it (usage: vmm --host-info [--json])",
			    vm_option->name);
	if (o->host_info || o->self_test) {
		if (optind < argc)
			return fail(err, errlen, "--%s takes no guest image, got '%s'",
				    o->host_info ? "host-info" : "self-test", argv[optind]);
		return CLI_RUN;
	}
	if (optind >= argc)
		return fail(err, errlen, "no guest image given (usage: vmm [options] guest.bin)");
	/* "--stats out.json img": a bare --stats took no file, and two images remain. */
	if (argc - optind > 1 && stats_next && stats_next == argv[optind])
		return fail(err, errlen, "--stats takes its value with '=': --stats=%s", stats_next);
	if (argc - optind > 1)
		return fail(err, errlen, "one guest image expected, got extra argument '%s'",
			    argv[optind + 1]);
	o->image = argv[optind];
	return CLI_RUN;
}

enum cli_result cli_parse(int argc, char *const argv[], struct cli_options *o,
			  char *err, size_t errlen)
{
	struct option longopts[N_OPTIONS + 1];
	char shortopts[2 * N_OPTIONS + 2] = ":";
	const struct cli_option *vm_option = NULL;
	const char *stats_next = NULL;   /* the argument after a bare --stats */
	int c;

	*o = (struct cli_options){
		.cpus = 1,
		.ram_size = VMM_DEFAULT_RAM,
		.split_lock = POLICY_INHERIT,
	};
	build_getopt_tables(longopts, shortopts + 1);
	/* optind = 0 makes glibc re-initialise, so tests can parse repeatedly. */
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		const struct cli_option *opt = option_of(c);

		if (opt && opt->vm_only && !vm_option)
			vm_option = opt;
		switch (c) {
		case OPT_STATS:
			o->stats = true;
			if (optarg && !*optarg)
				return fail(err, errlen, "--stats=: the file name is empty");
			o->stats_path = optarg;
			if (!optarg && optind < argc && argv[optind][0] != '-')
				stats_next = argv[optind];
			break;
		case OPT_HOST_INFO: o->host_info = true; break;
		case OPT_JSON: o->json = true; break;
		case OPT_SELF_TEST: o->self_test = true; break;
		case 'q': o->quiet = true; break;
		case 'h': return CLI_HELP;
		case 'V': return CLI_VERSION;
		case ':':
			return missing_value(option_of(optopt), argv[optind - 1], err, errlen);
		case '?':
			return bad_option(argv, err, errlen);
		default:
			if (take_value(c, optarg, o, err, errlen) != CLI_RUN)
				return CLI_ERROR;
		}
	}
	if (o->split_lock_watch_given && o->split_lock != POLICY_EMULATE)
		return fail(err, errlen,
			    "--split-lock-watch only goes with --split-lock=emulate (the other policies step nothing)");
	return check_operands(argc, argv, o, vm_option, stats_next, err, errlen);
}
