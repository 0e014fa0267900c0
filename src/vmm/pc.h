/* SPDX-License-Identifier: MIT */
/*
 * The PC machine's port I/O (docs/port-abi.md, "The PC machine"): COM1 as a
 * 16550A (uart.c) on IRQ 4 with the console's input behind it, the reset
 * and power-off ports (i8042 command 0xfe, 0xcf9, the ACPI sleep control
 * register), the isa-debug-exit port 0xf4, fw_cfg (0x510/0x511), a CMOS
 * RTC (0x70/0x71), PCI configuration mechanism #1 with no device, and the
 * ports Linux probes on its way up, answered quietly. The interrupt
 * controllers and the PIT are KVM's. Pure: every device sits behind one
 * lock, and the interrupt line and the console reach the VMM through the
 * callbacks; the unit tests drive it without a VM.
 */
#ifndef VMM_PC_H
#define VMM_PC_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <linux/kvm.h>

#include "uart.h"

#define PC_COM1          0x3f8u
#define PC_COM1_IRQ      4u
#define PC_DEBUG_EXIT    0xf4u
#define PC_I8042_DATA    0x60u
#define PC_I8042_CMD     0x64u
#define PC_I8042_RESET   0xfeu
#define PC_RESET_CONTROL 0xcf9u
#define PC_CMOS_INDEX    0x70u
#define PC_CMOS_DATA     0x71u
#define PC_PCI_ADDRESS   0xcf8u
#define PC_PCI_DATA      0xcfcu
#define PC_FW_CFG_SEL    0x510u
#define PC_FW_CFG_DATA   0x511u

/*
 * Guest-physical layout: RAM ends below the 32-bit hole (the I/O APIC at
 * 0xfec00000, the local APICs at 0xfee00000, KVM's TSS pages); the ACPI
 * tables, the MP table and SMBIOS live in the reserved segment below 1 MiB.
 */
#define PC_RAM_MAX       0xc0000000ull
#define PC_ACPI_ADDR     0xe0000u
#define PC_ACPI_SIZE     0x10000u
#define PC_MPTABLE_ADDR  0xf0000u
#define PC_MPTABLE_SIZE  0x8000u
#define PC_SMBIOS_ADDR   0xf8000u
#define PC_SMBIOS_SIZE   0x8000u

/* fw_cfg keys, as QEMU numbers them. */
#define PC_FW_CFG_SIGNATURE 0x00u  /* "QEMU" */
#define PC_FW_CFG_ID        0x01u  /* 1: the traditional interface, no DMA */
#define PC_FW_CFG_RAM_SIZE  0x03u  /* 64-bit */
#define PC_FW_CFG_NB_CPUS   0x05u  /* 16-bit */
#define PC_FW_CFG_MAX_CPUS  0x0fu  /* 16-bit */

/* Console input waiting for room in the receive FIFO; stdin pauses when full. */
#define PC_INPUT_MAX     4096u

enum pc_event {
	PC_EVENT_NONE,          /* handled */
	PC_EVENT_UNKNOWN,       /* not a port of the PC: all-ones, warned as on the bare machine */
	PC_EVENT_RESET,         /* the guest reset the machine */
	PC_EVENT_POWEROFF,      /* the guest powered it off (ACPI S5) */
	PC_EVENT_EXIT,          /* a write to PC_DEBUG_EXIT: *value is what was written */
};

struct pc {
	pthread_mutex_t lock;
	/*
	 * Taken before `lock` is let go and held while COM1's bytes go out, so
	 * that they leave in order while `lock` is free: a console reader that
	 * stalls holds up the writing vCPU, never console input or the main loop.
	 */
	pthread_mutex_t output;
	uint8_t tx[4];                     /* bytes sent by the access under way */
	size_t tx_len;
	struct uart com1;
	unsigned cpus;
	uint64_t ram_size;
	uint32_t pci_address;
	uint8_t cmos_index;
	uint8_t cmos[128];
	uint16_t fw_cfg_key;
	uint32_t fw_cfg_offset;
	uint8_t input[PC_INPUT_MAX];       /* a ring of bytes read from the console */
	size_t input_head, input_len;
	time_t (*now)(void);               /* the RTC's time source */
	void (*irq_line)(void *ctx, unsigned irq, bool level);
	void (*console)(void *ctx, uint8_t byte);
	void *ctx;
};

/*
 * The devices at power-on. `console` gets each byte COM1 sends, outside
 * pc->lock; `irq_line` each change of an ISA interrupt line, with it held.
 */
/*
 * KVM's GSI routing for the PC machine, as the MADT and MP table describe
 * it (and QEMU sets it): ISA IRQ n on 8259 pin n (but 2, the cascade) and
 * on I/O APIC pin n, save the PIT's IRQ 0, which the interrupt source
 * override puts on I/O APIC pin 2. KVM's default routes GSI 0 to pin 0,
 * where a kernel that reads the override never looks. Fills up to
 * PC_GSI_ROUTES entries of e; returns how many.
 */
#define PC_GSI_ROUTES 40u
unsigned pc_gsi_routes(struct kvm_irq_routing_entry *e);

void pc_init(struct pc *pc, unsigned cpus, uint64_t ram_size,
	     void (*console)(void *, uint8_t), void (*irq_line)(void *, unsigned, bool),
	     void *ctx);
void pc_destroy(struct pc *pc);
/*
 * One access of `size` bytes (1, 2 or 4) at `port`; `data` is what was
 * written, or is filled for a read. What the machine must do next.
 */
enum pc_event pc_io(struct pc *pc, uint16_t port, bool out, unsigned size, uint8_t *data,
		    uint32_t *value);
/* Bytes the console may hand pc_input() now: none while the queue is full. */
size_t pc_input_room(struct pc *pc);
/* Queues console input for COM1's receiver; takes at most pc_input_room() bytes. */
size_t pc_input(struct pc *pc, const uint8_t *data, size_t n);

#endif
