/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The load that kcsan_stats.c and kcsan_swap.c share: in an instance of two
 * pages per CPU, a writer pinned on every CPU but the first writes 900-byte
 * trace_marker lines (four to a page) without a pause, so that it moves
 * from page to page all the time, while the test's own reader thread runs
 * on the first CPU. See the two tests for what their readers do.
 */
#ifndef KCSAN_PAGES_H
#define KCSAN_PAGES_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "kcsan_common.h"

#define TRACEFS		"/sys/kernel/tracing"
#define MAX_CPUS	64
#define LINE		900

static atomic_bool stop;
static atomic_ullong written;
static int nr_cpus;
static char instance[128];

static void *writer(void *arg)
{
	char line[LINE], path[160];
	int fd;

	if (pin((long)arg))
		return NULL;
	memset(line, '+', sizeof(line));
	snprintf(path, sizeof(path), "%s/trace_marker", instance);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	while (!atomic_load(&stop))
		if (write(fd, line, sizeof(line)) == sizeof(line))
			atomic_fetch_add(&written, 1);
	close(fd);
	return NULL;
}

/*
 * Make the instance NAME (8 KiB per CPU, and buffer_percent PERCENT if not
 * NULL), run the writers and READER for the milliseconds of the environment
 * variable ENV (15000 if unset or out of range), and remove the instance.
 * Prints the TAP plan; 0, or 1 after a "not ok" line.
 */
static int run_page_load(const char *name, const char *env, const char *percent,
			 void *(*reader)(void *))
{
	long ms = load_ms(env, 15000);
	pthread_t w[MAX_CPUS], r;
	char path[160];
	struct timespec ts;
	long cpu;

	printf("TAP version 13\n1..1\n");
	nr_cpus = online_cpus(MAX_CPUS);
	if (nr_cpus < 2) {
		printf("not ok 1 - needs 2 CPUs, has %d\n", nr_cpus);
		return 1;
	}
	snprintf(instance, sizeof(instance), TRACEFS "/instances/%s", name);
	rmdir(instance);
	snprintf(path, sizeof(path), "%s/buffer_size_kb", instance);
	if (mkdir(instance, 0755) || write_file(path, "8")) {
		printf("not ok 1 - cannot set up %s: %s\n", instance, strerror(errno));
		return 1;
	}
	snprintf(path, sizeof(path), "%s/buffer_percent", instance);
	if (percent && write_file(path, percent)) {
		printf("not ok 1 - cannot write %s: %s\n", path, strerror(errno));
		rmdir(instance);
		return 1;
	}
	printf("# %d CPUs, %ld ms\n", nr_cpus, ms);
	fflush(stdout);
	for (cpu = 1; cpu < nr_cpus; cpu++)
		pthread_create(&w[cpu], NULL, writer, (void *)cpu);
	pthread_create(&r, NULL, reader, NULL);
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = ms % 1000 * 1000000L;
	nanosleep(&ts, NULL);
	atomic_store(&stop, true);
	for (cpu = 1; cpu < nr_cpus; cpu++)
		pthread_join(w[cpu], NULL);
	pthread_join(r, NULL);
	rmdir(instance);
	return 0;
}

#endif
