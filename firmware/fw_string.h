/* SPDX-License-Identifier: MIT */
/* The C library string functions the runtime and the compilers need. */
#ifndef FW_STRING_H
#define FW_STRING_H

#include <stddef.h>

void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
size_t strnlen(const char *s, size_t max);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strstr(const char *haystack, const char *needle);

#include "array_size.h"

#endif
