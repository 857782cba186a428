// SPDX-License-Identifier: GPL-2.0
/*
 * A waiter that starts on an empty buffer is woken at its own watermark.
 *
 * A full waiter (poll(), splice() or a blocking GET_READER of
 * trace_pipe_raw at a buffer_percent above 0) lowers the CPU buffer's
 * shortest_full to its watermark, and a writer that touches a new page
 * wakes the waiters once the buffer is filled to shortest_full. Only a
 * wakeup resets it. Without 6.1 patch 44 (6.12 patch 37), a waiter on
 * an empty buffer recorded nothing: after buffer_percent was lowered, it
 * was woken at the watermark of the waiters gone before, here 100, and
 * slept on in a buffer filled well past its own.
 *
 * The test polls once at 100 with an event in the buffer (the watermark
 * is recorded, the poll times out), drains the buffer, sets
 * buffer_percent to 50 and polls again, while a thread fills the buffer to
 * about 70%: the poll must return readable before its timeout (at the
 * timeout, poll() looks at the file once more and finds it readable).
 *
 * A waiter measures the buffer, then sets its flag: a writer that fills
 * the buffer past the watermark in between, with a waiter gone before
 * still pending at a higher watermark, tests the buffer against that one
 * and wakes no one. Without 6.1 patch 45 (6.12 patch 38), a poll()er then
 * slept with the buffer past its watermark until the writer touched
 * another page; a writer that stopped there never woke it. The module
 * rb_recheck is that writer, in a kretprobe on
 * ring_buffer_nr_dirty_pages() (the waiter's measure), after poll()'s
 * measure: the poll() must return before its timeout. A blocking
 * TRACE_MMAP_IOCTL_GET_READER waits in wait_event(), which measures once
 * before it queues the task and once after: with the writer after the
 * first, it must return at once too, with or without patch 45, as the
 * second measure sees the buffer filled.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <linux/trace_mmap.h>
#include <tracefs/tracefs.h>

#include "kselftest_harness.h"
#include "kmod_common.h"
#include "ms_clock.h"
#include "rb_seq.h"

#define INSTANCE	"rb_watermark"
#define BUFFER_KB	64
#define CPU		0
#define POLL_MS		5000
#define MODULE_NAME	"rb_recheck"
#define MODULE_PATH	"/lib/modules/ftmmap/rb_recheck.ko"
/* What rb_recheck fills the buffer to: past 50%, short of 100% */
#define RECHECK_BYTES	(BUFFER_KB * 1024 * 6 / 10)

/* The instance and its CPU's trace_pipe_raw, not mapped; the module */
FIXTURE(wm) {
	struct rb_seq	b;
};

FIXTURE_SETUP(wm)
{
	char path[64];
	cpu_set_t set;

	rb_seq_init(&self->b, MODULE_PATH, MODULE_NAME);
	CPU_ZERO(&set);
	CPU_SET(CPU, &set);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(set), &set));
	self->b.inst = tracefs_instance_create(INSTANCE);
	ASSERT_NE(NULL, self->b.inst);
	snprintf(path, sizeof(path), "%d", BUFFER_KB);
	ASSERT_LT(0, tracefs_instance_file_write(self->b.inst, "buffer_size_kb", path));
	snprintf(path, sizeof(path), "per_cpu/cpu%d/trace_pipe_raw", CPU);
	self->b.fd = tracefs_instance_file_open(self->b.inst, path, O_RDONLY | O_NONBLOCK);
	ASSERT_LE(0, self->b.fd);
}

FIXTURE_TEARDOWN(wm)
{
	rb_seq_close(&self->b);
}

/* "bytes:" of the CPU's stats: what the buffer holds, -1 if unreadable */
static long long held_bytes(struct tracefs_instance *inst)
{
	return rb_cpu_stat(inst, CPU, "bytes: ");
}

/* Whether the test's main thread sleeps (in its poll()), within 2 s */
static bool main_thread_sleeps(void)
{
	char path[64], buf[256], *p;
	int i, fd, n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", getpid());
	for (i = 0; i < 200; i++) {
		fd = open(path, O_RDONLY);
		if (fd < 0)
			return false;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			return false;
		buf[n] = '\0';
		/* The state follows the command's closing parenthesis */
		p = strrchr(buf, ')');
		if (p && p[1] == ' ' && p[2] == 'S')
			return true;
		usleep(10000);
	}
	return false;
}

struct filler {
	struct tracefs_instance	*inst;
	long long		target;
	int			err;
};

/*
 * A thread, not a child: a child's exit closes its copy of the
 * trace_pipe_raw descriptor, and the flush of that file wakes the waiters.
 * Markers until the buffer holds @target bytes.
 */
static void *fill(void *arg)
{
	static const char text[] =
		"rb_watermark: a marker of about a hundred bytes, to fill the buffer to 70%";
	struct filler *f = arg;
	int fd, n;

	f->err = 1;
	fd = tracefs_instance_file_open(f->inst, "trace_marker", O_WRONLY);
	if (fd < 0)
		return NULL;
	/* Only once the poll() sleeps, on an empty buffer */
	if (!main_thread_sleeps()) {
		close(fd);
		return NULL;
	}
	for (n = 0; n < 100000; n++) {
		if (held_bytes(f->inst) >= f->target) {
			f->err = 0;
			break;
		}
		if (write(fd, text, sizeof(text) - 1) < 0)
			break;
	}
	close(fd);
	return NULL;
}

/*
 * A full waiter gone with the watermark 100 recorded and its flag still
 * set: a poll() at buffer_percent 100 that times out, with one event in
 * the buffer.
 */
static void leave_watermark_100(struct __test_metadata *_metadata,
				FIXTURE_DATA(wm) *self)
{
	struct pollfd pfd = { .fd = self->b.fd, .events = POLLIN };

	ASSERT_LT(0, tracefs_instance_file_write(self->b.inst, "trace_marker", "x"));
	ASSERT_LT(0, tracefs_instance_file_write(self->b.inst, "buffer_percent", "100"));
	ASSERT_EQ(0, poll(&pfd, 1, 0));
}

TEST_F(wm, waiter_on_an_empty_buffer_wakes_at_its_watermark)
{
	long long size = BUFFER_KB * 1024LL, held;
	struct pollfd pfd = { .fd = self->b.fd, .events = POLLIN };
	char page[4096];
	long long start;
	struct filler f;
	pthread_t thread;
	long long ms;
	int ret;

	leave_watermark_100(_metadata, self);

	/* Drain: an empty buffer */
	while (read(self->b.fd, page, sizeof(page)) > 0)
		;
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, held_bytes(self->b.inst));

	ASSERT_LT(0, tracefs_instance_file_write(self->b.inst, "buffer_percent", "50"));
	f.inst = self->b.inst;
	f.target = size * 7 / 10;
	ASSERT_EQ(0, pthread_create(&thread, NULL, fill, &f));
	start = now_ms();
	ret = poll(&pfd, 1, POLL_MS);
	ms = now_ms() - start;
	ASSERT_EQ(0, pthread_join(thread, NULL));
	ASSERT_EQ(0, f.err) TH_LOG("the thread could not fill the buffer");
	held = held_bytes(self->b.inst);
	TH_LOG("poll() at buffer_percent 50: %d (revents %#x) after %lld ms; the buffer holds %lld of %lld bytes",
	       ret, pfd.revents, ms, held, size);
	ASSERT_GT(size * 9 / 10, held) TH_LOG("filled too far: the old watermark was reached");
	EXPECT_EQ(1, ret);
	EXPECT_TRUE(pfd.revents & POLLIN);
	/* poll() looks once more when it times out: that is not a wakeup */
	EXPECT_GT(POLL_MS - 1000, ms)
		TH_LOG("not woken at 50%%: the writer tested the buffer against the watermark of the waiter gone before");
}

/*
 * leave_watermark_100(), and buffer_percent lowered to 50. Then
 * rb_recheck, to fill the buffer to RECHECK_BYTES (60%) after the @nth
 * measure of this task: NULL, or why the test skips.
 */
static const char *load_recheck(struct __test_metadata *_metadata,
				FIXTURE_DATA(wm) *self, int nth)
{
	char params[160];
	int err;

	leave_watermark_100(_metadata, self);
	ASSERT_LT(0, tracefs_instance_file_write(self->b.inst, "buffer_percent", "50"));

	if (self->b.mod_fd < 0)
		return "no " MODULE_PATH " (a kernel without loadable modules)";
	snprintf(params, sizeof(params), "instance=%s pid=%d cpu=%d nth=%d bytes=%d",
		 INSTANCE, (int)syscall(SYS_gettid), CPU, nth, RECHECK_BYTES);
	err = rb_seq_load(&self->b, params);
	if (err == -EOPNOTSUPP)
		return MODULE_NAME ": no kretprobes in this kernel";
	ASSERT_EQ(0, err) TH_LOG("%s: %s", MODULE_NAME, strerror(-err));
	return NULL;
}

/* What the module did, and that it did it where the waiter measured */
static void check_recheck(struct __test_metadata *_metadata, int nth)
{
	long long held = kmod_param(MODULE_NAME, "held");

	TH_LOG("measure %d of %lld: %lld dirty pages, then %lld events, %lld bytes held",
	       nth, kmod_param(MODULE_NAME, "calls"), kmod_param(MODULE_NAME, "measured"),
	       kmod_param(MODULE_NAME, "written"), held);
	ASSERT_LE(nth, kmod_param(MODULE_NAME, "calls"))
		TH_LOG("the waiter did not measure the buffer in ring_buffer_nr_dirty_pages()");
	ASSERT_EQ(0, kmod_param(MODULE_NAME, "missed"))
		TH_LOG("the kretprobe missed returns: the handler may have acted at a later measure");
	ASSERT_EQ(0, kmod_param(MODULE_NAME, "write_err"));
	ASSERT_LT(0, kmod_param(MODULE_NAME, "written"));
	ASSERT_LE(RECHECK_BYTES, held);
	ASSERT_GT(BUFFER_KB * 1024 * 9 / 10, held) TH_LOG("filled up to the old watermark");
}

TEST_F(wm, poll_waiter_filled_past_while_it_measures)
{
	struct pollfd pfd = { .fd = self->b.fd, .events = POLLIN };
	long long start;
	const char *skip;
	long long ms;
	int ret;

	skip = load_recheck(_metadata, self, 1);
	if (skip)
		SKIP(return, "%s", skip);
	start = now_ms();
	ret = poll(&pfd, 1, POLL_MS);
	ms = now_ms() - start;
	check_recheck(_metadata, 1);
	TH_LOG("poll() at buffer_percent 50: %d (revents %#x) after %lld ms", ret, pfd.revents, ms);
	EXPECT_EQ(1, ret);
	/* poll() looks once more when it times out: that is not a wakeup */
	EXPECT_GT(POLL_MS - 1000, ms)
		TH_LOG("the waiter slept in a buffer filled past its watermark while it measured it");
}

static void on_alarm(int sig)
{
}

TEST_F(wm, get_reader_waiter_filled_past_once_queued)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	long page = sysconf(_SC_PAGESIZE);
	long long start;
	const char *skip;
	long long ms;
	void *meta;
	int ret;

	/* Mapped, and blocking: GET_READER waits for buffer_percent */
	meta = mmap(NULL, page, PROT_READ, MAP_SHARED, self->b.fd, 0);
	ASSERT_NE(MAP_FAILED, meta);
	self->b.meta = meta;		/* rb_seq_close() unmaps it */
	self->b.len = page;
	ASSERT_EQ(0, fcntl(self->b.fd, F_SETFL, 0));
	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));

	skip = load_recheck(_metadata, self, 1);
	if (skip)
		SKIP(return, "%s", skip);
	start = now_ms();
	alarm(POLL_MS / 1000);
	ret = ioctl(self->b.fd, TRACE_MMAP_IOCTL_GET_READER);
	alarm(0);
	ms = now_ms() - start;
	check_recheck(_metadata, 1);
	TH_LOG("blocking GET_READER at buffer_percent 50: %d (%s) after %lld ms",
	       ret, ret ? strerror(errno) : "ok", ms);
	EXPECT_EQ(0, ret) TH_LOG("the waiter slept in a buffer filled past its watermark while it measured it");
	EXPECT_GT(POLL_MS - 1000, ms);
}

TEST_HARNESS_MAIN
