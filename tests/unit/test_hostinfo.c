/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "cpuid.h"
#include "hostinfo.h"
#include "array_size.h"

/* ------------------------------------------------------------ captures */

#define FLAGS_HEAD "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov " \
	"pat pse36 clflush dts acpi mmx fxsr sse sse2 ss ht tm pbe syscall nx"
#define FLAGS_TAIL "arat pln pts hwp hwp_notify hwp_act_window hwp_epp " \
	"avx512vbmi umip pku ospke waitpkg gfni vaes vpclmulqdq"

/* One processor's block, as a 6.x kernel prints it on a Sapphire Rapids. */
#define CPU(n, flags)                                                        \
	"processor\t: " #n "\n"                                              \
	"vendor_id\t: GenuineIntel\n"                                        \
	"cpu family\t: 6\n"                                                  \
	"model\t\t: 143\n"                                                   \
	"model name\t: Intel(R) Xeon(R) Platinum 8480+\n"                    \
	"stepping\t: 8\n"                                                    \
	"cpu MHz\t\t: 2000.000\n"                                            \
	"cache size\t: 107520 KB\n"                                          \
	"fpu\t\t: yes\n"                                                     \
	"cpuid level\t: 31\n"                                                \
	"flags\t\t: " flags "\n"                                             \
	"vmx flags\t: vnmi preemption_timer posted_intr invvpid ept_x_only\n" \
	"bugs\t\t: spectre_v1 spectre_v2 spec_store_bypass swapgs\n"         \
	"bogomips\t: 4000.00\n"                                              \
	"address sizes\t: 46 bits physical, 57 bits virtual\n"               \
	"power management:\n"                                                \
	"\n"

static const char cpuinfo_both[] =
	CPU(0, FLAGS_HEAD " split_lock_detect " FLAGS_TAIL " bus_lock_detect")
	CPU(1, FLAGS_HEAD " split_lock_detect " FLAGS_TAIL " bus_lock_detect");

static const char cpuinfo_neither[] =
	CPU(0, FLAGS_HEAD " split_lock_detect_foo " FLAGS_TAIL " xbus_lock_detect")
	CPU(1, FLAGS_HEAD " " FLAGS_TAIL);

/* The first processor decides, even when a later one says otherwise. */
static const char cpuinfo_first_wins[] =
	CPU(0, FLAGS_HEAD " " FLAGS_TAIL)
	CPU(1, FLAGS_HEAD " split_lock_detect bus_lock_detect " FLAGS_TAIL);

/* Flag as the very last word of a file with no final newline. */
static const char cpuinfo_at_end[] =
	"processor\t: 0\nflags\t\t: fpu bus_lock_detect split_lock_detect";

/* "vmx flags" and "bugs" are not "flags". */
static const char cpuinfo_only_vmx_flags[] =
	"processor\t: 0\nvmx flags\t: split_lock_detect bus_lock_detect\n"
	"bugs\t\t: split_lock_detect\n";

static void init_defaults(void **state)
{
	struct hostinfo hi;

	(void)state;
	memset(&hi, 0x5a, sizeof(hi));
	hostinfo_init(&hi);
	assert_false(hi.cpuinfo_read);
	assert_false(hi.sld_flag);
	assert_false(hi.cmdline_has_sld);
	assert_int_equal(hi.split_lock_mitigate, -1);
	assert_int_equal(hi.nested, -1);
	assert_int_equal(hi.cpuid_7_edx30_reaches_guest, -1);
	assert_int_equal(hi.cpuid_1_ecx31_reaches_guest, -1);
	assert_int_equal(hi.mode, HOSTINFO_MODE_NONE);
	assert_string_equal(hi.kvm_error, "");
	assert_string_equal(hi.probe_error, "");
	assert_int_equal(hi.caps.max_vcpus, 0);
}

static void cpuinfo(void **state)
{
	struct hostinfo hi;

	(void)state;
	hostinfo_init(&hi);
	assert_int_equal(hostinfo_parse_cpuinfo(&hi, cpuinfo_both), 0);
	assert_true(hi.cpuinfo_read);
	assert_true(hi.sld_flag);
	assert_true(hi.bld_flag);

	assert_int_equal(hostinfo_parse_cpuinfo(&hi, cpuinfo_neither), 0);
	assert_true(hi.cpuinfo_read);
	assert_false(hi.sld_flag);
	assert_false(hi.bld_flag);

	assert_int_equal(hostinfo_parse_cpuinfo(&hi, cpuinfo_first_wins), 0);
	assert_false(hi.sld_flag);
	assert_false(hi.bld_flag);

	assert_int_equal(hostinfo_parse_cpuinfo(&hi, cpuinfo_at_end), 0);
	assert_true(hi.sld_flag);
	assert_true(hi.bld_flag);
}

static void cpuinfo_unusable(void **state)
{
	static const char *const texts[] = {
		cpuinfo_only_vmx_flags,
		"",
		"\n\n",
		"processor\t: 0\nvendor_id\t: GenuineIntel\n",
		"flagsx\t: split_lock_detect\n",
		"flags split_lock_detect\n",
		NULL,
	};
	struct hostinfo hi;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(texts); i++) {
		hostinfo_init(&hi);
		/* A previous good parse must not leak into a failed one. */
		assert_int_equal(hostinfo_parse_cpuinfo(&hi, cpuinfo_both), 0);
		if (hostinfo_parse_cpuinfo(&hi, texts[i]) != -1)
			fail_msg("text %zu parsed", i);
		assert_false(hi.cpuinfo_read);
		assert_false(hi.sld_flag);
		assert_false(hi.bld_flag);
	}
}

/* ------------------------------------------------------------ cmdline */

struct cmdline_case {
	const char *text;
	bool has;
	bool malformed;
	const char *value;
	unsigned ratelimit;
};

static void cmdline(void **state)
{
	static const struct cmdline_case cases[] = {
		/* absent, or only look-alikes */
		{ "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet\n", false, false, "", 0 },
		{ "", false, false, "", 0 },
		{ "xsplit_lock_detect=fatal\n", false, false, "", 0 },
		{ "nosplit_lock_detect split_lock_detect_x=fatal", false, false, "", 0 },
		{ "split_lock_detect fatal", false, false, "", 0 },
		{ "split_lock_detectfatal", false, false, "", 0 },
		/* each mode, at the start, in the middle, at the end, with newline */
		{ "split_lock_detect=off", true, false, "off", 0 },
		{ "ro split_lock_detect=warn quiet\n", true, false, "warn", 0 },
		{ "root=/dev/vda ro split_lock_detect=fatal\n", true, false, "fatal", 0 },
		{ "\tsplit_lock_detect=fatal\t", true, false, "fatal", 0 },
		{ "split_lock_detect=ratelimit:1\n", true, false, "ratelimit:1", 1 },
		{ "a split_lock_detect=ratelimit:1000 b", true, false, "ratelimit:1000", 1000 },
		{ "split_lock_detect=ratelimit:250\n", true, false, "ratelimit:250", 250 },
		{ "split_lock_detect=ratelimit:999", true, false, "ratelimit:999", 999 },
		/* the kernel's sscanf("%d") takes leading zeros and ignores junk after */
		{ "split_lock_detect=ratelimit:007", true, false, "ratelimit:007", 7 },
		{ "split_lock_detect=ratelimit:10abc", true, false, "ratelimit:10abc", 10 },
		/* bare "ratelimit:" matches the option name exactly: unthrottled */
		{ "split_lock_detect=ratelimit:", true, false, "ratelimit:", 0 },
		/* ratelimit out of range or not a number */
		{ "split_lock_detect=ratelimit:0", true, true, "ratelimit:0", 0 },
		{ "split_lock_detect=ratelimit:1001", true, true, "ratelimit:1001", 0 },
		{ "split_lock_detect=ratelimit:99999999999", true, true, "ratelimit:99999999999", 0 },
		{ "split_lock_detect=ratelimit:-5", true, true, "ratelimit:-5", 0 },
		{ "split_lock_detect=ratelimit:+5", true, true, "ratelimit:+5", 0 },
		{ "split_lock_detect=ratelimit:abc", true, true, "ratelimit:abc", 0 },
		{ "split_lock_detect=ratelimit", true, true, "ratelimit", 0 },
		/* only 19 characters reach the kernel's sscanf */
		{ "split_lock_detect=ratelimit:000000005", true, false, "ratelimit:000000005", 5 },
		{ "split_lock_detect=ratelimit:0000000005", true, true, "ratelimit:0000000005", 0 },
		/* malformed: the kernel keeps warn */
		{ "split_lock_detect=", true, true, "", 0 },
		{ "split_lock_detect=FATAL", true, true, "FATAL", 0 },
		{ "split_lock_detect=fatal,", true, true, "fatal,", 0 },
		{ "split_lock_detect=offx", true, true, "offx", 0 },
		{ "split_lock_detect==fatal", true, true, "=fatal", 0 },
		{ "split_lock_detect=\"fatal\"", true, true, "\"fatal\"", 0 },
		{ "split_lock_detect=on", true, true, "on", 0 },
		{ "split_lock_detect=abcdefghijklmnopqrstuvwxyz0123456789", true, true,
		  "abcdefghijklmnopqrstuvwxyz01234", 0 },
		/* the last occurrence wins, whatever the earlier ones were */
		{ "split_lock_detect=fatal split_lock_detect=off", true, false, "off", 0 },
		{ "split_lock_detect=off quiet split_lock_detect=fatal\n", true, false, "fatal", 0 },
		{ "split_lock_detect=fatal split_lock_detect=bogus", true, true, "bogus", 0 },
		{ "split_lock_detect=bogus split_lock_detect=warn", true, false, "warn", 0 },
		/*
		 * The kernel's early parser knows neither quotes nor "--": a
		 * word inside a quoted value, or after "--", still counts.
		 */
		{ "dyndbg=\"file x.c +p\" split_lock_detect=fatal", true, false, "fatal", 0 },
		{ "foo=\"a split_lock_detect=fatal b\"", true, false, "fatal", 0 },
		{ "quiet -- split_lock_detect=fatal", true, false, "fatal", 0 },
	};
	struct hostinfo hi;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const struct cmdline_case *c = &cases[i];

		hostinfo_init(&hi);
		/* Leftovers of an earlier parse must go. */
		assert_int_equal(hostinfo_parse_cmdline(&hi, "split_lock_detect=ratelimit:9 x"), 0);
		if (hostinfo_parse_cmdline(&hi, c->text) != 0)
			fail_msg("case %zu '%s': returned an error", i, c->text);
		if (!hi.cmdline_read || hi.cmdline_has_sld != c->has ||
		    hi.cmdline_malformed != c->malformed ||
		    strcmp(hi.cmdline_value, c->value) != 0 || hi.ratelimit != c->ratelimit)
			fail_msg("case %zu '%s': has %d malformed %d value '%s' ratelimit %u",
				 i, c->text, hi.cmdline_has_sld, hi.cmdline_malformed,
				 hi.cmdline_value, hi.ratelimit);
	}
	hostinfo_init(&hi);
	assert_int_equal(hostinfo_parse_cmdline(&hi, NULL), -1);
	assert_false(hi.cmdline_read);
	assert_false(hi.cmdline_has_sld);
}

static void mitigate(void **state)
{
	static const char *const bad[] = { "", "x", "2\n", "01\n", "1\n\n", " 1\n", "-1\n", "1x", NULL };
	struct hostinfo hi;

	(void)state;
	hostinfo_init(&hi);
	assert_int_equal(hostinfo_parse_mitigate(&hi, "0\n"), 0);
	assert_int_equal(hi.split_lock_mitigate, 0);
	assert_int_equal(hostinfo_parse_mitigate(&hi, "1\n"), 0);
	assert_int_equal(hi.split_lock_mitigate, 1);
	assert_int_equal(hostinfo_parse_mitigate(&hi, "0"), 0);
	assert_int_equal(hi.split_lock_mitigate, 0);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		hi.split_lock_mitigate = 1;
		if (hostinfo_parse_mitigate(&hi, bad[i]) != -1 || hi.split_lock_mitigate != -1)
			fail_msg("mitigate text %zu accepted", i);
	}
}

/* ------------------------------------------------------------ mode */

static void finish_matrix(void **state)
{
	static const struct {
		const char *cmdline;
		enum hostinfo_mode with_flag;
	} rows[] = {
		{ "quiet", HOSTINFO_MODE_WARN },
		{ "split_lock_detect=off", HOSTINFO_MODE_OFF },
		{ "split_lock_detect=warn", HOSTINFO_MODE_WARN },
		{ "split_lock_detect=fatal", HOSTINFO_MODE_FATAL },
		{ "split_lock_detect=ratelimit:5", HOSTINFO_MODE_RATELIMIT },
		{ "split_lock_detect=ratelimit:", HOSTINFO_MODE_RATELIMIT },
		{ "split_lock_detect=ratelimit:0", HOSTINFO_MODE_WARN },
		{ "split_lock_detect=bogus", HOSTINFO_MODE_WARN },
		{ "split_lock_detect=fatal split_lock_detect=nope", HOSTINFO_MODE_WARN },
		{ NULL, HOSTINFO_MODE_WARN }, /* /proc/cmdline unreadable */
	};
	struct hostinfo hi;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		for (int flag = 0; flag < 2; flag++) {
			for (int bld = 0; bld < 2; bld++) {
				enum hostinfo_mode want = flag ? rows[i].with_flag : HOSTINFO_MODE_NONE;

				hostinfo_init(&hi);
				hostinfo_parse_cmdline(&hi, rows[i].cmdline);
				hi.sld_flag = flag;
				/* Bus-lock detection alone never makes split-lock #AC. */
				hi.bld_flag = bld;
				hostinfo_finish(&hi);
				if (hi.mode != want)
					fail_msg("cmdline '%s' flag %d bld %d: mode %s, want %s",
						 rows[i].cmdline ? rows[i].cmdline : "(none)", flag, bld,
						 hostinfo_mode_name(hi.mode), hostinfo_mode_name(want));
			}
		}
	}
}

static void mode_names(void **state)
{
	(void)state;
	assert_string_equal(hostinfo_mode_name(HOSTINFO_MODE_NONE), "none");
	assert_string_equal(hostinfo_mode_name(HOSTINFO_MODE_OFF), "off");
	assert_string_equal(hostinfo_mode_name(HOSTINFO_MODE_WARN), "warn");
	assert_string_equal(hostinfo_mode_name(HOSTINFO_MODE_FATAL), "fatal");
	assert_string_equal(hostinfo_mode_name(HOSTINFO_MODE_RATELIMIT), "ratelimit");
	assert_string_equal(hostinfo_mode_name((enum hostinfo_mode)42), "?");
}

/* ------------------------------------------------------------ output */

/* What fn prints for hi, to free. */
static char *printed(void (*fn)(FILE *, const struct hostinfo *), const struct hostinfo *hi)
{
	struct capture c;

	assert_int_equal(capture_open(&c), 0);
	fn(c.f, hi);
	assert_int_equal(capture_close(&c), 0);
	assert_non_null(c.buf);
	return c.buf;
}

/* A strict RFC 8259 checker; p advances past the value it accepts. */
static bool json_value(const char **p, int depth);

static void json_ws(const char **p)
{
	while (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r')
		(*p)++;
}

static bool json_string(const char **p)
{
	const unsigned char *s = (const unsigned char *)*p;

	if (*s++ != '"')
		return false;
	for (;;) {
		if (*s == '"') {
			*p = (const char *)s + 1;
			return true;
		}
		if (*s < 0x20)
			return false;       /* also the end of the text */
		if (*s == '\\') {
			s++;
			if (*s == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!strchr("0123456789abcdefABCDEF", s[i]) || !s[i])
						return false;
				s += 5;
				continue;
			}
			if (!*s || !strchr("\"\\/bfnrt", *s))
				return false;
			s++;
			continue;
		}
		if (*s >= 0x80) {
			/* UTF-8: a lead byte and its continuation bytes. */
			int n = *s >= 0xf0 ? 3 : *s >= 0xe0 ? 2 : *s >= 0xc2 ? 1 : -1;

			if (n < 0 || *s > 0xf4)
				return false;
			for (int i = 1; i <= n; i++)
				if ((s[i] & 0xc0) != 0x80)
					return false;
			s += n + 1;
			continue;
		}
		s++;
	}
}

static bool json_number(const char **p)
{
	const char *s = *p;

	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (*s >= '1' && *s <= '9')
		while (*s >= '0' && *s <= '9')
			s++;
	else
		return false;
	if (*s == '.') {
		if (*++s < '0' || *s > '9')
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (*s < '0' || *s > '9')
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	*p = s;
	return true;
}

static bool json_container(const char **p, int depth, char close, bool object)
{
	(*p)++;
	json_ws(p);
	if (**p == close) {
		(*p)++;
		return true;
	}
	for (;;) {
		if (object) {
			if (!json_string(p))
				return false;
			json_ws(p);
			if (*(*p)++ != ':')
				return false;
		}
		if (!json_value(p, depth + 1))
			return false;
		json_ws(p);
		if (**p == close) {
			(*p)++;
			return true;
		}
		if (*(*p)++ != ',')
			return false;
		json_ws(p);
	}
}

static bool json_value(const char **p, int depth)
{
	if (depth > 32)
		return false;
	json_ws(p);
	switch (**p) {
	case '{': return json_container(p, depth, '}', true);
	case '[': return json_container(p, depth, ']', false);
	case '"': return json_string(p);
	case 't': return strncmp(*p, "true", 4) == 0 ? (*p += 4, true) : false;
	case 'f': return strncmp(*p, "false", 5) == 0 ? (*p += 5, true) : false;
	case 'n': return strncmp(*p, "null", 4) == 0 ? (*p += 4, true) : false;
	default: return json_number(p);
	}
}

static bool json_valid(const char *text)
{
	const char *p = text;

	if (!json_value(&p, 0))
		return false;
	json_ws(&p);
	return *p == '\0';
}

static void json_checker_works(void **state)
{
	(void)state;
	assert_true(json_valid("{\"a\":[1,-2.5e3,true,false,null,\"x\\\"\\u00e9\"],\"b\":{}}\n"));
	assert_false(json_valid("{\"a\":1,}"));
	assert_false(json_valid("{\"a\":\"x\"y\"}"));
	assert_false(json_valid("{\"a\":\"\\q\"}"));
	assert_false(json_valid("{\"a\":\"tab\there\"}"));
	assert_false(json_valid("{\"a\":01}"));
	assert_false(json_valid("{} {}"));
	assert_false(json_valid("{\"a\":\"\xff\"}"));
}

static void assert_has(const char *text, const char *needle)
{
	/* cmocka's asserts are not noreturn, so gcc cannot know text is set. */
	if (!text)
		fail_msg("no output");
	else if (!strstr(text, needle))
		fail_msg("'%s' not in:\n%s", needle, text);
}

/* What this project's machines look like: no detection, PVM's KVM. */
static void machine_like_here(struct hostinfo *hi)
{
	hostinfo_init(hi);
	assert_int_equal(hostinfo_parse_cpuinfo(hi, cpuinfo_neither), 0);
	assert_int_equal(hostinfo_parse_cmdline(hi, "console=ttyS0 quiet -- --init\n"), 0);
	assert_int_equal(hostinfo_parse_mitigate(hi, "1\n"), 0);
	hostinfo_finish(hi);
	hi->caps = (struct hostinfo_kvm_caps){
		.user_space_msr = 1, .msr_filter = 1, .exception_payload = 1,
		.vcpu_events = 1, .set_guest_debug = 1, .bus_lock_exit = 0,
		.immediate_exit = 1, .nr_vcpus = 2, .max_vcpus = 1024,
	};
	hi->cpuid_7_edx30_reaches_guest = 0;
	hi->cpuid_1_ecx31_reaches_guest = 1;
	hi->singlestep_cpl0 = 1;
	hi->singlestep_cpl3 = 0;
	hi->hwbp = 1;
	hi->databp_cpl0 = 0;
	hi->exec_bp_beside_step = 0;
	hi->dr7_gd = 1;
	hi->cs_write_gp = 1;
	hi->intn_error_code = 0;
	hi->lock_ud = 0;
	hi->leave_long_mode = 1;
	hi->enter_long_mode = 0;
	hi->cpl0_events = 0;
	hi->cpl1 = 1;
	hi->iret_step = 0;
	hi->movss_trap = 1;
	hi->syscall_sysret = 0;
	hi->split_fault = 1;
	hi->alignment_check = 1;
	hi->cmpxchg16b_cpl0 = 0;
	hi->soft_int_cpl0 = 0;
	hi->xsave_cpl0 = 1;
	hi->kernel_insns_cpl0 = 0;
	hi->nested = CPUID_NESTED_SVM;
}

static void json_here(void **state)
{
	struct hostinfo hi;
	char *out;

	(void)state;
	machine_like_here(&hi);
	out = printed(hostinfo_print_json, &hi);
	if (!json_valid(out))
		fail_msg("invalid JSON: %s", out);
	assert_string_equal(out,
		"{\"cpu\":{\"read\":true,\"split_lock_detect\":false,\"bus_lock_detect\":false},"
		"\"cmdline\":{\"read\":true,\"split_lock_detect\":null,\"malformed\":false,\"ratelimit\":null},"
		"\"split_lock_mitigate\":1,\"mode\":\"none\",\"can_deliver_ac\":false,"
		"\"kvm\":{\"available\":true,\"error\":null,"
		"\"caps\":{\"user_space_msr\":1,\"msr_filter\":1,\"exception_payload\":1,"
		"\"vcpu_events\":1,\"set_guest_debug\":1,\"bus_lock_exit\":0,\"immediate_exit\":1,"
		"\"nr_vcpus\":2,\"max_vcpus\":1024},\"nested\":\"svm\","
		"\"probe\":{\"cpuid_7_edx30_reaches_guest\":false,\"cpuid_1_ecx31_reaches_guest\":true,"
		"\"singlestep_cpl0\":true,"
		"\"singlestep_cpl3\":false,\"hw_breakpoint\":true,\"guest_data_breakpoint_cpl0\":false,\"exec_bp_beside_step\":false,\"dr7_gd\":true,\"cs_write_gp\":true,\"intn_error_code\":false,\"lock_ud\":false,\"leave_long_mode\":true,\"enter_long_mode\":false,\"cpl0_events\":false,\"cpl1\":true,\"iret_step\":false,\"movss_trap\":true,\"syscall_sysret\":false,\"split_fault\":true,\"alignment_check\":true,\"cmpxchg16b_cpl0\":false,\"soft_int_cpl0\":false,\"xsave_cpl0\":true,\"kernel_insns_cpl0\":false,\"error\":null}}}\n");
	free(out);
}

static void json_fatal_and_ratelimit(void **state)
{
	struct hostinfo hi;
	char *out;

	(void)state;
	hostinfo_init(&hi);
	hostinfo_parse_cpuinfo(&hi, cpuinfo_both);
	hostinfo_parse_cmdline(&hi, "ro split_lock_detect=fatal\n");
	hostinfo_finish(&hi);
	hi.cpuid_7_edx30_reaches_guest = 1;
	out = printed(hostinfo_print_json, &hi);
	assert_true(json_valid(out));
	assert_has(out, "\"cpu\":{\"read\":true,\"split_lock_detect\":true,\"bus_lock_detect\":true}");
	assert_has(out, "\"cmdline\":{\"read\":true,\"split_lock_detect\":\"fatal\",\"malformed\":false,\"ratelimit\":null}");
	assert_has(out, "\"split_lock_mitigate\":null");
	assert_has(out, "\"mode\":\"fatal\",\"can_deliver_ac\":true");
	assert_has(out, "\"cpuid_7_edx30_reaches_guest\":true");
	free(out);

	hostinfo_parse_cmdline(&hi, "split_lock_detect=ratelimit:64");
	hostinfo_finish(&hi);
	out = printed(hostinfo_print_json, &hi);
	assert_true(json_valid(out));
	assert_has(out, "\"split_lock_detect\":\"ratelimit:64\",\"malformed\":false,\"ratelimit\":64}");
	assert_has(out, "\"mode\":\"ratelimit\",\"can_deliver_ac\":false");
	free(out);

	hostinfo_parse_cmdline(&hi, "split_lock_detect=ratelimit:0");
	hostinfo_finish(&hi);
	out = printed(hostinfo_print_json, &hi);
	assert_true(json_valid(out));
	assert_has(out, "\"split_lock_detect\":\"ratelimit:0\",\"malformed\":true,\"ratelimit\":null}");
	assert_has(out, "\"mode\":\"warn\"");
	free(out);
}

static void json_escaping(void **state)
{
	struct hostinfo hi;
	char *out;

	(void)state;
	hostinfo_init(&hi);
	hostinfo_finish(&hi);
	snprintf(hi.kvm_error, sizeof(hi.kvm_error), "open \"/dev/kvm\": C:\\path\ttab\nline\x01");
	snprintf(hi.probe_error, sizeof(hi.probe_error), "no usable /dev/kvm");
	out = printed(hostinfo_print_json, &hi);
	if (!json_valid(out))
		fail_msg("invalid JSON: %s", out);
	assert_has(out, "\"error\":\"open \\\"/dev/kvm\\\": C:\\\\path\\ttab\\nline\\u0001\"");
	assert_has(out, "\"cpu\":{\"read\":false,\"split_lock_detect\":null,\"bus_lock_detect\":null}");
	assert_has(out, "\"cmdline\":{\"read\":false,\"split_lock_detect\":null");
	assert_has(out, "\"available\":false");
	assert_has(out, "\"caps\":{\"user_space_msr\":null,");
	assert_has(out, "\"max_vcpus\":null},\"nested\":null,");
	assert_has(out, "\"probe\":{\"cpuid_7_edx30_reaches_guest\":null,\"cpuid_1_ecx31_reaches_guest\":null,"
		   "\"singlestep_cpl0\":null,"
		   "\"singlestep_cpl3\":null,\"hw_breakpoint\":null,\"guest_data_breakpoint_cpl0\":null,\"exec_bp_beside_step\":null,\"dr7_gd\":null,\"cs_write_gp\":null,\"intn_error_code\":null,\"lock_ud\":null,\"leave_long_mode\":null,\"enter_long_mode\":null,\"cpl0_events\":null,\"cpl1\":null,\"iret_step\":null,\"movss_trap\":null,\"syscall_sysret\":null,\"split_fault\":null,\"alignment_check\":null,\"cmpxchg16b_cpl0\":null,\"soft_int_cpl0\":null,\"xsave_cpl0\":null,\"kernel_insns_cpl0\":null,\"error\":\"no usable /dev/kvm\"}");
	free(out);

	/* Bytes that are not UTF-8 (or cut mid-character) must not break it. */
	hostinfo_init(&hi);
	hostinfo_parse_cmdline(&hi, "split_lock_detect=\xff\xfe\xc3\xa9x\x7f\xe2\x82");
	hostinfo_finish(&hi);
	out = printed(hostinfo_print_json, &hi);
	if (!json_valid(out))
		fail_msg("invalid JSON: %s", out);
	assert_has(out, "\"split_lock_detect\":\"\\ufffd\\ufffd\xc3\xa9x\\u007f\\ufffd\\ufffd\"");
	free(out);
	/*
	 * Characters at the edges of each length pass as they are: U+07FF
	 * (lead 0xdf), U+0800 and U+0905 (lead 0xe0), U+FFFD (lead 0xef),
	 * U+10000 and U+10FFFF.
	 */
	hostinfo_init(&hi);
	hostinfo_parse_cmdline(&hi, "split_lock_detect=\xdf\xbf\xe0\xa0\x80\xe0\xa4\x85\xef\xbf\xbd"
			       "\xf0\x90\x80\x80\xf4\x8f\xbf\xbf");
	hostinfo_finish(&hi);
	out = printed(hostinfo_print_json, &hi);
	assert_has(out, "\"split_lock_detect\":\"\xdf\xbf\xe0\xa0\x80\xe0\xa4\x85\xef\xbf\xbd"
		   "\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\"");
	free(out);
}

static void text_report(void **state)
{
	struct hostinfo hi;
	char *out;

	(void)state;
	machine_like_here(&hi);
	out = printed(hostinfo_print, &hi);
	assert_has(out, "CPU flags:                    split_lock_detect no, bus_lock_detect no\n");
	assert_has(out, "split_lock_detect not given");
	assert_has(out, "effective mode:               none: ");
	assert_has(out, "split-lock #AC delivery:      no (the host CPU has no split-lock detection)\n");
	assert_has(out, "KVM_CAP_X86_BUS_LOCK_EXIT");
	assert_has(out, "  KVM_CAP_MAX_VCPUS           1024\n");
	assert_has(out, "CPUID probe:                  no: this KVM answers CPUID leaf 7 from the host");
	assert_has(out, "single-step probe:            CPL0 yes, CPL3 no (--split-lock=emulate sees split locks at CPL0 only)\n");
	assert_has(out, "breakpoint probe:             yes\n");
	assert_has(out, "nested virtualization:        svm (KVM offers it to guests; --split-lock=emulate hides it)\n");
	assert_has(out, "guest data breakpoint:        no (at CPL0 this KVM never fires one)\n");
	assert_has(out, "breakpoint beside a step:     no (this CPU reports no instruction breakpoint with a step trap)\n");
	/* What emulate cannot watch is said, never hidden. */
	assert_has(out, "emulate runs unchecked:       handlers of exceptions the CPU delivers by itself (#PF, #GP, ...) that emulate did not foresee\n");
	assert_has(out, "(a handler that returns to retry the faulting instruction is not even counted)\n");
	assert_has(out, "all CPL3 code (no single-step there)\n");
	free(out);
	/* Without breakpoints (the lab's): only the faults emulate delivers itself are watched. */
	hi.hwbp = 0;
	out = printed(hostinfo_print, &hi);
	assert_has(out, "emulate runs unchecked:       handlers of exceptions the CPU delivers by itself (#PF, #GP, ...) but a foreseen #GP/#SS, until they return\n");
	assert_has(out, "handlers of INT n and injected events outside IA-32e mode, until they return\n");
	free(out);
	hi.hwbp = 1;
	hi.nested = CPUID_NESTED_NONE;
	out = printed(hostinfo_print, &hi);
	assert_has(out, "nested virtualization:        none\n");
	free(out);
	out = printed(hostinfo_print_json, &hi);
	assert_has(out, "\"nested\":\"none\",");
	free(out);
	/* No single-step at CPL0 either: no claim that emulate sees CPL0. */
	hi.singlestep_cpl0 = 0;
	out = printed(hostinfo_print, &hi);
	assert_has(out, "single-step probe:            CPL0 no, CPL3 no\n");
	free(out);
	hi.singlestep_cpl0 = 1;

	hostinfo_parse_cpuinfo(&hi, cpuinfo_both);
	hostinfo_parse_cmdline(&hi, "split_lock_detect=fatal");
	hostinfo_finish(&hi);
	hi.cpuid_7_edx30_reaches_guest = -1;
	snprintf(hi.probe_error, sizeof(hi.probe_error), "KVM_CREATE_VM: Too many open files (errno 24)");
	out = printed(hostinfo_print, &hi);
	assert_has(out, "effective mode:               fatal: a guest split lock stops the guest");
	assert_has(out, "split-lock #AC delivery:      yes (");
	assert_has(out, "CPUID probe:                  not run: KVM_CREATE_VM: Too many open files (errno 24)\n");
	free(out);

	hostinfo_parse_cmdline(&hi, "split_lock_detect=sometimes");
	hostinfo_finish(&hi);
	snprintf(hi.kvm_error, sizeof(hi.kvm_error), "open /dev/kvm: No such file or directory");
	out = printed(hostinfo_print, &hi);
	assert_has(out, "split_lock_detect=sometimes, which the kernel ignores (keeps warn)");
	assert_has(out, "effective mode:               warn: ");
	assert_has(out, "split-lock #AC delivery:      no (");
	assert_has(out, "KVM:                          unavailable: open /dev/kvm: No such file or directory\n");
	assert_null(strstr(out, "KVM_CAP_"));
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(init_defaults),
		cmocka_unit_test(cpuinfo),
		cmocka_unit_test(cpuinfo_unusable),
		cmocka_unit_test(cmdline),
		cmocka_unit_test(mitigate),
		cmocka_unit_test(finish_matrix),
		cmocka_unit_test(mode_names),
		cmocka_unit_test(json_checker_works),
		cmocka_unit_test(json_here),
		cmocka_unit_test(json_fatal_and_ratelimit),
		cmocka_unit_test(json_escaping),
		cmocka_unit_test(text_report),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
