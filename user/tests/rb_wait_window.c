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
 * A thread waits on an empty buffer of an instance; user/kmod/rb_waitwin.ko
 * holds it where a wake-up finds no one to wake, and the test calls
 * ioctl(fd, 0) there and lets it go. The wait must end within a second.
 * Where it is held:
 *
 * - at the wait's first look at the buffer, after the call loaded
 *   wait_index and before it is queued;
 * - as the call begins (GET_READER's check of the mapping, splice()'s
 *   look at the buffer), before it may have loaded wait_index: the wake-up
 *   is for this call as well;
 * - at buffer_percent 50, twice: before it is queued, while another
 *   file's wake-up clears the flag that makes a wake-up's work wake the
 *   full waiters; then queued, after its condition was checked and before
 *   it sets the flag again, while its own file is woken.
 *
 * Writing 0 to tracing_on wakes the waiters too, and must end the wait
 * as ioctl(0) does: the same holds are made with it instead.
 *
 * A waiter still asleep is then interrupted by a signal, so that the test
 * ends either way.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kmod_common.h"
#include "rb_seq.h"
#include "task_state.h"

#define INSTANCE	"rb_wait_window"
#define MODULE_NAME	"rb_waitwin"
#define MODULE_PATH	"/lib/modules/ftmmap/rb_waitwin.ko"
#define BUFFER_KB	"16"
#define CPU		0
#define WAITER_CPU	1
#define HOLD_WAIT_MS	5000	/* for the waiter to reach the module */
#define WAKE_BOUND_MS	1000	/* for the wait to end once let go */
#define WORK_MS		20	/* for a wake-up's irq_work to run */
#define RB_XSTR(x)	#x
#define RB_STR(x)	RB_XSTR(x)

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

static void on_signal(int sig)
{
}

/* How the test wakes the waiter */
enum wake_by { BY_IOCTL, BY_TRACING_OFF };

/*
 * Wait until rb_waitwin's @held is @want: whether it got there. It spins,
 * off WAITER_CPU (rb_seq_keep_off()).
 */
static bool wait_held(int want)
{
	long long t0 = now_ms();

	while (kmod_param(MODULE_NAME, "held") != want && now_ms() - t0 < HOLD_WAIT_MS)
		sched_yield();
	return kmod_param(MODULE_NAME, "held") == want;
}

/* Load rb_waitwin for @tid, at the first of @at (NULL-ended) the kernel has */
static int load_at(struct rb_seq *b, pid_t tid, const char *const *at, bool queued)
{
	char params[128];
	int err;

	if (!at) {
		snprintf(params, sizeof(params), "pid=%d", tid);
		return rb_seq_load(b, params);
	}
	for (err = -ENOENT; *at && err == -ENOENT; at++) {
		snprintf(params, sizeof(params), "pid=%d at=%s queued=%d", tid, *at, queued);
		err = rb_seq_load(b, params);
	}
	return err;
}

/*
 * The waiter blocks in splice() or GET_READER at @percent; rb_waitwin
 * holds it at @at (see the module; NULL: the wait function). The test
 * wakes it (@by) while it is held, or, with @queued, calls ioctl(0) on
 * another file of the CPU at the first hold and wakes it at the second.
 * The wait must end within WAKE_BOUND_MS of the last release.
 */
static void wake_held_waiter(struct __test_metadata *_metadata,
			     FIXTURE_DATA(rb) *self, bool splice,
			     const char *percent, const char *const *at,
			     bool queued, enum wake_by by)
{
	struct waiter w = { .fd = self->b.fd, .splice = splice };
	struct sigaction sa = { .sa_handler = on_signal };
	long long waited;
	int err, other = -1;
	pthread_t thread;
	char *path;

	/* No SA_RESTART: the signal ends a wait that nothing else ended */
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));

	ASSERT_LT(0, tracefs_instance_file_write(self->b.inst, "buffer_percent", percent));
	/* A blocking file: the mapping's was opened non-blocking */
	ASSERT_EQ(0, fcntl(self->b.fd, F_SETFL, 0));
	/* The hold keeps WAITER_CPU's interrupts off: see rb_seq_keep_off() */
	ASSERT_EQ(0, rb_seq_keep_off(WAITER_CPU));
	if (queued) {
		path = tracefs_instance_get_file(self->b.inst, "per_cpu/cpu" RB_STR(CPU)
						 "/trace_pipe_raw");
		ASSERT_NE(NULL, path);
		other = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		tracefs_put_tracing_file(path);
		ASSERT_LE(0, other) TH_LOG("a second trace_pipe_raw: %s", strerror(errno));
	}

	ASSERT_EQ(0, pthread_create(&thread, NULL, waiter_thread, &w));
	while (!__atomic_load_n(&w.tid, __ATOMIC_ACQUIRE))
		usleep(1000);
	err = load_at(&self->b, w.tid, at, queued);
	if (err) {
		w.cancel = true;
		__atomic_store_n(&w.go, true, __ATOMIC_RELEASE);
		pthread_join(thread, NULL);
		if (other >= 0)
			close(other);
		if (err == -EOPNOTSUPP)
			SKIP(return, "rb_waitwin: no kprobes here");
		ASSERT_EQ(0, err) TH_LOG("loading rb_waitwin: %s", strerror(-err));
	}
	__atomic_store_n(&w.go, true, __ATOMIC_RELEASE);

	EXPECT_TRUE(wait_held(1));
	if (queued) {
		/*
		 * Its first check flagged the full waiter; another file's
		 * wake-up clears the flag, and finds no one to wake.
		 */
		EXPECT_EQ(0, ioctl(other, 0));
		spin_ms(WORK_MS);		/* the wake-up's irq_work */
		EXPECT_EQ(0, kmod_param_write(MODULE_NAME, "release", "Y"));
		/* Queued, its condition checked: before it flags itself again */
		EXPECT_TRUE(wait_held(3));
	}

	if (by == BY_IOCTL) {
		/* What tracefs_cpu_stop() does */
		EXPECT_EQ(0, ioctl(self->b.fd, 0));
	} else {
		EXPECT_LT(0, tracefs_instance_file_write(self->b.inst, "tracing_on", "0"));
	}
	spin_ms(WORK_MS);
	EXPECT_EQ(0, kmod_param_write(MODULE_NAME, "release", "Y"));
	waited = thread_join_within(thread, &w.done, WAKE_BOUND_MS);
	tracefs_instance_file_write(self->b.inst, "tracing_on", "1");
	if (other >= 0)
		close(other);

	EXPECT_EQ(queued ? 4 : 2, kmod_param(MODULE_NAME, "held"));
	/* A bool: Y or N */
	EXPECT_EQ(0, kmod_param_bool(MODULE_NAME, "timed_out"));
	ASSERT_LE(0, waited) {
		TH_LOG("%s still asleep %d ms after %s woke the waiters "
		       "(its wake-up found no one to wake)",
		       splice ? "splice()" : "GET_READER", WAKE_BOUND_MS,
		       by == BY_IOCTL ? "ioctl(0)" : "tracing off");
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

/* Held after it loaded wait_index, before it is queued */
TEST_F(rb, get_reader_woken_before_queued)
{
	wake_held_waiter(_metadata, self, false, "0", NULL, false, BY_IOCTL);
}

TEST_F(rb, get_reader_woken_before_queued_full)
{
	wake_held_waiter(_metadata, self, false, "50", NULL, false, BY_IOCTL);
}

TEST_F(rb, splice_woken_before_queued)
{
	wake_held_waiter(_metadata, self, true, "0", NULL, false, BY_IOCTL);
}

/*
 * Held when the call began, before it may have loaded wait_index: a
 * wake-up from then on is for this call (tracefs_cpu_stop() makes the
 * file non-blocking after its ioctl(0), too late for a call that
 * already looked).
 */
TEST_F(rb, get_reader_woken_as_it_begins)
{
	static const char *const at[] = { "ring_buffer_is_mapped", NULL };

	wake_held_waiter(_metadata, self, false, "0", at, false, BY_IOCTL);
}

TEST_F(rb, splice_woken_as_it_reads)
{
	static const char *const at[] = { "ring_buffer_entries_cpu", NULL };

	wake_held_waiter(_metadata, self, true, "0", at, false, BY_IOCTL);
}

/*
 * At buffer_percent 50 the waiter is on the full waiters' queue, which a
 * wake-up's work wakes only when a waiter flagged itself there or the
 * waker asked for it. Another file's wake-up cleared the flag before the
 * waiter was queued, and the waiter's own comes after its condition was
 * checked with the task queued, before it flags itself again.
 */
TEST_F(rb, get_reader_woken_full_flag_cleared)
{
	/* The condition: the series' pipe_woken(), on 6.1 and on 6.12 */
	static const char *const at[] = { "pipe_woken", NULL };

	wake_held_waiter(_metadata, self, false, "50", at, true, BY_IOCTL);
}

TEST_F(rb, splice_woken_full_flag_cleared)
{
	/*
	 * wait_pipe_cond(), which calls pipe_woken() (maybe inlined), where
	 * splice() still waits with it (stock 6.12), or pipe_woken() (both
	 * series)
	 */
	static const char *const at[] = { "wait_pipe_cond", "pipe_woken", NULL };

	wake_held_waiter(_metadata, self, true, "50", at, true, BY_IOCTL);
}

/* Tracing turned off: no data comes, and the waiters are woken to say so */
TEST_F(rb, get_reader_woken_by_tracing_off)
{
	wake_held_waiter(_metadata, self, false, "0", NULL, false, BY_TRACING_OFF);
}

TEST_F(rb, splice_woken_by_tracing_off)
{
	wake_held_waiter(_metadata, self, true, "0", NULL, false, BY_TRACING_OFF);
}

TEST_F(rb, splice_woken_by_tracing_off_as_it_reads)
{
	static const char *const at[] = { "ring_buffer_entries_cpu", NULL };

	wake_held_waiter(_metadata, self, true, "0", at, false, BY_TRACING_OFF);
}

TEST_HARNESS_MAIN
