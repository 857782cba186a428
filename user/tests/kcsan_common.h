/* SPDX-License-Identifier: GPL-2.0 */
/* What the loads of the KCSAN stage (kcsan_load.c, kcsan_pages.h) share. */
#ifndef KCSAN_COMMON_H
#define KCSAN_COMMON_H

#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Write val to a tracefs file: 0, or -1 if it was not all taken. */
static inline int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -1;
}

/* How long a load runs: the environment variable NAME, in milliseconds,
 * or DEF when it is unset or not within 1..600000. */
static inline long load_ms(const char *name, long def)
{
	const char *val = getenv(name);
	long ms = val ? atol(val) : def;

	return ms > 0 && ms <= 600000 ? ms : def;
}

/* The CPUs online, at most MAX. */
static inline int online_cpus(int max)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > max ? max : (int)n;
}

/* Move the calling thread to one CPU. */
static inline int pin(long cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

#endif
