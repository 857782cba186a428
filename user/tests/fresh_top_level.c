// SPDX-License-Identifier: GPL-2.0
/*
 * The top level ring-buffer of a kernel that nothing traced with yet.
 *
 * The kernel allocates it small and expands it to buffer_size_kb at the
 * first use of tracing; its buffer_size_kb reads "N (expanded: M)" until
 * then. Opening trace_pipe_raw is not a use: it must not allocate the
 * buffer. A mapping keeps the buffer's size, so the first use while it is
 * mapped must go on without the expansion instead of failing with EBUSY,
 * and the first use after the unmap expands it.
 *
 * This needs a kernel booted without trace_event= (which expands the
 * buffer at boot): make check boots one for it alone. Elsewhere it is not
 * in the run list. Output is TAP.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include <linux/trace_mmap.h>

#define TRACEFS		"/sys/kernel/tracing"
#define NR_TESTS	7

static int test_nr;
static int failed;

static void result(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d ", ok ? "" : "not ", ++test_nr);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		failed++;
}

static int read_file(const char *rel, char *buf, size_t size)
{
	char path[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), TRACEFS "/%s", rel);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return n;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* 0 or -errno of the write */
static int write_file(const char *rel, const char *val)
{
	char path[256];
	int fd, ret = 0;

	snprintf(path, sizeof(path), TRACEFS "/%s", rel);
	fd = open(path, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static bool unexpanded(const char *size_kb)
{
	return strstr(size_kb, "(expanded: ") != NULL;
}

int main(void)
{
	char before[64], now[64];
	struct trace_buffer_meta *meta;
	long page = sysconf(_SC_PAGESIZE);
	int fd, ret;

	printf("TAP version 13\n1..%d\n", NR_TESTS);

	if (read_file("buffer_size_kb", before, sizeof(before)) ||
	    !unexpanded(before)) {
		printf("Bail out! buffer_size_kb is \"%s\": the top level buffer "
		       "was expanded before this test (boot without trace_event=)\n",
		       before);
		return 1;
	}
	printf("# buffer_size_kb: %s\n", before);

	fd = open(TRACEFS "/per_cpu/cpu0/trace_pipe_raw", O_RDONLY | O_NONBLOCK);
	if (fd < 0) {
		printf("Bail out! cannot open cpu0/trace_pipe_raw: %s\n", strerror(errno));
		return 1;
	}
	ret = read_file("buffer_size_kb", now, sizeof(now));
	result(!ret && !strcmp(now, before),
	       "opening trace_pipe_raw leaves buffer_size_kb as it was (now \"%s\")", now);

	meta = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	result(meta != MAP_FAILED, "the small buffer maps (%s)",
	       meta == MAP_FAILED ? strerror(errno) : "ok");
	if (meta == MAP_FAILED) {
		printf("Bail out! nothing mapped\n");
		return 1;
	}
	printf("# mapped: %u sub-buffers of %u bytes\n", meta->nr_subbufs,
	       meta->subbuf_size);

	/* First uses: a tracer set (nop patches no code), set_event written */
	ret = write_file("current_tracer", "nop");
	result(!ret, "setting a tracer while it is mapped works (%s)",
	       ret ? strerror(-ret) : "ok");
	ret = write_file("set_event", "\n");
	result(!ret, "writing set_event while it is mapped works (%s)",
	       ret ? strerror(-ret) : "ok");
	ret = read_file("buffer_size_kb", now, sizeof(now));
	result(!ret && !strcmp(now, before),
	       "a mapped buffer keeps its size (buffer_size_kb \"%s\")", now);

	munmap(meta, page);
	close(fd);

	/* The first use after the unmap expands it */
	ret = write_file("current_tracer", "nop");
	result(!ret, "setting a tracer after the unmap works (%s)",
	       ret ? strerror(-ret) : "ok");
	ret = read_file("buffer_size_kb", now, sizeof(now));
	/* Whole sub-buffers of data: a little more than asked for */
	result(!ret && !unexpanded(now) &&
	       atol(now) >= atol(strstr(before, "(expanded: ") + strlen("(expanded: ")),
	       "the first use after the unmap expands it (buffer_size_kb \"%s\")", now);

	return failed ? 1 : 0;
}
