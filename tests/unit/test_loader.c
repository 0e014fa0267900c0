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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(size_rules),
		cmocka_unit_test(loads_bytes),
		cmocka_unit_test(bad_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
