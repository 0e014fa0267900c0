/* SPDX-License-Identifier: MIT */
/*
 * Guest page-table walk over the VMM's mapping of guest RAM, as pure code:
 * 4- and 5-level (CR4.LA57) long-mode paging with 4 KiB, 2 MiB and 1 GiB
 * pages, PAE paging (4 KiB and 2 MiB pages) and 32-bit paging (4 KiB and,
 * with CR4.PSE, 4 MiB pages, PSE-36) outside long mode, or no paging at all, with the permission checks of the Intel SDM
 * vol. 3 4.6 (U/S, R/W with CR0.WP, XD with EFER.NXE, SMEP, SMAP,
 * protection keys) and its reserved bits (4.5.4, MAXPHYADDR). The
 * split-lock emulator needs it to find an operand's bytes and, where the
 * CPU would fault, the #PF error code the CPU would give.
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
	bool long_mode;      /* EFER.LMA */
	bool pae;            /* CR4.PAE: without long mode, PAE paging; else 32-bit paging */
	bool pse;            /* CR4.PSE: 4 MiB pages in 32-bit paging */
	bool la57;           /* CR4.LA57: five levels, 57-bit linear addresses */
	bool wp;             /* CR0.WP: supervisor writes honour R/W */
	bool nxe;            /* EFER.NXE: bit 63 is XD, else reserved */
	bool smep, smap;     /* CR4.SMEP, CR4.SMAP */
	bool ac;             /* RFLAGS.AC: SMAP lets explicit supervisor accesses through */
	bool pke;            /* CR4.PKE: PKRU applies to user pages */
	uint32_t pkru;
	unsigned maxphyaddr; /* CPUID.80000008H:EAX[7:0]; 0 means 52 */
	uint64_t cr3;
	unsigned cpl;
};

/* Access kinds for pagewalk(); a write is a read-modify-write's check too. */
#define WALK_WRITE  1u
#define WALK_FETCH  2u

/* #PF error code bits (SDM vol. 3 4.7). */

enum walk_result {
	WALK_OK,
	WALK_FAULT,          /* the CPU would raise #PF with walk.error_code */
	WALK_OUTSIDE_RAM,    /* a paging-structure entry is not in guest RAM */
	WALK_UNSUPPORTED,    /* a paging mode this walker does not know (none at present) */
	WALK_NONCANONICAL,   /* the CPU raises #GP (or #SS) before any walk */
};

struct walk {
	uint64_t gpa;         /* WALK_OK: may lie beyond RAM (MMIO) */
	uint64_t page_left;   /* bytes from gpa to the end of its page */
	uint32_t error_code;  /* WALK_FAULT */
	/* The entries used, for pagewalk_set_ad() once the access happens. */
	uint64_t ent_gpa[5];
	unsigned nents;
	bool ent32;           /* 32-bit paging: the entries are 4 bytes */
};

/*
 * Translates one linear address for an access of kind `access` (WALK_*
 * bits) with no side effect: accessed and dirty bits are set only by
 * pagewalk_set_ad(), once the caller knows the whole access succeeds.
 */
enum walk_result pagewalk(const struct guest_mem *m, const struct paging *p, uint64_t la,
			  unsigned access, struct walk *w);
/* Sets the accessed bits of a successful walk's entries, dirty for a write. */
void pagewalk_set_ad(const struct guest_mem *m, const struct walk *w, bool write);
const char *pagewalk_result_name(enum walk_result r);
/* Whether la is canonical: 57 bits with LA57 paging, else 48. */
bool pagewalk_canonical(uint64_t la, bool la57);
/* Where a write of byte la through p lands in RAM, or NULL (a fault, no RAM there). */
uint8_t *pagewalk_write_byte(const struct guest_mem *m, const struct paging *p, uint64_t la);

/*
 * The paging state in sregs; RFLAGS.AC, PKRU and MAXPHYADDR come from
 * elsewhere and are left for the caller.
 */
void pagewalk_from_sregs(struct paging *p, const struct kvm_sregs *s);
/*
 * Reads up to len bytes at a linear address as instruction fetches, page
 * by page; returns how many it could (fewer where a fetch would fault or
 * leave RAM). No side effect on guest memory.
 */
size_t pagewalk_read(const struct guest_mem *m, const struct paging *p, uint64_t la,
		     uint8_t *buf, size_t len);
/* The same for an access of kind `access` (0 for a data read, WALK_*). */
size_t pagewalk_read_as(const struct guest_mem *m, const struct paging *p, uint64_t la,
			unsigned access, uint8_t *buf, size_t len);
/*
 * The same, with `fill` for the bytes past RAM, where no device answers
 * (as the guest reads them); it stops only where the walk does, and *why
 * (may be NULL) says why: WALK_OK when every byte was read.
 */
size_t pagewalk_read_filled(const struct guest_mem *m, const struct paging *p, uint64_t la,
			    unsigned access, uint8_t *buf, size_t len, uint8_t fill,
			    enum walk_result *why);

#endif
