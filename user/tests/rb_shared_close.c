// SPDX-License-Identifier: GPL-2.0
/*
 * A close of one descriptor of a trace_pipe_raw file that others share
 * (dup(), or fork(): a child's exit or exec closes its copies) runs the
 * file's ->flush(), which wakes the file's waiters: a blocking read(),
 * splice() or GET_READER in progress on the file returns. It must not
 * change the calls that come after it: on an empty buffer they wait, or
 * fail with EAGAIN on a non-blocking file, as before the close. Mainline
 * (6.12) marks the file closed for good at the first flush, and from then
 * on read() returns 0 at once and splice() returns 0 at once, so a
 * consumer's loop around them spins.
 *
 * Each case makes an instance with an empty buffer, maps CPU 0's
 * trace_pipe_raw, has a child process that shares the file exit, and
 * then makes the call, which a timer ends after TIMER_MS with EINTR if it
 * still waits. GET_READER is also checked when it begins with tracing off
 * (it waits for tracing to be turned off, not for it to be off).
 *
 * And the flush still ends a call in progress: a blocking splice() and a
 * blocking read() return when a dup() of the descriptor is closed (6.1's
 * read() waits again after such a wake-up, as it did before the series:
 * that case is for kernels with mainline's closed flag, 6.8 on).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "ms_clock.h"
#include "rb_seq.h"
#include "task_state.h"

#define INSTANCE	"rb_shared_close"
#define BUFFER_KB	"16"
#define CPU		0
#define TIMER_MS	300	/* how long a call that waits is let wait */
#define WAKE_BOUND_MS	1000	/* for a call in progress to end at a close */
#define ASLEEP_MS	2000	/* for a call in progress to go to sleep */

FIXTURE(rb) {
	struct rb_seq	b;
	int		page_size;
};

FIXTURE_SETUP(rb)
{
	int err;

	/* No module: rb_seq_close() finds none loaded */
	rb_seq_init(&self->b, "", "");
	self->page_size = sysconf(_SC_PAGESIZE);
	err = rb_seq_open(&self->b, INSTANCE, BUFFER_KB, CPU);
	ASSERT_EQ(0, err) TH_LOG("rb_seq_open: %s", strerror(-err));
	ASSERT_LT(0, tracefs_instance_file_write(self->b.inst, "buffer_percent", "0"));
}

FIXTURE_TEARDOWN(rb)
{
	rb_seq_close(&self->b);
}

static void on_signal(int sig)
{
}

/* SIGALRM after @ms, without SA_RESTART: it ends a call that waits */
static int arm_timer(int ms)
{
	struct itimerval it = { .it_value = { ms / 1000, (ms % 1000) * 1000 } };
	struct sigaction sa = { .sa_handler = on_signal };

	if (sigaction(SIGALRM, &sa, NULL))
		return -1;
	return setitimer(ITIMER_REAL, &it, NULL);
}

/* A child that shares the file exits: its copy is closed, a flush */
static int child_closes_its_copy(void)
{
	int status;
	pid_t child = fork();

	if (child < 0)
		return -1;
	if (!child)
		_exit(0);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status))
		return -1;
	return 0;
}

enum call { READ, SPLICE, GET_READER };

static const char *const call_name[] = { "read()", "splice()", "GET_READER" };

/* @call on @fd, blocking: its result, with errno */
static int make_call(int fd, enum call call, int page_size)
{
	char buf[page_size];
	int pfd[2], ret, err;

	switch (call) {
	case READ:
		return read(fd, buf, page_size);
	case SPLICE:
		if (pipe(pfd))
			return -1;
		ret = splice(fd, NULL, pfd[1], NULL, page_size, 0);
		err = errno;
		close(pfd[0]);
		close(pfd[1]);
		errno = err;
		return ret;
	case GET_READER:
		return ioctl(fd, TRACE_MMAP_IOCTL_GET_READER);
	}
	return -1;
}

/* After a child's close, @call on the empty buffer waits until the timer */
static void waits_after_a_close(struct __test_metadata *_metadata,
				FIXTURE_DATA(rb) *self, enum call call)
{
	long long t0, took;
	int ret, err;

	ASSERT_EQ(0, fcntl(self->b.fd, F_SETFL, 0));
	ASSERT_EQ(0, child_closes_its_copy());
	ASSERT_EQ(0, arm_timer(TIMER_MS));
	t0 = now_ms();
	ret = make_call(self->b.fd, call, self->page_size);
	err = errno;
	took = now_ms() - t0;
	ASSERT_EQ(-1, ret) {
		TH_LOG("%s returned %d after %lld ms on an empty buffer: %s", call_name[call],
		       ret, took, took < TIMER_MS - 50 ?
		       "a close of another descriptor made it return at once" :
		       "the timer's signal ended it as a wake-up would");
	}
	EXPECT_EQ(EINTR, err) TH_LOG("%s: %s", call_name[call], strerror(err));
	EXPECT_LE(TIMER_MS - 50, took);
}

TEST_F(rb, read_waits_after_a_close)
{
	waits_after_a_close(_metadata, self, READ);
}

TEST_F(rb, splice_waits_after_a_close)
{
	waits_after_a_close(_metadata, self, SPLICE);
}

TEST_F(rb, get_reader_waits_after_a_close)
{
	waits_after_a_close(_metadata, self, GET_READER);
}

TEST_F(rb, nonblocking_read_after_a_close_is_eagain)
{
	char buf[self->page_size];

	ASSERT_EQ(0, child_closes_its_copy());
	EXPECT_EQ(-1, read(self->b.fd, buf, sizeof(buf)));
	EXPECT_EQ(EAGAIN, errno) TH_LOG("read(): %s", strerror(errno));
}

TEST_F(rb, get_reader_begun_with_tracing_off_waits)
{
	long long t0, took;
	int ret, err;

	ASSERT_EQ(0, fcntl(self->b.fd, F_SETFL, 0));
	ASSERT_LT(0, tracefs_instance_file_write(self->b.inst, "tracing_on", "0"));
	ASSERT_EQ(0, arm_timer(TIMER_MS));
	t0 = now_ms();
	ret = ioctl(self->b.fd, TRACE_MMAP_IOCTL_GET_READER);
	err = errno;
	took = now_ms() - t0;
	tracefs_instance_file_write(self->b.inst, "tracing_on", "1");
	ASSERT_EQ(-1, ret) TH_LOG("GET_READER returned %d after %lld ms", ret, took);
	EXPECT_EQ(EINTR, err) TH_LOG("GET_READER: %s", strerror(err));
	EXPECT_LE(TIMER_MS - 50, took);
}

struct caller {
	int		fd, page_size;
	enum call	call;
	pid_t		tid;		/* set by the thread */
	int		ret, err;
	bool		done;
};

static void *caller_thread(void *arg)
{
	struct caller *c = arg;

	__atomic_store_n(&c->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	c->ret = make_call(c->fd, c->call, c->page_size);
	c->err = errno;
	__atomic_store_n(&c->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* @call in progress on the empty buffer returns when a dup() is closed */
static void ends_at_a_close(struct __test_metadata *_metadata,
			    FIXTURE_DATA(rb) *self, enum call call)
{
	struct caller c = { .fd = self->b.fd, .page_size = self->page_size, .call = call };
	struct sigaction sa = { .sa_handler = on_signal };
	long long waited;
	pthread_t thread;
	int dup_fd;

	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, fcntl(self->b.fd, F_SETFL, 0));
	dup_fd = dup(self->b.fd);
	ASSERT_LE(0, dup_fd);
	ASSERT_EQ(0, pthread_create(&thread, NULL, caller_thread, &c));
	while (!__atomic_load_n(&c.tid, __ATOMIC_ACQUIRE))
		usleep(1000);
	/* Asleep in the call: the close comes after it began */
	EXPECT_TRUE(task_sleeps(c.tid, ASLEEP_MS))
		TH_LOG("%s did not go to sleep", call_name[call]);
	EXPECT_FALSE(__atomic_load_n(&c.done, __ATOMIC_ACQUIRE))
		TH_LOG("%s returned before the close: %d", call_name[call], c.ret);

	close(dup_fd);
	waited = thread_join_within(thread, &c.done, WAKE_BOUND_MS);
	ASSERT_LE(0, waited) {
		TH_LOG("%s still waiting %d ms after a descriptor of its file was closed",
		       call_name[call], WAKE_BOUND_MS);
	}
	EXPECT_EQ(0, c.ret) TH_LOG("%s: %s", call_name[call], strerror(c.err));
}

TEST_F(rb, splice_in_progress_ends_at_a_close)
{
	ends_at_a_close(_metadata, self, SPLICE);
}

TEST_F(rb, read_in_progress_ends_at_a_close)
{
	struct utsname u;

	ASSERT_EQ(0, uname(&u));
	if (!strncmp(u.release, "6.1.", 4))
		SKIP(return, "6.1's read() waits again after a flush (no closed flag)");
	ends_at_a_close(_metadata, self, READ);
}

TEST_HARNESS_MAIN
