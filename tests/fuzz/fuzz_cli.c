/* SPDX-License-Identifier: MIT */
/*
 * The command line. The input is split at NUL bytes and newlines into at
 * most MAX_ARGS arguments after "vmm" (the first byte picks the size of the
 * error buffer, to test truncation). Each argument is its own malloc'd
 * string of exactly its length.
 *
 * Oracles:
 *  - cli_parse twice on fresh copies gives the same answer (getopt_long's
 *    global state is reset between calls);
 *  - CLI_RUN: every field is in range (cpus 1..VMM_MAX_VCPUS, RAM in
 *    VMM_MIN_RAM..VMM_MAX_RAM in whole KiB, timeout at most a week, a
 *    split-lock policy policy_name knows, --json only with
 *    --host-info, an image exactly when not --host-info), and every string
 *    field points into an argument, --append shorter than BOOT_PC_CMDLINE_SIZE;
 *  - CLI_ERROR: a one-line message that fits the buffer;
 *  - cli_parse_size agrees with a reference parser written from its
 *    documentation; cli_parse_seconds accepts only what starts with a digit
 *    or a point and a digit, gives 1 ms..one week, and reads plain integers
 *    exactly.
 */
#include <inttypes.h>

#include "fuzz.h"

#include "boot.h"
#include "cli.h"
#include "vmm_boot.h"

#define MAX_ARGS 32

/* Reference for cli_parse_size: DIGITS [K|M|G [iB|B]], plain numbers MiB. */
static int ref_size(const char *s, uint64_t *bytes)
{
	uint64_t v = 0;
	unsigned shift = 20;

	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -1;	/* does not fit: strtoull's ERANGE */
		v = v * 10 + d;
	}
	if (*s) {
		switch (*s++) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		default: return -1;
		}
		if (s[0] == 'i' && s[1] == 'B')
			s += 2;
		else if (s[0] == 'B')
			s++;
		if (*s)
			return -1;
	}
	if (v > (UINT64_MAX >> shift))
		return -1;
	*bytes = v << shift;
	return 0;
}

static void check_size(const char *s)
{
	uint64_t got = 0xdeadbeef, want = 0;
	int r = cli_parse_size(s, &got), ref = ref_size(s, &want);

	FUZZ_CHECK(r == ref, "cli_parse_size(\"%s\") = %d, reference %d", s, r, ref);
	if (r == 0)
		FUZZ_CHECK(got == want, "cli_parse_size(\"%s\") = %" PRIu64 ", reference %" PRIu64,
			   s, got, want);
	else
		FUZZ_CHECK(got == 0xdeadbeef, "cli_parse_size(\"%s\") failed but wrote its output", s);
}

static void check_seconds(const char *s)
{
	uint64_t ms = 0xdeadbeef;
	int r = cli_parse_seconds(s, &ms);
	size_t digits = strspn(s, "0123456789");

	if (r == 0) {
		FUZZ_CHECK((*s >= '0' && *s <= '9') || (*s == '.' && s[1] >= '0' && s[1] <= '9'),
			   "cli_parse_seconds accepted \"%s\"", s);
		FUZZ_CHECK(ms >= 1 && ms <= 7ull * 86400 * 1000,
			   "cli_parse_seconds(\"%s\") = %" PRIu64 " ms", s, ms);
	} else {
		FUZZ_CHECK(ms == 0xdeadbeef, "cli_parse_seconds(\"%s\") failed but wrote its output", s);
	}
	/* A plain integer of seconds is read exactly. */
	if (digits > 0 && digits <= 7 && s[digits] == '\0') {
		uint64_t v = strtoull(s, NULL, 10);
		bool ok = v >= 1 && v <= 7 * 86400;

		FUZZ_CHECK((r == 0) == ok, "cli_parse_seconds(\"%s\") = %d", s, r);
		if (ok)
			FUZZ_CHECK(ms == v * 1000, "cli_parse_seconds(\"%s\") = %" PRIu64 " ms", s, ms);
	}
}

struct argv_copy {
	int argc;
	char *argv[MAX_ARGS + 2];
	char *orig[MAX_ARGS + 2];      /* getopt_long permutes argv; keep the buffers */
	size_t len[MAX_ARGS + 2];
};

static void copy_args(struct argv_copy *c, char *const *args, int argc)
{
	c->argc = argc;
	for (int i = 0; i < argc; i++) {
		c->len[i] = strlen(args[i]);
		c->argv[i] = c->orig[i] = malloc(c->len[i] + 1);
		FUZZ_SETUP(c->argv[i]);
		memcpy(c->argv[i], args[i], c->len[i] + 1);
	}
	c->argv[argc] = NULL;
}

static void free_args(struct argv_copy *c)
{
	for (int i = 0; i < c->argc; i++)
		free(c->orig[i]);
}

/* Which argument's buffer p points into, and where; -1 when none. */
static int locate(const struct argv_copy *c, const char *p, size_t *off)
{
	for (int i = 0; i < c->argc; i++) {
		if (p >= c->orig[i] && p <= c->orig[i] + c->len[i]) {
			*off = (size_t)(p - c->orig[i]);
			return i;
		}
	}
	return -1;
}

static void check_string_field(const struct argv_copy *c, const char *p, const char *what)
{
	size_t off;

	if (!p)
		return;
	FUZZ_CHECK(locate(c, p, &off) >= 0, "%s points outside every argument", what);
}

static void check_result(const struct argv_copy *c, enum cli_result r,
			 const struct cli_options *o, const char *err, size_t errlen)
{
	switch (r) {
	case CLI_RUN:
		FUZZ_CHECK(o->cpus >= 1 && o->cpus <= VMM_MAX_VCPUS, "cpus %u", o->cpus);
		FUZZ_CHECK(o->ram_size >= VMM_MIN_RAM && o->ram_size <= VMM_MAX_RAM,
			   "ram_size %" PRIu64, o->ram_size);
		FUZZ_CHECK(o->ram_size % 1024 == 0, "ram_size %" PRIu64 " is not whole KiB",
			   o->ram_size);
		FUZZ_CHECK(o->timeout_ms <= 7ull * 86400 * 1000, "timeout %" PRIu64, o->timeout_ms);
		/* A policy the rest of vmm knows by name (the set grows). */
		FUZZ_CHECK(strcmp(policy_name(o->split_lock), "?") != 0,
			   "split_lock %d", (int)o->split_lock);
		FUZZ_CHECK(!o->json || o->host_info, "--json without --host-info accepted");
		FUZZ_CHECK(o->host_info ? !o->image : !!o->image,
			   "host_info %d with image %p", o->host_info, (const void *)o->image);
		FUZZ_CHECK(!o->stats_path || o->stats, "stats_path without stats");
		FUZZ_CHECK(!o->stats_path || *o->stats_path, "empty --stats= file accepted");
		check_string_field(c, o->image, "image");
		check_string_field(c, o->append, "append");
		check_string_field(c, o->initrd, "initrd");
		check_string_field(c, o->stats_path, "stats_path");
		if (o->append)
			FUZZ_CHECK(strlen(o->append) < BOOT_PC_CMDLINE_SIZE, "--append of %zu bytes",
				   strlen(o->append));
		break;
	case CLI_ERROR:
		FUZZ_CHECK(memchr(err, '\0', errlen) != NULL, "error message not terminated");
		FUZZ_CHECK(errlen < 2 || err[0] != '\0', "empty error message");
		FUZZ_CHECK(!strchr(err, '\n'), "multi-line error message: %s", err);
		break;
	case CLI_HELP:
	case CLI_VERSION:
		break;
	default:
		FUZZ_CHECK(0, "cli_parse returned %d", (int)r);
	}
}

/* The answer of one parse in a form two parses can be compared by. */
struct outcome {
	enum cli_result r;
	struct cli_options o;
	int image_arg, append_arg, stats_arg;
	size_t image_off, append_off, stats_off;
	char *err;
};

static void parse_once(char *const *args, int argc, size_t errlen, struct outcome *out)
{
	struct argv_copy c;

	copy_args(&c, args, argc);
	out->err = malloc(errlen);
	FUZZ_SETUP(out->err);
	memset(out->err, 0x55, errlen);
	out->r = cli_parse(c.argc, c.argv, &out->o, out->err, errlen);
	check_result(&c, out->r, &out->o, out->err, errlen);
	out->image_off = out->append_off = out->stats_off = 0;
	out->image_arg = out->o.image ? locate(&c, out->o.image, &out->image_off) : -1;
	out->append_arg = out->o.append ? locate(&c, out->o.append, &out->append_off) : -1;
	out->stats_arg = out->o.stats_path ? locate(&c, out->o.stats_path, &out->stats_off) : -1;
	/* The pointers die with the copy. */
	out->o.image = out->o.append = out->o.stats_path = out->o.initrd = NULL;
	free_args(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = fuzz_in(data, size);
	size_t errlen = 1 + fuzz_u8(&in) % 160;
	char *args[MAX_ARGS + 2];
	int argc = 0;
	struct outcome a, b;

	args[argc++] = strdup("vmm");
	FUZZ_SETUP(args[0]);
	while (in.n && argc < MAX_ARGS + 1) {
		size_t len = 0;
		char *s;

		while (len < in.n && in.p[len] != '\0' && in.p[len] != '\n')
			len++;
		s = malloc(len + 1);
		FUZZ_SETUP(s);
		memcpy(s, in.p, len);
		s[len] = '\0';
		args[argc++] = s;
		in.p += len;
		in.n -= len;
		if (in.n) {	/* the separator */
			in.p++;
			in.n--;
		}
	}
	args[argc] = NULL;

	for (int i = 1; i < argc; i++) {
		const char *eq = strchr(args[i], '=');

		check_size(args[i]);
		check_seconds(args[i]);
		if (eq) {
			check_size(eq + 1);
			check_seconds(eq + 1);
		}
	}

	parse_once(args, argc, errlen, &a);
	parse_once(args, argc, errlen, &b);
	FUZZ_CHECK(a.r == b.r, "two parses of one command line: %d then %d", a.r, b.r);
	if (a.r == CLI_ERROR)
		FUZZ_CHECK(strcmp(a.err, b.err) == 0, "two parses: \"%s\" then \"%s\"", a.err, b.err);
	if (a.r == CLI_RUN) {
		/* Field by field: padding may differ. */
		FUZZ_CHECK(a.o.cpus == b.o.cpus && a.o.ram_size == b.o.ram_size &&
			   a.o.timeout_ms == b.o.timeout_ms && a.o.split_lock == b.o.split_lock &&
			   a.o.quiet == b.o.quiet && a.o.stats == b.o.stats &&
			   a.o.host_info == b.o.host_info && a.o.json == b.o.json,
			   "two parses: different options");
		FUZZ_CHECK(a.image_arg == b.image_arg && a.image_off == b.image_off &&
			   a.append_arg == b.append_arg && a.append_off == b.append_off &&
			   a.stats_arg == b.stats_arg && a.stats_off == b.stats_off,
			   "two parses: strings from different arguments");
	}
	free(a.err);
	free(b.err);
	for (int i = 0; i < argc; i++)
		free(args[i]);
	return 0;
}
