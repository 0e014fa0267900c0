/* SPDX-License-Identifier: MIT */
/* The 16550A model: what Linux's 8250 probe, autoconfig and driver see. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "uart.h"

static struct uart u;
static uint8_t sent[64];
static size_t nsent;
static bool levels[64];   /* every change of the interrupt line, in order */
static size_t nlevels;

static void tx(void *ctx, uint8_t byte)
{
	(void)ctx;
	sent[nsent++] = byte;
}

static void irq(void *ctx, bool level)
{
	(void)ctx;
	levels[nlevels++] = level;
}

static int setup(void **state)
{
	(void)state;
	nsent = nlevels = 0;
	uart_init(&u, tx, irq, NULL);
	return 0;
}

/* autoconfig(): IER keeps what is written to its four bits only. */
static void ier_scratch_test(void **state)
{
	(void)state;
	uart_write(&u, UART_IER, 0);
	assert_int_equal(uart_read(&u, UART_IER), 0);
	uart_write(&u, UART_IER, 0xff);
	assert_int_equal(uart_read(&u, UART_IER), 0x0f);
	uart_write(&u, UART_IER, 0);
}

/* autoconfig(): MCR loopback with RTS and OUT2 reads back CTS and DCD (0x90). */
static void loopback_modem_lines(void **state)
{
	(void)state;
	uart_write(&u, UART_MCR, UART_MCR_LOOP | UART_MCR_OUT2 | UART_MCR_RTS);
	assert_int_equal(uart_read(&u, UART_MSR) & 0xf0, UART_MSR_DCD | UART_MSR_CTS);
	uart_write(&u, UART_MCR, UART_MCR_LOOP | UART_MCR_DTR | UART_MCR_OUT1);
	assert_int_equal(uart_read(&u, UART_MSR) & 0xf0, UART_MSR_DSR | UART_MSR_RI);
	uart_write(&u, UART_MCR, 0);
	/* Out of loopback: a connected modem. */
	assert_int_equal(uart_read(&u, UART_MSR) & 0xf0, UART_MSR_DCD | UART_MSR_DSR | UART_MSR_CTS);
}

/* MSR delta bits are set by a change and cleared by reading the MSR. */
static void modem_status_deltas(void **state)
{
	(void)state;
	assert_int_equal(uart_read(&u, UART_MSR) & 0x0f, 0);
	uart_write(&u, UART_MCR, UART_MCR_LOOP | UART_MCR_OUT1);
	uart_write(&u, UART_MCR, UART_MCR_LOOP);	/* RI falls: TERI */
	assert_int_equal(uart_read(&u, UART_MSR) & 0x0f,
			 UART_MSR_DCTS | UART_MSR_DDSR | UART_MSR_TERI | UART_MSR_DDCD);
	assert_int_equal(uart_read(&u, UART_MSR) & 0x0f, 0);
	uart_write(&u, UART_IER, UART_IER_MSI);
	uart_write(&u, UART_MCR, UART_MCR_LOOP | UART_MCR_RTS);
	assert_int_equal(uart_read(&u, UART_IIR) & 0x0f, UART_IIR_MSI);
	(void)uart_read(&u, UART_MSR);
	assert_int_equal(uart_read(&u, UART_IIR) & 0x0f, UART_IIR_NO_INT);
}

/* autoconfig(): with the FIFO enabled IIR bits 7:6 read 3, a 16550A; off, 0. */
static void fifo_identifies_16550a(void **state)
{
	(void)state;
	assert_int_equal(uart_read(&u, UART_IIR), UART_IIR_NO_INT);
	uart_write(&u, UART_FCR, UART_FCR_ENABLE);
	assert_int_equal(uart_read(&u, UART_IIR), UART_IIR_FIFO | UART_IIR_NO_INT);
	/* No TI16750: bit 5 stays clear with the 64-byte bit written. */
	uart_write(&u, UART_FCR, UART_FCR_ENABLE | 0x20);
	assert_int_equal(uart_read(&u, UART_IIR) & 0x20, 0);
}

static void dlab_reaches_the_divisor(void **state)
{
	(void)state;
	uart_write(&u, UART_LCR, UART_LCR_DLAB | 0x03);
	uart_write(&u, UART_DLL, 0x01);
	uart_write(&u, UART_DLM, 0x02);
	assert_int_equal(uart_read(&u, UART_DLL), 0x01);
	assert_int_equal(uart_read(&u, UART_DLM), 0x02);
	assert_int_equal(nsent, 0);	/* DLL is not THR */
	uart_write(&u, UART_LCR, 0x03);
	assert_int_equal(uart_read(&u, UART_IER), 0);
	assert_int_equal(uart_read(&u, UART_LCR), 0x03);
	uart_write(&u, UART_SCR, 0xa5);
	assert_int_equal(uart_read(&u, UART_SCR), 0xa5);
}

/*
 * serial8250_do_startup()'s THRE test: enabling THRI with the THR empty
 * raises THRE, reading IIR acknowledges it, enabling again re-raises it.
 */
static void thre_asserted_acked_reasserted(void **state)
{
	(void)state;
	assert_int_equal(uart_read(&u, UART_LSR) & (UART_LSR_THRE | UART_LSR_TEMT),
			 UART_LSR_THRE | UART_LSR_TEMT);
	uart_write(&u, UART_IER, UART_IER_THRI);
	assert_int_equal(nlevels, 1);
	assert_true(levels[0]);
	assert_int_equal(uart_read(&u, UART_IIR), UART_IIR_THRI);
	assert_int_equal(uart_read(&u, UART_IIR), UART_IIR_NO_INT);
	assert_int_equal(nlevels, 2);
	assert_false(levels[1]);
	uart_write(&u, UART_IER, 0);
	uart_write(&u, UART_IER, UART_IER_THRI);
	assert_int_equal(uart_read(&u, UART_IIR), UART_IIR_THRI);
}

/* Each byte sent goes out at once and THRE comes back as a new edge. */
static void transmit_pulses_the_line(void **state)
{
	(void)state;
	uart_write(&u, UART_IER, UART_IER_THRI);
	nlevels = 0;
	uart_write(&u, UART_THR, 'h');
	uart_write(&u, UART_THR, 'i');
	assert_int_equal(nsent, 2);
	assert_memory_equal(sent, "hi", 2);
	assert_int_equal(nlevels, 4);
	assert_false(levels[0]);
	assert_true(levels[1]);
	assert_false(levels[2]);
	assert_true(levels[3]);
}

static void receive_and_data_interrupt(void **state)
{
	(void)state;
	uart_write(&u, UART_FCR, UART_FCR_ENABLE);
	uart_write(&u, UART_IER, UART_IER_RDI | UART_IER_THRI);
	(void)uart_read(&u, UART_IIR);	/* acknowledge THRE */
	assert_int_equal(uart_receive(&u, (const uint8_t *)"ab", 2), 2);
	assert_true(u.irq_level);
	assert_int_equal(uart_read(&u, UART_LSR) & UART_LSR_DR, UART_LSR_DR);
	/* Below the trigger level of 1? No: one byte reaches it. */
	assert_int_equal(uart_read(&u, UART_IIR) & 0x0f, UART_IIR_RDI);
	assert_int_equal(uart_read(&u, UART_RBR), 'a');
	assert_int_equal(uart_read(&u, UART_RBR), 'b');
	assert_int_equal(uart_read(&u, UART_LSR) & UART_LSR_DR, 0);
	assert_int_equal(uart_read(&u, UART_IIR) & 0x0f, UART_IIR_NO_INT);
	assert_false(u.irq_level);
}

/* Under the FIFO's trigger level the data interrupt is the timeout one. */
static void trigger_level_and_timeout(void **state)
{
	(void)state;
	uart_write(&u, UART_FCR, UART_FCR_ENABLE | 0x80);	/* trigger 8 */
	uart_write(&u, UART_IER, UART_IER_RDI);
	(void)uart_receive(&u, (const uint8_t *)"1234567", 7);
	assert_int_equal(uart_read(&u, UART_IIR) & 0x0f, UART_IIR_TIMEOUT);
	(void)uart_receive(&u, (const uint8_t *)"8", 1);
	assert_int_equal(uart_read(&u, UART_IIR) & 0x0f, UART_IIR_RDI);
}

/* Input is never dropped: the FIFO takes what fits and says so. */
static void fifo_full_takes_no_more(void **state)
{
	uint8_t buf[20];

	(void)state;
	memset(buf, 'x', sizeof(buf));
	assert_int_equal(uart_rx_room(&u), 1);	/* FIFO off: the holding register */
	assert_int_equal(uart_receive(&u, buf, 2), 1);
	assert_int_equal(uart_receive(&u, buf, 1), 0);
	uart_write(&u, UART_FCR, UART_FCR_ENABLE);	/* empties it */
	assert_int_equal(uart_rx_room(&u), UART_FIFO_SIZE);
	assert_int_equal(uart_receive(&u, buf, sizeof(buf)), UART_FIFO_SIZE);
	assert_int_equal(uart_rx_room(&u), 0);
	assert_int_equal(uart_read(&u, UART_LSR) & UART_LSR_OE, 0);
	(void)uart_read(&u, UART_RBR);
	assert_int_equal(uart_rx_room(&u), 1);
	uart_write(&u, UART_FCR, UART_FCR_ENABLE | UART_FCR_CLEAR_RX);
	assert_int_equal(uart_rx_room(&u), UART_FIFO_SIZE);
}

/* Loopback: the transmitter feeds the receiver, nothing leaves; overrun is an RLS. */
static void loopback_data_and_overrun(void **state)
{
	(void)state;
	uart_write(&u, UART_MCR, UART_MCR_LOOP);
	assert_int_equal(uart_rx_room(&u), 0);
	uart_write(&u, UART_IER, UART_IER_RDI | UART_IER_RLSI);
	uart_write(&u, UART_THR, 'q');
	assert_int_equal(nsent, 0);
	assert_int_equal(uart_read(&u, UART_IIR) & 0x0f, UART_IIR_RDI);
	uart_write(&u, UART_THR, 'r');	/* the holding register is full */
	assert_int_equal(uart_read(&u, UART_IIR) & 0x0f, UART_IIR_RLSI);
	assert_int_equal(uart_read(&u, UART_LSR) & (UART_LSR_OE | UART_LSR_DR),
			 UART_LSR_OE | UART_LSR_DR);
	assert_int_equal(uart_read(&u, UART_LSR) & UART_LSR_OE, 0);
	assert_int_equal(uart_read(&u, UART_RBR), 'q');
}

/* Priority: line status, then data, then THRE, then modem status. */
static void interrupt_priority(void **state)
{
	(void)state;
	uart_write(&u, UART_IER, 0x0f);
	assert_int_equal(uart_read(&u, UART_IIR), UART_IIR_THRI);
	uart_write(&u, UART_IER, 0);
	uart_write(&u, UART_IER, 0x0f);
	(void)uart_receive(&u, (const uint8_t *)"z", 1);
	assert_int_equal(uart_read(&u, UART_IIR), UART_IIR_RDI);
	(void)uart_read(&u, UART_RBR);
	assert_int_equal(uart_read(&u, UART_IIR), UART_IIR_THRI);
	uart_write(&u, UART_MCR, UART_MCR_LOOP | UART_MCR_RTS);
	assert_int_equal(uart_read(&u, UART_IIR), UART_IIR_MSI);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(ier_scratch_test, setup),
		cmocka_unit_test_setup(loopback_modem_lines, setup),
		cmocka_unit_test_setup(modem_status_deltas, setup),
		cmocka_unit_test_setup(fifo_identifies_16550a, setup),
		cmocka_unit_test_setup(dlab_reaches_the_divisor, setup),
		cmocka_unit_test_setup(thre_asserted_acked_reasserted, setup),
		cmocka_unit_test_setup(transmit_pulses_the_line, setup),
		cmocka_unit_test_setup(receive_and_data_interrupt, setup),
		cmocka_unit_test_setup(trigger_level_and_timeout, setup),
		cmocka_unit_test_setup(fifo_full_takes_no_more, setup),
		cmocka_unit_test_setup(loopback_data_and_overrun, setup),
		cmocka_unit_test_setup(interrupt_priority, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
