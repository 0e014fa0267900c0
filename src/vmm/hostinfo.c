/* SPDX-License-Identifier: MIT */
/*
 * The pure half of hostinfo.h: parsers of captured /proc text, the mode the
 * host kernel derives from them, and the report. hostinfo_kvm.c does the I/O.
 *
 * The boot parameter is parsed the way the kernel itself parses it
 * (arch/x86/lib/cmdline.c cmdline_find_option() feeding sld_state_setup()
 * and match_option() in arch/x86/kernel/cpu/bus_lock.c, formerly intel.c),
 * quirks included, because the question is what the running kernel decided,
 * not what the administrator meant.
 */
#include "hostinfo.h"

#include "array_size.h"
#include "cpuid.h"

#include <stddef.h>
#include <string.h>

#include <linux/kvm.h>


void hostinfo_init(struct hostinfo *hi)
{
	memset(hi, 0, sizeof(*hi));
	hi->split_lock_mitigate = -1;
	hi->cpuid_7_edx30_reaches_guest = -1;
	hi->cpuid_1_ecx31_reaches_guest = -1;
	hi->nested = -1;
	hi->singlestep_cpl0 = -1;
	hi->singlestep_cpl3 = -1;
	hi->hwbp = -1;
	hi->databp_cpl0 = -1;
	hi->exec_bp_beside_step = -1;
	hi->dr7_gd = -1;
	hi->cs_write_gp = -1;
	hi->intn_error_code = -1;
	hi->lock_ud = -1;
	hi->leave_long_mode = -1;
	hi->enter_long_mode = -1;
	hi->cpl0_events = -1;
	hi->cpl1 = -1;
	hi->iret_step = -1;
	hi->movss_trap = -1;
	hi->syscall_sysret = -1;
	hi->split_fault = -1;
	hi->alignment_check = -1;
	hi->cmpxchg16b_cpl0 = -1;
	hi->soft_int_cpl0 = -1;
	hi->xsave_cpl0 = -1;
	hi->kernel_insns_cpl0 = -1;
	hi->mode = HOSTINFO_MODE_NONE;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* True when the space-separated list [p, end) holds `word` as a whole word. */
static bool has_word(const char *p, const char *end, const char *word)
{
	size_t n = strlen(word);

	while (p < end) {
		const char *w;

		while (p < end && is_blank(*p))
			p++;
		w = p;
		while (p < end && !is_blank(*p))
			p++;
		if ((size_t)(p - w) == n && memcmp(w, word, n) == 0)
			return true;
	}
	return false;
}

/*
 * Returns the value of a "key<blanks>: value" line whose key is exactly
 * `key` ("vmx flags" and "bugs" lines must not pass for "flags"), or NULL.
 */
static const char *line_value(const char *line, const char *end, const char *key)
{
	size_t n = strlen(key);
	const char *p = line + n;

	if ((size_t)(end - line) < n || memcmp(line, key, n) != 0)
		return NULL;
	while (p < end && is_blank(*p))
		p++;
	if (p == end || *p != ':')
		return NULL;
	return p + 1;
}

int hostinfo_parse_cpuinfo(struct hostinfo *hi, const char *text)
{
	hi->cpuinfo_read = false;
	hi->sld_flag = false;
	hi->bld_flag = false;
	if (!text)
		return -1;
	/*
	 * The first processor's line decides: the kernel shows one capability
	 * set (boot_cpu_data forced caps) on every CPU for these two flags.
	 */
	for (const char *line = text; *line;) {
		const char *end = strchr(line, '\n');
		const char *v;

		if (!end)
			end = line + strlen(line);
		v = line_value(line, end, "flags");
		if (v) {
			hi->sld_flag = has_word(v, end, "split_lock_detect");
			hi->bld_flag = has_word(v, end, "bus_lock_detect");
			hi->cpuinfo_read = true;
			return 0;
		}
		line = *end ? end + 1 : end;
	}
	return -1;
}

/* The kernel's idea of whitespace on the command line: any byte <= ' '. */
static bool cmdline_space(char c)
{
	return (unsigned char)c <= ' ';
}

/* The kernel's vsscanf("%d") on what follows "ratelimit:": no '+', no base prefix. */
static bool kernel_scan_int(const char *s, long *out)
{
	bool neg = *s == '-';
	long v = 0;

	if (neg)
		s++;
	if (*s < '0' || *s > '9')
		return false;
	/* At most 9 digits fit in the kernel's 20-byte buffer: no overflow. */
	for (; *s >= '0' && *s <= '9'; s++)
		v = v * 10 + (*s - '0');
	*out = neg ? -v : v;
	return true;
}

static void copy_trunc(char *dst, size_t size, const char *src, size_t len)
{
	if (len >= size)
		len = size - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
}

int hostinfo_parse_cmdline(struct hostinfo *hi, const char *text)
{
	/* sld_state_setup() looks at a copy truncated to 19 characters. */
	char arg[20];
	const char *val = NULL;
	size_t len = 0;
	long n;

	hi->cmdline_read = false;
	hi->cmdline_has_sld = false;
	hi->cmdline_malformed = false;
	hi->cmdline_value[0] = '\0';
	hi->ratelimit = 0;
	if (!text)
		return -1;
	hi->cmdline_read = true;

	/*
	 * Like cmdline_find_option(): words split at any byte <= ' ', with no
	 * notion of quotes or of "--" (so a quoted "a split_lock_detect=x b"
	 * counts, exactly as it does for the kernel), and the last occurrence
	 * of the parameter wins.
	 */
	for (const char *p = text; *p;) {
		const char *w;
		static const char key[] = "split_lock_detect=";

		while (*p && cmdline_space(*p))
			p++;
		w = p;
		while (*p && !cmdline_space(*p))
			p++;
		if ((size_t)(p - w) >= sizeof(key) - 1 && memcmp(w, key, sizeof(key) - 1) == 0) {
			val = w + sizeof(key) - 1;
			len = (size_t)(p - val);
		}
	}
	if (!val)
		return 0;

	hi->cmdline_has_sld = true;
	copy_trunc(hi->cmdline_value, sizeof(hi->cmdline_value), val, len);
	copy_trunc(arg, sizeof(arg), val, len);

	/*
	 * match_option(): off/warn/fatal must match the whole value, while
	 * "ratelimit:" only needs a leading number in 1..1000 (trailing junk
	 * is ignored), and a bare "ratelimit:" matches too, unlimited.
	 */
	if ((len == 3 && memcmp(arg, "off", 3) == 0) ||
	    (len == 4 && memcmp(arg, "warn", 4) == 0) ||
	    (len == 5 && memcmp(arg, "fatal", 5) == 0))
		return 0;
	if (strncmp(arg, "ratelimit:", 10) == 0) {
		if (kernel_scan_int(arg + 10, &n) && n > 0 && n <= 1000) {
			hi->ratelimit = (unsigned)n;
			return 0;
		}
		if (len == 10)
			return 0;
	}
	/* Not an error in the text: the kernel silently keeps its default. */
	hi->cmdline_malformed = true;
	return 0;
}

int hostinfo_parse_mitigate(struct hostinfo *hi, const char *text)
{
	hi->split_lock_mitigate = -1;
	if (!text || (text[0] != '0' && text[0] != '1') ||
	    !(text[1] == '\0' || (text[1] == '\n' && text[2] == '\0')))
		return -1;
	hi->split_lock_mitigate = text[0] - '0';
	return 0;
}

void hostinfo_finish(struct hostinfo *hi)
{
	const char *v = hi->cmdline_value;

	/*
	 * Without the CPU feature there is no split-lock #AC whatever the
	 * command line says; bus-lock #DB alone (ratelimit) is a different
	 * mechanism that never reaches the VMM as #AC.
	 */
	if (!hi->sld_flag)
		hi->mode = HOSTINFO_MODE_NONE;
	else if (!hi->cmdline_has_sld || hi->cmdline_malformed)
		hi->mode = HOSTINFO_MODE_WARN;
	else if (strcmp(v, "off") == 0)
		hi->mode = HOSTINFO_MODE_OFF;
	else if (strcmp(v, "fatal") == 0)
		hi->mode = HOSTINFO_MODE_FATAL;
	else if (strncmp(v, "ratelimit:", 10) == 0)
		hi->mode = HOSTINFO_MODE_RATELIMIT;
	else
		hi->mode = HOSTINFO_MODE_WARN;
}

bool hostinfo_can_deliver_ac(const struct hostinfo *hi)
{
	return hi->mode == HOSTINFO_MODE_FATAL;
}

const char *hostinfo_mode_name(enum hostinfo_mode m)
{
	switch (m) {
	case HOSTINFO_MODE_NONE: return "none";
	case HOSTINFO_MODE_OFF: return "off";
	case HOSTINFO_MODE_WARN: return "warn";
	case HOSTINFO_MODE_FATAL: return "fatal";
	case HOSTINFO_MODE_RATELIMIT: return "ratelimit";
	}
	return "?";
}

/* ------------------------------------------------------------ report */

static const char *mode_meaning(const struct hostinfo *hi)
{
	switch (hi->mode) {
	case HOSTINFO_MODE_NONE:
		return "the CPU cannot detect split locks; a guest split lock just runs, locking the bus";
	case HOSTINFO_MODE_OFF:
		return "the host kernel switched detection off; a guest split lock just runs, locking the bus";
	case HOSTINFO_MODE_WARN:
		return "the host kernel absorbs a guest split lock (logs it, lets the guest go on); KVM never tells the VMM";
	case HOSTINFO_MODE_FATAL:
		return "a guest split lock stops the guest; KVM exits to the VMM with #AC (KVM_EXIT_EXCEPTION, and SIGBUS to the vCPU thread), so the VMM can deliver it";
	case HOSTINFO_MODE_RATELIMIT:
		return "split-lock #AC is off; the host kernel only throttles bus locks (#DB, where bus_lock_detect exists); KVM never tells the VMM";
	}
	return "?";
}

static const char *deliver_reason(const struct hostinfo *hi)
{
	switch (hi->mode) {
	case HOSTINFO_MODE_NONE:
		return "the host CPU has no split-lock detection";
	case HOSTINFO_MODE_OFF:
		return "the host kernel runs split_lock_detect=off";
	case HOSTINFO_MODE_WARN:
		return "the host kernel runs split_lock_detect=warn; fatal is needed";
	case HOSTINFO_MODE_RATELIMIT:
		return "the host kernel runs split_lock_detect=ratelimit; fatal is needed";
	case HOSTINFO_MODE_FATAL:
		return "the host kernel runs split_lock_detect=fatal";
	}
	return "?";
}

static const char *tristate(int v)
{
	return v > 0 ? "yes" : v == 0 ? "no" : "unknown";
}

static const char *probe_meaning(const struct hostinfo *hi)
{
	if (hi->cpuid_7_edx30_reaches_guest > 0)
		return "yes: KVM_SET_CPUID2's CPUID.(7,0):EDX[30] reaches the guest, so the VMM can enumerate IA32_CORE_CAPABILITIES";
	if (hi->cpuid_7_edx30_reaches_guest == 0)
		return "no: this KVM answers CPUID leaf 7 from the host, so guests here never see CPUID.(7,0):EDX[30]";
	return NULL;
}

static const struct {
	const char *name;     /* the KVM constant, for people */
	const char *key;      /* the JSON key */
	size_t off;
} caps[] = {
#define CAP(c, f) { "KVM_CAP_" #c, #f, offsetof(struct hostinfo_kvm_caps, f) }
	CAP(X86_USER_SPACE_MSR, user_space_msr),
	CAP(X86_MSR_FILTER, msr_filter),
	CAP(EXCEPTION_PAYLOAD, exception_payload),
	CAP(VCPU_EVENTS, vcpu_events),
	CAP(SET_GUEST_DEBUG, set_guest_debug),
	CAP(X86_BUS_LOCK_EXIT, bus_lock_exit),
	CAP(IMMEDIATE_EXIT, immediate_exit),
	CAP(NR_VCPUS, nr_vcpus),
	CAP(MAX_VCPUS, max_vcpus),
#undef CAP
};

static int cap_value(const struct hostinfo *hi, size_t i)
{
	int v;

	memcpy(&v, (const char *)&hi->caps + caps[i].off, sizeof(v));
	return v;
}

/* Labels and capability names share one value column. */
#define LABEL "%-30s"

/* What the host kernel does about split locks, and whether a guest can get its #AC. */
static void print_kernel(FILE *out, const struct hostinfo *hi)
{
	bool deliver = hostinfo_can_deliver_ac(hi);

	if (hi->cpuinfo_read)
		fprintf(out, LABEL "split_lock_detect %s, bus_lock_detect %s\n", "CPU flags:",
			hi->sld_flag ? "yes" : "no", hi->bld_flag ? "yes" : "no");
	else
		fprintf(out, LABEL "unknown (no flags line in /proc/cpuinfo)\n", "CPU flags:");

	if (!hi->cmdline_read)
		fprintf(out, LABEL "unknown (/proc/cmdline unreadable)\n", "boot parameter:");
	else if (!hi->cmdline_has_sld)
		fprintf(out, LABEL "split_lock_detect not given\n", "boot parameter:");
	else if (hi->cmdline_malformed)
		fprintf(out, LABEL "split_lock_detect=%s, which the kernel ignores (keeps warn)\n",
			"boot parameter:", hi->cmdline_value);
	else
		fprintf(out, LABEL "split_lock_detect=%s\n", "boot parameter:", hi->cmdline_value);

	if (hi->split_lock_mitigate < 0)
		fprintf(out, LABEL "absent (a kernel before 6.2 or without Intel CPU support)\n",
			"split_lock_mitigate:");
	else
		fprintf(out, LABEL "%d (%s)\n", "split_lock_mitigate:", hi->split_lock_mitigate,
			hi->split_lock_mitigate ?
			"in warn mode a split-locking task is also slowed: 10 ms sleep, one core at a time" :
			"in warn mode a split-locking task is only logged");

	fprintf(out, LABEL "%s: %s\n", "effective mode:", hostinfo_mode_name(hi->mode), mode_meaning(hi));
	fprintf(out, LABEL "%s (%s)\n", "split-lock #AC delivery:", deliver ? "yes" : "no",
		deliver_reason(hi));
}

/* /dev/kvm: its API, the capabilities vmm uses, nested virtualization. */
static void print_kvm(FILE *out, const struct hostinfo *hi)
{
	fprintf(out, LABEL "/dev/kvm, API %d\n", "KVM:", KVM_API_VERSION);
	for (size_t i = 0; i < ARRAY_SIZE(caps); i++) {
		int v = cap_value(hi, i);

		if (v < 0)
			fprintf(out, "  %-27s error\n", caps[i].name);
		else
			fprintf(out, "  %-27s %d\n", caps[i].name, v);
	}
	if (hi->nested >= 0)
		fprintf(out, LABEL "%s%s\n", "nested virtualization:",
			cpuid_nested_name((enum cpuid_nested)hi->nested),
			hi->nested != CPUID_NESTED_NONE ?
			" (KVM offers it to guests; --split-lock=emulate hides it)" : "");
}

/* The probes that say more than yes or no. */
static void print_detailed_probes(FILE *out, const struct hostinfo *hi)
{
	const char *pm = probe_meaning(hi);

	if (pm) {
		fprintf(out, LABEL "%s\n", "CPUID probe:", pm);
		if (hi->probe_error[0])
			fprintf(out, LABEL "%s\n", "", hi->probe_error);
	} else
		fprintf(out, LABEL "not run%s%s\n", "CPUID probe:",
			hi->probe_error[0] ? ": " : "", hi->probe_error);
	fprintf(out, LABEL "%s%s\n", "CPUID hypervisor bit:", tristate(hi->cpuid_1_ecx31_reaches_guest),
		hi->cpuid_1_ecx31_reaches_guest == 0 ?
		" (this KVM answers CPUID leaf 1 from the host: --hypervisor-bit cannot change what guests see)" : "");
	fprintf(out, LABEL "CPL0 %s, CPL3 %s%s\n", "single-step probe:",
		tristate(hi->singlestep_cpl0), tristate(hi->singlestep_cpl3),
		hi->singlestep_cpl0 > 0 && hi->singlestep_cpl3 == 0 ?
		" (--split-lock=emulate sees split locks at CPL0 only)" : "");
	fprintf(out, LABEL "%s%s%s\n", "breakpoint probe:", tristate(hi->hwbp),
		hi->hwbp_detail[0] ? ": " : "", hi->hwbp_detail);
}

/* The probes of one answer each: what a "no" means here. */
static void print_yes_no_probes(FILE *out, const struct hostinfo *hi)
{
	const struct {
		const char *label;
		int value;
		const char *no;
	} probes[] = {
		{ "guest data breakpoint:", hi->databp_cpl0, "at CPL0 this KVM never fires one" },
		{ "breakpoint beside a step:", hi->exec_bp_beside_step,
		  "this CPU reports no instruction breakpoint with a step trap" },
		{ "DR7.GD #DB:", hi->dr7_gd,
		  "this CPU ignores DR7.GD; emulate raises the #DB as the SDM says" },
		{ "CS write #GP:", hi->cs_write_gp,
		  "this CPU writes through CS in compatibility mode" },
		{ "INT n #GP error code:", hi->intn_error_code,
		  "this CPU pushes vector * 16 + 2, not vector * 8 + 2" },
		{ "LOCK MOV #UD:", hi->lock_ud, "this CPU completes a store with a LOCK prefix" },
		{ "leaving long mode:", hi->leave_long_mode,
		  "this KVM stops a guest that clears CR0.PG and EFER.LME, or pages outside IA-32e mode" },
		{ "entering long mode:", hi->enter_long_mode,
		  "this KVM stops a guest that sets EFER.LME itself: the PC machine's guests bring up one CPU only" },
		{ "CPL0 events under TF:", hi->cpl0_events,
		  "this KVM stops the VM, internal error, at INT3 or #UD at CPL0 with TF set, or INT3 behind MOV SS" },
		{ "IRETQ step trap:", hi->iret_step,
		  "single-stepped at CPL0, this KVM runs IRETQ and the next instruction in one step; emulate performs IRETQ itself" },
		{ "MOV SS holds TF's trap:", hi->movss_trap,
		  "the guest's single-step trap comes right after MOV SS, not after the next instruction" },
		{ "SYSCALL #UD, SYSRET with TF:", hi->syscall_sysret,
		  "from CPL3, SYSCALL with EFER.SCE clear raises no #UD at itself, or with TF set its handler's SYSRETQ does not come back" },
		{ "CPL1 and CPL2:", hi->cpl1, "this KVM stops a guest that runs at CPL1, internal error" },
		{ "split lock #PF atomic:", hi->split_fault,
		  "a locked access that faults on its second page wrote its first" },
		{ "alignment-check #AC:", hi->alignment_check,
		  "this CPU raises no #AC for a misaligned access at CPL3 with CR0.AM and RFLAGS.AC set" },
		{ "CMPXCHG16B at CPL0:", hi->cmpxchg16b_cpl0,
		  "this KVM stops the VM, internal error, at a locked CMPXCHG16B at CPL0; vmm completes it" },
		{ "INT3, INT n at CPL0:", hi->soft_int_cpl0,
		  "this KVM stops the VM, internal error, at INT3 or INT n at CPL0; vmm delivers them" },
		{ "XSAVE, XRSTOR at CPL0:", hi->xsave_cpl0,
		  "this KVM stops the VM, internal error, at XSAVE or XRSTOR at CPL0; Linux cannot run here" },
		{ "POPCNT, FWAIT, CLAC at CPL0:", hi->kernel_insns_cpl0,
		  "this KVM stops the VM, internal error, at one of them at CPL0; Linux cannot run here" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(probes); i++)
		fprintf(out, LABEL "%s%s%s%s\n", probes[i].label, tristate(probes[i].value),
			probes[i].value == 0 ? " (" : "", probes[i].value == 0 ? probes[i].no : "",
			probes[i].value == 0 ? ")" : "");
}

/* What --split-lock=emulate cannot watch here; --stats counts it as unchecked_runs. */
static void print_unchecked(FILE *out, const struct hostinfo *hi)
{
	fprintf(out, LABEL "%s\n", "emulate runs unchecked:",
		hi->hwbp > 0 ?
		"handlers of exceptions the CPU delivers by itself (#PF, #GP, ...) that emulate did not foresee" :
		"handlers of exceptions the CPU delivers by itself (#PF, #GP, ...) but a foreseen #GP/#SS, until they return");
	/* Seen afterwards only by where the step ends, and a retry ends where it should. */
	fprintf(out, LABEL "%s\n", "",
		"(a handler that returns to retry the faulting instruction is not even counted)");
	if (hi->singlestep_cpl3 == 0)
		fprintf(out, LABEL "%s\n", "", "all CPL3 code (no single-step there)");
	if (hi->hwbp == 0)
		fprintf(out, LABEL "%s\n", "",
			"handlers of INT n and injected events outside IA-32e mode, until they return");
}

void hostinfo_print(FILE *out, const struct hostinfo *hi)
{
	print_kernel(out, hi);
	if (hi->kvm_error[0]) {
		fprintf(out, LABEL "unavailable: %s\n", "KVM:", hi->kvm_error);
		fprintf(out, LABEL "try vmm on a stock KVM inside QEMU: ./run.sh in vmm's source tree "
			"boots the lab and the self-test there (docs/lab.md)\n", "without a KVM here:");
		return;
	}
	print_kvm(out, hi);
	print_detailed_probes(out, hi);
	print_yes_no_probes(out, hi);
	if (hi->singlestep_cpl0 > 0)
		print_unchecked(out, hi);
}

/* ------------------------------------------------------------ JSON */

/* Length of the valid UTF-8 sequence at s, or 0. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n;
	unsigned cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/*
 * Writes s as a JSON string. Bytes that are not UTF-8 (a truncated or
 * odd /proc/cmdline) become U+FFFD so the document always parses.
 */
static void json_str(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!s) {
		fputs("null", out);
		return;
	}
	fputc('"', out);
	while (*p) {
		size_t n;

		switch (*p) {
		case '"': fputs("\\\"", out); p++; continue;
		case '\\': fputs("\\\\", out); p++; continue;
		case '\n': fputs("\\n", out); p++; continue;
		case '\r': fputs("\\r", out); p++; continue;
		case '\t': fputs("\\t", out); p++; continue;
		default: break;
		}
		if (*p < 0x20 || *p == 0x7f) {
			fprintf(out, "\\u%04x", *p);
			p++;
			continue;
		}
		n = utf8_len(p);
		if (n == 0) {
			fputs("\\ufffd", out);
			p++;
			continue;
		}
		fwrite(p, 1, n, out);
		p += n;
	}
	fputc('"', out);
}

static void json_bool_or_null(FILE *out, bool known, bool v)
{
	fputs(!known ? "null" : v ? "true" : "false", out);
}

static void json_int_or_null(FILE *out, int v)
{
	if (v < 0)
		fputs("null", out);
	else
		fprintf(out, "%d", v);
}

void hostinfo_print_json(FILE *out, const struct hostinfo *hi)
{
	bool kvm = hi->kvm_error[0] == '\0';

	fputs("{\"cpu\":{\"read\":", out);
	json_bool_or_null(out, true, hi->cpuinfo_read);
	fputs(",\"split_lock_detect\":", out);
	json_bool_or_null(out, hi->cpuinfo_read, hi->sld_flag);
	fputs(",\"bus_lock_detect\":", out);
	json_bool_or_null(out, hi->cpuinfo_read, hi->bld_flag);

	fputs("},\"cmdline\":{\"read\":", out);
	json_bool_or_null(out, true, hi->cmdline_read);
	fputs(",\"split_lock_detect\":", out);
	json_str(out, hi->cmdline_read && hi->cmdline_has_sld ? hi->cmdline_value : NULL);
	fputs(",\"malformed\":", out);
	json_bool_or_null(out, true, hi->cmdline_malformed);
	fputs(",\"ratelimit\":", out);
	if (hi->cmdline_has_sld && !hi->cmdline_malformed &&
	    strncmp(hi->cmdline_value, "ratelimit:", 10) == 0)
		fprintf(out, "%u", hi->ratelimit);
	else
		fputs("null", out);

	fputs("},\"split_lock_mitigate\":", out);
	json_int_or_null(out, hi->split_lock_mitigate);
	fputs(",\"mode\":", out);
	json_str(out, hostinfo_mode_name(hi->mode));
	fprintf(out, ",\"can_deliver_ac\":%s", hostinfo_can_deliver_ac(hi) ? "true" : "false");

	fprintf(out, ",\"kvm\":{\"available\":%s,\"error\":", kvm ? "true" : "false");
	json_str(out, kvm ? NULL : hi->kvm_error);
	fputs(",\"caps\":{", out);
	for (size_t i = 0; i < ARRAY_SIZE(caps); i++) {
		fprintf(out, "%s\"%s\":", i ? "," : "", caps[i].key);
		json_int_or_null(out, kvm ? cap_value(hi, i) : -1);
	}
	fputs("},\"nested\":", out);
	json_str(out, kvm && hi->nested >= 0 ? cpuid_nested_name((enum cpuid_nested)hi->nested) : NULL);
	/* Each probe: true, false, or null where it did not run. */
	const struct {
		const char *key;
		int v;
	} probes[] = {
		{ "cpuid_7_edx30_reaches_guest", hi->cpuid_7_edx30_reaches_guest },
		{ "cpuid_1_ecx31_reaches_guest", hi->cpuid_1_ecx31_reaches_guest },
		{ "singlestep_cpl0", hi->singlestep_cpl0 },
		{ "singlestep_cpl3", hi->singlestep_cpl3 },
		{ "hw_breakpoint", hi->hwbp },
		{ "guest_data_breakpoint_cpl0", hi->databp_cpl0 },
		{ "exec_bp_beside_step", hi->exec_bp_beside_step },
		{ "dr7_gd", hi->dr7_gd },
		{ "cs_write_gp", hi->cs_write_gp },
		{ "intn_error_code", hi->intn_error_code },
		{ "lock_ud", hi->lock_ud },
		{ "leave_long_mode", hi->leave_long_mode },
		{ "enter_long_mode", hi->enter_long_mode },
		{ "cpl0_events", hi->cpl0_events },
		{ "cpl1", hi->cpl1 },
		{ "iret_step", hi->iret_step },
		{ "movss_trap", hi->movss_trap },
		{ "syscall_sysret", hi->syscall_sysret },
		{ "split_fault", hi->split_fault },
		{ "alignment_check", hi->alignment_check },
		{ "cmpxchg16b_cpl0", hi->cmpxchg16b_cpl0 },
		{ "soft_int_cpl0", hi->soft_int_cpl0 },
		{ "xsave_cpl0", hi->xsave_cpl0 },
		{ "kernel_insns_cpl0", hi->kernel_insns_cpl0 },
	};
	fputs(",\"probe\":{", out);
	for (size_t i = 0; i < ARRAY_SIZE(probes); i++) {
		fprintf(out, "\"%s\":", probes[i].key);
		json_bool_or_null(out, probes[i].v >= 0, probes[i].v > 0);
		fputc(',', out);
	}
	fputs("\"error\":", out);
	json_str(out, hi->probe_error[0] ? hi->probe_error : NULL);
	fputs("}}}\n", out);
}
