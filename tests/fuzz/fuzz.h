/* SPDX-License-Identifier: MIT */
/*
 * Shared by every fuzz harness: the libFuzzer entry point, a reader that
 * turns the input bytes into values (running out of input yields zeros, so
 * every input is valid), checks that abort with a message on the real
 * stderr, and a way to catch what vmm prints on stderr so that harnesses can
 * hold its diagnostics against their oracle.
 *
 * Harnesses are built twice: with replay.c (gcc or clang, with or without
 * sanitizers; see meson.build) and, with -Dfuzz=true under clang, against
 * libFuzzer. Nothing here may depend on which.
 */
#ifndef VMM_FUZZ_H
#define VMM_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ------------------------------------------------------------ checks */

/* An oracle failed: say which, where, and abort so that libFuzzer (or the
 * sanitizer runtime under replay) reports the input as a crash. */
#define FUZZ_CHECK(cond, ...)                                                  \
	do {                                                                   \
		if (!(cond)) {                                                 \
			dprintf(STDERR_FILENO, "fuzz: %s:%d: check failed: %s: ",  \
				__FILE__, __LINE__, #cond);                    \
			dprintf(STDERR_FILENO, __VA_ARGS__);                   \
			dprintf(STDERR_FILENO, "\n");                          \
			abort();                                               \
		}                                                              \
	} while (0)

/* A harness's own set-up failed (out of memory, no memfd): not a finding. */
#define FUZZ_SETUP(cond)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			dprintf(STDERR_FILENO, "fuzz: %s:%d: set-up failed: %s\n", \
				__FILE__, __LINE__, #cond);                    \
			abort();                                               \
		}                                                              \
	} while (0)

/* True when all n bytes at p are `byte` (one memcmp, however large n is). */
static inline bool fuzz_all_bytes(const void *p, size_t n, uint8_t byte)
{
	const uint8_t *b = p;

	return n == 0 || (b[0] == byte && memcmp(b, b + 1, n - 1) == 0);
}

/* ------------------------------------------------------------ input */

struct fuzz_in {
	const uint8_t *p;
	size_t n;
};

static inline struct fuzz_in fuzz_in(const uint8_t *data, size_t size)
{
	return (struct fuzz_in){ data, size };
}

static inline uint8_t fuzz_u8(struct fuzz_in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static inline bool fuzz_bool(struct fuzz_in *in)
{
	return fuzz_u8(in) & 1;
}

/* Little-endian, `bytes` long (at most 8); missing bytes are zero. */
static inline uint64_t fuzz_uint(struct fuzz_in *in, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes; i++)
		v |= (uint64_t)fuzz_u8(in) << (8 * i);
	return v;
}

static inline uint16_t fuzz_u16(struct fuzz_in *in) { return (uint16_t)fuzz_uint(in, 2); }
static inline uint32_t fuzz_u32(struct fuzz_in *in) { return (uint32_t)fuzz_uint(in, 4); }
static inline uint64_t fuzz_u64(struct fuzz_in *in) { return fuzz_uint(in, 8); }

/* Up to `max` bytes copied out; returns how many. */
static inline size_t fuzz_bytes(struct fuzz_in *in, void *dst, size_t max)
{
	size_t n = in->n < max ? in->n : max;

	memcpy(dst, in->p, n);
	in->p += n;
	in->n -= n;
	return n;
}

/*
 * The bytes up to the next NUL (or the end), as a malloc'd NUL-terminated
 * string of exactly that length, so that ASan catches a read past its end.
 */
static inline char *fuzz_cstr(struct fuzz_in *in)
{
	const uint8_t *nul = memchr(in->p, 0, in->n);
	size_t len = nul ? (size_t)(nul - in->p) : in->n;
	char *s = malloc(len + 1);

	FUZZ_SETUP(s);
	memcpy(s, in->p, len);
	s[len] = '\0';
	in->p += len + (nul ? 1 : 0);
	in->n -= len + (nul ? 1 : 0);
	return s;
}

/* ------------------------------------------------------------ stderr */

/*
 * stderr caught in memory for the duration of a call (tests/common/
 * capture.h): vmm is silenced (libFuzzer would otherwise spend its time
 * printing) and the harness reads what it said, while crash reports,
 * written to file descriptor 2, still reach the terminal. After
 * fuzz_capture_end(), c->buf (c->len bytes, NUL-terminated) is the
 * caller's to free.
 */
static inline void fuzz_capture_begin(struct capture *c)
{
	FUZZ_SETUP(capture_stderr(c) == 0);
}

static inline void fuzz_capture_end(struct capture *c)
{
	FUZZ_SETUP(capture_close(c) == 0);
}

/* ------------------------------------------------------------ json.c */

/*
 * 0 when [s, s + len) is exactly one RFC 8259 JSON value (objects with
 * unique keys, strings of valid UTF-8, nesting at most 64 deep) with
 * optional whitespace around it; otherwise -1 and a reason in why.
 */
int fuzz_json_check(const char *s, size_t len, char *why, size_t whylen);

#endif
