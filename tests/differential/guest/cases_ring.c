/* SPDX-License-Identifier: MIT */
/*
 * Issue 18: CPL1 and CPL2 in 64-bit mode (ring.S). IRETQ to code with DPL1
 * and DPL2 descriptors, two split locks and a PUSHF there, and back to CPL0
 * through an interrupt gate with the TSS's RSP0 (INT n through a DPL3 gate,
 * and UD2's #UD): the frame the handler gets and what PUSHF pushed must
 * hold the guest's own TF, and every split lock is detected where the KVM
 * steps code outside CPL0 (difftest.py's "# split locks at CPL1-3").
 */
#include "diff.h"

#define RING_VEC 0x81

void ring_run(unsigned cpl, unsigned how, unsigned tf);
void ring_back(void);
extern char ring_payload[], ring_stack_top[];
extern uint32_t ring_split;
extern uint64_t ring_flags, ring_frame[5];

static int rings(const struct boot_info *bi)
{
	struct gate ud = idt()[X86_VEC_UD], iv = idt()[RING_VEC];
	uint32_t before, cpl0 = 0;
	unsigned n = 0;

	(void)bi;
	idt()[X86_VEC_UD] = make_gate((uint64_t)ring_back, 0x8e, 0);	/* DPL0 */
	idt()[RING_VEC] = make_gate((uint64_t)ring_back, 0xee, 0);	/* DPL3 */
	before = ring_split;
	for (unsigned cpl = 1; cpl <= 2; cpl++) {
		for (unsigned i = 0; i < 4; i++) {
			unsigned how = i & 1, tf = i >> 1;
			char label[48];

			ring_flags = 0;
			memset(ring_frame, 0, sizeof(ring_frame));
			dbg_reset();
			dbg_tf_limit = 1000;
			ring_run(cpl, how, tf);
			n += 2;
			/* Back at CPL0: stepping must be on again. */
			asm volatile("lock addl $1, %0" : "+m"(ring_split) : : "memory");
			cpl0++;
			snprintf(label, sizeof(label), "cpl%u via %s, tf %u", cpl, how ? "ud2" : "int 0x81", tf);
			printf("%s: pushf tf=%lu if=%lu iopl=%lu; frame rip payload+%ld cs %lx "
			       "rflags tf=%lu rf=%lu if=%lu rsp top-%ld ss %lx\n",
			       label,
			       (unsigned long)(ring_flags >> 8 & 1), (unsigned long)(ring_flags >> 9 & 1),
			       (unsigned long)(ring_flags >> 12 & 3), (long)(ring_frame[0] - (uint64_t)ring_payload),
			       (unsigned long)ring_frame[1], (unsigned long)(ring_frame[2] >> 8 & 1),
			       (unsigned long)(ring_frame[2] >> 16 & 1),
			       (unsigned long)(ring_frame[2] >> 9 & 1),
			       (long)((uint64_t)ring_stack_top - ring_frame[3]),
			       (unsigned long)ring_frame[4]);
			if (tf)
				dbg_print(label, (uint64_t)ring_payload);
			dbg_reset();
		}
	}
	idt()[X86_VEC_UD] = ud;
	idt()[RING_VEC] = iv;
	printf("split dword %u -> %u\n", before, ring_split);
	printf("# split locks at CPL0: %u\n", cpl0);
	printf("# split locks at CPL1-3: %u\n", n);
	nothing_unchecked();
	return 0;
}

static const struct diff_case cases[] = {
	{ "mode-cpl1-cpl2-split-lock-pushf-gate", rings },
};
CASE_TABLE(ring_cases, cases);
