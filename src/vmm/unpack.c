/* SPDX-License-Identifier: MIT */
#include "unpack.h"

#include <lzma.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "array_size.h"

enum fmt { FMT_GZIP, FMT_XZ, FMT_ZSTD, FMT_OTHER };

static const struct {
	const char *magic;
	size_t len;
	const char *name;
	enum fmt fmt;
} formats[] = {
	{ "\x1f\x8b", 2, "gzip", FMT_GZIP },
	{ "\xfd" "7zXZ\0", 6, "xz", FMT_XZ },
	{ "\x28\xb5\x2f\xfd", 4, "zstd", FMT_ZSTD },
	{ "BZh", 3, "bzip2", FMT_OTHER },
	{ "\x5d\x00\x00", 3, "lzma", FMT_OTHER },
	{ "\x89LZO", 4, "lzo", FMT_OTHER },
	{ "\x02\x21\x4c\x18", 4, "lz4", FMT_OTHER },
};

static int find(const uint8_t *in, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(formats); i++)
		if (len >= formats[i].len && memcmp(in, formats[i].magic, formats[i].len) == 0)
			return (int)i;
	return -1;
}

const char *unpack_format(const uint8_t *in, size_t len)
{
	int i = find(in, len);

	return i < 0 ? NULL : formats[i].name;
}

/* Output space: doubles up to max. false when max is reached. */
struct outbuf {
	uint8_t *p;
	size_t len, cap, max;
};

static bool grow(struct outbuf *o)
{
	size_t cap = o->cap ? o->cap * 2 : (1u << 20);
	uint8_t *p;

	if (o->cap >= o->max)
		return false;
	if (cap > o->max)
		cap = o->max;
	p = realloc(o->p, cap);
	if (!p)
		return false;
	o->p = p;
	o->cap = cap;
	return true;
}

/* Each decoder: 1 done, 0 more output room wanted, -1 a data error (err set). */
static int gzip_run(const uint8_t *in, size_t len, struct outbuf *o, char *err, size_t errlen)
{
	z_stream z = { .next_in = (Bytef *)in, .avail_in = (uInt)(len > UINT32_MAX ? UINT32_MAX : len) };
	int r = inflateInit2(&z, 16 + MAX_WBITS);

	if (r != Z_OK) {
		snprintf(err, errlen, "zlib cannot start (%d)", r);
		return -1;
	}
	do {
		if (o->len == o->cap && !grow(o)) {
			inflateEnd(&z);
			return 0;
		}
		z.next_out = o->p + o->len;
		z.avail_out = (uInt)(o->cap - o->len > UINT32_MAX ? UINT32_MAX : o->cap - o->len);
		r = inflate(&z, Z_NO_FLUSH);
		o->len = (size_t)(z.next_out - o->p);
	} while (r == Z_OK || (r == Z_BUF_ERROR && z.avail_out == 0));
	inflateEnd(&z);
	if (r == Z_STREAM_END)
		return 1;
	snprintf(err, errlen, "its gzip data is corrupt or truncated (zlib: %s)", z.msg ? z.msg : "no end");
	return -1;
}

static int xz_run(const uint8_t *in, size_t len, struct outbuf *o, char *err, size_t errlen)
{
	lzma_stream s = LZMA_STREAM_INIT;
	lzma_ret r = lzma_stream_decoder(&s, UINT64_MAX, 0);

	if (r != LZMA_OK) {
		snprintf(err, errlen, "liblzma cannot start (%d)", (int)r);
		return -1;
	}
	s.next_in = in;
	s.avail_in = len;
	do {
		if (o->len == o->cap && !grow(o)) {
			lzma_end(&s);
			return 0;
		}
		s.next_out = o->p + o->len;
		s.avail_out = o->cap - o->len;
		r = lzma_code(&s, LZMA_FINISH);
		o->len = (size_t)(s.next_out - o->p);
	} while (r == LZMA_OK || (r == LZMA_BUF_ERROR && s.avail_out == 0));
	lzma_end(&s);
	if (r == LZMA_STREAM_END)
		return 1;
	snprintf(err, errlen, "its xz data is corrupt or truncated (liblzma error %d)", (int)r);
	return -1;
}

static int zstd_run(const uint8_t *in, size_t len, struct outbuf *o, char *err, size_t errlen)
{
	ZSTD_DStream *d = ZSTD_createDStream();
	ZSTD_inBuffer ib = { in, len, 0 };
	size_t r = 1;

	if (!d) {
		snprintf(err, errlen, "libzstd cannot start");
		return -1;
	}
	while (r != 0) {
		ZSTD_outBuffer ob;

		if (o->len == o->cap && !grow(o)) {
			ZSTD_freeDStream(d);
			return 0;
		}
		ob = (ZSTD_outBuffer){ o->p, o->cap, o->len };
		r = ZSTD_decompressStream(d, &ob, &ib);
		o->len = ob.pos;
		if (ZSTD_isError(r) || (ib.pos == ib.size && ob.pos < ob.size && r != 0)) {
			snprintf(err, errlen, "its zstd data is corrupt or truncated (%s)",
				 ZSTD_isError(r) ? ZSTD_getErrorName(r) : "no end");
			ZSTD_freeDStream(d);
			return -1;
		}
	}
	ZSTD_freeDStream(d);
	return 1;
}

int unpack(const uint8_t *in, size_t len, size_t max, uint8_t **out, size_t *outlen,
	   char *err, size_t errlen)
{
	int i = find(in, len), r;
	struct outbuf o = { .max = max };

	*out = NULL;
	if (i < 0 || formats[i].fmt == FMT_OTHER) {
		snprintf(err, errlen, "its payload is %s-compressed; vmm unpacks gzip, xz and zstd",
			 i < 0 ? "not" : formats[i].name);
		if (i < 0)
			snprintf(err, errlen, "its payload's compression is unknown; vmm unpacks gzip, xz and zstd");
		return -1;
	}
	if (formats[i].fmt == FMT_GZIP)
		r = gzip_run(in, len, &o, err, errlen);
	else if (formats[i].fmt == FMT_XZ)
		r = xz_run(in, len, &o, err, errlen);
	else
		r = zstd_run(in, len, &o, err, errlen);
	if (r == 0)
		snprintf(err, errlen, "its %s payload unpacks to more than %zu bytes (the RAM); give more with -m",
			 formats[i].name, max);
	if (r != 1) {
		free(o.p);
		return -1;
	}
	*out = o.p;
	*outlen = o.len;
	return 0;
}
