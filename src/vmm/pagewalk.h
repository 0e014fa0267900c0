/* SPDX-License-Identifier: MIT */
/*
 * Guest page-table walk over the VMM's mapping of guest RAM, as pure code:
 * 4-level long-mode paging with 4 KiB, 2 MiB and 1 GiB pages, or no paging
 * at all. The split-lock emulator needs it to find an operand's bytes.
 */
#ifndef VMM_PAGEWALK_H
#define VMM_PAGEWALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/kvm.h>

struct guest_mem {
	uint8_t *base;       /* host address of guest-physical 0 */
	uint64_t size;
};

struct paging {
	bool enabled;        /* CR0.PG */
	bool long_mode;      /* EFER.LMA: 4-level; anything else is refused */
	bool wp;             /* CR0.WP: supervisor writes honour R/W */
	uint64_t cr3;
	unsigned cpl;
};

enum walk_result {
	WALK_OK,
	WALK_NOT_PRESENT,    /* the guest would take #PF */
	WALK_PROTECTION,     /* ditto: user or write access denied */
	WALK_OUTSIDE_RAM,    /* a table or the page is not in guest RAM */
	WALK_UNSUPPORTED,    /* a paging mode this walker does not know */
	WALK_NONCANONICAL,   /* bits 63:47 differ: the guest would take #GP */
};

/*
 * Translates one linear address. With `write`, checks write permission and,
 * like the CPU, sets the accessed and dirty bits it passes; otherwise sets
 * accessed bits only. *page_left is how many bytes remain in that page.
 */
enum walk_result pagewalk(const struct guest_mem *m, const struct paging *p,
			  uint64_t la, bool write, uint64_t *gpa, uint64_t *page_left);
const char *walk_result_name(enum walk_result r);

void paging_from_sregs(struct paging *p, const struct kvm_sregs *s);
/*
 * Reads up to len bytes at a linear address, page by page; returns how many
 * it could (fewer where a page is missing). Sets accessed bits like a fetch.
 */
size_t pagewalk_read(const struct guest_mem *m, const struct paging *p, uint64_t la,
		     uint8_t *buf, size_t len);

#endif
