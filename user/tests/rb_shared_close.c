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
 * then makes the call in a thread: once it sleeps, it must still wait
 * HOLD_MS later, and a signal then ends it with EINTR. GET_READER is also
 * checked when it begins with tracing off (it waits for tracing to be
 * turned off, not for it to be off).
 *
 * A signal must not end a wait as a wake-up of the buffer would (6.1's
 * waits end at the first wake-up, which a signal is too): a handler with
 * SA_RESTART runs and the call waits again; a stop and continue of the
 * task (SIGSTOP, SIGCONT) leaves the call waiting.
 *
 * And the flush still ends a call in progress: a blocking splice() and a
 * blocking read() return when a dup() of the descriptor is closed (6.1's
 * read() waits again after such a wake-up, as it did before the series:
 * that case is for kernels with mainline's closed flag, 6.8 on).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "rb_seq.h"
#include "task_state.h"

#define INSTANCE	"rb_shared_close"
#define BUFFER_KB	"16"
#define CPU		0
#define HOLD_MS		300	/* how long a call that waits is watched */
#define WAKE_BOUND_MS	1000	/* for a call in progress to end when woken */
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
	ASSERT_EQ(0, fcntl(self->b.fd, F_SETFL, 0));
}

FIXTURE_TEARDOWN(rb)
{
	rb_seq_close(&self->b);
}

static void on_signal(int sig)
{
}

static int restarts;

static void on_restart_signal(int sig)
{
	__atomic_add_fetch(&restarts, 1, __ATOMIC_RELEASE);
}

/*
 * SIGUSR1 ends a call (no SA_RESTART); SIGUSR2's handler counts its runs
 * and lets the call restart (SA_RESTART)
 */
static int set_handlers(void)
{
	struct sigaction ends = { .sa_handler = on_signal };
	struct sigaction restart = { .sa_handler = on_restart_signal,
				     .sa_flags = SA_RESTART };

	if (sigaction(SIGUSR1, &ends, NULL))
		return -1;
	return sigaction(SIGUSR2, &restart, NULL);
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

static bool call_done(struct caller *c)
{
	return __atomic_load_n(&c->done, __ATOMIC_ACQUIRE);
}

/* Whether @c's call is asleep within @ms, and has not returned */
static bool call_sleeps(struct caller *c, int ms)
{
	/* A thread that returned has no stat file left: task_sleeps() says no */
	return task_sleeps(c->tid, ms) && !call_done(c);
}

/* @call begins in a thread and goes to sleep on the empty buffer */
static void start_call(struct __test_metadata *_metadata,
		       FIXTURE_DATA(rb) *self, struct caller *c,
		       pthread_t *thread, enum call call)
{
	*c = (struct caller){ .fd = self->b.fd, .page_size = self->page_size,
			      .call = call };
	ASSERT_EQ(0, set_handlers());
	ASSERT_EQ(0, pthread_create(thread, NULL, caller_thread, c));
	while (!__atomic_load_n(&c->tid, __ATOMIC_ACQUIRE))
		usleep(1000);
	if (!call_sleeps(c, ASLEEP_MS)) {
		pthread_kill(*thread, SIGUSR1);
		pthread_join(*thread, NULL);
		ASSERT_TRUE(false) {
			if (c->done)
				TH_LOG("%s returned %d at once on an empty buffer (%s)",
				       call_name[call], c->ret, strerror(c->err));
			else
				TH_LOG("%s did not go to sleep", call_name[call]);
		}
	}
}

/*
 * @c's call, asleep, still waits HOLD_MS later, and then a signal whose
 * handler has no SA_RESTART ends it with EINTR
 */
static void waits_until_signalled(struct __test_metadata *_metadata,
				  struct caller *c, pthread_t thread,
				  const char *after)
{
	usleep(HOLD_MS * 1000);
	if (call_done(c)) {
		pthread_join(thread, NULL);
		ASSERT_TRUE(false) {
			TH_LOG("%s returned %d (%s) %s, with nothing to end it",
			       call_name[c->call], c->ret,
			       c->ret < 0 ? strerror(c->err) : "no error", after);
		}
	}
	pthread_kill(thread, SIGUSR1);
	ASSERT_LE(0, thread_join_within(thread, &c->done, WAKE_BOUND_MS)) {
		TH_LOG("%s still waiting %d ms after a signal", call_name[c->call],
		       WAKE_BOUND_MS);
	}
	ASSERT_EQ(-1, c->ret) {
		TH_LOG("%s returned %d %s when a signal came: the signal ended it as a wake-up would",
		       call_name[c->call], c->ret, after);
	}
	EXPECT_EQ(EINTR, c->err) TH_LOG("%s: %s", call_name[c->call], strerror(c->err));
}

/* After a child's close, @call on the empty buffer waits for a signal */
static void waits_after_a_close(struct __test_metadata *_metadata,
				FIXTURE_DATA(rb) *self, enum call call)
{
	struct caller c;
	pthread_t thread;

	ASSERT_EQ(0, child_closes_its_copy());
	start_call(_metadata, self, &c, &thread, call);
	waits_until_signalled(_metadata, &c, thread, "after a close");
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

	ASSERT_EQ(0, fcntl(self->b.fd, F_SETFL, O_NONBLOCK));
	ASSERT_EQ(0, child_closes_its_copy());
	EXPECT_EQ(-1, read(self->b.fd, buf, sizeof(buf)));
	EXPECT_EQ(EAGAIN, errno) TH_LOG("read(): %s", strerror(errno));
}

TEST_F(rb, get_reader_begun_with_tracing_off_waits)
{
	struct caller c;
	pthread_t thread;

	ASSERT_LT(0, tracefs_instance_file_write(self->b.inst, "tracing_on", "0"));
	start_call(_metadata, self, &c, &thread, GET_READER);
	waits_until_signalled(_metadata, &c, thread, "begun with tracing off");
}

/*
 * A signal whose handler has SA_RESTART restarts @call: it runs the
 * handler and waits again, until a signal without SA_RESTART
 */
static void restarts_at_a_signal(struct __test_metadata *_metadata,
				 FIXTURE_DATA(rb) *self, enum call call)
{
	struct caller c;
	pthread_t thread;
	long long t0;

	start_call(_metadata, self, &c, &thread, call);
	__atomic_store_n(&restarts, 0, __ATOMIC_RELAXED);
	pthread_kill(thread, SIGUSR2);
	t0 = now_ms();
	while (!__atomic_load_n(&restarts, __ATOMIC_ACQUIRE) && now_ms() - t0 < WAKE_BOUND_MS)
		usleep(1000);
	EXPECT_EQ(1, __atomic_load_n(&restarts, __ATOMIC_ACQUIRE))
		TH_LOG("the handler did not run");
	EXPECT_TRUE(call_sleeps(&c, ASLEEP_MS)) {
		TH_LOG("%s did not wait again after its handler ran: %s", call_name[call],
		       c.done ? "it returned" : "it is not asleep");
	}
	waits_until_signalled(_metadata, &c, thread, "after a handler with SA_RESTART");
}

TEST_F(rb, read_restarts_at_a_signal)
{
	restarts_at_a_signal(_metadata, self, READ);
}

TEST_F(rb, splice_restarts_at_a_signal)
{
	restarts_at_a_signal(_metadata, self, SPLICE);
}

TEST_F(rb, get_reader_restarts_at_a_signal)
{
	restarts_at_a_signal(_metadata, self, GET_READER);
}

/*
 * A child process makes @call and reports its result through a pipe;
 * stopped (SIGSTOP) and continued (SIGCONT) while it waits, it waits on,
 * as if nothing had happened
 */
static void waits_on_after_stop_and_continue(struct __test_metadata *_metadata,
					     FIXTURE_DATA(rb) *self, enum call call)
{
	int pfd[2], result[2], status;
	struct pollfd p;
	pid_t child;

	ASSERT_EQ(0, pipe(pfd));
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		close(pfd[0]);
		result[0] = make_call(self->b.fd, call, self->page_size);
		result[1] = errno;
		_exit(write(pfd[1], result, sizeof(result)) == sizeof(result) ? 0 : 1);
	}
	close(pfd[1]);
	p = (struct pollfd){ .fd = pfd[0], .events = POLLIN };

	EXPECT_TRUE(process_sleeps(child, ASLEEP_MS))
		TH_LOG("%s did not go to sleep", call_name[call]);

	ASSERT_EQ(0, kill(child, SIGSTOP));
	ASSERT_EQ(child, waitpid(child, &status, WUNTRACED));
	ASSERT_TRUE(WIFSTOPPED(status));
	ASSERT_EQ(0, kill(child, SIGCONT));
	ASSERT_EQ(child, waitpid(child, &status, WCONTINUED));
	ASSERT_TRUE(WIFCONTINUED(status));

	/* No result: the call goes on waiting */
	EXPECT_EQ(0, poll(&p, 1, HOLD_MS)) {
		if (read(pfd[0], result, sizeof(result)) == sizeof(result))
			TH_LOG("%s returned %d (%s) when the task was stopped and continued",
			       call_name[call], result[0],
			       result[0] < 0 ? strerror(result[1]) : "no error");
	}
	EXPECT_TRUE(process_sleeps(child, ASLEEP_MS))
		TH_LOG("%s is not asleep again", call_name[call]);

	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	close(pfd[0]);
}

TEST_F(rb, read_waits_on_after_stop_and_continue)
{
	waits_on_after_stop_and_continue(_metadata, self, READ);
}

TEST_F(rb, splice_waits_on_after_stop_and_continue)
{
	waits_on_after_stop_and_continue(_metadata, self, SPLICE);
}

TEST_F(rb, get_reader_waits_on_after_stop_and_continue)
{
	waits_on_after_stop_and_continue(_metadata, self, GET_READER);
}

/* @call in progress on the empty buffer returns when a dup() is closed */
static void ends_at_a_close(struct __test_metadata *_metadata,
			    FIXTURE_DATA(rb) *self, enum call call)
{
	struct caller c;
	long long waited;
	pthread_t thread;
	int dup_fd;

	dup_fd = dup(self->b.fd);
	ASSERT_LE(0, dup_fd);
	/* Asleep in the call: the close comes after it began */
	start_call(_metadata, self, &c, &thread, call);

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
