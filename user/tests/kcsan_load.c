// SPDX-License-Identifier: GPL-2.0
/*
 * The ring-buffer load of the KCSAN stage (scripts/kcsan.sh) that runs the
 * same on the unpatched base kernel and on the series: nothing here maps a
 * buffer. Its data races on the base are the known ones
 * (config/kcsan-known-races); on the series, the mapping tests run beside
 * it and any other race is the series'.
 *
 * For KCSAN_LOAD_MS (default 20000) milliseconds, in an instance with a
 * small overwriting buffer and the sched events on: a thread per CPU,
 * pinned there, writes trace_marker lines; a thread per CPU poll()s and
 * read()s that CPU's trace_pipe_raw (not pinned: readers and writers of one
 * buffer run on different CPUs); a thread reads every CPU's stats
 * without a pause (each read takes the reader lock and looks at the pages
 * the writers move on: the oldest event's time stamp); a thread resizes
 * the buffer between two sizes (a resize disables recording and rewires
 * the pages while the readers are blocked) and turns an event on and off
 * (which starts and stops the recording of comms).
 *
 * Listed as ?tests/kcsan_load: it runs only when named (ftmmap.only=).
 * It prints one TAP result: the load ran, with what it wrote and read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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
#define INSTANCE	TRACEFS "/instances/kcsan_load"
#define MAX_CPUS	64

static atomic_bool stop;
static atomic_ullong written, read_bytes, resizes, stats_reads, toggles;
static int nr_cpus;

static void *writer(void *arg)
{
	long cpu = (long)arg;
	unsigned long seq = 0;
	char line[2048];
	int fd, len;

	if (pin(cpu))
		return NULL;
	fd = open(INSTANCE "/trace_marker", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	while (!atomic_load(&stop)) {
		/*
		 * 20 to 40 characters: pages end anywhere. One in four
		 * carries 400 to 960 more (within the 1 KiB that the base
		 * kernel takes in one write): the writer moves to the next
		 * page every 20 markers or so, not every 130, and readers
		 * and stats race with the move more often.
		 */
		len = snprintf(line, sizeof(line), "kcsan cpu=%ld seq=%lu%.*s", cpu, seq,
			       (int)(seq % 21), "....................");
		if (seq % 4 == 3) {
			memset(line + len, '+', 400 + seq % 561);
			len += 400 + seq % 561;
		}
		if (write(fd, line, len) == len)
			atomic_fetch_add(&written, 1);
		seq++;
	}
	close(fd);
	return NULL;
}

static void *reader(void *arg)
{
	long cpu = (long)arg;
	char path[128], *buf;
	struct pollfd pfd;
	ssize_t n;
	int fd;

	buf = malloc(sysconf(_SC_PAGESIZE));
	snprintf(path, sizeof(path), INSTANCE "/per_cpu/cpu%ld/trace_pipe_raw", cpu);
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || !buf) {
		free(buf);
		return NULL;
	}
	pfd.fd = fd;
	pfd.events = POLLIN;
	/*
	 * poll() before every read(), as a consumer that waits does: each
	 * call sets the buffer's waiters_pending, which the writers read.
	 */
	while (!atomic_load(&stop)) {
		if (poll(&pfd, 1, 10) < 0 && errno != EINTR)
			break;
		n = read(fd, buf, sysconf(_SC_PAGESIZE));
		if (n > 0)
			atomic_fetch_add(&read_bytes, n);
		else if (n < 0 && errno != EAGAIN && errno != EINTR)
			break;
	}
	close(fd);
	free(buf);
	return NULL;
}

static void *stats(void *arg)
{
	char path[128], buf[1024];
	int cpu, fd;

	(void)arg;
	while (!atomic_load(&stop)) {
		for (cpu = 0; cpu < nr_cpus; cpu++) {
			snprintf(path, sizeof(path), INSTANCE "/per_cpu/cpu%d/stats", cpu);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
				atomic_fetch_add(&stats_reads, 1);
			if (fd >= 0)
				close(fd);
		}
	}
	return NULL;
}

static void *monitor(void *arg)
{
	static const char * const sizes[] = { "16", "32" };
	struct timespec ts = { 0, 100 * 1000 * 1000 };
	unsigned long round = 0;

	(void)arg;
	while (!atomic_load(&stop)) {
		if (++round % 5 == 0 &&
		    !write_file(INSTANCE "/buffer_size_kb", sizes[round / 5 % 2]))
			atomic_fetch_add(&resizes, 1);
		/* An event turned on and off starts and stops comm recording */
		if (!write_file(INSTANCE "/events/sched/sched_wakeup/enable", round % 2 ? "0" : "1"))
			atomic_fetch_add(&toggles, 1);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int main(void)
{
	pthread_t w[MAX_CPUS], r[MAX_CPUS], m, s;
	long ms = load_ms("KCSAN_LOAD_MS", 20000);
	struct timespec ts;
	long cpu;

	printf("TAP version 13\n1..1\n");
	nr_cpus = online_cpus(MAX_CPUS);
	rmdir(INSTANCE);
	if (mkdir(INSTANCE, 0755) ||
	    write_file(INSTANCE "/buffer_size_kb", "16") ||
	    write_file(INSTANCE "/events/sched/enable", "1")) {
		printf("not ok 1 - cannot set up %s: %s\n", INSTANCE, strerror(errno));
		return 1;
	}
	printf("# %d CPUs, %ld ms\n", nr_cpus, ms);
	fflush(stdout);
	for (cpu = 0; cpu < nr_cpus; cpu++) {
		pthread_create(&w[cpu], NULL, writer, (void *)cpu);
		pthread_create(&r[cpu], NULL, reader, (void *)cpu);
	}
	pthread_create(&m, NULL, monitor, NULL);
	pthread_create(&s, NULL, stats, NULL);
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = ms % 1000 * 1000000L;
	nanosleep(&ts, NULL);
	atomic_store(&stop, true);
	for (cpu = 0; cpu < nr_cpus; cpu++) {
		pthread_join(w[cpu], NULL);
		pthread_join(r[cpu], NULL);
	}
	pthread_join(m, NULL);
	pthread_join(s, NULL);
	write_file(INSTANCE "/events/enable", "0");
	rmdir(INSTANCE);

	if (!written || !read_bytes || !stats_reads || !resizes || !toggles) {
		printf("not ok 1 - the load did not run: %llu markers written, %llu bytes read, %llu stats reads, %llu resizes\n",
		       (unsigned long long)written, (unsigned long long)read_bytes,
		       (unsigned long long)stats_reads, (unsigned long long)resizes);
		return 1;
	}
	printf("ok 1 - %llu markers written, %llu bytes read, %llu stats reads, %llu resizes, %llu event toggles\n",
	       (unsigned long long)written, (unsigned long long)read_bytes,
	       (unsigned long long)stats_reads, (unsigned long long)resizes,
	       (unsigned long long)toggles);
	return 0;
}
