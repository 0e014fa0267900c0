/* SPDX-License-Identifier: MIT */
/*
 * Decompression of a Linux bzImage's payload: gzip (zlib), XZ (liblzma) and
 * zstd (libzstd), told apart by their magic numbers. The other formats
 * Linux can be built with (bzip2, LZMA, LZO, LZ4) are named and refused.
 */
#ifndef VMM_UNPACK_H
#define VMM_UNPACK_H

#include <stddef.h>
#include <stdint.h>

/* The format of in's first bytes: "gzip", "xz", ..., or NULL if none known. */
const char *unpack_format(const uint8_t *in, size_t len);
/*
 * Decompresses the first stream of in into a malloc'd *out of at most max
 * bytes (bytes after the stream, such as the size Linux appends, are
 * ignored). 0, or -1 with a one-line reason in err and *out NULL.
 */
int unpack(const uint8_t *in, size_t len, size_t max, uint8_t **out, size_t *outlen,
	   char *err, size_t errlen);

#endif
