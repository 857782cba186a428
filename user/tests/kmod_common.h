/* SPDX-License-Identifier: GPL-2.0 */
/*
 * For the tests that load a module of user/kmod/: the value of one of its
 * parameters, which the modules also use to give results back, and where
 * a function of the kernel is (for the modules' breakpoints).
 */
#ifndef KMOD_COMMON_H
#define KMOD_COMMON_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* /sys/module/@module/parameters/@name, opened with @mode */
static inline FILE *kmod_param_open(const char *module, const char *name,
				    const char *mode)
{
	char path[160];

	snprintf(path, sizeof(path), "/sys/module/%s/parameters/%s", module, name);
	return fopen(path, mode);
}

/* The parameter @name of @module as a number, -1 if unreadable */
static inline long long kmod_param(const char *module, const char *name)
{
	FILE *f = kmod_param_open(module, name, "r");
	char buf[32] = "";
	long long v = -1;

	if (f) {
		if (fgets(buf, sizeof(buf), f))
			v = strtoll(buf, NULL, 0);
		fclose(f);
	}
	return v;
}

/* A bool parameter, as kmod_param(): 1 for Y, 0 for N, -1 if unreadable */
static inline int kmod_param_bool(const char *module, const char *name)
{
	FILE *f = kmod_param_open(module, name, "r");
	char c = 0;

	if (!f)
		return -1;
	if (fread(&c, 1, 1, f) != 1)
		c = 0;
	fclose(f);
	return c == 'Y' ? 1 : c == 'N' ? 0 : -1;
}

/* Write @value to the parameter @name of @module: 0, or -1 */
static inline int kmod_param_write(const char *module, const char *name,
				   const char *value)
{
	FILE *f = kmod_param_open(module, name, "w");
	int ret = -1;

	if (f) {
		ret = fputs(value, f) < 0 ? -1 : 0;
		if (fclose(f))
			ret = -1;
	}
	return ret;
}

/*
 * The address of @name in /proc/kallsyms and its size, up to the next
 * symbol of the kernel's text: false if not found.
 */
static inline bool kallsyms_range(const char *name, unsigned long long *addr,
				  unsigned long long *size)
{
	unsigned long long a, next = ~0ULL;
	char type, sym[256], line[512];
	bool found = false;
	FILE *f;

	f = fopen("/proc/kallsyms", "r");
	if (!f)
		return false;
	*addr = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &a, &type, sym) != 3)
			continue;
		if (!found && !strcmp(sym, name) && (type == 't' || type == 'T')) {
			*addr = a;
			found = true;
		}
	}
	if (found) {
		rewind(f);
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "%llx %c %255s", &a, &type, sym) == 3 &&
			    a > *addr && a < next)
				next = a;
		}
	}
	fclose(f);
	if (!found || !*addr || next == ~0ULL)
		return false;
	*size = next - *addr;
	return true;
}

#endif /* KMOD_COMMON_H */
