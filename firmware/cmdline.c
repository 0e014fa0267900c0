/* SPDX-License-Identifier: MIT */
#include "cmdline.h"

#include "fw_string.h"
#include "percpu.h"

struct token {
	const char *s;
	size_t len;
};

/* Next token at or after *pos; false at the end of the line. */
static bool next_token(size_t *pos, struct token *t)
{
	const char *line = this_cpu()->boot->cmdline;
	size_t i = *pos, start;

	while (i < BOOT_CMDLINE_MAX && line[i] == ' ')
		i++;
	start = i;
	while (i < BOOT_CMDLINE_MAX && line[i] && line[i] != ' ')
		i++;
	*pos = i;
	*t = (struct token){ line + start, i - start };
	return t->len != 0;
}

bool cmdline_has(const char *token)
{
	size_t n = strlen(token), pos = 0;
	struct token t;

	while (next_token(&pos, &t))
		if (t.len == n && !memcmp(t.s, token, n))
			return true;
	return false;
}

bool cmdline_value(const char *key, char *buf, size_t size)
{
	size_t klen = strlen(key), pos = 0, vlen;
	struct token t;

	while (next_token(&pos, &t)) {
		if (t.len <= klen || t.s[klen] != '=' || memcmp(t.s, key, klen) || !size)
			continue;
		vlen = t.len - klen - 1;
		if (vlen >= size)
			vlen = size - 1;
		memcpy(buf, t.s + klen + 1, vlen);
		buf[vlen] = '\0';
		return true;
	}
	return false;
}
