/* SPDX-License-Identifier: MIT */
/* Just enough of vsnprintf for test output; no floating point. */
#include <stdbool.h>
#include <stdint.h>

#include "console.h"
#include "fw_string.h"

struct out {
	char *buf;
	size_t size;
	size_t len;
};

struct spec {
	bool left;      /* '-' */
	char pad;       /* ' ' or '0' */
	int width;
	int prec;       /* -1: none */
	int lmod;       /* 0 int, 1 long, 2 long long, -1 short, -2 char */
};

static void emit(struct out *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

static void emit_n(struct out *o, char c, int n)
{
	while (n-- > 0)
		emit(o, c);
}

/* Width padding around an already-formatted field of len chars. */
static void emit_field(struct out *o, const struct spec *sp, const char *prefix,
		       const char *s, int len)
{
	int plen = (int)strlen(prefix);
	int fill = sp->width - len - plen;

	if (!sp->left && sp->pad == ' ')
		emit_n(o, ' ', fill);
	while (*prefix)
		emit(o, *prefix++);
	if (!sp->left && sp->pad == '0')
		emit_n(o, '0', fill);
	for (int i = 0; i < len; i++)
		emit(o, s[i]);
	if (sp->left)
		emit_n(o, ' ', fill);
}

static void emit_number(struct out *o, const struct spec *sp, uint64_t v,
			unsigned base, bool upper, const char *prefix)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char tmp[24];
	int n = sizeof(tmp);

	do {
		tmp[--n] = digits[v % base];
		v /= base;
	} while (v);
	emit_field(o, sp, prefix, tmp + n, (int)sizeof(tmp) - n);
}

static const char *parse_int(const char *f, int *val, va_list *ap)
{
	if (*f == '*') {
		*val = va_arg(*ap, int);
		return f + 1;
	}
	*val = 0;
	while (*f >= '0' && *f <= '9')
		*val = *val * 10 + (*f++ - '0');
	return f;
}

static const char *parse_spec(const char *f, struct spec *sp, va_list *ap)
{
	*sp = (struct spec){ .pad = ' ', .prec = -1 };
	for (;; f++) {
		if (*f == '-')
			sp->left = true;
		else if (*f == '0')
			sp->pad = '0';
		else
			break;
	}
	f = parse_int(f, &sp->width, ap);
	if (sp->width < 0) {
		sp->left = true;
		sp->width = -sp->width;
	}
	if (*f == '.')
		f = parse_int(f + 1, &sp->prec, ap);
	for (; *f == 'l' || *f == 'z' || *f == 'h'; f++)
		sp->lmod += *f == 'h' ? -1 : *f == 'z' ? 2 : 1;
	return f;
}

static int64_t signed_arg(const struct spec *sp, va_list *ap)
{
	if (sp->lmod >= 1)
		return sp->lmod == 1 ? va_arg(*ap, long) : va_arg(*ap, long long);
	int v = va_arg(*ap, int);
	return sp->lmod == -1 ? (short)v : sp->lmod <= -2 ? (signed char)v : v;
}

static uint64_t unsigned_arg(const struct spec *sp, va_list *ap)
{
	if (sp->lmod >= 1)
		return sp->lmod == 1 ? va_arg(*ap, unsigned long)
				     : va_arg(*ap, unsigned long long);
	unsigned v = va_arg(*ap, unsigned);
	return sp->lmod == -1 ? (unsigned short)v
	       : sp->lmod <= -2 ? (unsigned char)v : v;
}

static void emit_string(struct out *o, const struct spec *sp, const char *s)
{
	int len = 0;

	if (!s)
		s = "(null)";
	while (s[len] && (sp->prec < 0 || len < sp->prec))
		len++;
	struct spec plain = *sp;
	plain.pad = ' ';
	emit_field(o, &plain, "", s, len);
}

static void convert(struct out *o, char conv, struct spec *sp, va_list *ap)
{
	int64_t sv;
	char c;

	switch (conv) {
	case 'd':
	case 'i':
		sv = signed_arg(sp, ap);
		emit_number(o, sp, sv < 0 ? -(uint64_t)sv : (uint64_t)sv, 10,
			    false, sv < 0 ? "-" : "");
		break;
	case 'u':
		emit_number(o, sp, unsigned_arg(sp, ap), 10, false, "");
		break;
	case 'x':
	case 'X':
		emit_number(o, sp, unsigned_arg(sp, ap), 16, conv == 'X', "");
		break;
	case 'p':
		emit_number(o, sp, (uintptr_t)va_arg(*ap, void *), 16, false, "0x");
		break;
	case 's':
		emit_string(o, sp, va_arg(*ap, const char *));
		break;
	case 'c':
		c = (char)va_arg(*ap, int);
		emit_field(o, sp, "", &c, 1);
		break;
	default:
		/* %% and anything unknown are copied through. */
		emit(o, conv);
		break;
	}
}

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct out o = { .buf = buf, .size = size };
	struct spec sp;
	va_list args;

	va_copy(args, ap);
	while (*fmt) {
		if (*fmt != '%') {
			emit(&o, *fmt++);
			continue;
		}
		fmt = parse_spec(fmt + 1, &sp, &args);
		if (!*fmt)
			break;
		convert(&o, *fmt++, &sp, &args);
	}
	va_end(args);
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return (int)o.len;
}

int snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}
