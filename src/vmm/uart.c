/* SPDX-License-Identifier: MIT */
/* The 16550A model (uart.h). */
#include "uart.h"

#include <string.h>

static const uint8_t rx_trigger[4] = { 1, 4, 8, 14 };

static bool fifo_on(const struct uart *u)
{
	return u->fcr & UART_FCR_ENABLE;
}

static unsigned rx_capacity(const struct uart *u)
{
	return fifo_on(u) ? UART_FIFO_SIZE : 1;
}

/* The interrupt the IIR shows, by the 16550's priority. */
static uint8_t iir_source(const struct uart *u)
{
	if ((u->ier & UART_IER_RLSI) && u->lsr_errors)
		return UART_IIR_RLSI;
	if ((u->ier & UART_IER_RDI) && u->rx_count)
		return !fifo_on(u) || u->rx_count >= rx_trigger[u->fcr >> 6] ?
		       UART_IIR_RDI : UART_IIR_TIMEOUT;
	if ((u->ier & UART_IER_THRI) && u->thr_pending)
		return UART_IIR_THRI;
	if ((u->ier & UART_IER_MSI) && (u->msr & 0x0f))
		return UART_IIR_MSI;
	return UART_IIR_NO_INT;
}

/* Reports the line whenever it changes: a pulse low and high again is two calls. */
static void update_irq(struct uart *u)
{
	bool level = iir_source(u) != UART_IIR_NO_INT;

	if (level == u->irq_level)
		return;
	u->irq_level = level;
	if (u->irq)
		u->irq(u->ctx, level);
}

/* Modem status lines: a connected modem, or in loopback the MCR's outputs. */
static void set_modem_status(struct uart *u)
{
	uint8_t old = u->msr, now = UART_MSR_DCD | UART_MSR_DSR | UART_MSR_CTS;

	if (u->mcr & UART_MCR_LOOP)
		now = (u->mcr & UART_MCR_RTS ? UART_MSR_CTS : 0) |
		      (u->mcr & UART_MCR_DTR ? UART_MSR_DSR : 0) |
		      (u->mcr & UART_MCR_OUT1 ? UART_MSR_RI : 0) |
		      (u->mcr & UART_MCR_OUT2 ? UART_MSR_DCD : 0);
	u->msr = (uint8_t)((old & 0x0f) | now);
	if ((old ^ now) & UART_MSR_CTS)
		u->msr |= UART_MSR_DCTS;
	if ((old ^ now) & UART_MSR_DSR)
		u->msr |= UART_MSR_DDSR;
	if ((old & UART_MSR_RI) && !(now & UART_MSR_RI))
		u->msr |= UART_MSR_TERI;
	if ((old ^ now) & UART_MSR_DCD)
		u->msr |= UART_MSR_DDCD;
}

void uart_init(struct uart *u, void (*tx)(void *, uint8_t), void (*irq)(void *, bool), void *ctx)
{
	memset(u, 0, sizeof(*u));
	u->tx = tx;
	u->irq = irq;
	u->ctx = ctx;
	u->dll = 12;	/* 9600 baud, as a PC BIOS leaves it */
	set_modem_status(u);
	u->msr &= 0xf0;	/* no change seen yet */
}

static void rx_push(struct uart *u, uint8_t byte)
{
	u->rx[(u->rx_head + u->rx_count) % UART_FIFO_SIZE] = byte;
	u->rx_count++;
}

static uint8_t rx_pop(struct uart *u)
{
	uint8_t byte;

	if (!u->rx_count)
		return 0;
	byte = u->rx[u->rx_head];
	u->rx_head = (u->rx_head + 1) % UART_FIFO_SIZE;
	u->rx_count--;
	return byte;
}

static uint8_t read_iir(struct uart *u)
{
	uint8_t src = iir_source(u);

	/* Reading the IIR that shows THRE is what acknowledges it. */
	if (src == UART_IIR_THRI)
		u->thr_pending = false;
	return (uint8_t)(src | (fifo_on(u) ? UART_IIR_FIFO : 0));
}

static uint8_t read_reg(struct uart *u, unsigned offset)
{
	bool dlab = u->lcr & UART_LCR_DLAB;
	uint8_t v;

	switch (offset) {
	case UART_RBR:
		return dlab ? u->dll : rx_pop(u);
	case UART_IER:
		return dlab ? u->dlm : u->ier;
	case UART_IIR:
		return read_iir(u);
	case UART_LCR:
		return u->lcr;
	case UART_MCR:
		return u->mcr;
	case UART_LSR:
		v = (uint8_t)(UART_LSR_THRE | UART_LSR_TEMT | u->lsr_errors |
			      (u->rx_count ? UART_LSR_DR : 0));
		u->lsr_errors = 0;
		return v;
	case UART_MSR:
		v = u->msr;
		u->msr &= 0xf0;
		return v;
	default:
		return u->scr;
	}
}

uint8_t uart_read(struct uart *u, unsigned offset)
{
	uint8_t v = read_reg(u, offset & 7);

	update_irq(u);
	return v;
}

static void write_thr(struct uart *u, uint8_t value)
{
	u->thr_pending = false;
	update_irq(u);	/* THRE drops while the byte goes out: an edge follows */
	if (u->mcr & UART_MCR_LOOP) {
		if (u->rx_count < rx_capacity(u))
			rx_push(u, value);
		else
			u->lsr_errors |= UART_LSR_OE;
	} else if (u->tx) {
		u->tx(u->ctx, value);
	}
	u->thr_pending = true;
}

static void write_fcr(struct uart *u, uint8_t value)
{
	/* Turning the FIFOs on or off empties them, as clearing does. */
	if ((value ^ u->fcr) & UART_FCR_ENABLE || value & UART_FCR_CLEAR_RX)
		u->rx_head = u->rx_count = 0;
	u->fcr = value & (UART_FCR_ENABLE | 0xc0);
}

static void write_reg(struct uart *u, unsigned offset, uint8_t value)
{
	bool dlab = u->lcr & UART_LCR_DLAB;

	switch (offset) {
	case UART_THR:
		if (dlab)
			u->dll = value;
		else
			write_thr(u, value);
		break;
	case UART_IER:
		if (dlab) {
			u->dlm = value;
			break;
		}
		/* Enabling THRE with the THR empty raises it, as on a real 16550. */
		if (value & ~u->ier & UART_IER_THRI)
			u->thr_pending = true;
		u->ier = value & 0x0f;
		break;
	case UART_FCR:
		write_fcr(u, value);
		break;
	case UART_LCR:
		u->lcr = value;
		break;
	case UART_MCR:
		u->mcr = value & 0x1f;
		set_modem_status(u);
		break;
	case UART_SCR:
		u->scr = value;
		break;
	default:	/* LSR and MSR are read-only */
		break;
	}
}

void uart_write(struct uart *u, unsigned offset, uint8_t value)
{
	write_reg(u, offset & 7, value);
	update_irq(u);
}

size_t uart_rx_room(const struct uart *u)
{
	if (u->mcr & UART_MCR_LOOP)
		return 0;	/* the receiver hears the transmitter only */
	return rx_capacity(u) - u->rx_count;
}

size_t uart_receive(struct uart *u, const uint8_t *data, size_t n)
{
	size_t room = uart_rx_room(u), take = n < room ? n : room;

	for (size_t i = 0; i < take; i++)
		rx_push(u, data[i]);
	update_irq(u);
	return take;
}
