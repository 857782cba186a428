/* SPDX-License-Identifier: GPL-2.0 */
/*
 * For the tests that load a module of user/kmod/: the value of one of its
 * parameters, which the modules also use to give results back.
 */
#ifndef KMOD_COMMON_H
#define KMOD_COMMON_H

#include <stdio.h>
#include <stdlib.h>

/* /sys/module/@module/parameters/@name as a number, -1 if unreadable */
static inline long long kmod_param(const char *module, const char *name)
{
	char path[160], buf[32] = "";
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/%s/parameters/%s", module, name);
	f = fopen(path, "r");
	if (f) {
		if (fgets(buf, sizeof(buf), f))
			v = strtoll(buf, NULL, 0);
		fclose(f);
	}
	return v;
}

#endif /* KMOD_COMMON_H */
