/* SPDX-License-Identifier: MIT */
/*
 * What a guest image is (image_detect).
 *
 * Input: the file's bytes, whole.
 *
 * Oracles:
 *  - no byte past the input is read (the replay's buffer is exactly its
 *    size; ASan);
 *  - "HdrS" at 0x202 is a bzImage; the ELF magic is a PVH, multiboot,
 *    foreign or bad ELF; anything else is never PVH and a multiboot one
 *    only with a valid header (image_multiboot_offset) in the first 8 KiB;
 *  - a multiboot header's offset is 4-aligned, in the first 8 KiB, its
 *    magic, flags and checksum summing to 0;
 *  - a foreign or bad file has one non-empty line saying what, the others
 *    none.
 */
#include "fuzz.h"

#include "image.h"

static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct image_info info;
	bool elf = size >= 4 && memcmp(data, "\x7f" "ELF", 4) == 0;
	bool bz = size >= 0x206 && memcmp(data + 0x202, "HdrS", 4) == 0;

	image_detect(data, size, &info);
	FUZZ_CHECK(!bz || info.kind == IMAGE_BZIMAGE, "HdrS at 0x202 but kind %d", info.kind);
	if (!bz && elf)
		FUZZ_CHECK(info.kind == IMAGE_PVH || info.kind == IMAGE_MULTIBOOT ||
			   info.kind == IMAGE_FOREIGN || info.kind == IMAGE_BAD, "ELF of kind %d", info.kind);
	if (!bz && !elf)
		FUZZ_CHECK(info.kind != IMAGE_PVH && info.kind != IMAGE_BAD, "non-ELF of kind %d", info.kind);
	if (info.kind == IMAGE_MULTIBOOT) {
		uint32_t o = info.mb_offset;

		FUZZ_CHECK(o % 4 == 0 && o + 12 <= size && o + 12 <= 8192, "multiboot header at %u", o);
		FUZZ_CHECK(rd32(data + o) == MULTIBOOT_MAGIC &&
			   (uint32_t)(rd32(data + o) + rd32(data + o + 4) + rd32(data + o + 8)) == 0,
			   "no valid multiboot header at %u", o);
		FUZZ_CHECK((long)o == image_multiboot_offset(data, size), "not the first header");
	}
	if (!bz && !elf && image_multiboot_offset(data, size) >= 0)
		FUZZ_CHECK(info.kind == IMAGE_MULTIBOOT, "a multiboot header, kind %d", info.kind);
	if (info.kind == IMAGE_FOREIGN || info.kind == IMAGE_BAD)
		FUZZ_CHECK(info.what[0] && !strchr(info.what, '\n') && memchr(info.what, 0, sizeof(info.what)),
			   "what: '%s'", info.what);
	else
		FUZZ_CHECK(info.what[0] == '\0', "what for kind %d: '%s'", info.kind, info.what);
	return 0;
}
