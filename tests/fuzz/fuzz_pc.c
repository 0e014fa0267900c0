/* SPDX-License-Identifier: MIT */
/*
 * The PC machine's ports (pc.c) and its 16550 (uart.c): what a kernel
 * guest hands the VMM through port I/O, and console input beside it.
 *
 * Input: u8 vCPU count - 1, then records:
 *   u8 op (bits 0-1: 0 OUT, 1 IN, 2 console input; bits 2-3: size 1, 2, 4, 4)
 *   OUT and IN: u8 port (below PORTS: one of ports[], else a u16 follows),
 *               an OUT's data (size bytes)
 *   console input: u8 n, then n bytes
 *
 * Oracles:
 *  - only port 0xf4 exits, only 0x64 and 0xcf9 reset, only 0x600 powers
 *    off, and the ports pc.h names are never unknown;
 *  - the interrupt line changes level at every report (never high twice),
 *    only IRQ 4, and ends as the UART says;
 *  - the console gets exactly the bytes written to THR with DLAB and
 *    loopback off, in order;
 *  - input: pc_input() takes at most what pc_input_room() said, the
 *    queue and the FIFO stay within their bounds.
 */
#include "fuzz.h"

#include "acpi.h"
#include "pc.h"
#include "uart.h"

static const uint16_t ports[] = {
	PC_COM1, PC_COM1 + 1, PC_COM1 + 2, PC_COM1 + 3, PC_COM1 + 4, PC_COM1 + 5,
	PC_COM1 + 6, PC_COM1 + 7, PC_CMOS_INDEX, PC_CMOS_DATA, PC_FW_CFG_SEL, PC_FW_CFG_DATA,
	PC_PCI_ADDRESS, PC_PCI_DATA, PC_PCI_DATA + 2, 0xcfb, PC_I8042_DATA, PC_I8042_CMD,
	PC_RESET_CONTROL, ACPI_SLEEP_CONTROL_PORT, ACPI_SLEEP_STATUS_PORT, PC_DEBUG_EXIT, 0x80,
};
#define PORTS (sizeof(ports) / sizeof(ports[0]))

static struct {
	uint8_t out[1 << 16];
	size_t nout, nexpect;
	uint8_t expect[1 << 16];
	int level;               /* -1: never reported */
	bool dlab, loop;
} t;

static void console(void *ctx, uint8_t byte)
{
	(void)ctx;
	FUZZ_CHECK(t.nout < sizeof(t.out), "more output than written");
	t.out[t.nout++] = byte;
}

static void irq_line(void *ctx, unsigned irq, bool level)
{
	(void)ctx;
	FUZZ_CHECK(irq == PC_COM1_IRQ, "IRQ %u", irq);
	FUZZ_CHECK(t.level != (int)level, "the line reported %d twice", level);
	t.level = level;
}

static void check_event(uint16_t port, bool out, enum pc_event e)
{
	bool named = port == PC_COM1 + (port & 7) || port == PC_CMOS_INDEX ||
		     port == PC_CMOS_DATA || port == PC_FW_CFG_SEL || port == PC_FW_CFG_DATA ||
		     (port >= PC_PCI_ADDRESS && port <= PC_PCI_DATA + 3) || port == PC_I8042_CMD ||
		     port == PC_I8042_DATA || port == ACPI_SLEEP_CONTROL_PORT || port == PC_DEBUG_EXIT;

	FUZZ_CHECK(!(named && e == PC_EVENT_UNKNOWN), "port 0x%x unknown", port);
	FUZZ_CHECK(e != PC_EVENT_EXIT || (out && port == PC_DEBUG_EXIT), "exit at 0x%x", port);
	FUZZ_CHECK(e != PC_EVENT_RESET || (out && (port == PC_I8042_CMD || port == PC_RESET_CONTROL)),
		   "reset at 0x%x", port);
	FUZZ_CHECK(e != PC_EVENT_POWEROFF || (out && port == ACPI_SLEEP_CONTROL_PORT),
		   "power-off at 0x%x", port);
}

/* What the model expects of an OUT to COM1. */
static void model_out(uint16_t port, const uint8_t *data, unsigned size)
{
	if (port < PC_COM1 || port > PC_COM1 + 7)
		return;	/* an access is the device's at its first port */
	for (unsigned i = 0; i < size && port + i <= PC_COM1 + 7; i++) {
		unsigned reg = (unsigned)(port + i - PC_COM1);

		if (reg == UART_THR && !t.dlab && !t.loop && t.nexpect < sizeof(t.expect))
			t.expect[t.nexpect++] = data[i];
		if (reg == UART_LCR)
			t.dlab = data[i] & UART_LCR_DLAB;
		if (reg == UART_MCR)
			t.loop = data[i] & UART_MCR_LOOP;
	}
}

static void io(struct pc *pc, struct fuzz_in *in, bool out, unsigned size)
{
	uint8_t sel = fuzz_u8(in), data[4] = { 0 };
	uint16_t port = sel < PORTS ? ports[sel] : fuzz_u16(in);
	uint32_t value;

	if (out) {
		fuzz_bytes(in, data, size);
		model_out(port, data, size);
	}
	check_event(port, out, pc_io(pc, port, out, size, data, &value));
}

static void input(struct pc *pc, struct fuzz_in *in)
{
	uint8_t buf[255];
	size_t n = fuzz_bytes(in, buf, fuzz_u8(in)), room = pc_input_room(pc);
	size_t took = pc_input(pc, buf, n);

	FUZZ_CHECK(took <= n && took <= room, "took %zu of %zu, room %zu", took, n, room);
	FUZZ_CHECK(pc->input_len <= PC_INPUT_MAX, "queue %zu", pc->input_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = fuzz_in(data, size);
	static const unsigned sizes[4] = { 1, 2, 4, 4 };
	struct pc pc;

	memset(&t, 0, sizeof(t));
	t.level = -1;
	pc_init(&pc, fuzz_u8(&in) + 1u, 64u << 20, console, irq_line, NULL);
	while (in.n) {
		uint8_t op = fuzz_u8(&in);

		if ((op & 3) == 2)
			input(&pc, &in);
		else if ((op & 3) < 2)
			io(&pc, &in, (op & 3) == 0, sizes[(op >> 2) & 3]);
		FUZZ_CHECK(pc.com1.rx_count <= UART_FIFO_SIZE, "FIFO %u", pc.com1.rx_count);
	}
	FUZZ_CHECK(t.level == -1 ? !pc.com1.irq_level : t.level == pc.com1.irq_level,
		   "line %d, UART %d", t.level, pc.com1.irq_level);
	FUZZ_CHECK(t.nout == t.nexpect && !memcmp(t.out, t.expect, t.nout),
		   "console got %zu bytes, %zu written", t.nout, t.nexpect);
	pc_destroy(&pc);
	return 0;
}
