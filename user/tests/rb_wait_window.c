// SPDX-License-Identifier: GPL-2.0
/*
 * ioctl(fd, 0) on trace_pipe_raw wakes the file's waiters: a blocking
 * GET_READER or splice() on that file returns (libtracefs's
 * tracefs_cpu_stop() relies on it to stop a reader). The waiter loads
 * the file's wait_index before it waits and is woken by its change; a
 * wake-up that comes after that load and before the waiter is on the
 * wait queue finds no one to wake, and the waiter must still see that
 * it came, or it sleeps until data comes, which may be never.
 *
 * A thread waits on an empty buffer of an instance. user/kmod/rb_waitwin.ko
 * holds it at the wait's first look at the buffer, before it is queued;
 * meanwhile the test calls ioctl(fd, 0) and lets it go. The wait must
 * end within a second. A waiter still asleep is then woken by turning
 * tracing off, so that the test ends either way.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kmod_common.h"
#include "ms_clock.h"
#include "rb_seq.h"

#define INSTANCE	"rb_wait_window"
#define MODULE_NAME	"rb_waitwin"
#define MODULE_PATH	"/lib/modules/ftmmap/rb_waitwin.ko"
#define BUFFER_KB	"16"
#define CPU		0
#define WAITER_CPU	1
#define HOLD_WAIT_MS	5000	/* for the waiter to reach the module */
#define WAKE_BOUND_MS	1000	/* for the wait to end once let go */

RB_SEQ_FIXTURE(2)

struct waiter {
	int		fd;
	bool		splice;
	pid_t		tid;		/* set by the thread */
	int		ret, err;	/* what its call returned */
	bool		go, cancel, done;
};

static void *waiter_thread(void *arg)
{
	struct waiter *w = arg;
	cpu_set_t set;
	int pfd[2];

	CPU_ZERO(&set);
	CPU_SET(WAITER_CPU, &set);
	sched_setaffinity(0, sizeof(set), &set);
	__atomic_store_n(&w->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&w->go, __ATOMIC_ACQUIRE))
		usleep(1000);
	if (w->cancel)
		return NULL;

	if (w->splice) {
		if (pipe(pfd)) {
			w->ret = -1;
			w->err = errno;
		} else {
			w->ret = splice(w->fd, NULL, pfd[1], NULL,
					sysconf(_SC_PAGESIZE), 0);
			w->err = errno;
			close(pfd[0]);
			close(pfd[1]);
		}
	} else {
		w->ret = ioctl(w->fd, TRACE_MMAP_IOCTL_GET_READER);
		w->err = errno;
	}
	__atomic_store_n(&w->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* The waiter blocks in splice() or GET_READER at @percent; the test wakes it */
static void wake_before_queued(struct __test_metadata *_metadata,
			       FIXTURE_DATA(rb) *self, bool splice,
			       const char *percent)
{
	struct waiter w = { .fd = self->b.fd, .splice = splice };
	long long t0, waited = -1;
	char params[64];
	pthread_t thread;
	int err, i;

	ASSERT_LT(0, tracefs_instance_file_write(self->b.inst, "buffer_percent", percent));
	/* A blocking file: the mapping's was opened non-blocking */
	ASSERT_EQ(0, fcntl(self->b.fd, F_SETFL, 0));

	ASSERT_EQ(0, pthread_create(&thread, NULL, waiter_thread, &w));
	while (!__atomic_load_n(&w.tid, __ATOMIC_ACQUIRE))
		usleep(1000);
	snprintf(params, sizeof(params), "pid=%d", w.tid);
	err = rb_seq_load(&self->b, params);
	if (err) {
		w.cancel = true;
		__atomic_store_n(&w.go, true, __ATOMIC_RELEASE);
		pthread_join(thread, NULL);
		if (err == -EOPNOTSUPP)
			SKIP(return, "rb_waitwin: no kprobes here");
		ASSERT_EQ(0, err) TH_LOG("loading rb_waitwin: %s", strerror(-err));
	}
	__atomic_store_n(&w.go, true, __ATOMIC_RELEASE);

	for (i = 0; i < HOLD_WAIT_MS && kmod_param(MODULE_NAME, "held") != 1; i++)
		usleep(1000);
	EXPECT_EQ(1, kmod_param(MODULE_NAME, "held"));

	/* What tracefs_cpu_stop() does, while the waiter is not queued */
	EXPECT_EQ(0, ioctl(self->b.fd, 0));
	EXPECT_EQ(0, kmod_param_write(MODULE_NAME, "release", "Y"));
	t0 = now_ms();
	while (!__atomic_load_n(&w.done, __ATOMIC_ACQUIRE) && now_ms() - t0 < WAKE_BOUND_MS)
		usleep(1000);
	if (__atomic_load_n(&w.done, __ATOMIC_ACQUIRE))
		waited = now_ms() - t0;

	/* Still asleep: tracing off wakes it, so that the test ends */
	if (waited < 0)
		tracefs_instance_file_write(self->b.inst, "tracing_on", "0");
	pthread_join(thread, NULL);
	tracefs_instance_file_write(self->b.inst, "tracing_on", "1");

	EXPECT_EQ(2, kmod_param(MODULE_NAME, "held"));
	ASSERT_LE(0, waited) {
		TH_LOG("%s still asleep %d ms after ioctl(0) woke the waiters "
		       "(its wake-up came before it was queued)",
		       splice ? "splice()" : "GET_READER", WAKE_BOUND_MS);
	}
	TH_LOG("%s returned %d ms after it was let go", splice ? "splice()" : "GET_READER",
	       (int)waited);
	if (splice) {
		/* Nothing spliced: the buffer is empty */
		EXPECT_EQ(0, w.ret) TH_LOG("splice(): %s", strerror(w.err));
	} else {
		EXPECT_EQ(0, w.ret) TH_LOG("GET_READER: %s", strerror(w.err));
		/* It returned for the wake-up, not for data */
		EXPECT_EQ(0, self->b.meta->entries);
	}
}

TEST_F(rb, get_reader_woken_before_queued)
{
	wake_before_queued(_metadata, self, false, "0");
}

TEST_F(rb, get_reader_woken_before_queued_full)
{
	wake_before_queued(_metadata, self, false, "50");
}

TEST_F(rb, splice_woken_before_queued)
{
	wake_before_queued(_metadata, self, true, "0");
}

TEST_HARNESS_MAIN
