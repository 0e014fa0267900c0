/* SPDX-License-Identifier: MIT */
/* Every vCPU the VMM announced reaches guest_ap_main with sane boot_info. */
#include "guest.h"

/* ~5 s: a pause loop iteration at CPL0 costs ~5 us on the project's hosts. */
#define CHECKIN_SPINS 1000000u

static uint32_t checked_in;
static uint32_t duplicates;
static uint32_t mismatches;
static uint64_t seen[VMM_MAX_VCPUS / 64];
static uint64_t region_base[VMM_MAX_VCPUS];

/* Whether an AP's view agrees with the BSP's boot_info (slot 0). */
static bool ap_info_consistent(const struct boot_info *bi)
{
	const struct boot_info *bsp = (const struct boot_info *)(uintptr_t)BOOT_INFO_ADDR;

	return bi == bsp + bi->cpu_index && bi->cpu_count == bsp->cpu_count &&
	       bi->ram_size == bsp->ram_size && bi->image_size == bsp->image_size &&
	       this_cpu()->index == bi->cpu_index;
}

void smp_ap_checkin(const struct boot_info *bi)
{
	uint32_t idx = bi->cpu_index;
	uint64_t bit = 1ull << (idx % 64);

	if (atomic_fetch_or(&seen[idx / 64], bit) & bit)
		atomic_fetch_add(&duplicates, 1);
	if (!ap_info_consistent(bi))
		atomic_fetch_add(&mismatches, 1);
	atomic_store(&region_base[idx], bi->cpu_region_base);
	tap_diag("cpu %u checked in", idx);
	/* Last, so that vCPU 0 sees everything above once it sees the count. */
	atomic_fetch_add(&checked_in, 1);
}

static void test_checkin(const struct boot_info *bi)
{
	uint32_t aps = bi->cpu_count - 1;
	bool all = spin_wait_eq32(&checked_in, aps, CHECKIN_SPINS);

	tap_ok(all, "all %u APs checked in (%u did)", aps, atomic_load(&checked_in));
}

static bool seen_exactly_aps(uint32_t count)
{
	for (uint32_t i = 0; i < VMM_MAX_VCPUS; i++) {
		bool want = i > 0 && i < count;
		bool got = atomic_load(&seen[i / 64]) >> (i % 64) & 1;

		if (want != got)
			return false;
	}
	return true;
}

static void test_distinct(const struct boot_info *bi)
{
	tap_ok(seen_exactly_aps(bi->cpu_count) && atomic_load(&duplicates) == 0,
	       "AP cpu_index values are distinct and exactly 1..%u (%u duplicates)",
	       bi->cpu_count - 1, atomic_load(&duplicates));
}

static void test_consistent(const struct boot_info *bi)
{
	(void)bi;
	tap_ok(atomic_load(&mismatches) == 0,
	       "every AP's boot_info is in its slot and agrees with vCPU 0's (%u differ)",
	       atomic_load(&mismatches));
}

static bool regions_disjoint(const struct boot_info *bi)
{
	uint64_t size = bi->cpu_region_size;
	uint64_t floor = bi->image_base + bi->image_size;

	region_base[0] = bi->cpu_region_base;
	for (uint32_t i = 0; i < bi->cpu_count; i++) {
		uint64_t a = atomic_load(&region_base[i]);

		if (a < floor || a + size > bi->ram_size)
			return false;
		for (uint32_t j = 0; j < i; j++) {
			uint64_t b = atomic_load(&region_base[j]);

			if (a < b + size && b < a + size)
				return false;
		}
	}
	return true;
}

static void test_regions(const struct boot_info *bi)
{
	tap_ok(regions_disjoint(bi),
	       "the %u per-vCPU regions are disjoint, above the image, inside RAM",
	       bi->cpu_count);
}

static const struct guest_test tests[] = {
	{ "checkin", test_checkin },
	{ "distinct", test_distinct },
	{ "consistent", test_consistent },
	{ "regions", test_regions },
};

TEST_GROUP(smp_tests, "SMP", tests);
