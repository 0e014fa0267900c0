/* SPDX-License-Identifier: MIT */
/*
 * The lab's agent: runs inside the L1 machine and starts programs for the
 * host's test launcher (tests/e2e/vmmlib.py), one TCP connection a program,
 * so that every test that runs vmm here can run it on the lab's stock KVM
 * with the same assertions. docs/lab.md has the protocol; in short, frames
 * of { u8 type; u32 length (little endian); payload } each way:
 *
 *   host -> agent, first frame
 *     'X' run: NUL-terminated "key=value" items: arg= (repeated, argv),
 *         env= (repeated, K=V over the agent's environment), cwd=, root=
 *         (chroot first), stdout=all|none|N (read all of it; read none until
 *         the exit, a stalled reader; read N bytes, then close the pipe),
 *         close=FD (repeated: start with FD closed), rlimit=RES:SOFT:HARD,
 *         pipe=N (stdout's pipe holds N bytes: F_SETPIPE_SZ)
 *     'R' read: a path; the answer is 'D' with a file's contents, 'L' with
 *         a directory's entries (NUL-separated), or 'F' with the error
 *     'Q' quit: the agent exits (the lab then powers off)
 *   host -> agent, while a program runs
 *     'K' a signal number, sent to the program
 *   agent -> host
 *     'P' the program's pid, 'O' stdout bytes, 'E' stderr bytes,
 *     'F' why it could not be started, 'W' its wait status (decimal), last
 *
 * The host closing the connection kills the program: nothing outlives the
 * test that started it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ITEMS 256

struct request {
	char *argv[MAX_ITEMS], *env[MAX_ITEMS];
	int argc, envc;
	const char *cwd, *root;
	long stdout_limit; /* -1 all, 0 none until the exit, N bytes */
	int pipe_size;
	int close_fds[16], nclose;
	struct {
		int res;
		struct rlimit lim;
	} rlim[8];
	int nrlim;
};

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int read_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_frame(int sock, char type, const void *data, uint32_t len)
{
	unsigned char hdr[5] = { (unsigned char)type, len & 0xff, (len >> 8) & 0xff,
				 (len >> 16) & 0xff, (len >> 24) & 0xff };

	if (write_all(sock, hdr, sizeof(hdr)))
		return -1;
	return len ? write_all(sock, data, len) : 0;
}

static int send_text(int sock, char type, const char *text)
{
	return send_frame(sock, type, text, (uint32_t)strlen(text));
}

/* One frame; the payload is malloc'ed and NUL-terminated. */
static int recv_frame(int sock, char *type, char **data, uint32_t *len)
{
	unsigned char hdr[5];

	if (read_all(sock, hdr, sizeof(hdr)))
		return -1;
	*type = (char)hdr[0];
	*len = hdr[1] | hdr[2] << 8 | (uint32_t)hdr[3] << 16 | (uint32_t)hdr[4] << 24;
	if (*len > (1u << 20))
		return -1;
	*data = malloc(*len + 1);
	if (!*data || read_all(sock, *data, *len))
		return -1;
	(*data)[*len] = 0;
	return 0;
}

static int rlimit_resource(const char *name)
{
	static const struct {
		const char *name;
		int res;
	} names[] = { { "NOFILE", RLIMIT_NOFILE }, { "AS", RLIMIT_AS },
		      { "NPROC", RLIMIT_NPROC },   { "CORE", RLIMIT_CORE },
		      { "MEMLOCK", RLIMIT_MEMLOCK }, { "STACK", RLIMIT_STACK } };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i].name))
			return names[i].res;
	return -1;
}

static const char *parse_request(char *p, uint32_t len, struct request *rq)
{
	char *end = p + len;

	memset(rq, 0, sizeof(*rq));
	rq->stdout_limit = -1;
	for (char *next; p < end; p = next) {
		char *v = strchr(p, '=');

		next = p + strlen(p) + 1;
		if (!v)
			return "an item without '='";
		*v++ = 0;
		if (!strcmp(p, "arg") && rq->argc < MAX_ITEMS - 1) {
			rq->argv[rq->argc++] = v;
		} else if (!strcmp(p, "env") && rq->envc < MAX_ITEMS - 1) {
			rq->env[rq->envc++] = v;
		} else if (!strcmp(p, "cwd")) {
			rq->cwd = v;
		} else if (!strcmp(p, "root")) {
			rq->root = v;
		} else if (!strcmp(p, "stdout")) {
			rq->stdout_limit = !strcmp(v, "all") ? -1 : !strcmp(v, "none") ? 0 : atol(v);
		} else if (!strcmp(p, "pipe")) {
			rq->pipe_size = atoi(v);
		} else if (!strcmp(p, "close") && rq->nclose < 16) {
			rq->close_fds[rq->nclose++] = atoi(v);
		} else if (!strcmp(p, "rlimit") && rq->nrlim < 8) {
			unsigned long long soft, hard;
			char name[16];

			if (sscanf(v, "%15[A-Z]:%llu:%llu", name, &soft, &hard) != 3 ||
			    rlimit_resource(name) < 0)
				return "a bad rlimit";
			rq->rlim[rq->nrlim].res = rlimit_resource(name);
			rq->rlim[rq->nrlim].lim.rlim_cur = soft;
			rq->rlim[rq->nrlim].lim.rlim_max = hard;
			rq->nrlim++;
		} else {
			return "an unknown item";
		}
	}
	return rq->argc ? NULL : "no arg= item";
}

/* In the child: set up, then exec; on failure the errno goes up errpipe. */
static void child(const struct request *rq, int out, int err, int errpipe)
{
	int e, devnull = open("/dev/null", O_RDONLY);

	signal(SIGPIPE, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		goto fail;
	if (rq->root && (chroot(rq->root) || chdir("/")))
		goto fail;
	if (rq->cwd && chdir(rq->cwd))
		goto fail;
	for (int i = 0; i < rq->nrlim; i++)
		if (setrlimit(rq->rlim[i].res, &rq->rlim[i].lim))
			goto fail;
	for (int i = 0; i < rq->envc; i++)
		if (putenv(rq->env[i]))
			goto fail;
	/* Like the host's launcher: nothing but 0-2 (and errpipe, close-on-exec) reaches the program. */
	close_range(3, (unsigned)errpipe - 1, 0);
	close_range((unsigned)errpipe + 1, ~0u, 0);
	for (int i = 0; i < rq->nclose; i++)
		close(rq->close_fds[i]);
	execvp(rq->argv[0], rq->argv);
fail:
	e = errno;
	if (write(errpipe, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

static void set_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* Forwards what fd has, at most *left bytes (left NULL: no limit); returns 0
 * at EOF or when *left is used up, 1 otherwise, -1 when the host is gone. */
static int forward(int fd, int sock, char type, long *left)
{
	char buf[65536];
	size_t want = sizeof(buf);
	ssize_t n;

	if (left && (size_t)*left < want)
		want = (size_t)*left;
	n = read(fd, buf, want);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 1 : 0;
	if (n == 0)
		return 0;
	if (send_frame(sock, type, buf, (uint32_t)n))
		return -1;
	if (left) {
		*left -= n;
		if (*left == 0)
			return 0; /* the reader goes away after N bytes */
	}
	return 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int run_program(int sock, char *payload, uint32_t len)
{
	struct request rq;
	const char *bad = parse_request(payload, len, &rq);
	int out[2], err[2], errpipe[2], e = 0, status = 0, exited = 0;
	long left;
	char text[64];
	double drain_end = 0;
	pid_t pid;

	if (bad) {
		snprintf(text, sizeof(text), "bad request: %s", bad);
		return send_text(sock, 'F', text);
	}
	if (pipe(out) || pipe(err) || pipe2(errpipe, O_CLOEXEC))
		return send_text(sock, 'F', strerror(errno));
	if (rq.pipe_size && fcntl(out[0], F_SETPIPE_SZ, rq.pipe_size) < 0)
		return send_text(sock, 'F', strerror(errno));
	pid = fork();
	if (pid < 0)
		return send_text(sock, 'F', strerror(errno));
	if (pid == 0) {
		close(sock);
		close(out[0]);
		close(err[0]);
		close(errpipe[0]);
		child(&rq, out[1], err[1], errpipe[1]);
	}
	close(out[1]);
	close(err[1]);
	close(errpipe[1]);
	if (read(errpipe[0], &e, sizeof(e)) == (ssize_t)sizeof(e)) {
		waitpid(pid, NULL, 0);
		snprintf(text, sizeof(text), "%d", e);
		return send_text(sock, 'F', text);
	}
	close(errpipe[0]);
	snprintf(text, sizeof(text), "%d", (int)pid);
	if (send_text(sock, 'P', text))
		goto host_gone;
	set_nonblock(out[0]);
	set_nonblock(err[0]);
	left = rq.stdout_limit;
	for (;;) {
		struct pollfd p[3] = { { .fd = sock, .events = POLLIN },
				       { .fd = err[0], .events = POLLIN },
				       { .fd = left != 0 || exited ? out[0] : -1, .events = POLLIN } };

		if (!exited && waitpid(pid, &status, WNOHANG) == pid) {
			exited = 1;
			drain_end = now() + 2; /* a grandchild may still hold the pipes */
		}
		if (exited && ((err[0] < 0 && out[0] < 0) || now() > drain_end))
			break;
		if (poll(p, 3, 20) < 0 && errno != EINTR)
			goto host_gone;
		if (p[0].revents) {
			char type, *data;
			uint32_t n;

			if (recv_frame(sock, &type, &data, &n))
				goto host_gone;
			if (type == 'K' && !exited)
				kill(pid, atoi(data));
			free(data);
		}
		for (int i = 1; i < 3; i++) {
			int *fd = i == 1 ? &err[0] : &out[0];
			int r;

			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			r = forward(*fd, sock, i == 1 ? 'E' : 'O', i == 2 && left > 0 ? &left : NULL);
			if (r < 0)
				goto host_gone;
			if (r == 0) {
				close(*fd);
				*fd = -1;
			}
		}
	}
	snprintf(text, sizeof(text), "%d", status);
	return send_text(sock, 'W', text);
host_gone:
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

/* A directory's entries, NUL-separated, as an 'L' frame. */
static int list_dir(int sock, DIR *d)
{
	char buf[65536];
	size_t used = 0;
	struct dirent *e;

	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name) + 1;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (used + n > sizeof(buf))
			break;
		memcpy(buf + used, e->d_name, n);
		used += n;
	}
	closedir(d);
	return send_frame(sock, 'L', buf, (uint32_t)used);
}

static int read_file(int sock, const char *path)
{
	char buf[65536];
	size_t used = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY);
	struct stat st;

	if (fd < 0)
		return send_text(sock, 'F', strerror(errno));
	if (!fstat(fd, &st) && S_ISDIR(st.st_mode)) {
		DIR *d = fdopendir(fd);

		return d ? list_dir(sock, d) : send_text(sock, 'F', strerror(errno));
	}
	while (used < sizeof(buf) && (n = read(fd, buf + used, sizeof(buf) - used)) > 0)
		used += (size_t)n;
	close(fd);
	return send_frame(sock, 'D', buf, (uint32_t)used);
}

static void serve(int sock)
{
	char type, *data;
	uint32_t len;

	signal(SIGCHLD, SIG_DFL);
	if (recv_frame(sock, &type, &data, &len))
		_exit(1);
	if (type == 'X')
		run_program(sock, data, len);
	else if (type == 'R')
		read_file(sock, data);
	else if (type == 'Q')
		kill(getppid(), SIGTERM);
	else
		send_text(sock, 'F', "unknown request");
	_exit(0);
}

static void on_term(int sig)
{
	(void)sig;
	_exit(0); /* a 'Q' request: the lab powers off behind us */
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	int one = 1, lsock;

	if (argc != 2) {
		fprintf(stderr, "usage: labagent PORT\n");
		return 2;
	}
	addr.sin_port = htons((uint16_t)atoi(argv[1]));
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_term);
	signal(SIGCHLD, SIG_IGN); /* connection handlers are reaped by the kernel */
	lsock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lsock < 0 || setsockopt(lsock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lsock, (struct sockaddr *)&addr, sizeof(addr)) || listen(lsock, 64)) {
		perror("labagent: listen");
		return 1;
	}
	printf("labagent: listening on port %s\n", argv[1]);
	fflush(stdout);
	for (;;) {
		int s = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);

		if (s < 0) {
			if (errno == EINTR)
				continue;
			perror("labagent: accept");
			return 1;
		}
		setsockopt(s, IPPROTO_TCP, 1 /* TCP_NODELAY */, &one, sizeof(one));
		if (fork() == 0) {
			close(lsock);
			serve(s);
		}
		close(s);
	}
}
