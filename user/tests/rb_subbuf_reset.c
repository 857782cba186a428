// SPDX-License-Identifier: GPL-2.0
/*
 * A change of buffer_subbuf_size_kb replaces every page of the buffer with
 * new, empty ones: the counters of per_cpu/cpuN/stats and of the meta-page
 * must start again from zero, as after a reset, or they describe events
 * that are gone (6.12 and mainline kept them: 6.12 series patch 41).
 *
 * The test writes markers into an instance, with one of them read, changes
 * the sub-buffer size, and checks the CPU's stats, then the meta-page of a
 * mapping made afterwards and what GET_READER hands over; then the same
 * after markers written at the new size, which must be counted from zero.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "kselftest_harness.h"
#include "rb_seq.h"

#define INSTANCE	"rb_subbuf_reset"
#define BUFFER_KB	"64"
#define CPU		0
#define NR_MARKERS	100

static int write_markers(struct rb_seq *b, int n)
{
	int fd = tracefs_instance_file_open(b->inst, "trace_marker", O_WRONLY | O_CLOEXEC);
	int i, ret = 0;

	if (fd < 0)
		return -errno;
	for (i = 0; i < n && !ret; i++)
		if (dprintf(fd, "seq=%06d", i) <= 0)
			ret = -errno;
	close(fd);
	return ret;
}

static long long stat_of(struct rb_seq *b, const char *key)
{
	return rb_cpu_stat(b->inst, CPU, key);
}

FIXTURE(rb) {
	struct rb_seq	b;
};

FIXTURE_SETUP(rb)
{
	int err;

	rb_seq_init(&self->b, "/nonexistent", NULL);
	err = rb_seq_instance(&self->b, INSTANCE, BUFFER_KB, CPU);
	ASSERT_EQ(0, err) TH_LOG("instance: %s", strerror(-err));
	ASSERT_LT(0, tracefs_instance_file_write(self->b.inst, "buffer_subbuf_size_kb", "4"));
}

FIXTURE_TEARDOWN(rb)
{
	rb_seq_close(&self->b);
}

TEST_F(rb, counters_restart_after_subbuf_size_change)
{
	struct trace_buffer_meta *meta;
	char buf[8192];
	int fd, err;

	ASSERT_EQ(0, write_markers(&self->b, NR_MARKERS));
	/* Some of them read, so that "read events" is not 0 either */
	fd = tracefs_instance_file_open(self->b.inst, "per_cpu/cpu0/trace_pipe_raw",
					O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_LT(0, read(fd, buf, sizeof(buf)));
	close(fd);
	ASSERT_EQ(NR_MARKERS, stat_of(&self->b, "entries: ") + stat_of(&self->b, "read events: "));
	ASSERT_LT(0, stat_of(&self->b, "read events: "));

	ASSERT_LT(0, tracefs_instance_file_write(self->b.inst, "buffer_subbuf_size_kb", "8"));
	EXPECT_EQ(0, stat_of(&self->b, "entries: "));
	EXPECT_EQ(0, stat_of(&self->b, "overrun: "));
	EXPECT_EQ(0, stat_of(&self->b, "bytes: "));
	EXPECT_EQ(0, stat_of(&self->b, "read events: "));

	/* A mapping made now: nothing before it, nothing to hand over */
	err = rb_seq_map(&self->b);
	ASSERT_EQ(0, err) TH_LOG("mapping: %s", strerror(-err));
	meta = self->b.meta;
	ASSERT_EQ(8192, meta->subbuf_size);
	EXPECT_EQ(0, meta->entries);
	EXPECT_EQ(0, meta->overrun);
	EXPECT_EQ(0, meta->read);
	ASSERT_EQ(0, ioctl(self->b.fd, TRACE_MMAP_IOCTL_GET_READER));
	EXPECT_EQ(0, meta->reader.read);

	/* Markers at the new size are counted from zero */
	ASSERT_EQ(0, write_markers(&self->b, NR_MARKERS));
	ASSERT_EQ(0, ioctl(self->b.fd, TRACE_MMAP_IOCTL_GET_READER));
	EXPECT_EQ(NR_MARKERS, meta->entries);
	EXPECT_EQ(NR_MARKERS, meta->read);
	EXPECT_EQ(NR_MARKERS, stat_of(&self->b, "read events: "));
	EXPECT_EQ(0, stat_of(&self->b, "entries: "));
}

TEST_HARNESS_MAIN
