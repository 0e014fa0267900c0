/* SPDX-License-Identifier: MIT */
/* The VMM's --append text (boot_info.cmdline): space-separated tokens. */
#ifndef FW_CMDLINE_H
#define FW_CMDLINE_H

#include <stdbool.h>
#include <stddef.h>

/* Whether some token is exactly `token`. */
bool cmdline_has(const char *token);
/*
 * For a token "key=value", copies value (NUL-terminated, cut to fit) into
 * buf and returns true; false if no token starts with "key=".
 */
bool cmdline_value(const char *key, char *buf, size_t size);

#endif
