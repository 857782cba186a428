// SPDX-License-Identifier: GPL-2.0
/*
 * A load of the KCSAN stage (scripts/kcsan.sh): per_cpu/cpuN/stats read,
 * and per_cpu/cpuN/trace_pipe_raw polled, while that CPU's writer moves
 * from page to page. Both take the reader lock only; the writer takes no
 * lock, and what they look at of its pages must be read as values that
 * race with it: the stats (ring_buffer_oldest_event_ts()) the tail page and
 * the time stamp of a page, a poll (rb_per_cpu_empty()) the commit page.
 *
 * kcsan_load's writers write short lines and a page lasts them about 20
 * markers there, while readers and the other threads share the CPUs; the
 * race of the stats with a page move hid in it (one report in many boots).
 * Here, for KCSAN_STATS_MS (default 15000) milliseconds, in an instance of
 * two pages per CPU, buffer_percent 0 and no reader: a writer pinned on
 * every CPU but the first writes 900-byte trace_marker lines (four to a
 * page), and a thread pinned on the first reads the stats of the others
 * and polls their trace_pipe_raw (timeout 0: it consumes nothing) without
 * a pause.
 *
 * Listed as ?tests/kcsan_stats: it runs only when named (ftmmap.only=).
 * It prints one TAP result: the load ran, with what it wrote and read.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <unistd.h>

#include "kcsan_pages.h"

static atomic_ullong stats_reads, polls;

static void *stats(void *arg)
{
	struct pollfd pfd[MAX_CPUS];
	char path[160], buf[1024];
	int cpu, fd;

	(void)arg;
	if (pin(0))
		return NULL;
	for (cpu = 1; cpu < nr_cpus; cpu++) {
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/trace_pipe_raw", instance, cpu);
		pfd[cpu].fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		pfd[cpu].events = POLLIN;
	}
	while (!atomic_load(&stop)) {
		for (cpu = 1; cpu < nr_cpus; cpu++) {
			snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/stats", instance, cpu);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			if (read(fd, buf, sizeof(buf)) > 0)
				atomic_fetch_add(&stats_reads, 1);
			close(fd);
			if (pfd[cpu].fd >= 0 && poll(&pfd[cpu], 1, 0) >= 0)
				atomic_fetch_add(&polls, 1);
		}
	}
	for (cpu = 1; cpu < nr_cpus; cpu++)
		if (pfd[cpu].fd >= 0)
			close(pfd[cpu].fd);
	return NULL;
}

int main(void)
{
	if (run_page_load("kcsan_stats", "KCSAN_STATS_MS", "0", stats))
		return 1;
	if (!written || !stats_reads || !polls) {
		printf("not ok 1 - the load did not run: %llu markers written, %llu stats reads, %llu polls\n",
		       (unsigned long long)written, (unsigned long long)stats_reads,
		       (unsigned long long)polls);
		return 1;
	}
	printf("ok 1 - %llu markers of %d bytes written, %llu stats reads, %llu polls\n",
	       (unsigned long long)written, LINE, (unsigned long long)stats_reads,
	       (unsigned long long)polls);
	return 0;
}
