/* SPDX-License-Identifier: MIT */
/* The PC machine's ports (pc.h). */
#include "pc.h"

#include <string.h>

#include "acpi.h"
#include "array_size.h"
#include "fwtable.h"

#define I8042_STATUS_OBF 0x01u  /* "output full": Linux's probe finds no controller */
#define CF9_RESET_CPU    0x04u
#define CMOS_REG_A       0x0au
#define CMOS_REG_B       0x0bu
#define CMOS_REG_C       0x0cu
#define CMOS_REG_D       0x0du
#define CMOS_CENTURY     0x32u
#define CMOS_B_24H       0x02u
#define CMOS_B_BINARY    0x04u
#define PCI_ENABLE       0x80000000u

/* Ports Linux probes on its way up that a PC without those devices ignores. */
static const struct { uint16_t first, last; } quiet[] = {
	{ 0x2e, 0x2f },         /* Super I/O configuration, probed by the 8250 driver */
	{ 0x4e, 0x4f },         /* the other Super I/O address */
	{ 0x61, 0x61 },         /* system control port B (KVM's PIT takes it) */
	{ 0x80, 0x8f },         /* the POST/delay port, DMA page registers */
	{ 0xed, 0xed },         /* the other delay port */
	{ 0x2e8, 0x2ef },       /* COM4 */
	{ 0x2f8, 0x2ff },       /* COM2 */
	{ 0x3c0, 0x3df },       /* VGA */
	{ 0x3e8, 0x3ef },       /* COM3 */
	{ ACPI_SLEEP_STATUS_PORT, ACPI_SLEEP_STATUS_PORT },
};

/* clock_gettime(), which the sandbox allows where the vDSO is missing; time() is not. */
static time_t host_time(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec;
}

/* One access sends at most one byte per byte it writes: pc_io() passes them on. */
static void com1_tx(void *ctx, uint8_t byte)
{
	struct pc *pc = ctx;

	if (pc->tx_len < sizeof(pc->tx))
		pc->tx[pc->tx_len++] = byte;
}

static void com1_irq(void *ctx, bool level)
{
	struct pc *pc = ctx;

	pc->irq_line(pc->ctx, PC_COM1_IRQ, level);
}

static void route(struct kvm_irq_routing_entry *e, unsigned gsi, unsigned chip, unsigned pin)
{
	*e = (struct kvm_irq_routing_entry){ .gsi = gsi, .type = KVM_IRQ_ROUTING_IRQCHIP,
					     .u.irqchip = { .irqchip = chip, .pin = pin } };
}

unsigned pc_gsi_routes(struct kvm_irq_routing_entry *e)
{
	unsigned n = 0;

	for (unsigned i = 0; i < 16; i++)
		if (i != 2)
			route(&e[n++], i, i < 8 ? KVM_IRQCHIP_PIC_MASTER : KVM_IRQCHIP_PIC_SLAVE, i % 8);
	for (unsigned i = 0; i < 24; i++)
		if (i != 2)
			route(&e[n++], i, KVM_IRQCHIP_IOAPIC, i == 0 ? 2 : i);
	return n;
}

void pc_init(struct pc *pc, unsigned cpus, uint64_t ram_size,
	     void (*console)(void *, uint8_t), void (*irq_line)(void *, unsigned, bool),
	     void *ctx)
{
	memset(pc, 0, sizeof(*pc));
	pthread_mutex_init(&pc->lock, NULL);
	pthread_mutex_init(&pc->output, NULL);
	pc->cpus = cpus;
	pc->ram_size = ram_size;
	pc->console = console;
	pc->irq_line = irq_line;
	pc->ctx = ctx;
	pc->now = host_time;
	pc->cmos[CMOS_REG_B] = CMOS_B_24H;
	uart_init(&pc->com1, com1_tx, com1_irq, pc);
}

void pc_destroy(struct pc *pc)
{
	pthread_mutex_destroy(&pc->output);
	pthread_mutex_destroy(&pc->lock);
}

/* Moves queued console input into COM1's FIFO as far as it has room. */
static void feed_com1(struct pc *pc)
{
	while (pc->input_len && uart_rx_room(&pc->com1)) {
		size_t run = PC_INPUT_MAX - pc->input_head;
		size_t took;

		if (run > pc->input_len)
			run = pc->input_len;
		took = uart_receive(&pc->com1, pc->input + pc->input_head, run);
		pc->input_head = (pc->input_head + took) % PC_INPUT_MAX;
		pc->input_len -= took;
	}
}

static uint8_t bcd(const struct pc *pc, unsigned v)
{
	return pc->cmos[CMOS_REG_B] & CMOS_B_BINARY ? (uint8_t)v : (uint8_t)((v / 10) << 4 | v % 10);
}

struct date {
	unsigned year, month, day, weekday, hour, minute, second;  /* weekday: Sunday 1 */
};

/*
 * UTC from seconds since 1970 (Howard Hinnant's days-to-civil), without
 * the C library: gmtime_r() reads /etc/localtime the first time, which the
 * sandbox refuses.
 */
static struct date utc(time_t t)
{
	int64_t days = (int64_t)t / 86400, secs = (int64_t)t % 86400;
	int64_t z, era;
	unsigned doe, yoe, doy, mp;
	struct date d;

	if (secs < 0) {
		secs += 86400;
		days--;
	}
	z = days + 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	d.day = doy - (153 * mp + 2) / 5 + 1;
	d.month = mp < 10 ? mp + 3 : mp - 9;
	d.year = (unsigned)(yoe + era * 400) + (d.month <= 2);
	d.weekday = (unsigned)(((days + 4) % 7 + 7) % 7) + 1;	/* 1970-01-01: a Thursday */
	d.hour = (unsigned)(secs / 3600);
	d.minute = (unsigned)(secs / 60 % 60);
	d.second = (unsigned)(secs % 60);
	return d;
}

/* The clock registers read the host's time in UTC, as Linux expects of a PC. */
static uint8_t cmos_read(struct pc *pc, uint8_t index)
{
	struct date d = { 0 };

	if (index <= 9 || index == CMOS_CENTURY)
		d = utc(pc->now());
	switch (index) {
	case 0: return bcd(pc, d.second);
	case 2: return bcd(pc, d.minute);
	case 4: return bcd(pc, d.hour);
	case 6: return bcd(pc, d.weekday);
	case 7: return bcd(pc, d.day);
	case 8: return bcd(pc, d.month);
	case 9: return bcd(pc, d.year % 100);
	case CMOS_CENTURY: return bcd(pc, d.year / 100);
	case CMOS_REG_A: return 0x26;           /* 32.768 kHz, 1024 Hz; no update in progress */
	case CMOS_REG_C: return 0;              /* no interrupt flags: IRQ 8 never fires */
	case CMOS_REG_D: return 0x80;           /* the battery is good */
	default: return pc->cmos[index];
	}
}

static void cmos_io(struct pc *pc, uint16_t port, bool out, uint8_t *data)
{
	if (port == PC_CMOS_INDEX) {
		if (out)
			pc->cmos_index = *data & 0x7f;	/* bit 7 masks NMIs */
		else
			*data = 0xff;
		return;
	}
	if (!out) {
		*data = cmos_read(pc, pc->cmos_index);
		return;
	}
	/* Setting the clock is not kept; the rest is 128 bytes of CMOS RAM. */
	if (pc->cmos_index > 9 && pc->cmos_index != CMOS_REG_C &&
	    pc->cmos_index != CMOS_REG_D && pc->cmos_index != CMOS_CENTURY)
		pc->cmos[pc->cmos_index] = *data;
}

/* Byte `offset` of fw_cfg item `key`; 0 past its end and for unknown keys. */
static uint8_t fw_cfg_byte(const struct pc *pc, uint16_t key, uint32_t offset)
{
	uint8_t item[8] = { 0 };
	uint32_t len = 0;

	switch (key) {
	case PC_FW_CFG_SIGNATURE:
		memcpy(item, "QEMU", 4);
		len = 4;
		break;
	case PC_FW_CFG_ID:
		fwtable_put32(item, 1);
		len = 4;
		break;
	case PC_FW_CFG_RAM_SIZE:
		fwtable_put64(item, pc->ram_size);
		len = 8;
		break;
	case PC_FW_CFG_NB_CPUS:
	case PC_FW_CFG_MAX_CPUS:
		fwtable_put16(item, (uint16_t)pc->cpus);
		len = 2;
		break;
	}
	return offset < len ? item[offset] : 0;
}

static void fw_cfg_io(struct pc *pc, uint16_t port, bool out, unsigned size, uint8_t *data)
{
	if (port == PC_FW_CFG_SEL && out) {
		pc->fw_cfg_key = (uint16_t)(data[0] | (size > 1 ? data[1] << 8 : 0));
		pc->fw_cfg_offset = 0;
	} else if (port == PC_FW_CFG_DATA && !out) {
		for (unsigned i = 0; i < size; i++)
			data[i] = fw_cfg_byte(pc, pc->fw_cfg_key, pc->fw_cfg_offset++);
	} else if (!out) {
		memset(data, 0, size);
	}
}

/* Configuration mechanism #1 on a bus with no device: every read all-ones. */
static void pci_io(struct pc *pc, uint16_t port, bool out, unsigned size, uint8_t *data)
{
	uint32_t v;

	if (port == PC_PCI_ADDRESS && size == 4) {
		if (out) {
			memcpy(&v, data, 4);
			pc->pci_address = v & (PCI_ENABLE | 0x00fffffcu);
		} else {
			memcpy(data, &pc->pci_address, 4);
		}
	} else if (!out) {
		memset(data, 0xff, size);
	}
}

static enum pc_event com1_io(struct pc *pc, uint16_t port, bool out, unsigned size, uint8_t *data)
{
	for (unsigned i = 0; i < size; i++) {
		unsigned reg = port + i - PC_COM1;

		/* A wide access at the last registers reaches past the UART: nothing there. */
		if (reg > 7) {
			if (!out)
				data[i] = 0xff;
			continue;
		}
		if (out) {
			uart_write(&pc->com1, reg, data[i]);
		} else {
			data[i] = uart_read(&pc->com1, reg);
			if (reg == UART_RBR)
				feed_com1(pc);
		}
	}
	return PC_EVENT_NONE;
}

static bool is_quiet(uint16_t port)
{
	for (size_t i = 0; i < ARRAY_SIZE(quiet); i++)
		if (port >= quiet[i].first && port <= quiet[i].last)
			return true;
	return false;
}

/* The ports that reset, power off or end the machine. */
static enum pc_event control_io(uint16_t port, bool out, unsigned size, uint8_t *data,
				uint32_t *value)
{
	if (!out) {
		memset(data, port == PC_I8042_CMD ? I8042_STATUS_OBF : 0, size);
		return PC_EVENT_NONE;
	}
	*value = 0;
	memcpy(value, data, size);
	if (port == PC_DEBUG_EXIT)
		return PC_EVENT_EXIT;
	if (port == PC_I8042_CMD && data[0] == PC_I8042_RESET)
		return PC_EVENT_RESET;
	if (port == PC_RESET_CONTROL && (data[0] & CF9_RESET_CPU))
		return PC_EVENT_RESET;
	if (port == ACPI_SLEEP_CONTROL_PORT && (data[0] & ACPI_SLEEP_ENABLE) &&
	    ACPI_SLEEP_TYPE(data[0]) == ACPI_SLEEP_TYPE_S5)
		return PC_EVENT_POWEROFF;
	return PC_EVENT_NONE;
}

static enum pc_event dispatch(struct pc *pc, uint16_t port, bool out, unsigned size,
			      uint8_t *data, uint32_t *value)
{
	if (port >= PC_COM1 && port <= PC_COM1 + 7)
		return com1_io(pc, port, out, size, data);
	if (port == PC_CMOS_INDEX || port == PC_CMOS_DATA) {
		cmos_io(pc, port, out, data);
		return PC_EVENT_NONE;
	}
	if (port == PC_FW_CFG_SEL || port == PC_FW_CFG_DATA) {
		fw_cfg_io(pc, port, out, size, data);
		return PC_EVENT_NONE;
	}
	if (port >= PC_PCI_ADDRESS && port <= PC_PCI_DATA + 3 && port != PC_RESET_CONTROL) {
		pci_io(pc, port, out, size, data);
		return PC_EVENT_NONE;
	}
	if (port == PC_DEBUG_EXIT || port == PC_I8042_DATA || port == PC_I8042_CMD ||
	    port == PC_RESET_CONTROL || port == ACPI_SLEEP_CONTROL_PORT)
		return control_io(port, out, size, data, value);
	if (is_quiet(port)) {
		if (!out)
			memset(data, 0xff, size);
		return PC_EVENT_NONE;
	}
	return PC_EVENT_UNKNOWN;
}

enum pc_event pc_io(struct pc *pc, uint16_t port, bool out, unsigned size, uint8_t *data,
		    uint32_t *value)
{
	enum pc_event e;

	if (size > 4)
		size = 4;
	uint8_t tx[sizeof(pc->tx)];
	size_t n;

	pthread_mutex_lock(&pc->lock);
	e = dispatch(pc, port, out, size, data, value);
	n = pc->tx_len;
	pc->tx_len = 0;
	if (!n) {
		pthread_mutex_unlock(&pc->lock);
		return e;
	}
	memcpy(tx, pc->tx, n);
	pthread_mutex_lock(&pc->output);
	pthread_mutex_unlock(&pc->lock);
	for (size_t i = 0; i < n; i++)
		pc->console(pc->ctx, tx[i]);
	pthread_mutex_unlock(&pc->output);
	return e;
}

size_t pc_input_room(struct pc *pc)
{
	size_t room;

	pthread_mutex_lock(&pc->lock);
	room = PC_INPUT_MAX - pc->input_len;
	pthread_mutex_unlock(&pc->lock);
	return room;
}

size_t pc_input(struct pc *pc, const uint8_t *data, size_t n)
{
	size_t took = 0;

	pthread_mutex_lock(&pc->lock);
	while (took < n && pc->input_len < PC_INPUT_MAX) {
		pc->input[(pc->input_head + pc->input_len) % PC_INPUT_MAX] = data[took++];
		pc->input_len++;
	}
	feed_com1(pc);
	pthread_mutex_unlock(&pc->lock);
	return took;
}
