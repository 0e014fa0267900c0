/* SPDX-License-Identifier: MIT */
/*
 * A 16550A UART as Linux's 8250 driver probes and drives it: the register
 * file with DLAB, a 16-byte receive FIFO, IER/IIR with the 16550's
 * priorities, LSR, MCR loopback and the MSR it feeds. Transmission is
 * instant (THR and the shift register are always empty again after a
 * write). Pure: the owner holds the lock, and gets each transmitted byte and
 * every change of the interrupt line through the callbacks.
 */
#ifndef VMM_UART_H
#define VMM_UART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UART_FIFO_SIZE 16

/* Register offsets from the base port. */
enum {
	UART_RBR = 0, UART_THR = 0, UART_DLL = 0,
	UART_IER = 1, UART_DLM = 1,
	UART_IIR = 2, UART_FCR = 2,
	UART_LCR = 3, UART_MCR = 4, UART_LSR = 5, UART_MSR = 6, UART_SCR = 7,
};

#define UART_IER_RDI   0x01u  /* receive data available */
#define UART_IER_THRI  0x02u  /* THR empty */
#define UART_IER_RLSI  0x04u  /* receiver line status */
#define UART_IER_MSI   0x08u  /* modem status */

#define UART_IIR_NO_INT 0x01u
#define UART_IIR_MSI    0x00u
#define UART_IIR_THRI   0x02u
#define UART_IIR_RDI    0x04u
#define UART_IIR_RLSI   0x06u
#define UART_IIR_TIMEOUT 0x0cu
#define UART_IIR_FIFO   0xc0u  /* both bits: FIFOs enabled (16550A) */

#define UART_FCR_ENABLE 0x01u
#define UART_FCR_CLEAR_RX 0x02u
#define UART_FCR_CLEAR_TX 0x04u

#define UART_LCR_DLAB  0x80u

#define UART_MCR_DTR   0x01u
#define UART_MCR_RTS   0x02u
#define UART_MCR_OUT1  0x04u
#define UART_MCR_OUT2  0x08u
#define UART_MCR_LOOP  0x10u

#define UART_LSR_DR    0x01u
#define UART_LSR_OE    0x02u
#define UART_LSR_THRE  0x20u
#define UART_LSR_TEMT  0x40u

#define UART_MSR_DCTS  0x01u
#define UART_MSR_DDSR  0x02u
#define UART_MSR_TERI  0x04u
#define UART_MSR_DDCD  0x08u
#define UART_MSR_CTS   0x10u
#define UART_MSR_DSR   0x20u
#define UART_MSR_RI    0x40u
#define UART_MSR_DCD   0x80u

struct uart {
	uint8_t ier, lcr, mcr, msr, scr, fcr, dll, dlm;
	uint8_t lsr_errors;            /* OE, sticky until LSR is read */
	bool thr_pending;              /* the THRE interrupt, until IIR shows it or THR is written */
	bool irq_level;                /* the line as last reported */
	uint8_t rx[UART_FIFO_SIZE];
	unsigned rx_head, rx_count;
	void (*tx)(void *ctx, uint8_t byte);     /* a byte on the wire (not in loopback) */
	void (*irq)(void *ctx, bool level);      /* the interrupt line changed */
	void *ctx;
};

/* Power-on state: no interrupts, FIFOs off, a modem with carrier. */
void uart_init(struct uart *u, void (*tx)(void *, uint8_t), void (*irq)(void *, bool), void *ctx);
uint8_t uart_read(struct uart *u, unsigned offset);
void uart_write(struct uart *u, unsigned offset, uint8_t value);
/* Bytes the receive FIFO takes now (1 with the FIFO off, 0 in loopback). */
size_t uart_rx_room(const struct uart *u);
/* Queues up to n received bytes; returns how many it took (never drops). */
size_t uart_receive(struct uart *u, const uint8_t *data, size_t n);

#endif
