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
 * return within WAKE_BOUND_MS. Where the increment is a load, an add and a
 * store, the child was held with the old value loaded, and stores what
 * the ioctl(0) stored; where it is atomic, it was held before it.
 *
 * A waiter still asleep is then interrupted by a signal, so that the test
 * ends either way.
 *
 * The breakpoint is the test's set-up, not what it checks: where a close
 * went through ->flush() without being held (a CI guest under QEMU TCG
 * once showed it), or the hold ran out before the test saw it or let it
 * go (then the GET_READER may have begun after the close's increment),
 * the test says so and tries again with a new child and a new
 * breakpoint, up to CLOSER_TRIES times.
 *
 * While the child is held, CLOSER_CPU answers no cross-call: the test
 * keeps off it but is not pinned to one CPU, and waits for the hold
 * without sleeping (rb_seq_keep_off()).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sched.h>
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
/*
 * For the wait to end once let go: a lost wake-up never ends it, a
 * woken one took 3 to 18 ms in 6.12 PREEMPT_RT guests; once in about
 * twenty, one there was still asleep after a second (unexplained)
 */
#define WAKE_BOUND_MS	5000
#define CLOSER_TRIES	3
/* The child's exit status: closed, or why not */
#define CLOSER_CLOSED		0
#define CLOSER_NO_GO		1
#define CLOSER_CLOSE_FAILED	2
#define CLOSER_NOT_PINNED	3
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

/*
 * Wait until rb_flushwin holds @child (its @held is 1) or @child has ended
 * (reaped into *@status, *@reaped set): @held then, or -1 if neither came
 * within HOLD_WAIT_MS. It spins (see spin_ms()).
 */
static long long wait_closer(pid_t child, int *status, bool *reaped)
{
	long long t0 = now_ms(), held;

	*reaped = false;
	do {
		held = kmod_param(MODULE_NAME, "held");
		if (held)
			return held;
		if (waitpid(child, status, WNOHANG) == child) {
			*reaped = true;
			return kmod_param(MODULE_NAME, "held");
		}
		sched_yield();
	} while (now_ms() - t0 < HOLD_WAIT_MS);
	return -1;
}

/* A child that closes its copy of @fd on CLOSER_CPU once @go is written */
static pid_t fork_closer(int fd, int go[2])
{
	pid_t child;
	char c;

	if (pipe(go))
		return -1;
	child = fork();
	if (child)
		return child;
	pin(CLOSER_CPU);
	close(go[1]);
	if (read(go[0], &c, 1) != 1)
		_exit(CLOSER_NO_GO);
	if (sched_getcpu() != CLOSER_CPU)
		_exit(CLOSER_NOT_PINNED);
	/* ->flush(): held at its store of wait_index */
	_exit(close(fd) ? CLOSER_CLOSE_FAILED : CLOSER_CLOSED);
}

/* Up to CLOSER_TRIES set-ups, then the holds and waits of one run */
TEST_F_TIMEOUT(rb, get_reader_woken_by_a_close_during_ioctl, 60)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct waiter w = { .fd = self->b.fd };
	unsigned long long func, size;
	long long waited = -1, held;
	int go[2], err, status, form, try, timed_out = -1;
	bool sleeps, early;
	const char *missed;
	pthread_t thread;
	char params[128];
	bool reaped;
	pid_t child;

	if (!kallsyms_range(FUNC, &func, &size))
		SKIP(return, "no " FUNC " in /proc/kallsyms");
	/* No SA_RESTART: the signal ends a wait that nothing else ended */
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_LT(0, tracefs_instance_file_write(self->b.inst, "buffer_percent", "0"));
	/* A blocking file: the mapping's was opened non-blocking */
	ASSERT_EQ(0, fcntl(self->b.fd, F_SETFL, 0));
	/* Off CLOSER_CPU, on any other: see the top of the file */
	ASSERT_EQ(0, rb_seq_keep_off(CLOSER_CPU));

	for (try = 1;; try++) {
		child = fork_closer(self->b.fd, go);
		ASSERT_LE(0, child);
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
		if (try == 1)
			TH_LOG("breakpoint at " FUNC "+%lld, on %s",
			       kmod_param(MODULE_NAME, "offset"),
			       form == FORM_STORE ? "a store" :
			       form == FORM_LOCKED ? "a locked increment" :
			       "an unlocked read-modify-write");
		if (form == FORM_UNLOCKED_RMW) {
			close(go[1]);
			waitpid(child, &status, 0);
			SKIP(return, "the increment is one unlocked instruction here: no window to hold");
		}
		ASSERT_EQ(1, write(go[1], "g", 1));
		close(go[1]);
		held = wait_closer(child, &status, &reaped);
		if (held == 1) {
			/* What tracefs_cpu_stop() does, while the close is held */
			EXPECT_EQ(0, ioctl(self->b.fd, 0));

			/* A GET_READER that begins after that, and waits */
			w = (struct waiter){ .fd = self->b.fd };
			ASSERT_EQ(0, pthread_create(&thread, NULL, waiter_thread, &w));
			while (!__atomic_load_n(&w.tid, __ATOMIC_ACQUIRE))
				spin_ms(1);
			sleeps = task_sleeps(w.tid, ASLEEP_MS);
			early = __atomic_load_n(&w.done, __ATOMIC_ACQUIRE);

			EXPECT_EQ(0, kmod_param_write(MODULE_NAME, "release", "Y"));
			/* Set if the hold ran out before the test let it go */
			timed_out = kmod_param_bool(MODULE_NAME, "timed_out");
			waited = thread_join_within(thread, &w.done, WAKE_BOUND_MS);
			ASSERT_EQ(child, waitpid(child, &status, 0));
			EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
				TH_LOG("the child's close(): status %#x", status);
			EXPECT_EQ(2, kmod_param(MODULE_NAME, "held"));
			if (timed_out != 1) {
				EXPECT_TRUE(sleeps)
					TH_LOG("GET_READER did not go to sleep (returned: %d)",
					       early);
				EXPECT_FALSE(early)
					TH_LOG("GET_READER returned before the close went on: %d (%s)",
					       w.ret, strerror(w.err));
				break;
			}
			/*
			 * The close went on before the test let it go, maybe
			 * before the GET_READER began: a wait that proves
			 * nothing (the test, or the waiter, did not run for
			 * wait_ms: see rb_seq_keep_off())
			 */
			missed = "was held, and went on after wait_ms before the test let it go";
		} else if (held == 2) {
			/* Only wait_ms lets it go before the test does */
			ASSERT_EQ(1, kmod_param_bool(MODULE_NAME, "timed_out"))
				TH_LOG("the child was let go, not by the test nor by wait_ms");
			missed = "was held, and let go after wait_ms before the test saw it";
		} else {
			/* Not held: the close went through, or is stuck */
			ASSERT_NE(-1, held)
				TH_LOG("the child's close neither reached the breakpoint "
				       "nor returned in %d ms", HOLD_WAIT_MS);
			ASSERT_EQ(0, held) TH_LOG("rb_flushwin's held: %lld", held);
			missed = "went through " FUNC " without being held";
		}
		if (held != 1) {
			if (!reaped)
				ASSERT_EQ(child, waitpid(child, &status, 0));
			ASSERT_TRUE(WIFEXITED(status)) TH_LOG("the child: status %#x", status);
			ASSERT_NE(CLOSER_NOT_PINNED, WEXITSTATUS(status))
				TH_LOG("the child did not run on cpu%d", CLOSER_CPU);
			ASSERT_EQ(CLOSER_CLOSED, WEXITSTATUS(status))
				TH_LOG("the child: exit status %d", WEXITSTATUS(status));
		}
		ASSERT_LT(try, CLOSER_TRIES)
			TH_LOG("the breakpoint never held the child's close for the test, "
			       "in %d tries", try);
		TH_LOG("try %d: the child's close %s; again", try, missed);
		ASSERT_EQ(0, rb_seq_unload(&self->b));
	}

	ASSERT_EQ(0, timed_out) TH_LOG("rb_flushwin's timed_out unreadable");
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
