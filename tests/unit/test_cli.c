/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot.h"
#include "cli.h"
#include "profile.h"
#include "vmm_boot.h"
#include "array_size.h"

static char err[256];
static struct cli_options o_unused;

#define PARSE(opts, ...)                                                     \
	({                                                                   \
		char *argv_[] = { "vmm", __VA_ARGS__, NULL };                \
		cli_parse((int)ARRAY_SIZE(argv_) - 1, argv_, \
			  (opts), err, sizeof(err));                         \
	})

static void defaults(void **state)
{
	struct cli_options o;

	(void)state;
	assert_int_equal(PARSE(&o, "guest.bin"), CLI_RUN);
	assert_int_equal(o.cpus, 1);
	assert_int_equal(o.ram_size, VMM_DEFAULT_RAM);
	assert_int_equal(o.timeout_ms, 0);
	assert_int_equal(o.split_lock, POLICY_INHERIT);
	assert_string_equal(o.image, "guest.bin");
	assert_false(o.quiet);
	assert_null(o.append);
	assert_int_equal(o.host_quirks, 0);
}

/* --host-quirks: a list of known names, a bad name refused by name. */
static void host_quirks(void **state)
{
	struct cli_options o;

	(void)state;
	assert_int_equal(PARSE(&o, "--host-quirks=no-cpl3-step,iret-step-lost", "img"), CLI_RUN);
	assert_int_equal(o.host_quirks, PROFILE_NO_CPL3_STEP | PROFILE_IRET_STEP_LOST);
	assert_int_equal(PARSE(&o, "--host-quirks", "no-hw-breakpoints", "img"), CLI_RUN);
	assert_int_equal(o.host_quirks, PROFILE_NO_HW_BREAKPOINTS);
	assert_int_equal(PARSE(&o, "--host-quirks=no-cpl3-step,fast", "img"), CLI_ERROR);
	assert_non_null(strstr(err, "--host-quirks: 'fast' is not one of no-cpl3-step, "));
	assert_int_equal(PARSE(&o, "--host-quirks=", "img"), CLI_ERROR);
	assert_non_null(strstr(err, "--host-quirks: '' is not one of"));
	assert_int_equal(PARSE(&o, "--host-quirks=no-cpl3-step", "--host-info"), CLI_ERROR);
	assert_non_null(strstr(err, "--host-quirks does not go with it"));
}

static void all_options(void **state)
{
	struct cli_options o;

	(void)state;
	assert_int_equal(PARSE(&o, "-c", "4", "--memory=128M", "--timeout", "2.5",
			       "--split-lock=off", "-q", "--stats", "-a", "hello",
			       "img"), CLI_RUN);
	assert_int_equal(o.cpus, 4);
	assert_int_equal(o.ram_size, 128ull << 20);
	assert_int_equal(o.timeout_ms, 2500);
	assert_int_equal(o.split_lock, POLICY_OFF);
	assert_true(o.quiet);
	assert_true(o.stats);
	assert_string_equal(o.append, "hello");
	assert_string_equal(o.image, "img");
	/* GNU getopt permutes: options after the image count too. */
	assert_int_equal(PARSE(&o, "img", "--cpus", "2", "--split-lock=on"), CLI_RUN);
	assert_int_equal(o.cpus, 2);
	assert_int_equal(o.split_lock, POLICY_ON);
}

static void self_test(void **state)
{
	struct cli_options o;

	(void)state;
	assert_int_equal(PARSE(&o, "--self-test", "-c", "2", "--split-lock=emulate"), CLI_RUN);
	assert_true(o.self_test);
	assert_null(o.image);
	assert_int_equal(o.cpus, 2);
	assert_int_equal(PARSE(&o, "--self-test", "guest.bin"), CLI_ERROR);
	assert_int_equal(PARSE(&o, "--self-test", "--host-info"), CLI_ERROR);
	assert_int_equal(PARSE(&o, "guest.bin"), CLI_RUN);
	assert_false(o.self_test);
}

static void help_and_version(void **state)
{
	struct cli_options o;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_int_equal(PARSE(&o, "--help"), CLI_HELP);
	assert_int_equal(PARSE(&o, "-h"), CLI_HELP);
	assert_int_equal(PARSE(&o, "--version"), CLI_VERSION);
	assert_int_equal(PARSE(&o, "-V", "extra", "args"), CLI_VERSION);
	/* The usage text: short and long forms, long-only options without a letter. */
	f = open_memstream(&text, &len);
	assert_non_null(f);
	cli_usage(f);
	assert_int_equal(fclose(f), 0);
	assert_non_null(strstr(text, "\n  -c, --cpus N "));
	assert_non_null(strstr(text, "\n      --split-lock=POLICY "));
	assert_non_null(strstr(text, "\n      --split-lock-ratelimit=N "));
	free(text);
}

/* Each number's limits are in its range: the CLI refuses one past them only. */
static void limits(void **state)
{
	char max_ram[32];
	struct cli_options o;

	(void)state;
	assert_int_equal(PARSE(&o, "-c", "256", "img"), CLI_RUN);
	assert_int_equal(o.cpus, VMM_MAX_VCPUS);
	assert_int_equal(PARSE(&o, "-c", "9", "img"), CLI_RUN);
	assert_int_equal(o.cpus, 9);
	assert_int_equal(PARSE(&o, "-c", "09", "img"), CLI_RUN);
	assert_int_equal(o.cpus, 9);
	assert_int_equal(PARSE(&o, "-m", "4M", "img"), CLI_RUN);
	assert_int_equal(o.ram_size, VMM_MIN_RAM);
	snprintf(max_ram, sizeof(max_ram), "%lluM", (unsigned long long)(VMM_MAX_RAM >> 20));
	assert_int_equal(PARSE(&o, "-m", max_ram, "img"), CLI_RUN);
	assert_int_equal(o.ram_size, VMM_MAX_RAM);
	snprintf(max_ram, sizeof(max_ram), "%lluK", (unsigned long long)(VMM_MAX_RAM >> 10) + 1);
	assert_int_equal(PARSE(&o, "-m", max_ram, "img"), CLI_ERROR);
	assert_int_equal(PARSE(&o, "-m", "4095K", "img"), CLI_ERROR);
	assert_int_equal(PARSE(&o, "--split-lock-ratelimit=1000000", "img"), CLI_RUN);
	assert_int_equal(o.split_lock_ratelimit, 1000000);
	assert_int_equal(PARSE(&o, "--split-lock-ratelimit=1000001", "img"), CLI_ERROR);
	assert_non_null(strstr(err, "from 1 to 1000000"));
	assert_int_equal(PARSE(&o, "-t", "604800", "img"), CLI_RUN);
	assert_int_equal(o.timeout_ms, 604800000);
	assert_int_equal(PARSE(&o, "-t", "9.99", "img"), CLI_RUN);
	assert_int_equal(o.timeout_ms, 9990);
}

struct bad_case {
	const char *args[4];
	const char *msg;
};

static void bad_input(void **state)
{
	static const struct bad_case cases[] = {
		{ { NULL }, "no guest image" },
		{ { "a", "b" }, "extra argument 'b'" },
		{ { "-c", "0", "img" }, "--cpus: '0'" },
		{ { "-c", "257", "img" }, "from 1 to 256" },
		{ { "-c", "x", "img" }, "--cpus: 'x'" },
		{ { "-c", "-1", "img" }, "--cpus: '-1'" },
		{ { "-m", "1M", "img" }, "outside" },
		{ { "-m", "5G", "img" }, "outside" },
		{ { "-m", "12Q", "img" }, "not a size" },
		{ { "-m", "", "img" }, "not a size" },
		{ { "-t", "0", "img" }, "--timeout" },
		{ { "-t", "-3", "img" }, "--timeout" },
		{ { "-t", "abc", "img" }, "--timeout" },
		{ { "-t", "0x10", "img" }, "--timeout: '0x10'" },
		{ { "-m", "0x10M", "img" }, "--memory: '0x10M'" },
		{ { "--split-lock=maybe", "img" }, "not one of inherit, on, off" },
		{ { "--split-lock=ON", "img" }, "not one of" },
		{ { "--bogus", "img" }, "unknown option '--bogus'" },
		{ { "img", "--cpus" }, "needs a value" },
		{ { "--json", "img" }, "--json only goes with --host-info" },
		{ { "--host-info", "img" }, "takes no guest image" },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *argv[6] = { "vmm" };
		struct cli_options o;
		int argc = 1;

		for (int j = 0; j < 4 && cases[i].args[j]; j++)
			argv[argc++] = (char *)cases[i].args[j];
		argv[argc] = NULL;
		err[0] = '\0';
		assert_int_equal(cli_parse(argc, argv, &o, err, sizeof(err)), CLI_ERROR);
		if (!strstr(err, cases[i].msg))
			fail_msg("case %zu: '%s' does not contain '%s'", i, err, cases[i].msg);
		assert_null(strchr(err, '\n'));
	}
}

static void long_append(void **state)
{
	struct cli_options o;
	static char text[BOOT_PC_CMDLINE_SIZE + 1];
	char want[80];

	(void)state;
	memset(text, 'x', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	assert_int_equal(PARSE(&o, "--append", text, "img"), CLI_ERROR);
	snprintf(want, sizeof(want), "--append: text is %u bytes, the limit is %u",
		 BOOT_PC_CMDLINE_SIZE, BOOT_PC_CMDLINE_SIZE - 1);
	if (!strstr(err, want))
		fail_msg("'%s' does not say '%s'", err, want);
	/* The image's kind bounds it further (loader.c); here, the most any takes. */
	text[BOOT_PC_CMDLINE_SIZE - 1] = '\0';
	assert_int_equal(PARSE(&o, "--append", text, "img"), CLI_RUN);
}

static void initrd(void **state)
{
	struct cli_options o;

	(void)state;
	assert_int_equal(PARSE(&o, "--initrd", "root.cpio", "bzImage"), CLI_RUN);
	assert_string_equal(o.initrd, "root.cpio");
	assert_int_equal(PARSE(&o, "--initrd=", "bzImage"), CLI_ERROR);
	assert_string_equal(err, "--initrd: the file name is empty");
	assert_int_equal(PARSE(&o, "bzImage"), CLI_RUN);
	assert_null(o.initrd);
}

static void seconds(void **state)
{
	static const struct {
		const char *s;
		uint64_t ms;
	} good[] = {
		{ "10", 10000 }, { "0.5", 500 }, { "2.", 2000 }, { "2.5", 2500 },
		{ "0.0004", 1 }, { "0.0015", 2 }, { "0.0014", 1 }, { "1.23456", 1235 },
		{ "007", 7000 }, { "604800", 604800000 }, { "604800.000", 604800000 },
		/* A leading point, as strtod and a person take it. */
		{ ".5", 500 }, { "5.", 5000 }, { "5", 5000 }, { ".0004", 1 }, { ".25", 250 },
	};
	/* strtod's other forms are refused, as they are for sizes and counts. */
	static const char *const bad[] = {
		"0", "0.0", "0.", "", "-1", "+1", " 1", "1 ", "1s", "0x10", "1e2", "1E2",
		"0x1p3", "inf", "nan", "1..2", "604800.001", "604801", "99999999999999999999",
		".", ".0", ".00", "-.5", "+.5", " .5", "..5", ".5.", ".e1", ".5e1", "-0.5",
		"NaN", "INF", "infinity", ".x", "604800.5",
	};
	uint64_t ms;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		ms = 0;
		if (cli_parse_seconds(good[i].s, &ms) != 0 || ms != good[i].ms)
			fail_msg("'%s': %llu ms, want %llu", good[i].s, (unsigned long long)ms,
				 (unsigned long long)good[i].ms);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (cli_parse_seconds(bad[i], &ms) == 0)
			fail_msg("'%s' accepted as %llu ms", bad[i], (unsigned long long)ms);
}

static void sizes(void **state)
{
	uint64_t b;

	(void)state;
	assert_int_equal(cli_parse_size("64", &b), 0);
	assert_int_equal(b, 64ull << 20);
	assert_int_equal(cli_parse_size("4096K", &b), 0);
	assert_int_equal(b, 4ull << 20);
	assert_int_equal(cli_parse_size("2G", &b), 0);
	assert_int_equal(b, 2ull << 30);
	assert_int_equal(cli_parse_size("512MiB", &b), 0);
	assert_int_equal(b, 512ull << 20);
	assert_int_equal(cli_parse_size("1MB", &b), 0);
	assert_int_equal(cli_parse_size("99999999999999999999G", &b), -1);
	assert_int_equal(cli_parse_size("17179869184G", &b), -1);
	/* The largest that fits, 2^34 - 1 GiB: taken. */
	assert_int_equal(cli_parse_size("17179869183G", &b), 0);
	assert_true(b == 17179869183ull << 30);
	assert_int_equal(cli_parse_size("1T", &b), -1);
	assert_int_equal(cli_parse_size("M", &b), -1);
}

static void host_info_alone(void **state)
{
	struct cli_options o;

	(void)state;
	assert_int_equal(PARSE(&o, "--host-info", "--json"), CLI_RUN);
	assert_true(o.host_info);
	assert_true(o.json);
	assert_null(o.image);
	assert_int_equal(PARSE(&o, "-q", "--host-info"), CLI_RUN);
}

/* Options that only a VM uses are refused, as an image is, not ignored. */
static void host_info_refuses_vm_options(void **state)
{
	static const struct {
		const char *args[3];
		const char *msg;
	} cases[] = {
		{ { "-c", "2" }, "--host-info runs no VM: --cpus does not go with it" },
		{ { "--cpus=2" }, "--cpus does not go" },
		{ { "-m", "128M" }, "--memory does not go" },
		{ { "-t", "5" }, "--timeout does not go" },
		{ { "--split-lock=on" }, "--split-lock does not go" },
		{ { "--split-lock-ratelimit=5" }, "--split-lock-ratelimit does not go" },
		{ { "-a", "x" }, "--append does not go" },
		{ { "--stats" }, "--stats does not go" },
		{ { "--stats=f.json" }, "--stats does not go" },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct cli_options o;
		char *argv[5] = { "vmm", "--host-info" };
		int argc = 2;

		for (int j = 0; j < 3 && cases[i].args[j]; j++)
			argv[argc++] = (char *)cases[i].args[j];
		argv[argc] = NULL;
		err[0] = '\0';
		assert_int_equal(cli_parse(argc, argv, &o, err, sizeof(err)), CLI_ERROR);
		if (!strstr(err, cases[i].msg))
			fail_msg("case %zu: '%s' does not contain '%s'", i, err, cases[i].msg);
		/* The same with --host-info last: order does not matter. */
		memmove(&argv[1], &argv[2], (size_t)(argc - 2) * sizeof(argv[0]));
		argv[argc - 1] = "--host-info";
		assert_int_equal(cli_parse(argc, argv, &o, err, sizeof(err)), CLI_ERROR);
		if (!strstr(err, cases[i].msg))
			fail_msg("case %zu, --host-info last: '%s'", i, err);
	}
}

/* Each case is refused with err exactly msg. */
static void refused_exactly(const struct bad_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct cli_options o;
		char *argv[6] = { "vmm" };
		int argc = 1;

		for (int j = 0; j < 4 && cases[i].args[j]; j++)
			argv[argc++] = (char *)cases[i].args[j];
		argv[argc] = NULL;
		err[0] = '\0';
		if (cli_parse(argc, argv, &o, err, sizeof(err)) != CLI_ERROR)
			fail_msg("case %zu ('%s' ...) was not refused", i, cases[i].args[0]);
		if (strcmp(err, cases[i].msg))
			fail_msg("case %zu: '%s', want '%s'", i, err, cases[i].msg);
	}
}

/* --timeout takes the forms of a decimal a person writes, and says its range. */
static void timeout_forms(void **state)
{
	static const struct bad_case bad[] = {
		{ { "-t", "-.5", "img" },
		  "--timeout: '-.5' is not a positive number of seconds (at most a week)" },
		{ { "--timeout=", "img" },
		  "--timeout: '' is not a positive number of seconds (at most a week)" },
		{ { "-t", ".", "img" },
		  "--timeout: '.' is not a positive number of seconds (at most a week)" },
		{ { "-t", "nan", "img" },
		  "--timeout: 'nan' is not a positive number of seconds (at most a week)" },
		{ { "--timeout", "inf", "img" },
		  "--timeout: 'inf' is not a positive number of seconds (at most a week)" },
		{ { "-t", "604800.5", "img" },
		  "--timeout: '604800.5' is not a positive number of seconds (at most a week)" },
		{ { "-t", ".5x", "img" },
		  "--timeout: '.5x' is not a positive number of seconds (at most a week)" },
	};
	struct cli_options o;

	(void)state;
	assert_int_equal(PARSE(&o, "-t", ".5", "img"), CLI_RUN);
	assert_int_equal(o.timeout_ms, 500);
	assert_int_equal(PARSE(&o, "--timeout=.5", "img"), CLI_RUN);
	assert_int_equal(o.timeout_ms, 500);
	assert_int_equal(PARSE(&o, "-t", "0.5", "img"), CLI_RUN);
	assert_int_equal(o.timeout_ms, 500);
	assert_int_equal(PARSE(&o, "-t", "5.", "img"), CLI_RUN);
	assert_int_equal(o.timeout_ms, 5000);
	assert_int_equal(PARSE(&o, "-t", "5", "img"), CLI_RUN);
	assert_int_equal(o.timeout_ms, 5000);
	refused_exactly(bad, ARRAY_SIZE(bad));
}

/*
 * Long-only options with a required value take it either way, as
 * getopt_long's required_argument does; --stats[=FILE] keeps its value
 * after '=' only, so that "--stats guest.bin" stays stats on stderr.
 */
static void long_only_values(void **state)
{
	static const struct bad_case cases[] = {
		{ { "--split-lock", "build/guest.bin" },
		  "--split-lock: 'build/guest.bin' is not one of inherit, on, off, emulate" },
		{ { "--split-lock-ratelimit", "img" },
		  "--split-lock-ratelimit: 'img' is not a number from 1 to 1000000" },
		{ { "--stats", "out.json", "img" },
		  "--stats takes its value with '=': --stats=out.json" },
		{ { "img", "--split-lock" }, "option '--split-lock' needs a value (POLICY)" },
		{ { "img", "--split-lock-ratelimit" },
		  "option '--split-lock-ratelimit' needs a value (N)" },
		{ { "img", "--split-lock-r" }, "option '--split-lock-ratelimit' needs a value (N)" },
		{ { "img", "-c" }, "option '-c' needs a value (N)" },
		{ { "img", "-qt" }, "option '-t' needs a value (SECONDS)" },
		{ { "img", "--timeout" }, "option '--timeout' needs a value (SECONDS)" },
	};
	struct cli_options o;

	(void)state;
	assert_int_equal(PARSE(&o, "--split-lock", "emulate", "img"), CLI_RUN);
	assert_int_equal(o.split_lock, POLICY_EMULATE);
	assert_string_equal(o.image, "img");
	assert_int_equal(PARSE(&o, "img", "--split-lock", "on"), CLI_RUN);
	assert_int_equal(o.split_lock, POLICY_ON);
	assert_string_equal(o.image, "img");
	assert_int_equal(PARSE(&o, "--split-lock-ratelimit", "5", "img"), CLI_RUN);
	assert_int_equal(o.split_lock_ratelimit, 5);
	assert_int_equal(PARSE(&o, "--split-lock-r", "7", "img"), CLI_RUN);
	assert_int_equal(o.split_lock_ratelimit, 7);
	assert_int_equal(PARSE(&o, "--split-lock=off", "--split-lock-ratelimit=9", "img"), CLI_RUN);
	assert_int_equal(o.split_lock, POLICY_OFF);
	assert_int_equal(o.split_lock_ratelimit, 9);
	refused_exactly(cases, ARRAY_SIZE(cases));
	/* A bare --stats before the image is still stderr. */
	assert_int_equal(PARSE(&o_unused, "--stats", "img"), CLI_RUN);
	assert_true(o_unused.stats);
	assert_null(o_unused.stats_path);
	assert_string_equal(o_unused.image, "img");
	assert_int_equal(PARSE(&o_unused, "--stats=s.json", "--split-lock=emulate", "img"), CLI_RUN);
	assert_string_equal(o_unused.stats_path, "s.json");
	assert_int_equal(o_unused.split_lock, POLICY_EMULATE);
}

/* An abbreviation that fits several options names them; a unique one works. */
static void abbreviations(void **state)
{
	static const struct bad_case cases[] = {
		{ { "--split=off", "img" },
		  "option '--split' is ambiguous: --split-lock, --split-lock-ratelimit or --split-lock-watch" },
		{ { "--split", "off", "img" },
		  "option '--split' is ambiguous: --split-lock, --split-lock-ratelimit or --split-lock-watch" },
		{ { "--s", "img" },
		  "option '--s' is ambiguous: --split-lock, --split-lock-ratelimit, --split-lock-watch, --stats or --self-test" },
		{ { "--h" }, "option '--h' is ambiguous: --hypervisor-bit, --host-quirks, --host-info or --help" },
		{ { "--bogus", "img" }, "unknown option '--bogus' (see vmm --help)" },
		{ { "--bogus=1", "img" }, "unknown option '--bogus=1' (see vmm --help)" },
		{ { "--=x", "img" }, "unknown option '--=x' (see vmm --help)" },
		{ { "-x", "img" }, "unknown option '-x' (see vmm --help)" },
		{ { "-qx", "img" }, "unknown option '-x' (see vmm --help)" },
		{ { "-xq", "img" }, "unknown option '-x' (see vmm --help)" },
	};
	struct cli_options o;

	(void)state;
	assert_int_equal(PARSE(&o, "--split-lock=on", "img"), CLI_RUN);
	assert_int_equal(o.split_lock, POLICY_ON);
	assert_int_equal(PARSE(&o, "--split-lock-r=5", "img"), CLI_RUN);
	assert_int_equal(o.split_lock_ratelimit, 5);
	assert_int_equal(PARSE(&o, "--st", "img"), CLI_RUN);
	assert_true(o.stats);
	assert_int_equal(PARSE(&o, "--se"), CLI_RUN);
	assert_true(o.self_test);
	assert_int_equal(PARSE(&o, "--host-i", "--js"), CLI_RUN);
	assert_true(o.host_info && o.json);
	assert_int_equal(PARSE(&o, "--he"), CLI_HELP);
	assert_int_equal(PARSE(&o, "--vers"), CLI_VERSION);
	assert_int_equal(PARSE(&o, "--cp", "3", "--mem=8M", "img"), CLI_RUN);
	assert_int_equal(o.cpus, 3);
	refused_exactly(cases, ARRAY_SIZE(cases));
}

/* An option that takes no value says so when given one. */
static void no_value_options(void **state)
{
	static const struct bad_case cases[] = {
		{ { "--help=foo" }, "--help takes no value, got '--help=foo'" },
		{ { "--version=x" }, "--version takes no value, got '--version=x'" },
		{ { "--quiet=1", "img" }, "--quiet takes no value, got '--quiet=1'" },
		{ { "--host-info", "--json=1" }, "--json takes no value, got '--json=1'" },
		{ { "--host-info=1" }, "--host-info takes no value, got '--host-info=1'" },
		{ { "--self-test=1" }, "--self-test takes no value, got '--self-test=1'" },
		{ { "--self-test=" }, "--self-test takes no value, got '--self-test='" },
		{ { "--hel=x" }, "--help takes no value, got '--hel=x'" },
		{ { "img", "--qu=yes" }, "--quiet takes no value, got '--qu=yes'" },
	};

	(void)state;
	refused_exactly(cases, ARRAY_SIZE(cases));
}

/*
 * The ratelimit acts wherever a split lock reaches vmm, which a host booted
 * with split_lock_detect=fatal does under every policy: none refuses it.
 */
static void ratelimit_under_every_policy(void **state)
{
	static const char *const policies[] = {
		"--split-lock=inherit", "--split-lock=on", "--split-lock=off", "--split-lock=emulate",
	};
	struct cli_options o;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(policies); i++) {
		assert_int_equal(PARSE(&o, (char *)policies[i], "--split-lock-ratelimit=5", "img"),
				 CLI_RUN);
		assert_int_equal(o.split_lock_ratelimit, 5);
		assert_int_equal(PARSE(&o, "--split-lock-ratelimit=5", (char *)policies[i], "img"),
				 CLI_RUN);
	}
}

/*
 * --split-lock-watch: armed unless asked, and only beside emulate, in
 * either order; nothing else is a value of it.
 */
static void split_lock_watch(void **state)
{
	struct cli_options o;

	(void)state;
	assert_int_equal(PARSE(&o, "--split-lock=emulate", "img"), CLI_RUN);
	assert_int_equal(o.split_lock_watch, SPLIT_LOCK_WATCH_ARMED);
	assert_int_equal(PARSE(&o, "--split-lock-watch=all", "--split-lock=emulate", "img"), CLI_RUN);
	assert_int_equal(o.split_lock_watch, SPLIT_LOCK_WATCH_ALL);
	assert_int_equal(PARSE(&o, "--split-lock=emulate", "--split-lock-watch", "armed", "img"), CLI_RUN);
	assert_int_equal(o.split_lock_watch, SPLIT_LOCK_WATCH_ARMED);
	assert_int_equal(PARSE(&o, "--split-lock=emulate", "--split-lock-watch=every", "img"), CLI_ERROR);
	assert_string_equal(err, "--split-lock-watch: 'every' is not one of armed, all");
	assert_int_equal(PARSE(&o, "--split-lock-watch=all", "img"), CLI_ERROR);
	assert_string_equal(err, "--split-lock-watch only goes with --split-lock=emulate (the other policies step nothing)");
	assert_int_equal(PARSE(&o, "--split-lock=off", "--split-lock-watch=armed", "img"), CLI_ERROR);
	assert_int_equal(PARSE(&o, "--host-info", "--split-lock-watch=all"), CLI_ERROR);
}

/* --hypervisor-bit: auto unless asked, under any policy. */
static void cpuid_hypervisor(void **state)
{
	struct cli_options o;

	(void)state;
	assert_int_equal(PARSE(&o, "img"), CLI_RUN);
	assert_int_equal(o.cpuid_hypervisor, CPUID_HYPERVISOR_AUTO);
	assert_int_equal(PARSE(&o, "--hypervisor-bit=off", "--split-lock=emulate", "img"), CLI_RUN);
	assert_int_equal(o.cpuid_hypervisor, CPUID_HYPERVISOR_OFF);
	assert_int_equal(PARSE(&o, "--hypervisor-bit", "on", "img"), CLI_RUN);
	assert_int_equal(o.cpuid_hypervisor, CPUID_HYPERVISOR_ON);
	assert_int_equal(PARSE(&o, "--hypervisor-bit=no", "img"), CLI_ERROR);
	assert_string_equal(err, "--hypervisor-bit: 'no' is not one of auto, on, off");
	assert_int_equal(PARSE(&o, "--host-info", "--hypervisor-bit=on"), CLI_ERROR);
}

/*
 * --help fits 80 columns: a help text too long for its line goes on in the
 * help column, and no word of it is lost to the wrapping.
 */
static void usage_fits_80_columns(void **state)
{
	char *text = NULL, *line, *save = NULL, *flat;
	size_t len = 0, n = 0;
	bool in_options = false;
	FILE *f;

	(void)state;
	f = open_memstream(&text, &len);
	assert_non_null(f);
	cli_usage(f);
	assert_int_equal(fclose(f), 0);
	flat = malloc(len + 1);
	assert_non_null(flat);
	/* The text with every run of blanks and newlines as one space. */
	for (size_t i = 0; i < len; i++)
		if (!(text[i] == ' ' || text[i] == '\n') || (n && flat[n - 1] != ' '))
			flat[n++] = text[i] == '\n' ? ' ' : text[i];
	flat[n] = '\0';
	assert_non_null(strstr(flat, "--split-lock-ratelimit=N emulate at most N split locks a second per VM"));
	assert_non_null(strstr(flat, "killed by the signal that stopped it (see vmm(1))."));
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strlen(line) > 80)
			fail_msg("%zu columns: '%s'", strlen(line), line);
		in_options = (in_options || !strcmp(line, "options:")) &&
			     strncmp(line, "exit status", 11) != 0;
		/* An option's continuation starts in the help column, 31. */
		if (in_options && strspn(line, " ") > 6 && strspn(line, " ") != 31)
			fail_msg("continuation not in the help column: '%s'", line);
	}
	free(flat);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults),
		cmocka_unit_test(all_options),
		cmocka_unit_test(host_quirks),
		cmocka_unit_test(self_test),
		cmocka_unit_test(help_and_version),
		cmocka_unit_test(limits),
		cmocka_unit_test(bad_input),
		cmocka_unit_test(long_append),
		cmocka_unit_test(initrd),
		cmocka_unit_test(sizes),
		cmocka_unit_test(seconds),
		cmocka_unit_test(host_info_alone),
		cmocka_unit_test(host_info_refuses_vm_options),
		cmocka_unit_test(timeout_forms),
		cmocka_unit_test(long_only_values),
		cmocka_unit_test(abbreviations),
		cmocka_unit_test(no_value_options),
		cmocka_unit_test(ratelimit_under_every_policy),
		cmocka_unit_test(split_lock_watch),
		cmocka_unit_test(cpuid_hypervisor),
		cmocka_unit_test(usage_fits_80_columns),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
