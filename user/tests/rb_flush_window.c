// SPDX-License-Identifier: GPL-2.0
/*
 * Every wake-up of trace_pipe_raw's waiters counts. ->flush(), at each
 * close of a descriptor of the file, and ioctl(fd, 0) increment the
 * file's wait_index and wake the waiters; a blocking GET_READER ends its
 * wait when the index moved since it began. ->flush() takes no lock: a
 * close and an ioctl(0) at once must not both store the same new value,
 * or a GET_READER that began between the two stores sleeps on although
 * the second wake-up came after it began.
 *
 * A child process that shares the file (fork()) closes its descriptor on
 * CLOSER_CPU; user/kmod/rb_flushwin.ko holds it in ->flush() at the
 * instruction that stores wait_index (x86-64 only: an instruction
 * breakpoint). The test then calls ioctl(fd, 0), starts a blocking
 * GET_READER on WAITER_CPU and lets the child go: the GET_READER must
 * return within a second. Where the increment is a load, an add and a
 * store, the child was held with the old value loaded, and stores what
 * the ioctl(0) stored; where it is atomic, it was held before it.
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
#include <unistd.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kmod_common.h"
#include "rb_seq.h"
#include "task_state.h"

#define INSTANCE	"rb_flush_window"
#define MODULE_NAME	"rb_flushwin"
#define MODULE_PATH	"/lib/modules/ftmmap/rb_flushwin.ko"
#define BUFFER_KB	"16"
#define CPU		0
#define CLOSER_CPU	1
#define WAITER_CPU	2
#define FUNC		"tracing_buffers_flush"
#define HOLD_WAIT_MS	5000	/* for the child to reach the breakpoint */
#define ASLEEP_MS	2000	/* for the GET_READER to go to sleep */
#define WAKE_BOUND_MS	1000	/* for the wait to end once let go */
/* rb_flushwin's @form */
#define FORM_STORE		1
#define FORM_LOCKED		2
#define FORM_UNLOCKED_RMW	3

RB_SEQ_FIXTURE(3)

struct waiter {
	int		fd;
	pid_t		tid;		/* set by the thread */
	int		ret, err;	/* what its GET_READER returned */
	bool		done;
};

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *waiter_thread(void *arg)
{
	struct waiter *w = arg;

	pin(WAITER_CPU);
	__atomic_store_n(&w->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	w->ret = ioctl(w->fd, TRACE_MMAP_IOCTL_GET_READER);
	w->err = errno;
	__atomic_store_n(&w->done, true, __ATOMIC_RELEASE);
	return NULL;
}

static void on_signal(int sig)
{
}

/* Wait until rb_flushwin's @held is @want: whether it got there */
static bool wait_held(int want)
{
	int i;

	for (i = 0; i < HOLD_WAIT_MS && kmod_param(MODULE_NAME, "held") != want; i++)
		usleep(1000);
	return kmod_param(MODULE_NAME, "held") == want;
}

TEST_F(rb, get_reader_woken_by_a_close_during_ioctl)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct waiter w = { .fd = self->b.fd };
	unsigned long long func, size;
	long long waited;
	int go[2], err, status, form;
	pthread_t thread;
	char params[128];
	pid_t child;

	if (!kallsyms_range(FUNC, &func, &size))
		SKIP(return, "no " FUNC " in /proc/kallsyms");
	/* No SA_RESTART: the signal ends a wait that nothing else ended */
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_LT(0, tracefs_instance_file_write(self->b.inst, "buffer_percent", "0"));
	/* A blocking file: the mapping's was opened non-blocking */
	ASSERT_EQ(0, fcntl(self->b.fd, F_SETFL, 0));

	ASSERT_EQ(0, pipe(go));
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		char c;

		pin(CLOSER_CPU);
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		/* ->flush(): held at its store of wait_index */
		_exit(close(self->b.fd) ? 2 : 0);
	}
	close(go[0]);

	snprintf(params, sizeof(params), "pid=%d cpu=%d func=%llu size=%llu",
		 child, CLOSER_CPU, func, size);
	err = rb_seq_load(&self->b, params);
	if (err) {
		close(go[1]);
		waitpid(child, &status, 0);
		if (err == -EOPNOTSUPP)
			SKIP(return, "rb_flushwin: no instruction breakpoints here (x86-64 only)");
		if (err == -ENOENT)
			SKIP(return, "rb_flushwin: no store to wait_index at a register "
			     "plus its offset in " FUNC " (the compiler keeps the address)");
		ASSERT_EQ(0, err) TH_LOG("loading rb_flushwin: %s (see the kernel log)",
					 strerror(-err));
	}
	form = kmod_param(MODULE_NAME, "form");
	TH_LOG("breakpoint at " FUNC "+%lld, on %s", kmod_param(MODULE_NAME, "offset"),
	       form == FORM_STORE ? "a store" : form == FORM_LOCKED ? "a locked increment" :
	       "an unlocked read-modify-write");
	if (form == FORM_UNLOCKED_RMW) {
		close(go[1]);
		waitpid(child, &status, 0);
		SKIP(return, "the increment is one unlocked instruction here: no window to hold");
	}
	ASSERT_EQ(1, write(go[1], "g", 1));
	close(go[1]);
	ASSERT_TRUE(wait_held(1)) TH_LOG("the child's close never reached the breakpoint");

	/* What tracefs_cpu_stop() does, while the close is held */
	EXPECT_EQ(0, ioctl(self->b.fd, 0));

	/* A GET_READER that begins after that, and waits */
	ASSERT_EQ(0, pthread_create(&thread, NULL, waiter_thread, &w));
	while (!__atomic_load_n(&w.tid, __ATOMIC_ACQUIRE))
		usleep(1000);
	EXPECT_TRUE(task_sleeps(w.tid, ASLEEP_MS))
		TH_LOG("GET_READER did not go to sleep (returned: %d)",
		       __atomic_load_n(&w.done, __ATOMIC_ACQUIRE));
	EXPECT_FALSE(__atomic_load_n(&w.done, __ATOMIC_ACQUIRE))
		TH_LOG("GET_READER returned before the close went on: %d (%s)",
		       w.ret, strerror(w.err));

	EXPECT_EQ(0, kmod_param_write(MODULE_NAME, "release", "Y"));
	waited = thread_join_within(thread, &w.done, WAKE_BOUND_MS);
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("the child's close(): status %#x", status);

	EXPECT_EQ(2, kmod_param(MODULE_NAME, "held"));
	EXPECT_EQ(0, kmod_param(MODULE_NAME, "timed_out"));
	ASSERT_LE(0, waited) {
		TH_LOG("GET_READER still asleep %d ms after the close went on: "
		       "its store of wait_index wrote what the ioctl(0) had stored",
		       WAKE_BOUND_MS);
	}
	TH_LOG("GET_READER returned %d ms after the close was let go", (int)waited);
	EXPECT_EQ(0, w.ret) TH_LOG("GET_READER: %s", strerror(w.err));
	/* It returned for the wake-up, not for data */
	EXPECT_EQ(0, self->b.meta->entries);
}

TEST_HARNESS_MAIN
