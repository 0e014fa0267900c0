/* SPDX-License-Identifier: MIT */
/*
 * Runs a fuzz harness over every input in the given directories (or files),
 * without libFuzzer: it builds with gcc or clang, with or without
 * sanitizers, so that ./test.sh replays the committed corpus in every build
 * tree and a crash found once can never come back unnoticed.
 *
 *   fuzz-replay-NAME DIR_OR_FILE...
 *
 * Each input is read into a buffer of exactly its size (as libFuzzer does,
 * so ASan sees a read past its end) and handed to LLVMFuzzerTestOneInput.
 * Names starting with '.' are skipped (.gitkeep). Fails when an argument is
 * missing or when no input at all was found: an empty replay proves nothing.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static unsigned long replayed;

static int replay_file(const char *path)
{
	struct stat st;
	uint8_t *buf;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* malloc(0) may return NULL; one spare byte is never handed over. */
	buf = malloc((size_t)st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		fprintf(stderr, "replay: %s: out of memory\n", path);
		close(fd);
		return -1;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "replay: %s: read: %s\n", path,
				n < 0 ? strerror(errno) : "file shrank");
			free(buf);
			close(fd);
			return -1;
		}
		got += (size_t)n;
	}
	close(fd);
	/* Named before running, so that a crash report can be traced to a file. */
	fprintf(stderr, "replay: %s (%zu bytes)\n", path, got);
	fflush(stderr);
	LLVMFuzzerTestOneInput(buf, got);
	free(buf);
	replayed++;
	return 0;
}

static int skip_name(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

static int replay_path(const char *path)
{
	struct dirent **names;
	struct stat st;
	int n, status = 0;

	if (stat(path, &st) < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return replay_file(path);
	/* Sorted, so that runs are reproducible. */
	n = scandir(path, &names, skip_name, alphasort);
	if (n < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		size_t len = strlen(path) + strlen(names[i]->d_name) + 2;
		char *file = malloc(len);

		if (!file) {
			status = -1;
		} else {
			snprintf(file, len, "%s/%s", path, names[i]->d_name);
			if (stat(file, &st) == 0 && S_ISREG(st.st_mode) && replay_file(file))
				status = -1;
			free(file);
		}
		free(names[i]);
	}
	free(names);
	return status;
}

int main(int argc, char **argv)
{
	int status = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
		return 2;
	}
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++)
		if (replay_path(argv[i]))
			status = 1;
	if (replayed == 0) {
		fprintf(stderr, "replay: no inputs found\n");
		return 1;
	}
	fprintf(stderr, "replay: %lu inputs, %s\n", replayed, status ? "with errors" : "all passed");
	return status;
}
