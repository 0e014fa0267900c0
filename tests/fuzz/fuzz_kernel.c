/* SPDX-License-Identifier: MIT */
/*
 * Kernel images end to end: image_detect, then kernel_load (bzImage with
 * its payload unpacked, PVH, multiboot), with a command line and initrd.
 *
 * Input: u8 RAM size in MiB (4..67), u16 command line length, u16 initrd
 * length in 256-byte units, then the image's bytes. RAM is a malloc'd
 * buffer of exactly that size filled with a pattern.
 *
 * Oracles:
 *  - a failure is KERNEL_BAD_IMAGE or KERNEL_USAGE (then --append was
 *    longer than the image's bound) with one non-empty line, and a foreign
 *    or bad image always fails;
 *  - a success enters at an address inside RAM in long mode (RSI = the
 *    zero page, at BOOT_PC_PARAMS_ADDR) or 32-bit protected mode (EBX = the
 *    parameters, at BOOT_PC_PARAMS_ADDR); the command line sits NUL-ended
 *    at BOOT_PC_CMDLINE_ADDR; an initrd lies page-aligned above the
 *    kernel's end and inside RAM and below 4 GiB, holding its bytes;
 *  - nothing below 1 MiB changed outside the parameters' and the command
 *    line's areas.
 */
#include "fuzz.h"

#include "boot.h"
#include "kernel.h"

#define PATTERN 0xa5

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = fuzz_in(data, size);
	uint64_t ram = (uint64_t)(4 + (fuzz_u8(&in) & 63)) << 20;
	size_t cmdlen = fuzz_u16(&in), initrd_len = (size_t)fuzz_u16(&in) * 256;
	struct image_info info;
	struct kernel_boot kb;
	char err[512] = "", *cmdline = malloc(cmdlen + 1);
	uint8_t *initrd = malloc(initrd_len + 1), *mem = malloc(ram);
	int r;

	FUZZ_SETUP(cmdline && initrd && mem);
	memset(cmdline, 'c', cmdlen);
	cmdline[cmdlen] = '\0';
	memset(initrd, 0x17, initrd_len);
	memset(mem, PATTERN, ram);
	image_detect(in.p, in.n, &info);
	r = kernel_load(&info, in.p, in.n, &(struct kernel_args){ cmdline, initrd_len ? initrd : NULL, initrd_len },
			mem, ram, &kb, err, sizeof(err));
	if (info.kind == IMAGE_FLAT || info.kind == IMAGE_FOREIGN || info.kind == IMAGE_BAD)
		FUZZ_CHECK(r == KERNEL_BAD_IMAGE, "kind %d loaded", info.kind);
	if (r) {
		FUZZ_CHECK(r == KERNEL_BAD_IMAGE || r == KERNEL_USAGE, "status %d", r);
		FUZZ_CHECK(err[0] && !strchr(err, '\n') && memchr(err, 0, sizeof(err)), "message '%s'", err);
		FUZZ_CHECK(r != KERNEL_USAGE || strstr(err, "--append: text is"), "usage '%s'", err);
		goto out;
	}
	FUZZ_CHECK(kb.entry.rip < ram || kb.entry.mode == BOOT_ENTRY_PROT32, "entry 0x%llx past RAM",
		   (unsigned long long)kb.entry.rip);
	FUZZ_CHECK(kb.entry.mode == BOOT_ENTRY_LONG ? kb.entry.rsi == BOOT_PC_PARAMS_ADDR :
		   kb.entry.mode == BOOT_ENTRY_PROT32 && kb.entry.rbx == BOOT_PC_PARAMS_ADDR, "entry registers");
	FUZZ_CHECK(strcmp((char *)mem + BOOT_PC_CMDLINE_ADDR, cmdline) == 0, "command line");
	if (initrd_len) {
		FUZZ_CHECK(kb.initrd_addr % 4096 == 0 && kb.initrd_addr >= kb.kernel_end &&
			   kb.initrd_addr + initrd_len <= ram && kb.initrd_addr + initrd_len <= (1ull << 32),
			   "initrd at 0x%llx", (unsigned long long)kb.initrd_addr);
		FUZZ_CHECK(fuzz_all_bytes(mem + kb.initrd_addr, initrd_len, 0x17), "initrd bytes");
	}
	FUZZ_CHECK(fuzz_all_bytes(mem, BOOT_PC_PARAMS_ADDR, PATTERN), "RAM below the parameters changed");
	FUZZ_CHECK(fuzz_all_bytes(mem + BOOT_PC_CMDLINE_ADDR + cmdlen + 1,
				  0x100000 - BOOT_PC_CMDLINE_ADDR - cmdlen - 1, PATTERN),
		   "RAM between the command line and 1 MiB changed");
out:
	free(cmdline);
	free(initrd);
	free(mem);
	return 0;
}
