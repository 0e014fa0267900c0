/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
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
	char text[BOOT_CMDLINE_MAX + 1], want[80];

	(void)state;
	memset(text, 'x', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	assert_int_equal(PARSE(&o, "--append", text, "img"), CLI_ERROR);
	snprintf(want, sizeof(want), "--append: text is %u bytes, the limit is %u",
		 BOOT_CMDLINE_MAX, BOOT_CMDLINE_MAX - 1);
	if (!strstr(err, want))
		fail_msg("'%s' does not say '%s'", err, want);
	text[BOOT_CMDLINE_MAX - 1] = '\0';
	assert_int_equal(PARSE(&o, "--append", text, "img"), CLI_RUN);
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
	};
	/* strtod's other forms are refused, as they are for sizes and counts. */
	static const char *const bad[] = {
		"0", "0.0", "0.", "", ".5", "-1", "+1", " 1", "1 ", "1s", "0x10", "1e2", "1E2",
		"0x1p3", "inf", "nan", "1..2", "604800.001", "604801", "99999999999999999999",
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

/* Long-only options take their value after '=': the space form says so. */
static void value_needs_equals(void **state)
{
	static const struct {
		const char *args[4];
		const char *msg;
	} cases[] = {
		{ { "--split-lock", "emulate", "img" },
		  "--split-lock takes its value with '=': --split-lock=emulate" },
		{ { "img", "--split-lock", "on" },
		  "--split-lock takes its value with '=': --split-lock=on" },
		{ { "--split-lock-ratelimit", "5", "img" },
		  "--split-lock-ratelimit takes its value with '=': --split-lock-ratelimit=5" },
		{ { "--stats", "out.json", "img" },
		  "--stats takes its value with '=': --stats=out.json" },
		{ { "img", "--split-lock" }, "--split-lock needs a value: --split-lock=POLICY" },
		{ { "--split-lock", "-q", "img" }, "--split-lock needs a value: --split-lock=POLICY" },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct cli_options o;
		char *argv[6] = { "vmm" };
		int argc = 1;

		for (int j = 0; j < 4 && cases[i].args[j]; j++)
			argv[argc++] = (char *)cases[i].args[j];
		argv[argc] = NULL;
		err[0] = '\0';
		assert_int_equal(cli_parse(argc, argv, &o, err, sizeof(err)), CLI_ERROR);
		if (strcmp(err, cases[i].msg))
			fail_msg("case %zu: '%s', want '%s'", i, err, cases[i].msg);
	}
	/* A bare --stats before the image is still stderr. */
	assert_int_equal(PARSE(&o_unused, "--stats", "img"), CLI_RUN);
	assert_true(o_unused.stats);
	assert_null(o_unused.stats_path);
	assert_string_equal(o_unused.image, "img");
	assert_int_equal(PARSE(&o_unused, "--stats=s.json", "--split-lock=emulate", "img"), CLI_RUN);
	assert_string_equal(o_unused.stats_path, "s.json");
	assert_int_equal(o_unused.split_lock, POLICY_EMULATE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults),
		cmocka_unit_test(all_options),
		cmocka_unit_test(self_test),
		cmocka_unit_test(help_and_version),
		cmocka_unit_test(limits),
		cmocka_unit_test(bad_input),
		cmocka_unit_test(long_append),
		cmocka_unit_test(sizes),
		cmocka_unit_test(seconds),
		cmocka_unit_test(host_info_alone),
		cmocka_unit_test(host_info_refuses_vm_options),
		cmocka_unit_test(value_needs_equals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
