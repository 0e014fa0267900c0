/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "boot.h"
#include "loader.h"

static char err[512];

static void size_rules(void **state)
{
	uint64_t ram = 4ull << 20;
	uint64_t room = ram - BOOT_IMAGE_ADDR - BOOT_CPU_REGION_SIZE;

	(void)state;
	assert_int_equal(loader_check_size(0, ram, 1, err, sizeof(err)), -1);
	assert_string_equal(err, "is empty");
	assert_int_equal(loader_check_size(1, ram, 1, err, sizeof(err)), 0);
	assert_int_equal(loader_check_size(room, ram, 1, err, sizeof(err)), 0);
	assert_int_equal(loader_check_size(room + 1, ram, 1, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "give more with -m"));
	/* Every extra vCPU takes its region from the image's room. */
	assert_int_equal(loader_check_size(room, ram, 2, err, sizeof(err)), -1);
	assert_int_equal(loader_check_size(1, 2ull << 20, 256, err, sizeof(err)), -1);
}

static char *temp_file(const void *data, size_t len)
{
	static char path[64];
	int fd;

	strcpy(path, "/tmp/vmm-loader-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
	return path;
}

static void loads_bytes(void **state)
{
	uint64_t ram = 4ull << 20, size = 0;
	uint8_t *mem = calloc(1, ram);
	const uint8_t code[] = { 0xf4, 0x90, 0xeb, 0xfe };
	char *path = temp_file(code, sizeof(code));

	(void)state;
	assert_int_equal(loader_load(path, mem, ram, 1, &size, err, sizeof(err)), 0);
	assert_int_equal(size, sizeof(code));
	assert_memory_equal(mem + BOOT_IMAGE_ADDR, code, sizeof(code));
	assert_int_equal(mem[BOOT_IMAGE_ADDR + sizeof(code)], 0);
	unlink(path);
	free(mem);
}

static void bad_files(void **state)
{
	uint64_t ram = 4ull << 20, size = 0;
	uint8_t *mem = calloc(1, ram);
	char *path;

	(void)state;
	assert_int_equal(loader_load("/nonexistent/x", mem, ram, 1, &size, err, sizeof(err)), LOADER_NO_INPUT);
	assert_non_null(strstr(err, "'/nonexistent/x': No such file"));
	assert_int_equal(loader_load("/tmp", mem, ram, 1, &size, err, sizeof(err)), LOADER_NO_INPUT);
	assert_non_null(strstr(err, "is a directory"));
	assert_int_equal(loader_load("/dev/null", mem, ram, 1, &size, err, sizeof(err)), LOADER_NO_INPUT);
	assert_non_null(strstr(err, "not a regular file"));
	path = temp_file("", 0);
	assert_int_equal(loader_load(path, mem, ram, 1, &size, err, sizeof(err)), LOADER_BAD_IMAGE);
	assert_non_null(strstr(err, "is empty"));
	assert_int_equal(truncate(path, (off_t)ram), 0);
	assert_int_equal(loader_load(path, mem, ram, 1, &size, err, sizeof(err)), LOADER_BAD_IMAGE);
	assert_non_null(strstr(err, "is 4194304 bytes"));
	assert_int_equal(size, 0);
	unlink(path);
	free(mem);
}

/* loader_open/_place: what the file is decides the machine and the bounds. */
static void recognises(void **state)
{
	uint64_t ram = 4ull << 20;
	uint8_t *mem = calloc(1, ram);
	struct boot_layout l = { .ram_size = ram, .cpus = 1 };
	struct loader_image img;
	struct kernel_boot kb;
	char *path, line[129];

	(void)state;
	path = temp_file("\x1f\x8b\x08\x00", 4);
	assert_int_equal(loader_open(&img, path, NULL, ram, err, sizeof(err)), LOADER_BAD_IMAGE);
	assert_non_null(strstr(err, "' is gzip-compressed data (unpack it first: a vmlinux ELF or a bzImage boots); " IMAGE_BOOTS));
	loader_close(&img);
	unlink(path);
	path = temp_file("\xf4", 1);
	assert_int_equal(loader_open(&img, path, "/nonexistent/initrd", ram, err, sizeof(err)), LOADER_USAGE);
	assert_non_null(strstr(err, "is a flat image, which takes no initrd"));
	loader_close(&img);
	assert_int_equal(loader_open(&img, path, NULL, ram, err, sizeof(err)), 0);
	assert_int_equal(loader_machine(&img), MACHINE_BARE);
	/* A flat image keeps boot_info.cmdline's 127 bytes. */
	memset(line, 'x', 128);
	line[128] = '\0';
	l.cmdline = line;
	assert_int_equal(loader_place(&img, mem, &l, &kb, err, sizeof(err)), LOADER_USAGE);
	assert_string_equal(err, "--append: text is 128 bytes, a flat image's boot_info takes at most 127");
	line[127] = '\0';
	assert_int_equal(loader_place(&img, mem, &l, &kb, err, sizeof(err)), 0);
	assert_int_equal(l.machine, MACHINE_BARE);
	assert_int_equal(l.entry.mode, BOOT_ENTRY_FLAT);
	assert_int_equal(l.image_size, 1);
	assert_int_equal(mem[BOOT_IMAGE_ADDR], 0xf4);
	loader_close(&img);
	unlink(path);
	free(mem);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(size_rules),
		cmocka_unit_test(loads_bytes),
		cmocka_unit_test(bad_files),
		cmocka_unit_test(recognises),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
