/* SPDX-License-Identifier: MIT */
/* The PC machine's ports: reset, power-off, exit, fw_cfg, RTC, PCI, COM1 and its input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <semaphore.h>
#include <string.h>
#include <unistd.h>

#include "acpi.h"
#include "pc.h"

static struct pc pc;
static char out[64];
static size_t nout;
static unsigned irq_changes, last_irq;
static bool irq_level;

static void console(void *ctx, uint8_t byte)
{
	(void)ctx;
	out[nout++] = (char)byte;
}

static void irq_line(void *ctx, unsigned irq, bool level)
{
	(void)ctx;
	irq_changes++;
	last_irq = irq;
	irq_level = level;
}

/* 2026-12-08 01:02:03 UTC, a Tuesday. */
static time_t fixed_time(void)
{
	return 1796691723;
}

static time_t now;

static time_t settable_time(void)
{
	return now;
}

/* 2000-02-29 12:00:00, 1999-12-31 23:59:59, 2100-03-01 00:00:00, the epoch, 2038-01-19 03:14:08. */
static const time_t other_times[] = { 951825600, 946684799, 4107542400, 0, 2147483648 };

static uint8_t bcd(unsigned v)
{
	return (uint8_t)((v / 10) << 4 | v % 10);
}

static int setup(void **state)
{
	(void)state;
	nout = irq_changes = 0;
	pc_init(&pc, 3, 256u << 20, console, irq_line, NULL);
	pc.now = fixed_time;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pc_destroy(&pc);
	return 0;
}

static enum pc_event outb(uint16_t port, uint8_t v)
{
	uint32_t value;

	return pc_io(&pc, port, true, 1, &v, &value);
}

static uint8_t inb(uint16_t port)
{
	uint8_t v = 0x5a;
	uint32_t value;

	assert_int_equal(pc_io(&pc, port, false, 1, &v, &value), PC_EVENT_NONE);
	return v;
}

static enum pc_event outl(uint16_t port, uint32_t v, uint32_t *value)
{
	return pc_io(&pc, port, true, 4, (uint8_t *)&v, value);
}

static uint32_t inl(uint16_t port)
{
	uint32_t v = 0x5a5a5a5a, value;

	assert_int_equal(pc_io(&pc, port, false, 4, (uint8_t *)&v, &value), PC_EVENT_NONE);
	return v;
}

static void reset_ports(void **state)
{
	(void)state;
	assert_int_equal(outb(PC_RESET_CONTROL, 0x02), PC_EVENT_NONE);
	assert_int_equal(outb(PC_RESET_CONTROL, 0x06), PC_EVENT_RESET);
	assert_int_equal(outb(PC_RESET_CONTROL, 0x0e), PC_EVENT_RESET);
	assert_int_equal(outb(ACPI_RESET_PORT, ACPI_RESET_VALUE), PC_EVENT_RESET);
	/* Linux's kb_wait() waits for the input buffer to drain: bit 1 clear. */
	assert_int_equal(inb(PC_I8042_CMD) & 0x02, 0);
	assert_int_equal(outb(PC_I8042_CMD, 0x20), PC_EVENT_NONE);
	assert_int_equal(outb(PC_I8042_CMD, PC_I8042_RESET), PC_EVENT_RESET);
}

/* Only SLP_TYP 5 with SLP_EN powers off: Linux's acpi_hw_extended_sleep(). */
static void acpi_power_off(void **state)
{
	(void)state;
	assert_int_equal(outb(ACPI_SLEEP_CONTROL_PORT, ACPI_SLEEP_TYPE_S5 << 2), PC_EVENT_NONE);
	assert_int_equal(outb(ACPI_SLEEP_CONTROL_PORT, 3 << 2 | ACPI_SLEEP_ENABLE), PC_EVENT_NONE);
	assert_int_equal(outb(ACPI_SLEEP_CONTROL_PORT, ACPI_SLEEP_TYPE_S5 << 2 | ACPI_SLEEP_ENABLE),
			 PC_EVENT_POWEROFF);
	assert_int_equal(inb(ACPI_SLEEP_STATUS_PORT), 0xff);
}

static void debug_exit_port(void **state)
{
	uint32_t value = 0;
	uint8_t b = 7;

	(void)state;
	assert_int_equal(outl(PC_DEBUG_EXIT, 0x1234, &value), PC_EVENT_EXIT);
	assert_int_equal(value, 0x1234);
	assert_int_equal(pc_io(&pc, PC_DEBUG_EXIT, true, 1, &b, &value), PC_EVENT_EXIT);
	assert_int_equal(value, 7);
}

static uint64_t fw_cfg(uint16_t key, unsigned bytes)
{
	uint8_t sel[2] = { (uint8_t)key, (uint8_t)(key >> 8) };
	uint32_t value;
	uint64_t v = 0;

	assert_int_equal(pc_io(&pc, PC_FW_CFG_SEL, true, 2, sel, &value), PC_EVENT_NONE);
	for (unsigned i = 0; i < bytes; i++)
		v |= (uint64_t)inb(PC_FW_CFG_DATA) << (8 * i);
	return v;
}

/* What kvm-unit-tests and others read: the signature and the CPU count. */
static void fw_cfg_items(void **state)
{
	(void)state;
	assert_int_equal(fw_cfg(PC_FW_CFG_SIGNATURE, 4), 0x554d4551);	/* "QEMU" */
	assert_int_equal(fw_cfg(PC_FW_CFG_ID, 4), 1);
	assert_int_equal(fw_cfg(PC_FW_CFG_NB_CPUS, 2), 3);
	assert_int_equal(fw_cfg(PC_FW_CFG_MAX_CPUS, 2), 3);
	assert_int_equal(fw_cfg(PC_FW_CFG_RAM_SIZE, 8), 256u << 20);
	assert_int_equal(fw_cfg(0x4242, 4), 0);
	/* Past an item's end: zeros; a new selection starts over. */
	assert_int_equal(fw_cfg(PC_FW_CFG_SIGNATURE, 6), 0x554d4551);
	assert_int_equal(fw_cfg(PC_FW_CFG_SIGNATURE, 1), 'Q');
}

static uint8_t cmos(uint8_t index)
{
	assert_int_equal(outb(PC_CMOS_INDEX, index | 0x80), PC_EVENT_NONE);	/* NMI off */
	return inb(PC_CMOS_DATA);
}

static void rtc_reads_the_time(void **state)
{
	(void)state;
	assert_int_equal(cmos(0x00), 0x03);
	assert_int_equal(cmos(0x02), 0x02);
	assert_int_equal(cmos(0x04), 0x01);
	assert_int_equal(cmos(0x06), 0x03);	/* Tuesday */
	assert_int_equal(cmos(0x07), 0x08);
	assert_int_equal(cmos(0x08), 0x12);
	assert_int_equal(cmos(0x09), 0x26);
	assert_int_equal(cmos(0x32), 0x20);
	assert_int_equal(cmos(0x0a) & 0x80, 0);	/* no update in progress */
	assert_int_equal(cmos(0x0b), 0x02);	/* BCD, 24 hours */
	assert_int_equal(cmos(0x0d), 0x80);
	/* A leap day and the last second of a century's year, as the host's libc has them. */
	for (size_t i = 0; i < sizeof(other_times) / sizeof(other_times[0]); i++) {
		time_t t = other_times[i];
		struct tm tm;

		gmtime_r(&t, &tm);
		now = t;
		pc.now = settable_time;
		assert_int_equal(cmos(0x00), bcd((unsigned)tm.tm_sec));
		assert_int_equal(cmos(0x02), bcd((unsigned)tm.tm_min));
		assert_int_equal(cmos(0x04), bcd((unsigned)tm.tm_hour));
		assert_int_equal(cmos(0x06), bcd((unsigned)tm.tm_wday + 1));
		assert_int_equal(cmos(0x07), bcd((unsigned)tm.tm_mday));
		assert_int_equal(cmos(0x08), bcd((unsigned)tm.tm_mon + 1));
		assert_int_equal(cmos(0x09), bcd((unsigned)tm.tm_year % 100));
		assert_int_equal(cmos(0x32), bcd((unsigned)(tm.tm_year + 1900) / 100));
	}
	pc.now = fixed_time;
	/* Binary mode, as a guest may choose. */
	assert_int_equal(outb(PC_CMOS_INDEX, 0x0b), PC_EVENT_NONE);
	assert_int_equal(outb(PC_CMOS_DATA, 0x06), PC_EVENT_NONE);
	assert_int_equal(cmos(0x08), 12);
	/* The clock is not set by a write; CMOS RAM keeps what is written. */
	assert_int_equal(outb(PC_CMOS_INDEX, 0x00), PC_EVENT_NONE);
	assert_int_equal(outb(PC_CMOS_DATA, 0x59), PC_EVENT_NONE);
	assert_int_equal(cmos(0x00), 3);
	assert_int_equal(outb(PC_CMOS_INDEX, 0x40), PC_EVENT_NONE);
	assert_int_equal(outb(PC_CMOS_DATA, 0xab), PC_EVENT_NONE);
	assert_int_equal(cmos(0x40), 0xab);
}

/* Linux's pci_check_type1() sees mechanism #1, and no device answers. */
static void pci_bus_is_empty(void **state)
{
	uint32_t value;

	(void)state;
	assert_int_equal(outl(PC_PCI_ADDRESS, 0x80000000u, &value), PC_EVENT_NONE);
	assert_int_equal(inl(PC_PCI_ADDRESS), 0x80000000u);
	assert_int_equal(inl(PC_PCI_DATA), 0xffffffffu);
	assert_int_equal(inb(PC_PCI_DATA + 2), 0xff);
	assert_int_equal(inb(0xcfa), 0xff);	/* no mechanism #2 either */
}

static void probed_ports_are_quiet(void **state)
{
	uint8_t v = 0;
	uint32_t value;

	(void)state;
	assert_int_equal(inb(0x80), 0xff);
	assert_int_equal(inb(0x2f8 + 5), 0xff);	/* COM2's LSR: no UART */
	assert_int_equal(inb(0x3d4), 0xff);
	assert_int_equal(inb(0x2f), 0xff);	/* Super I/O */
	assert_int_equal(inb(0x4f), 0xff);
	assert_int_equal(pc_io(&pc, 0x1234, false, 1, &v, &value), PC_EVENT_UNKNOWN);
	assert_int_equal(pc_io(&pc, 0x20, false, 1, &v, &value), PC_EVENT_UNKNOWN);
}

/* COM1 sends through the console callback and raises IRQ 4. */
static void com1_output_and_irq(void **state)
{
	(void)state;
	assert_int_equal(outb(PC_COM1 + UART_IER, UART_IER_THRI), PC_EVENT_NONE);
	assert_int_equal(irq_changes, 1);
	assert_int_equal(last_irq, PC_COM1_IRQ);
	assert_true(irq_level);
	assert_int_equal(outb(PC_COM1, 'o'), PC_EVENT_NONE);
	assert_int_equal(outb(PC_COM1, 'k'), PC_EVENT_NONE);
	assert_int_equal(nout, 2);
	assert_memory_equal(out, "ok", 2);
	assert_int_equal(inb(PC_COM1 + UART_IIR) & 0x0f, UART_IIR_THRI);
	assert_false(irq_level);
	/* A 32-bit OUT at the scratch register does not wrap round to THR. */
	assert_int_equal(outl(PC_COM1 + UART_SCR, 0x41414141, &(uint32_t){ 0 }), PC_EVENT_NONE);
	assert_int_equal(nout, 2);
	assert_int_equal(inb(PC_COM1 + UART_SCR), 0x41);
}

/* Input queues while the FIFO is full and flows in as the guest reads: nothing lost. */
static void com1_input_flows(void **state)
{
	static uint8_t data[PC_INPUT_MAX + 100];

	(void)state;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7);
	assert_int_equal(outb(PC_COM1 + UART_FCR, UART_FCR_ENABLE), PC_EVENT_NONE);
	assert_int_equal(outb(PC_COM1 + UART_IER, UART_IER_RDI), PC_EVENT_NONE);
	assert_int_equal(pc_input_room(&pc), PC_INPUT_MAX);
	assert_int_equal(pc_input(&pc, data, sizeof(data)), PC_INPUT_MAX);
	assert_true(irq_level);
	/* The FIFO took its 16: that much room again. */
	assert_int_equal(pc_input_room(&pc), UART_FIFO_SIZE);
	assert_int_equal(pc_input(&pc, data + PC_INPUT_MAX, 100), UART_FIFO_SIZE);
	assert_int_equal(pc_input_room(&pc), 0);
	for (size_t i = 0; i < PC_INPUT_MAX + UART_FIFO_SIZE; i++) {
		assert_true(inb(PC_COM1 + UART_LSR) & UART_LSR_DR);
		assert_int_equal(inb(PC_COM1), (uint8_t)(i * 7));
	}
	assert_false(inb(PC_COM1 + UART_LSR) & UART_LSR_DR);
	assert_false(irq_level);
	assert_int_equal(pc_input_room(&pc), PC_INPUT_MAX);
}

static sem_t in_console, release;

/* A console reader that stalls until told to go on. */
static void stalled_console(void *ctx, uint8_t byte)
{
	(void)ctx;
	(void)byte;
	sem_post(&in_console);
	sem_wait(&release);
}

static void *send_a_byte(void *arg)
{
	(void)arg;
	(void)outb(PC_COM1, 'z');
	return NULL;
}

/* While a vCPU's byte waits for the console, input and other ports go on. */
static void stalled_output_blocks_no_input(void **state)
{
	pthread_t t;
	uint8_t b = 'i';

	(void)state;
	alarm(10);	/* a deadlock ends the test, failed, in 10 s */
	sem_init(&in_console, 0, 0);
	sem_init(&release, 0, 0);
	pc.console = stalled_console;
	assert_int_equal(pthread_create(&t, NULL, send_a_byte, NULL), 0);
	sem_wait(&in_console);
	assert_int_equal(pc_input_room(&pc), PC_INPUT_MAX);
	assert_int_equal(pc_input(&pc, &b, 1), 1);
	assert_int_equal(cmos(0x0d), 0x80);
	sem_post(&release);
	pthread_join(t, NULL);
	assert_int_equal(inb(PC_COM1), 'i');
	sem_destroy(&in_console);
	sem_destroy(&release);
	alarm(0);
}

/*
 * The routing matches the firmware tables: the PIT's IRQ 0 on I/O APIC pin 2
 * (the MADT's override), every other ISA IRQ on its own pin and 8259 input.
 */
static void gsi_routes(void **state)
{
	struct kvm_irq_routing_entry e[PC_GSI_ROUTES];
	unsigned n = pc_gsi_routes(e), ioapic[24], pic[16];

	(void)state;
	memset(ioapic, 0xff, sizeof(ioapic));
	memset(pic, 0xff, sizeof(pic));
	assert_true(n <= PC_GSI_ROUTES);
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(e[i].type, KVM_IRQ_ROUTING_IRQCHIP);
		if (e[i].u.irqchip.irqchip == KVM_IRQCHIP_IOAPIC)
			ioapic[e[i].gsi] = e[i].u.irqchip.pin;
		else
			pic[e[i].gsi] = (e[i].u.irqchip.irqchip == KVM_IRQCHIP_PIC_SLAVE ? 8 : 0) +
					e[i].u.irqchip.pin;
	}
	assert_int_equal(ioapic[0], 2);
	assert_int_equal(ioapic[2], 0xffffffffu);	/* nothing else on pin 2 */
	for (unsigned i = 1; i < 24; i++)
		if (i != 2)
			assert_int_equal(ioapic[i], i);
	for (unsigned i = 0; i < 16; i++)
		assert_int_equal(pic[i], i == 2 ? 0xffffffffu : i);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(reset_ports, setup, teardown),
		cmocka_unit_test(gsi_routes),
		cmocka_unit_test_setup_teardown(acpi_power_off, setup, teardown),
		cmocka_unit_test_setup_teardown(debug_exit_port, setup, teardown),
		cmocka_unit_test_setup_teardown(fw_cfg_items, setup, teardown),
		cmocka_unit_test_setup_teardown(rtc_reads_the_time, setup, teardown),
		cmocka_unit_test_setup_teardown(pci_bus_is_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(probed_ports_are_quiet, setup, teardown),
		cmocka_unit_test_setup_teardown(com1_output_and_irq, setup, teardown),
		cmocka_unit_test_setup_teardown(com1_input_flows, setup, teardown),
		cmocka_unit_test_setup_teardown(stalled_output_blocks_no_input, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
