// SPDX-License-Identifier: GPL-2.0
/*
 * trace_pipe looks at the next event of a CPU buffer, prints it from the
 * buffer's page and then consumes it, under the CPU's trace_access_lock()
 * only: the reader lock is dropped between the three steps. A change of
 * buffer_subbuf_size_kb replaces and frees every page of the buffer; it
 * must take that lock, or trace_pipe prints from a freed page (a
 * use-after-free that KASAN reports; elsewhere, stale text).
 *
 * The test writes markers into an instance and has a thread on another
 * CPU change its sub-buffer size, which user/kmod/rb_subbufwin.ko holds
 * right before it replaces the pages; then it reads the CPU's trace_pipe,
 * and the module lets the size change go when trace_pipe is about to print
 * an event, and waits for it. The size change must not end while
 * trace_pipe holds the event.
 *
 * read() of trace_pipe_raw reads the sub-buffer size without that lock,
 * before it allocates its spare page. The second test lets the size change
 * go from 8 KiB to 4 KiB right there (and the module writes events into
 * the new buffer): read() must copy the 4 KiB of the page it got, not the
 * 8 KiB it read before, which would copy what follows the page too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "kselftest_harness.h"
#include "kmod_common.h"
#include "rb_seq.h"

#define INSTANCE	"rb_subbuf_pipe"
#define MODULE_NAME	"rb_subbufwin"
#define MODULE_PATH	"/lib/modules/ftmmap/rb_subbufwin.ko"
#define BUFFER_KB	"16"
#define CPU		0
#define CHANGER_CPU	1
#define NR_MARKERS	20
/* Beyond the module's waits (2 s each) */
#define PARK_WAIT_MS	5000

/* A bool parameter of the module */
static int kmod_flag(const char *name)
{
	return kmod_param_bool(MODULE_NAME, name);
}

struct changer {
	struct tracefs_instance	*inst;
	const char		*kb;		/* the new size */
	pid_t			tid;
	int			go[2];		/* a byte: change the size */
	int			ret;		/* of the write */
	int			err;
};

static void *change_size(void *arg)
{
	struct changer *c = arg;
	cpu_set_t set;
	char byte;

	CPU_ZERO(&set);
	CPU_SET(CHANGER_CPU, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		c->ret = -1;
		c->err = errno;
		__atomic_store_n(&c->tid, -1, __ATOMIC_RELEASE);
		return NULL;
	}
	/* Pairs with the load of the test task */
	__atomic_store_n(&c->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	if (read(c->go[0], &byte, 1) != 1)
		return NULL;
	c->ret = tracefs_instance_file_write(c->inst, "buffer_subbuf_size_kb", c->kb);
	c->err = errno;
	return NULL;
}

FIXTURE(rb) {
	struct rb_seq	b;
};

FIXTURE_SETUP(rb)
{
	int err;

	rb_seq_init(&self->b, MODULE_PATH, MODULE_NAME);
	ASSERT_LE(0, self->b.mod_fd) TH_LOG("%s: %s", MODULE_PATH, strerror(errno));
	err = rb_seq_instance(&self->b, INSTANCE, BUFFER_KB, CPU);
	ASSERT_EQ(0, err) TH_LOG("instance: %s", strerror(-err));
	ASSERT_LT(0, tracefs_instance_file_write(self->b.inst, "buffer_subbuf_size_kb", "4"));
}

FIXTURE_TEARDOWN(rb)
{
	rb_seq_close(&self->b);
}

/*
 * Open @file of the instance, start a change of the sub-buffer size to
 * @kb KiB from another CPU, which rb_subbufwin (its @window) holds right
 * before it replaces the pages, read @file once into @out (*@r: what
 * read() returned) and let the change end. Returns 1 if the module is not
 * for this kernel (the test skips), 0 otherwise.
 */
static int change_while_reading(struct __test_metadata *_metadata,
				struct rb_seq *b, const char *file,
				const char *kb, const char *window,
				char *out, size_t size, ssize_t *r)
{
	struct changer c = { .inst = b->inst, .kb = kb };
	char params[192];
	pthread_t thread;
	int i, fd, err;
	pid_t tid;

	*r = 0;
	ASSERT_EQ(0, pipe(c.go));
	ASSERT_EQ(0, pthread_create(&thread, NULL, change_size, &c));
	while (!(tid = __atomic_load_n(&c.tid, __ATOMIC_ACQUIRE)))
		usleep(1000);
	ASSERT_LT(0, tid) TH_LOG("changer: %s", strerror(c.err));

	snprintf(params, sizeof(params), "instance=%s pid=%d changer=%d window=%s",
		 INSTANCE, getpid(), tid, window);
	err = rb_seq_load(b, params);
	if (err) {
		close(c.go[1]);
		pthread_join(thread, NULL);
		close(c.go[0]);
		if (err == -EOPNOTSUPP)
			return 1;
	}
	ASSERT_EQ(0, err) TH_LOG("loading rb_subbufwin: %s (see the kernel log)", strerror(-err));

	/* Opened first: the size change holds trace_types_lock, as open does */
	fd = tracefs_instance_file_open(b->inst, file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	/* The size change starts, and is held before it replaces the pages */
	ASSERT_EQ(1, write(c.go[1], "", 1));
	for (i = 0; i < PARK_WAIT_MS && kmod_flag("parked") != 1; i++)
		usleep(1000);

	if (fd >= 0) {
		*r = read(fd, out, size);
		close(fd);
	}
	close(c.go[1]);
	pthread_join(thread, NULL);
	close(c.go[0]);

	ASSERT_LE(0, fd);
	ASSERT_LT(0, c.ret) TH_LOG("size change: %s", strerror(c.err));
	TH_LOG("size change held: %s; let go by the reader: %s; read() returned %zd",
	       kmod_flag("parked") == 1 ? "yes" : "no",
	       kmod_flag("released") == 1 ? "yes" : "no", *r);
	ASSERT_EQ(1, kmod_flag("parked"));
	ASSERT_EQ(1, kmod_flag("changed"));
	return 0;
}

TEST_F(rb, subbuf_size_change_waits_for_trace_pipe)
{
	char out[8192];
	ssize_t r;
	int i, fd;

	if (sysconf(_SC_NPROCESSORS_ONLN) <= CHANGER_CPU)
		SKIP(return, "needs a second CPU for the size change");

	fd = tracefs_instance_file_open(self->b.inst, "trace_marker", O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	for (i = 0; i < NR_MARKERS; i++)
		ASSERT_LT(0, dprintf(fd, "seq=%06u", i));
	close(fd);

	if (change_while_reading(_metadata, &self->b, "per_cpu/cpu0/trace_pipe",
				 "8", "print", out, sizeof(out), &r))
		SKIP(return, "rb_subbufwin: no kretprobes here");

	/* trace_pipe printed nothing from a page that the change freed */
	EXPECT_EQ(0, kmod_flag("in_window"));
}

/*
 * read() of trace_pipe_raw reads the sub-buffer size, then allocates its
 * spare page: when the size changes in between, it must copy the size of
 * the page it got, not more.
 */
TEST_F(rb, subbuf_size_change_before_read_allocates)
{
	static char out[64 * 1024];
	ssize_t r;

	if (sysconf(_SC_NPROCESSORS_ONLN) <= CHANGER_CPU)
		SKIP(return, "needs a second CPU for the size change");

	ASSERT_LT(0, tracefs_instance_file_write(self->b.inst, "buffer_subbuf_size_kb", "8"));
	if (change_while_reading(_metadata, &self->b, "per_cpu/cpu0/trace_pipe_raw",
				 "4", "read", out, sizeof(out), &r))
		SKIP(return, "rb_subbufwin: no kretprobes here");

	/* 6.12 and later size the spare page by the page itself */
	if (kmod_flag("released") != 1)
		SKIP(return, "read() does not read the sub-buffer size before it allocates here");
	ASSERT_EQ(1, kmod_flag("in_window"));
	ASSERT_LT(0, kmod_param(MODULE_NAME, "written"));
	EXPECT_EQ(4096, r) TH_LOG("read() of a 4 KiB sub-buffer returned %zd bytes", r);
}

TEST_HARNESS_MAIN
