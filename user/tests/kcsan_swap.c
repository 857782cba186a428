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
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "kcsan_pages.h"

static atomic_ullong pages;

static void *reader(void *arg)
{
	static char buf[4096];
	char path[160];
	int fd[MAX_CPUS], cpu;

	(void)arg;
	if (pin(0))
		return NULL;
	for (cpu = 1; cpu < nr_cpus; cpu++) {
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/trace_pipe_raw", instance, cpu);
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
	if (run_page_load("kcsan_swap", "KCSAN_SWAP_MS", NULL, reader))
		return 1;
	if (!written || !pages) {
		printf("not ok 1 - the load did not run: %llu markers written, %llu pages read\n",
		       (unsigned long long)written, (unsigned long long)pages);
		return 1;
	}
	printf("ok 1 - %llu markers of %d bytes written, %llu pages read\n",
	       (unsigned long long)written, LINE, (unsigned long long)pages);
	return 0;
}
