// SPDX-License-Identifier: GPL-2.0
/*
 * A load of the KCSAN stage (scripts/kcsan.sh): the reader swaps its page
 * into the ring while the writer moves from page to page. The swap
 * (__rb_get_reader_page()) stores the list pointers of the pages around it
 * under the reader lock; the writer, which takes no lock, loads them to ask
 * whether a page is the reader page (rb_is_reader_page()) when it moves the
 * tail or the commit, and a read() asks rb_per_cpu_empty() whether there is
 * anything to read.
 *
 * kcsan_load reads short lines from large buffers and met the race of the
 * swap with the writer once in many boots. Here, for KCSAN_SWAP_MS
 * (default 15000) milliseconds, in an instance of two pages per CPU: a
 * writer pinned on every CPU but the first writes 900-byte trace_marker
 * lines (four to a page), and a thread pinned on the first reads their
 * trace_pipe_raw a page at a time without blocking, so that nearly every
 * read() swaps the reader page.
 *
 * Listed as ?tests/kcsan_swap: it runs only when named (ftmmap.only=).
 * It prints one TAP result: the load ran, with what it wrote and read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kcsan_common.h"

#define TRACEFS		"/sys/kernel/tracing"
#define INSTANCE	TRACEFS "/instances/kcsan_swap"
#define MAX_CPUS	64
#define LINE		900

static atomic_bool stop;
static atomic_ullong written, pages;
static int nr_cpus;

static void *writer(void *arg)
{
	char line[LINE];
	int fd;

	if (pin((long)arg))
		return NULL;
	memset(line, '+', sizeof(line));
	fd = open(INSTANCE "/trace_marker", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	while (!atomic_load(&stop))
		if (write(fd, line, sizeof(line)) == sizeof(line))
			atomic_fetch_add(&written, 1);
	close(fd);
	return NULL;
}

static void *reader(void *arg)
{
	static char buf[4096];
	char path[128];
	int fd[MAX_CPUS], cpu;

	(void)arg;
	if (pin(0))
		return NULL;
	for (cpu = 1; cpu < nr_cpus; cpu++) {
		snprintf(path, sizeof(path), INSTANCE "/per_cpu/cpu%d/trace_pipe_raw", cpu);
		fd[cpu] = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	}
	while (!atomic_load(&stop))
		for (cpu = 1; cpu < nr_cpus; cpu++)
			if (fd[cpu] >= 0 && read(fd[cpu], buf, sizeof(buf)) > 0)
				atomic_fetch_add(&pages, 1);
	for (cpu = 1; cpu < nr_cpus; cpu++)
		if (fd[cpu] >= 0)
			close(fd[cpu]);
	return NULL;
}

int main(void)
{
	const char *env = getenv("KCSAN_SWAP_MS");
	long ms = env ? atol(env) : 15000;
	pthread_t w[MAX_CPUS], r;
	struct timespec ts;
	long cpu;

	printf("TAP version 13\n1..1\n");
	nr_cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (nr_cpus > MAX_CPUS)
		nr_cpus = MAX_CPUS;
	if (nr_cpus < 2) {
		printf("not ok 1 - needs 2 CPUs, has %d\n", nr_cpus);
		return 1;
	}
	if (ms <= 0 || ms > 600000)
		ms = 15000;
	rmdir(INSTANCE);
	if (mkdir(INSTANCE, 0755) || write_file(INSTANCE "/buffer_size_kb", "8")) {
		printf("not ok 1 - cannot set up %s: %s\n", INSTANCE, strerror(errno));
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
	rmdir(INSTANCE);
	if (!written || !pages) {
		printf("not ok 1 - the load did not run: %llu markers written, %llu pages read\n",
		       (unsigned long long)written, (unsigned long long)pages);
		return 1;
	}
	printf("ok 1 - %llu markers of %d bytes written, %llu pages read\n",
	       (unsigned long long)written, LINE, (unsigned long long)pages);
	return 0;
}
