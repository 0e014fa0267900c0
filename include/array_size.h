/* SPDX-License-Identifier: MIT */
/* The one ARRAY_SIZE, for the VMM, the guest runtime and the tests. */
#ifndef VMM_ARRAY_SIZE_H
#define VMM_ARRAY_SIZE_H

/* Refuses (a compile error) a pointer where an array is meant. */
#define ARRAY_SIZE(a) \
	(sizeof(a) / sizeof((a)[0]) + \
	 0 * sizeof(struct { _Static_assert(!__builtin_types_compatible_p(__typeof__(a), \
		__typeof__(&(a)[0])), "ARRAY_SIZE of a pointer"); int dummy; }))

#endif
