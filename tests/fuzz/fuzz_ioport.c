/* SPDX-License-Identifier: MIT */
/*
 * Guest port I/O (ioport.c) and the COM1 line assembly behind it
 * (serial.c): the only channel through which a guest hands the VMM bytes.
 *
 * Input: u8 set-up (bits 0-1: vCPUs - 1), then records:
 *   u8 cpu and direction (bits 0-1: vCPU, bit 2: IN)
 *   u8 port (0-7: COM1 + n, 8-11: the exit port, others: a u16 that follows)
 *   u8 size and count (bits 0-1: size 1, 2, 4, 4; bits 2-7: count - 1)
 *   the data of an OUT, size * count bytes
 * Each exit is laid out as KVM does: the data at run->io.data_offset in
 * the same allocation, which ends right after it so that ASan sees any
 * access beyond. The console is a memfd.
 *
 * Oracles, against a model of the serial line buffers and the VM's stop:
 *  - the console output is exactly the model's: the low byte of every
 *    element written to COM1's data port, NUL and CR dropped, a line
 *    written whenever it ends or reaches SERIAL_LINE_MAX, per vCPU; a
 *    newline first when another vCPU's piece went out without one (so
 *    vCPUs' lines never mix), and at the end serial_flush_all ends every
 *    partial line, and an open piece, with a newline;
 *  - IN from COM1's LSR reads THRE|TEMT, from other COM1 registers 0, from
 *    any other port all-ones;
 *  - a 4-byte OUT to the exit port stops the VM with its value, or with
 *    VMM_EXIT_BAD_STATUS above GUEST_STATUS_MAX (saying so when first);
 *    the first stop wins;
 *  - every port other than COM1 is warned about once, and only once.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "fuzz.h"

#include "ioport.h"
#include "serial.h"
#include "cli.h"
#include "vcpu.h"
#include "vmm_ports.h"
#include "vmm_status.h"

#define DATA_OFFSET 4096   /* where KVM puts it: the page after struct kvm_run */

struct model {
	char *out;             /* expected console output */
	size_t len, cap;
	struct { size_t len; char buf[SERIAL_LINE_MAX + 1]; } lines[4];
	int open_cpu;          /* whose last piece went out without a newline, or -1 */
	bool warned[65536];
	unsigned warnings;
	int status;
};

static void emit(struct model *m, const char *p, size_t n)
{
	if (m->len + n > m->cap) {
		m->cap = (m->len + n) * 2;
		m->out = realloc(m->out, m->cap);
		FUZZ_SETUP(m->out);
	}
	memcpy(m->out + m->len, p, n);
	m->len += n;
}

/* One piece of a vCPU's output reaches the console. */
static void model_flush(struct model *m, unsigned cpu)
{
	size_t n = m->lines[cpu].len;

	if (m->open_cpu >= 0 && m->open_cpu != (int)cpu)
		emit(m, "\n", 1);
	emit(m, m->lines[cpu].buf, n);
	m->open_cpu = n && m->lines[cpu].buf[n - 1] != '\n' ? (int)cpu : -1;
	m->lines[cpu].len = 0;
}

static void model_byte(struct model *m, unsigned cpu, uint8_t c)
{
	if (c == '\0' || c == '\r')
		return;
	m->lines[cpu].buf[m->lines[cpu].len++] = (char)c;
	if (c == '\n' || m->lines[cpu].len == SERIAL_LINE_MAX)
		model_flush(m, cpu);
}

static int console_fd(void)
{
	static int fd = -1;

	if (fd < 0) {
		fd = memfd_create("fuzz-console", MFD_CLOEXEC);
		FUZZ_SETUP(fd >= 0);
	}
	return fd;
}

static void one_exit(struct vm *vm, struct model *m, unsigned cpu, bool in_dir, uint16_t port,
		     uint8_t size, uint32_t count, struct fuzz_in *in)
{
	size_t bytes = (size_t)size * count;
	struct kvm_run *run = calloc(1, DATA_OFFSET + bytes);
	uint8_t *data;
	struct vcpu *v = &vm->vcpus[cpu];
	bool first = m->status < 0, com1 = port >= PORT_COM1 && port <= PORT_COM1 + 7;
	struct capture cap;

	FUZZ_SETUP(run);
	_Static_assert(sizeof(struct kvm_run) <= DATA_OFFSET, "kvm_run fits before the data");
	data = (uint8_t *)run + DATA_OFFSET;
	run->exit_reason = KVM_EXIT_IO;
	run->io.direction = in_dir ? KVM_EXIT_IO_IN : KVM_EXIT_IO_OUT;
	run->io.size = size;
	run->io.port = port;
	run->io.count = count;
	run->io.data_offset = DATA_OFFSET;
	if (in_dir)
		memset(data, 0x33, bytes);	/* what the handler must overwrite */
	else
		for (size_t i = 0; i < bytes; i++)
			data[i] = fuzz_u8(in);
	v->run = run;

	fuzz_capture_begin(&cap);
	ioport_handle(v);
	fuzz_capture_end(&cap);
	v->run = NULL;

	if (com1) {
		uint8_t want = port == PORT_COM1_LSR ? COM1_LSR_THRE | COM1_LSR_TEMT : 0;

		if (in_dir)
			for (size_t i = 0; i < bytes; i++)
				FUZZ_CHECK(data[i] == want, "IN from 0x%x: byte %zu = 0x%02x", port, i, data[i]);
		else if (port == PORT_COM1)
			for (size_t i = 0; i < bytes; i += size)
				model_byte(m, cpu, data[i]);
		FUZZ_CHECK(cap.len == 0, "COM1 access printed: %s", cap.buf);
	} else if (port == PORT_EXIT && !in_dir && size == 4) {
		uint32_t st;

		memcpy(&st, data, sizeof(st));
		if (first) {
			m->status = st <= GUEST_STATUS_MAX ? (int)st : VMM_EXIT_BAD_STATUS;
			FUZZ_CHECK((st > GUEST_STATUS_MAX) == (cap.len > 0),
				   "status %u: printed \"%s\"", st, cap.buf);
		} else {
			FUZZ_CHECK(cap.len == 0, "a second stop printed: %s", cap.buf);
		}
	} else {
		if (!m->warned[port]) {
			m->warned[port] = true;
			m->warnings++;
			FUZZ_CHECK(strstr(cap.buf, "warning:"), "port 0x%x not warned about", port);
		} else {
			FUZZ_CHECK(cap.len == 0, "port 0x%x warned about twice: %s", port, cap.buf);
		}
		if (in_dir)
			for (size_t i = 0; i < bytes; i++)
				FUZZ_CHECK(data[i] == 0xff, "IN from 0x%x: byte %zu = 0x%02x", port, i, data[i]);
	}
	free(cap.buf);
	FUZZ_CHECK(vm_stopping(vm) == (m->status >= 0), "stopping %d, model %d", vm_stopping(vm),
		   m->status);
	if (m->status >= 0)
		FUZZ_CHECK(vm->status == m->status, "status %d, model %d", vm->status, m->status);
	free(run);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct model m;
	struct fuzz_in in = fuzz_in(data, size);
	unsigned ncpus = 1 + (fuzz_u8(&in) & 3);
	struct cli_options opts = { 0 };
	struct vm vm;
	int fd = console_fd();
	char *got;
	struct stat st;

	free(m.out);
	memset(&m, 0, sizeof(m));
	m.status = -1;
	m.open_cpu = -1;
	FUZZ_SETUP(ftruncate(fd, 0) == 0 && lseek(fd, 0, SEEK_SET) == 0);
	FUZZ_SETUP(vm_init_common(&vm, opts.split_lock, ncpus, fd, &(const char *){ NULL }) == 0);

	while (in.n) {
		uint8_t a = fuzz_u8(&in), p = fuzz_u8(&in), sc = fuzz_u8(&in);
		uint16_t port = p < 8 ? (uint16_t)(PORT_COM1 + p) : p < 12 ? PORT_EXIT : fuzz_u16(&in);
		uint8_t esize = (uint8_t[]){ 1, 2, 4, 4 }[sc & 3];

		one_exit(&vm, &m, (a & 3) % ncpus, a & 4, port, esize, 1 + (sc >> 2), &in);
	}

	serial_flush_all(&vm.serial);
	for (unsigned cpu = 0; cpu < ncpus; cpu++) {
		if (m.lines[cpu].len) {
			m.lines[cpu].buf[m.lines[cpu].len++] = '\n';
			model_flush(&m, cpu);
		}
	}
	if (m.open_cpu >= 0)
		emit(&m, "\n", 1);
	FUZZ_CHECK(!vm.serial.broken, "console marked broken");
	FUZZ_SETUP(fstat(fd, &st) == 0);
	got = malloc((size_t)st.st_size + 1);
	FUZZ_SETUP(got);
	FUZZ_SETUP(pread(fd, got, (size_t)st.st_size, 0) == st.st_size);
	FUZZ_CHECK((size_t)st.st_size == m.len && (m.len == 0 || memcmp(got, m.out, m.len) == 0),
		   "console has %lld bytes, model %zu", (long long)st.st_size, m.len);
	free(got);
	free(m.out);
	m.out = NULL;
	vm_destroy_common(&vm);
	return 0;
}
