/* SPDX-License-Identifier: MIT */
/* Thin wrappers around privileged and special x86 instructions. */
#ifndef FW_PROCESSOR_H
#define FW_PROCESSOR_H

#include <stdint.h>

#include "x86.h"

static inline void outb(uint16_t port, uint8_t val)
{
	asm volatile("outb %0, %1" : : "a"(val), "Nd"(port));
}

static inline void outl(uint16_t port, uint32_t val)
{
	asm volatile("outl %0, %1" : : "a"(val), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t val;

	asm volatile("inb %1, %0" : "=a"(val) : "Nd"(port));
	return val;
}

/* One VM exit for the whole buffer instead of one per byte. */
static inline void outsb(uint16_t port, const void *buf, uint64_t len)
{
	asm volatile("rep outsb"
		     : "+S"(buf), "+c"(len)
		     : "d"(port)
		     : "memory");
}

static inline uint64_t rdmsr(uint32_t msr)
{
	uint32_t lo, hi;

	asm volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return lo | ((uint64_t)hi << 32);
}

static inline void wrmsr(uint32_t msr, uint64_t val)
{
	asm volatile("wrmsr"
		     : : "c"(msr), "a"((uint32_t)val), "d"((uint32_t)(val >> 32))
		     : "memory");
}

struct cpuid_regs {
	uint32_t a, b, c, d;
};

static inline struct cpuid_regs cpuid_count(uint32_t leaf, uint32_t subleaf)
{
	struct cpuid_regs r;

	asm volatile("cpuid"
		     : "=a"(r.a), "=b"(r.b), "=c"(r.c), "=d"(r.d)
		     : "a"(leaf), "c"(subleaf));
	return r;
}

static inline struct cpuid_regs cpuid(uint32_t leaf)
{
	return cpuid_count(leaf, 0);
}

static inline uint64_t read_cr0(void)
{
	uint64_t v;

	asm volatile("mov %%cr0, %0" : "=r"(v));
	return v;
}

static inline void write_cr0(uint64_t v)
{
	asm volatile("mov %0, %%cr0" : : "r"(v) : "memory");
}

static inline uint64_t read_cr2(void)
{
	uint64_t v;

	asm volatile("mov %%cr2, %0" : "=r"(v));
	return v;
}

static inline uint64_t read_cr3(void)
{
	uint64_t v;

	asm volatile("mov %%cr3, %0" : "=r"(v));
	return v;
}

static inline uint64_t read_cr4(void)
{
	uint64_t v;

	asm volatile("mov %%cr4, %0" : "=r"(v));
	return v;
}

static inline void write_cr3(uint64_t v)
{
	asm volatile("mov %0, %%cr3" : : "r"(v) : "memory");
}

static inline void write_cr4(uint64_t v)
{
	asm volatile("mov %0, %%cr4" : : "r"(v) : "memory");
}

/* Usable at any CPL: tells code shared by CPL0 and CPL3 where it runs. */
static inline uint16_t read_cs(void)
{
	uint16_t v;

	asm volatile("mov %%cs, %0" : "=r"(v));
	return v;
}

static inline uint64_t read_rflags(void)
{
	uint64_t v;

	asm volatile("pushfq; popq %0" : "=r"(v));
	return v;
}

/* RDTSC only: RDTSCP at CPL0 kills the VM on the project's hosts. */
static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return lo | ((uint64_t)hi << 32);
}

static inline void cpu_relax(void)
{
	asm volatile("pause" ::: "memory");
}

static inline void barrier(void)
{
	asm volatile("" ::: "memory");
}

static inline __attribute__((noreturn)) void halt_forever(void)
{
	for (;;)
		asm volatile("cli; hlt" ::: "memory");
}

#endif
