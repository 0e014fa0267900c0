/* SPDX-License-Identifier: MIT */
#include "loader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "boot.h"

int loader_check_size(uint64_t size, uint64_t ram_size, unsigned cpus,
		      char *err, size_t errlen)
{
	uint64_t room = boot_image_limit(ram_size, cpus) - BOOT_IMAGE_ADDR;

	if (size == 0) {
		snprintf(err, errlen, "is empty");
		return -1;
	}
	if (size > room) {
		snprintf(err, errlen,
			 "is %llu bytes, but %lluM of RAM with %u vCPU(s) leaves room for %llu; give more with -m",
			 (unsigned long long)size, (unsigned long long)(ram_size >> 20),
			 cpus, (unsigned long long)room);
		return -1;
	}
	return 0;
}

static int read_all(int fd, uint8_t *dst, uint64_t len)
{
	while (len) {
		ssize_t n = read(fd, dst, len > (1u << 30) ? (1u << 30) : len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;	/* the file shrank under us */
		dst += n;
		len -= (uint64_t)n;
	}
	return 0;
}

int loader_load(const char *path, uint8_t *mem, uint64_t ram_size, unsigned cpus,
		uint64_t *size, char *err, size_t errlen)
{
	char why[160];
	struct stat st;
	int fd, r, status = LOADER_NO_INPUT;

	/* Non-blocking: a FIFO with no writer would hang open() with the stop
	 * signals blocked; it is refused below as not a regular file. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		snprintf(err, errlen, "guest image '%s': %s", path, strerror(errno));
		return LOADER_NO_INPUT;
	}
	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "guest image '%s': fstat: %s", path, strerror(errno));
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "guest image '%s' is a directory", path);
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "guest image '%s' is not a regular file", path);
		goto fail;
	}
	if (loader_check_size((uint64_t)st.st_size, ram_size, cpus, why, sizeof(why))) {
		snprintf(err, errlen, "guest image '%s' %s", path, why);
		status = LOADER_BAD_IMAGE;
		goto fail;
	}
	r = read_all(fd, mem + BOOT_IMAGE_ADDR, (uint64_t)st.st_size);
	if (r) {
		snprintf(err, errlen, "guest image '%s': read: %s", path, strerror(-r));
		goto fail;
	}
	close(fd);
	*size = (uint64_t)st.st_size;
	return 0;
fail:
	close(fd);
	return status;
}
