/* SPDX-License-Identifier: MIT */
/*
 * The image loader.
 *
 * Input: a 21-byte header, then the image.
 *   u64 size, u64 ram_size, u32 cpus   loader_check_size, any values
 *   u16 ram / 32                        guest RAM for loader_load (< 2 MiB)
 *   u8  cpus - 1 (mod 64) and path kind (bits 6-7: image, directory,
 *       character device, missing file)
 * The image goes into a memfd that loader_load opens through /proc/self/fd,
 * and "RAM" is a malloc'd buffer of exactly ram_size bytes filled with a
 * pattern, so ASan catches any write past it.
 *
 * Oracles:
 *  - loader_check_size accepts exactly 0 < size <= room, where room is the
 *    RAM between BOOT_IMAGE_ADDR and the vCPU regions at the top (none when
 *    they do not fit), and a rejection is one line that fits the buffer
 *    (sizes 1..64 tried);
 *  - loader_load succeeds exactly for a regular file that loader_check_size
 *    accepts; then *size is the file's size, the bytes at BOOT_IMAGE_ADDR
 *    are the file, and no other byte of RAM changed; on failure no byte of
 *    RAM changed and the message names the file.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <sys/mman.h>

#include "fuzz.h"

#include "boot.h"
#include "loader.h"
#include "vmm_boot.h"

#define PATTERN 0xa5

static uint64_t ref_room(uint64_t ram_size, uint32_t cpus)
{
	uint64_t regions = (uint64_t)cpus * BOOT_CPU_REGION_SIZE;

	if (ram_size < BOOT_IMAGE_ADDR + regions)
		return 0;
	return ram_size - regions - BOOT_IMAGE_ADDR;
}

static void check_size_rule(uint64_t size, uint64_t ram_size, uint32_t cpus, size_t errlen)
{
	char *err = malloc(errlen);
	bool ok = size != 0 && size <= ref_room(ram_size, cpus);
	int r;

	FUZZ_SETUP(err);
	memset(err, 0x55, errlen);
	r = loader_check_size(size, ram_size, cpus, err, errlen);
	FUZZ_CHECK((r == 0) == ok, "loader_check_size(%" PRIu64 ", %" PRIu64 ", %u) = %d", size,
		   ram_size, cpus, r);
	if (r) {
		FUZZ_CHECK(memchr(err, '\0', errlen), "message not terminated");
		FUZZ_CHECK(errlen == 1 || err[0], "empty message");
		FUZZ_CHECK(!strchr(err, '\n'), "message of more than one line");
	}
	free(err);
}

static int image_fd(void)
{
	static int fd = -1;

	if (fd < 0) {
		fd = memfd_create("fuzz-image", MFD_CLOEXEC);
		FUZZ_SETUP(fd >= 0);
	}
	return fd;
}

static bool untouched(const uint8_t *p, size_t n)
{
	return fuzz_all_bytes(p, n, PATTERN);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = fuzz_in(data, size);
	uint64_t c_size = fuzz_u64(&in), c_ram = fuzz_u64(&in);
	uint32_t c_cpus = fuzz_u32(&in);
	uint64_t ram_size = (uint64_t)fuzz_u16(&in) * 32;
	uint8_t b = fuzz_u8(&in);
	unsigned cpus = 1 + (b & 63);
	unsigned kind = b >> 6;
	const uint8_t *image = in.p;
	size_t image_len = in.n;
	char path[64], err[512];
	uint8_t *mem;
	uint64_t loaded = 0xdeadbeef;
	bool ok;
	int r;

	check_size_rule(c_size, c_ram, c_cpus, 1 + (size_t)(c_cpus >> 26));
	check_size_rule(image_len, ram_size, cpus, sizeof(err));

	switch (kind) {
	case 0: {
		int fd = image_fd();

		FUZZ_SETUP(ftruncate(fd, 0) == 0);
		FUZZ_SETUP(pwrite(fd, image, image_len, 0) == (ssize_t)image_len);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		ok = image_len != 0 && image_len <= ref_room(ram_size, cpus);
		break;
	}
	case 1:
		snprintf(path, sizeof(path), "/");
		ok = false;
		break;
	case 2:
		snprintf(path, sizeof(path), "/dev/null");
		ok = false;
		break;
	default:
		snprintf(path, sizeof(path), "/nonexistent/fuzz-image");
		ok = false;
		break;
	}

	mem = malloc(ram_size ? ram_size : 1);
	FUZZ_SETUP(mem);
	memset(mem, PATTERN, ram_size);
	memset(err, 0, sizeof(err));
	r = loader_load(path, mem, ram_size, cpus, &loaded, err, sizeof(err));
	FUZZ_CHECK((r == 0) == ok, "loader_load(%s, %zu bytes, RAM %" PRIu64 ", %u vCPUs) = %d: %s",
		   path, image_len, ram_size, cpus, r, err);
	if (r == 0) {
		FUZZ_CHECK(loaded == image_len, "loaded %" PRIu64 " of %zu bytes", loaded, image_len);
		FUZZ_CHECK(BOOT_IMAGE_ADDR + image_len <= ram_size, "image past RAM");
		FUZZ_CHECK(memcmp(mem + BOOT_IMAGE_ADDR, image, image_len) == 0,
			   "RAM at BOOT_IMAGE_ADDR differs from the image");
		FUZZ_CHECK(untouched(mem, BOOT_IMAGE_ADDR), "RAM below the image changed");
		FUZZ_CHECK(untouched(mem + BOOT_IMAGE_ADDR + image_len,
				     ram_size - BOOT_IMAGE_ADDR - image_len),
			   "RAM above the image changed");
	} else {
		FUZZ_CHECK(loaded == 0xdeadbeef, "failed load wrote *size");
		FUZZ_CHECK(untouched(mem, ram_size), "failed load changed RAM");
		FUZZ_CHECK(err[0] && !strchr(err, '\n'), "message: \"%s\"", err);
		FUZZ_CHECK(strstr(err, path), "message does not name %s: %s", path, err);
	}
	free(mem);
	return 0;
}
