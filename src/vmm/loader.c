/* SPDX-License-Identifier: MIT */
#include "loader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a file larger than RAM is read of: enough to recognise it. */
#define HEAD_SIZE 65536u

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

/*
 * The regular file at path, malloc'd into *buf: all of it up to max bytes,
 * else its first HEAD_SIZE. `what` names it in errors ("guest image").
 */
static int read_file(const char *what, const char *path, uint64_t max, uint8_t **buf,
		     size_t *len, uint64_t *file_size, char *err, size_t errlen)
{
	struct stat st;
	int fd, r;

	*buf = NULL;
	/* Non-blocking: a FIFO with no writer would hang open() with the stop
	 * signals blocked; it is refused below as not a regular file. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		snprintf(err, errlen, "%s '%s': %s", what, path, strerror(errno));
		return LOADER_NO_INPUT;
	}
	if (fstat(fd, &st) < 0)
		snprintf(err, errlen, "%s '%s': fstat: %s", what, path, strerror(errno));
	else if (S_ISDIR(st.st_mode))
		snprintf(err, errlen, "%s '%s' is a directory", what, path);
	else if (!S_ISREG(st.st_mode))
		snprintf(err, errlen, "%s '%s' is not a regular file", what, path);
	else {
		*file_size = (uint64_t)st.st_size;
		*len = (size_t)(*file_size > max ? (HEAD_SIZE < *file_size ? HEAD_SIZE : *file_size) : *file_size);
		*buf = malloc(*len ? *len : 1);
		r = *buf ? read_all(fd, *buf, *len) : -ENOMEM;
		if (r)
			snprintf(err, errlen, "%s '%s': read: %s", what, path, strerror(-r));
		close(fd);
		return r ? LOADER_NO_INPUT : 0;
	}
	close(fd);
	return LOADER_NO_INPUT;
}

static int place_flat(const struct loader_image *img, uint8_t *mem, struct boot_layout *l,
		      char *err, size_t errlen)
{
	char why[160];

	if (loader_check_size(img->file_size, l->ram_size, l->cpus, why, sizeof(why))) {
		snprintf(err, errlen, "guest image '%s' %s", img->path, why);
		return LOADER_BAD_IMAGE;
	}
	if (l->cmdline && strlen(l->cmdline) >= BOOT_CMDLINE_MAX) {
		snprintf(err, errlen, "--append: text is %zu bytes, a flat image's boot_info takes at most %u",
			 strlen(l->cmdline), BOOT_CMDLINE_MAX - 1);
		return LOADER_USAGE;
	}
	memcpy(mem + BOOT_IMAGE_ADDR, img->buf, img->len);
	l->image_size = img->file_size;
	return 0;
}

int loader_load(const char *path, uint8_t *mem, uint64_t ram_size, unsigned cpus,
		uint64_t *size, char *err, size_t errlen)
{
	struct loader_image img = { .path = path };
	struct boot_layout l = { .ram_size = ram_size, .cpus = cpus };
	int r = read_file("guest image", path, ram_size, &img.buf, &img.len, &img.file_size,
			  err, errlen);

	if (!r)
		r = place_flat(&img, mem, &l, err, errlen);
	if (!r)
		*size = l.image_size;
	free(img.buf);
	return r;
}

/* The one line for an image vmm does not boot, or whose header is broken. */
static int refuse(const struct loader_image *img, char *err, size_t errlen)
{
	if (img->info.kind == IMAGE_FOREIGN)
		snprintf(err, errlen, "guest image '%s' is %s; %s", img->path, img->info.what, IMAGE_BOOTS);
	else
		snprintf(err, errlen, "guest image '%s' (ELF): %s", img->path, img->info.what);
	return LOADER_BAD_IMAGE;
}

static int open_initrd(struct loader_image *img, uint64_t ram_size, char *err, size_t errlen)
{
	uint64_t size;
	int r;

	if (img->info.kind == IMAGE_FLAT) {
		snprintf(err, errlen, "--initrd: guest image '%s' is a flat image, which takes no initrd; "
			 "give a kernel (bzImage, PVH or multiboot)", img->path);
		return LOADER_USAGE;
	}
	r = read_file("--initrd", img->initrd_path, ram_size, &img->initrd, &img->initrd_len, &size,
		      err, errlen);
	if (!r && (size == 0 || size > ram_size)) {
		snprintf(err, errlen, "--initrd '%s' is %llu bytes, %s", img->initrd_path,
			 (unsigned long long)size, size ? "more than the RAM; give more with -m" : "empty");
		r = LOADER_BAD_IMAGE;
	}
	return r;
}

int loader_open(struct loader_image *img, const char *path, const char *initrd_path,
		uint64_t ram_size, char *err, size_t errlen)
{
	int r;

	*img = (struct loader_image){ .path = path, .initrd_path = initrd_path };
	r = read_file("guest image", path, ram_size, &img->buf, &img->len, &img->file_size, err, errlen);
	if (r)
		return r;
	image_detect(img->buf, img->len, &img->info);
	if (img->info.kind == IMAGE_FOREIGN || img->info.kind == IMAGE_BAD)
		return refuse(img, err, errlen);
	if (img->info.kind != IMAGE_FLAT && img->file_size > img->len) {
		snprintf(err, errlen, "guest image '%s' (%s) is %llu bytes, more than the RAM (%lluM); give more with -m",
			 path, image_kind_name(img->info.kind), (unsigned long long)img->file_size,
			 (unsigned long long)(ram_size >> 20));
		return LOADER_BAD_IMAGE;
	}
	return initrd_path ? open_initrd(img, ram_size, err, errlen) : 0;
}

enum machine loader_machine(const struct loader_image *img)
{
	return img->info.kind == IMAGE_FLAT ? MACHINE_BARE : MACHINE_PC;
}

int loader_place(const struct loader_image *img, uint8_t *mem, struct boot_layout *l,
		 struct kernel_boot *kb, char *err, size_t errlen)
{
	char why[400];
	int r;

	*kb = (struct kernel_boot){ 0 };
	l->machine = loader_machine(img);
	if (l->machine == MACHINE_BARE) {
		l->entry = (struct boot_entry){ .mode = BOOT_ENTRY_FLAT };
		return place_flat(img, mem, l, err, errlen);
	}
	r = kernel_load(&img->info, img->buf, img->len,
			&(struct kernel_args){ .cmdline = l->cmdline, .initrd = img->initrd,
					       .initrd_len = img->initrd_len },
			mem, l->ram_size, kb, why, sizeof(why));
	if (r == LOADER_USAGE)
		snprintf(err, errlen, "%s (guest image '%s', a %s)", why, img->path,
			 image_kind_name(img->info.kind));
	else if (r)
		snprintf(err, errlen, "guest image '%s' (%s): %s", img->path,
			 image_kind_name(img->info.kind), why);
	l->image_size = img->file_size;
	l->entry = kb->entry;
	return r;
}

void loader_close(struct loader_image *img)
{
	free(img->buf);
	free(img->initrd);
	img->buf = img->initrd = NULL;
}
