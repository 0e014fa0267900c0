/* SPDX-License-Identifier: MIT */
/*
 * The host-probe parsers and the --host-info report.
 *
 * Input: one flags byte, nine bytes of KVM capability values (signed), then
 * up to five NUL-separated texts: /proc/cpuinfo, /proc/cmdline,
 * split_lock_mitigate, the KVM error and the probe error. Flag bits 0-2 hand
 * the three parsers NULL instead (an unreadable file), bit 3 says KVM is
 * available (the KVM error text is dropped), bits 4-5 give the probe result
 * (-1, 0, 1).
 *
 * Oracles:
 *  - each parser agrees with a reference written independently from the
 *    kernel rules quoted in hostinfo.c (first "flags" line, whole words;
 *    words split at bytes <= ' ', the last split_lock_detect= wins, the
 *    kernel's 19-character copy and match rules; "0"/"1" with an optional
 *    newline), including the return values;
 *  - hostinfo_finish derives the mode the kernel would;
 *  - policy_decide for each policy: enumerate only on a fatal host and
 *    not with "off", refuse only "on" on a host that cannot deliver;
 *  - hostinfo_print_json is one well-formed JSON object (strict grammar,
 *    valid UTF-8, unique keys) whose "mode" and "can_deliver_ac" match;
 *  - hostinfo_print writes text lines with no NUL byte, ending in a newline.
 */
#include "fuzz.h"

#include "hostinfo.h"
#include "policy.h"
#include "array_size.h"

/* --------------------------------------------------------- references */

struct ref {
	int cpuinfo_ret, cmdline_ret, mitigate_ret;
	bool cpuinfo_read, sld, bld;
	bool cmdline_read, has_sld, malformed;
	char value[32];
	unsigned ratelimit;
	int mitigate;
	enum hostinfo_mode mode;
};

/* /proc/cpuinfo: the first line whose key is exactly "flags". */
static void ref_cpuinfo(struct ref *r, const char *text)
{
	r->cpuinfo_ret = -1;
	r->cpuinfo_read = r->sld = r->bld = false;
	if (!text)
		return;
	for (const char *line = text; *line;) {
		size_t len = strcspn(line, "\n");
		char *copy = strndup(line, len), *p, *word, *save;

		FUZZ_SETUP(copy);
		p = copy;
		if (strncmp(p, "flags", 5) == 0) {
			p += 5;
			p += strspn(p, " \t");
			if (*p == ':') {
				r->cpuinfo_ret = 0;
				r->cpuinfo_read = true;
				for (word = strtok_r(p + 1, " \t", &save); word;
				     word = strtok_r(NULL, " \t", &save)) {
					r->sld |= strcmp(word, "split_lock_detect") == 0;
					r->bld |= strcmp(word, "bus_lock_detect") == 0;
				}
				free(copy);
				return;
			}
		}
		free(copy);
		line += len;
		if (*line)
			line++;
	}
}

/* /proc/cmdline, as arch/x86/lib/cmdline.c and match_option() see it. */
static void ref_cmdline(struct ref *r, const char *text)
{
	static const char key[] = "split_lock_detect=";
	const unsigned char *p = (const unsigned char *)text, *val = NULL;
	size_t len = 0;
	char arg[20];

	r->cmdline_ret = text ? 0 : -1;
	r->cmdline_read = text != NULL;
	r->has_sld = r->malformed = false;
	r->value[0] = '\0';
	r->ratelimit = 0;
	if (!text)
		return;
	while (*p) {
		const unsigned char *w;

		if (*p <= ' ') {
			p++;
			continue;
		}
		w = p;
		while (*p > ' ')
			p++;
		if ((size_t)(p - w) >= strlen(key) && memcmp(w, key, strlen(key)) == 0) {
			val = w + strlen(key);
			len = (size_t)(p - val);
		}
	}
	if (!val)
		return;
	r->has_sld = true;
	snprintf(r->value, sizeof(r->value), "%.*s", (int)(len < 31 ? len : 31), (const char *)val);
	snprintf(arg, sizeof(arg), "%.*s", (int)(len < 19 ? len : 19), (const char *)val);
	if (strcmp(arg, "off") == 0 || strcmp(arg, "warn") == 0 || strcmp(arg, "fatal") == 0) {
		/* a 19-character copy can equal these only when the value does */
		return;
	}
	if (strncmp(arg, "ratelimit:", 10) == 0) {
		const char *s = arg + 10;
		bool neg = *s == '-';
		long n = 0;

		if (neg)
			s++;
		if (*s >= '0' && *s <= '9') {
			while (*s >= '0' && *s <= '9')
				n = n * 10 + (*s++ - '0');
			if (neg)
				n = -n;
			if (n >= 1 && n <= 1000) {
				r->ratelimit = (unsigned)n;
				return;
			}
		}
		if (len == 10)
			return;	/* bare "ratelimit:" */
	}
	r->malformed = true;
}

static void ref_mitigate(struct ref *r, const char *text)
{
	r->mitigate = -1;
	r->mitigate_ret = -1;
	if (text && (strcmp(text, "0") == 0 || strcmp(text, "0\n") == 0)) {
		r->mitigate = 0;
		r->mitigate_ret = 0;
	} else if (text && (strcmp(text, "1") == 0 || strcmp(text, "1\n") == 0)) {
		r->mitigate = 1;
		r->mitigate_ret = 0;
	}
}

static enum hostinfo_mode ref_mode(const struct ref *r)
{
	if (!r->sld)
		return HOSTINFO_MODE_NONE;
	if (!r->has_sld || r->malformed)
		return HOSTINFO_MODE_WARN;
	if (strcmp(r->value, "off") == 0)
		return HOSTINFO_MODE_OFF;
	if (strcmp(r->value, "fatal") == 0)
		return HOSTINFO_MODE_FATAL;
	if (strncmp(r->value, "ratelimit:", 10) == 0)
		return HOSTINFO_MODE_RATELIMIT;
	return HOSTINFO_MODE_WARN;
}

/* --------------------------------------------------------- checks */

static void check_fields(const struct hostinfo *hi, const struct ref *r)
{
	FUZZ_CHECK(hi->cpuinfo_read == r->cpuinfo_read, "cpuinfo_read %d, reference %d",
		   hi->cpuinfo_read, r->cpuinfo_read);
	FUZZ_CHECK(hi->sld_flag == r->sld, "sld_flag %d, reference %d", hi->sld_flag, r->sld);
	FUZZ_CHECK(hi->bld_flag == r->bld, "bld_flag %d, reference %d", hi->bld_flag, r->bld);
	FUZZ_CHECK(hi->cmdline_read == r->cmdline_read, "cmdline_read");
	FUZZ_CHECK(hi->cmdline_has_sld == r->has_sld, "cmdline_has_sld %d, reference %d",
		   hi->cmdline_has_sld, r->has_sld);
	FUZZ_CHECK(hi->cmdline_malformed == r->malformed, "cmdline_malformed %d, reference %d (value \"%s\")",
		   hi->cmdline_malformed, r->malformed, r->value);
	FUZZ_CHECK(memchr(hi->cmdline_value, '\0', sizeof(hi->cmdline_value)),
		   "cmdline_value not terminated");
	FUZZ_CHECK(strcmp(hi->cmdline_value, r->value) == 0, "cmdline_value \"%s\", reference \"%s\"",
		   hi->cmdline_value, r->value);
	FUZZ_CHECK(hi->ratelimit == r->ratelimit, "ratelimit %u, reference %u",
		   hi->ratelimit, r->ratelimit);
	FUZZ_CHECK(hi->split_lock_mitigate == r->mitigate, "split_lock_mitigate %d, reference %d",
		   hi->split_lock_mitigate, r->mitigate);
	FUZZ_CHECK(hi->mode == r->mode, "mode %s, reference %s", hostinfo_mode_name(hi->mode),
		   hostinfo_mode_name(r->mode));
}

static void check_policy(const struct hostinfo *hi)
{
	static const enum policy policies[] = {
		POLICY_INHERIT, POLICY_ON, POLICY_OFF,
	};
	bool fatal = hi->mode == HOSTINFO_MODE_FATAL;

	FUZZ_CHECK(hostinfo_can_deliver_ac(hi) == fatal, "can_deliver on a %s host",
		   hostinfo_mode_name(hi->mode));
	for (size_t i = 0; i < ARRAY_SIZE(policies); i++) {
		struct policy_decision d;
		enum policy p = policies[i];

		memset(&d, 0x55, sizeof(d));
		policy_decide(p, SPLIT_LOCK_WATCH_ARMED, hi, &d);
		FUZZ_CHECK(d.enumerate == (fatal && p != POLICY_OFF),
			   "policy %s on a %s host: enumerate %d", policy_name(p),
			   hostinfo_mode_name(hi->mode), d.enumerate);
		FUZZ_CHECK(d.start == !(p == POLICY_ON && !fatal),
			   "policy %s on a %s host: start %d", policy_name(p),
			   hostinfo_mode_name(hi->mode), d.start);
		FUZZ_CHECK(memchr(d.line, '\0', sizeof(d.line)) && d.line[0] && !strchr(d.line, '\n'),
			   "policy line is not one line");
	}
}

static void check_json(const struct hostinfo *hi)
{
	char *buf = NULL, why[160], want[64];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	FUZZ_SETUP(f);
	hostinfo_print_json(f, hi);
	FUZZ_SETUP(fclose(f) == 0);
	FUZZ_CHECK(strlen(buf) == len, "NUL byte in the JSON");
	FUZZ_CHECK(len && buf[len - 1] == '\n', "JSON does not end with a newline");
	FUZZ_CHECK(fuzz_json_check(buf, len, why, sizeof(why)) == 0, "bad JSON: %s:\n%s", why, buf);
	FUZZ_CHECK(buf[0] == '{', "JSON is not an object");
	snprintf(want, sizeof(want), "\"mode\":\"%s\"", hostinfo_mode_name(hi->mode));
	FUZZ_CHECK(strstr(buf, want), "JSON lacks %s", want);
	snprintf(want, sizeof(want), "\"can_deliver_ac\":%s",
		 hi->mode == HOSTINFO_MODE_FATAL ? "true" : "false");
	FUZZ_CHECK(strstr(buf, want), "JSON lacks %s", want);
	free(buf);
}

static void check_text(const struct hostinfo *hi)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	FUZZ_SETUP(f);
	hostinfo_print(f, hi);
	FUZZ_SETUP(fclose(f) == 0);
	FUZZ_CHECK(strlen(buf) == len, "NUL byte in the text report");
	FUZZ_CHECK(len && buf[len - 1] == '\n', "text report does not end with a newline");
	FUZZ_CHECK(strstr(buf, "effective mode:"), "text report lacks the mode");
	free(buf);
}

/* --------------------------------------------------------- entry */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = fuzz_in(data, size);
	uint8_t flags = fuzz_u8(&in);
	int caps[9];
	char *cpuinfo, *cmdline, *mitigate, *kvm_error, *probe_error;
	struct hostinfo hi;
	struct ref r;
	int ret;

	for (size_t i = 0; i < 9; i++)
		caps[i] = (int8_t)fuzz_u8(&in);
	cpuinfo = fuzz_cstr(&in);
	cmdline = fuzz_cstr(&in);
	mitigate = fuzz_cstr(&in);
	kvm_error = fuzz_cstr(&in);
	probe_error = fuzz_cstr(&in);

	memset(&hi, 0xa5, sizeof(hi));
	hostinfo_init(&hi);

	ret = hostinfo_parse_cpuinfo(&hi, flags & 1 ? NULL : cpuinfo);
	ref_cpuinfo(&r, flags & 1 ? NULL : cpuinfo);
	FUZZ_CHECK(ret == r.cpuinfo_ret, "hostinfo_parse_cpuinfo returned %d, reference %d",
		   ret, r.cpuinfo_ret);
	ret = hostinfo_parse_cmdline(&hi, flags & 2 ? NULL : cmdline);
	ref_cmdline(&r, flags & 2 ? NULL : cmdline);
	FUZZ_CHECK(ret == r.cmdline_ret, "hostinfo_parse_cmdline returned %d, reference %d",
		   ret, r.cmdline_ret);
	ret = hostinfo_parse_mitigate(&hi, flags & 4 ? NULL : mitigate);
	ref_mitigate(&r, flags & 4 ? NULL : mitigate);
	FUZZ_CHECK(ret == r.mitigate_ret, "hostinfo_parse_mitigate returned %d, reference %d",
		   ret, r.mitigate_ret);

	hostinfo_finish(&hi);
	r.mode = ref_mode(&r);
	check_fields(&hi, &r);

	/* What hostinfo_kvm.c would fill in from KVM, from the input instead. */
	if (flags & 8) {
		hi.caps = (struct hostinfo_kvm_caps){
			caps[0], caps[1], caps[2], caps[3], caps[4],
			caps[5], caps[6], caps[7], caps[8],
		};
	} else {
		snprintf(hi.kvm_error, sizeof(hi.kvm_error), "%s",
			 kvm_error[0] ? kvm_error : "cannot open /dev/kvm");
	}
	hi.cpuid_7_edx30_reaches_guest = (int)((flags >> 4) & 3) % 3 - 1;
	hi.cpuid_1_ecx31_reaches_guest = (int)((flags >> 6) & 3) % 3 - 1;
	snprintf(hi.probe_error, sizeof(hi.probe_error), "%s", probe_error);

	check_policy(&hi);
	check_json(&hi);
	check_text(&hi);

	free(cpuinfo);
	free(cmdline);
	free(mitigate);
	free(kvm_error);
	free(probe_error);
	return 0;
}
