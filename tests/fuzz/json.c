/* SPDX-License-Identifier: MIT */
/*
 * A strict JSON checker for the fuzz oracles: vmm promises that
 * --host-info --json (and later --stats) always parses, whatever bytes the
 * host's /proc files hold. Written from RFC 8259, independently of the
 * printer it checks.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fuzz.h"

#define MAX_DEPTH 64
#define MAX_KEYS 256

struct parser {
	const unsigned char *p, *end;
	char *why;
	size_t whylen;
	int depth;
};

static int fail(struct parser *ps, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(struct parser *ps, const char *fmt, ...)
{
	va_list ap;

	if (ps->why[0])
		return -1;	/* keep the innermost reason */
	va_start(ap, fmt);
	vsnprintf(ps->why, ps->whylen, fmt, ap);
	va_end(ap);
	return -1;
}

/* For messages: where the parser stands, as bytes left. */
static size_t left(const struct parser *ps)
{
	return (size_t)(ps->end - ps->p);
}

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end &&
	       (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static int literal(struct parser *ps, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
		return fail(ps, "bad literal, %zu bytes from the end", left(ps));
	ps->p += n;
	return 0;
}

static int digits(struct parser *ps)
{
	const unsigned char *s = ps->p;

	while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
		ps->p++;
	return ps->p > s ? 0 : fail(ps, "digit expected, %zu bytes from the end",
				    left(ps));
}

static int number(struct parser *ps)
{
	if (ps->p < ps->end && *ps->p == '-')
		ps->p++;
	if (ps->p < ps->end && *ps->p == '0')
		ps->p++;	/* no leading zeros */
	else if (digits(ps))
		return -1;
	if (ps->p < ps->end && *ps->p == '.') {
		ps->p++;
		if (digits(ps))
			return -1;
	}
	if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
		ps->p++;
		if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
			ps->p++;
		if (digits(ps))
			return -1;
	}
	return 0;
}

static int hex4(struct parser *ps, unsigned *v)
{
	*v = 0;
	if (ps->end - ps->p < 4)
		return fail(ps, "short \\u escape");
	for (int i = 0; i < 4; i++) {
		unsigned c = *ps->p++, d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return fail(ps, "bad hex digit in \\u escape");
		*v = *v << 4 | d;
	}
	return 0;
}

/* One UTF-8 sequence: shortest form, no surrogates, at most U+10FFFF. */
static int utf8(struct parser *ps)
{
	unsigned c = *ps->p, cp, n;

	if (c < 0x80) {
		ps->p++;
		return 0;
	}
	if ((c & 0xe0) == 0xc0)
		n = 2, cp = c & 0x1f;
	else if ((c & 0xf0) == 0xe0)
		n = 3, cp = c & 0x0f;
	else if ((c & 0xf8) == 0xf0)
		n = 4, cp = c & 0x07;
	else
		return fail(ps, "byte 0x%02x cannot start UTF-8", c);
	if ((size_t)(ps->end - ps->p) < n)
		return fail(ps, "truncated UTF-8");
	for (unsigned i = 1; i < n; i++) {
		if ((ps->p[i] & 0xc0) != 0x80)
			return fail(ps, "bad UTF-8 continuation byte 0x%02x", ps->p[i]);
		cp = cp << 6 | (ps->p[i] & 0x3f);
	}
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000))
		return fail(ps, "overlong UTF-8 for U+%04X", cp);
	if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return fail(ps, "UTF-8 for U+%04X, not a scalar value", cp);
	ps->p += n;
	return 0;
}

/* A string; *start and *len get its raw body (between the quotes). */
static int string(struct parser *ps, const unsigned char **start, size_t *len)
{
	if (ps->p >= ps->end || *ps->p != '"')
		return fail(ps, "string expected, %zu bytes from the end", left(ps));
	ps->p++;
	*start = ps->p;
	for (;;) {
		unsigned c;

		if (ps->p >= ps->end)
			return fail(ps, "unterminated string");
		c = *ps->p;
		if (c == '"')
			break;
		if (c < 0x20)
			return fail(ps, "raw control byte 0x%02x in a string", c);
		if (c == '\\') {
			ps->p++;
			if (ps->p >= ps->end)
				return fail(ps, "unterminated escape");
			c = *ps->p++;
			if (c == 'u') {
				unsigned v, lo;

				if (hex4(ps, &v))
					return -1;
				/* A high surrogate must be followed by a low one. */
				if (v >= 0xd800 && v <= 0xdbff) {
					if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u')
						return fail(ps, "lone high surrogate \\u%04x", v);
					ps->p += 2;
					if (hex4(ps, &lo))
						return -1;
					if (lo < 0xdc00 || lo > 0xdfff)
						return fail(ps, "high surrogate then \\u%04x", lo);
				} else if (v >= 0xdc00 && v <= 0xdfff) {
					return fail(ps, "lone low surrogate \\u%04x", v);
				}
			} else if (!strchr("\"\\/bfnrt", (int)c) || c == 0) {
				return fail(ps, "bad escape \\%c", c);
			}
			continue;
		}
		if (utf8(ps))
			return -1;
	}
	*len = (size_t)(ps->p - *start);
	ps->p++;
	return 0;
}

static int value(struct parser *ps);

static int object(struct parser *ps)
{
	struct { const unsigned char *s; size_t n; } keys[MAX_KEYS];
	size_t nkeys = 0;

	ps->p++;	/* '{' */
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == '}') {
		ps->p++;
		return 0;
	}
	for (;;) {
		const unsigned char *k;
		size_t kn;

		skip_ws(ps);
		if (string(ps, &k, &kn))
			return -1;
		/* Raw comparison: vmm never escapes key characters. */
		for (size_t i = 0; i < nkeys; i++)
			if (keys[i].n == kn && memcmp(keys[i].s, k, kn) == 0)
				return fail(ps, "duplicate key \"%.*s\"", (int)kn, (const char *)k);
		if (nkeys == MAX_KEYS)
			return fail(ps, "more than %d keys in one object", MAX_KEYS);
		keys[nkeys].s = k;
		keys[nkeys].n = kn;
		nkeys++;
		skip_ws(ps);
		if (ps->p >= ps->end || *ps->p != ':')
			return fail(ps, "':' expected after key \"%.*s\"", (int)kn, (const char *)k);
		ps->p++;
		if (value(ps))
			return -1;
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == '}') {
			ps->p++;
			return 0;
		}
		return fail(ps, "',' or '}' expected, %zu bytes from the end", left(ps));
	}
}

static int array(struct parser *ps)
{
	ps->p++;	/* '[' */
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == ']') {
		ps->p++;
		return 0;
	}
	for (;;) {
		if (value(ps))
			return -1;
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == ']') {
			ps->p++;
			return 0;
		}
		return fail(ps, "',' or ']' expected, %zu bytes from the end", left(ps));
	}
}

static int value(struct parser *ps)
{
	const unsigned char *s;
	size_t n;
	int r;

	skip_ws(ps);
	if (ps->p >= ps->end)
		return fail(ps, "value expected at the end");
	switch (*ps->p) {
	case '{':
	case '[':
		if (++ps->depth > MAX_DEPTH)
			return fail(ps, "nested deeper than %d", MAX_DEPTH);
		r = *ps->p == '{' ? object(ps) : array(ps);
		ps->depth--;
		return r;
	case '"': return string(ps, &s, &n);
	case 't': return literal(ps, "true");
	case 'f': return literal(ps, "false");
	case 'n': return literal(ps, "null");
	default:
		if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))
			return number(ps);
		return fail(ps, "unexpected byte 0x%02x, %zu bytes from the end",
			    *ps->p, left(ps));
	}
}

int fuzz_json_check(const char *s, size_t len, char *why, size_t whylen)
{
	struct parser ps = {
		.p = (const unsigned char *)s,
		.end = (const unsigned char *)s + len,
		.why = why,
		.whylen = whylen,
	};

	why[0] = '\0';
	if (value(&ps))
		return -1;
	skip_ws(&ps);
	if (ps.p != ps.end)
		return fail(&ps, "%zu bytes after the value", (size_t)(ps.end - ps.p));
	return 0;
}
