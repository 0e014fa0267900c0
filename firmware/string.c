/* SPDX-License-Identifier: MIT */
/*
 * memcpy/memset/memmove are string instructions rather than C loops: the
 * compiler would turn such a loop back into a call to the function itself,
 * and CPL0 code is emulated on the project's hosts, where one rep-prefixed
 * instruction is far cheaper than a loop.
 */
#include <stdint.h>

#include "fw_string.h"

void *memcpy(void *dst, const void *src, size_t n)
{
	void *d = dst;

	asm volatile("rep movsb" : "+D"(d), "+S"(src), "+c"(n) : : "memory");
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	const char *s = src;
	char *d = dst;

	if (d <= s || d >= s + n)
		return memcpy(dst, src, n);
	s += n - 1;
	d += n - 1;
	asm volatile("std; rep movsb; cld"
		     : "+D"(d), "+S"(s), "+c"(n) : : "memory");
	return dst;
}

void *memset(void *dst, int c, size_t n)
{
	void *d = dst;

	asm volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
	return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;

	for (size_t i = 0; i < n; i++)
		if (x[i] != y[i])
			return x[i] - y[i];
	return 0;
}

size_t strnlen(const char *s, size_t max)
{
	size_t n = 0;

	while (n < max && s[n])
		n++;
	return n;
}

size_t strlen(const char *s)
{
	return strnlen(s, SIZE_MAX);
}

int strncmp(const char *a, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char x = a[i], y = b[i];

		if (x != y)
			return x - y;
		if (!x)
			break;
	}
	return 0;
}

int strcmp(const char *a, const char *b)
{
	return strncmp(a, b, SIZE_MAX);
}

char *strstr(const char *haystack, const char *needle)
{
	size_t n = strlen(needle);

	for (; *haystack; haystack++)
		if (!strncmp(haystack, needle, n))
			return (char *)haystack;
	return n ? NULL : (char *)haystack;
}
