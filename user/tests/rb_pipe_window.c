// SPDX-License-Identifier: GPL-2.0
/*
 * TRACE_MMAP_IOCTL_GET_READER consumes events as read() and trace_pipe
 * do, and must be serialized with them by the CPU's trace_access_lock():
 * trace_pipe looks at an event, prints it and then consumes it, all with
 * that lock held. A GET_READER in between hands the event being printed
 * over to the mapping too, and trace_pipe's consume then takes the next
 * event, which nobody gets.
 *
 * The test maps an instance's buffer of its CPU, writes markers of
 * sequence numbers there, loads user/kmod/rb_pipewin.ko, whose kretprobe
 * on print_trace_line() has a work item on another CPU call GET_READER
 * when trace_pipe prints the first event, and reads the CPU's trace_pipe.
 * Nothing may be consumed while trace_pipe holds the event it prints, and
 * trace_pipe must print every marker once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kmod_common.h"
#include "rb_seq.h"

#define INSTANCE	"rb_pipe_window"
#define MODULE_NAME	"rb_pipewin"
#define MODULE_PATH	"/lib/modules/ftmmap/rb_pipewin.ko"
#define BUFFER_KB	"16"
#define CPU		0
#define NR_MARKERS	20
/* How long the module's GET_READER may take once trace_pipe is done */
#define GET_READER_WAIT_MS	5000

RB_SEQ_FIXTURE(2)

TEST_F(rb, get_reader_waits_for_trace_pipe)
{
	int seen[NR_MARKERS] = { 0 };
	char params[128], out[8192], *p;
	size_t used = 0;
	unsigned int i, n;
	int fd, err;
	ssize_t r;

	fd = tracefs_instance_file_open(self->b.inst, "trace_marker", O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	for (i = 0; i < NR_MARKERS; i++)
		ASSERT_LT(0, dprintf(fd, "seq=%06u", i));
	close(fd);

	snprintf(params, sizeof(params), "instance=%s pid=%d", INSTANCE, getpid());
	err = rb_seq_load(&self->b, params);
	if (err == -EOPNOTSUPP)
		SKIP(return, "rb_pipewin: no kretprobes here");
	ASSERT_EQ(0, err) TH_LOG("loading rb_pipewin: %s (see the kernel log)", strerror(-err));
	ASSERT_EQ(CPU, kmod_param(MODULE_NAME, "cpu"));

	/* All of it: the markers' lines are far shorter than the buffer */
	fd = tracefs_instance_file_open(self->b.inst, "per_cpu/cpu0/trace_pipe",
					O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, fd);
	while (used < sizeof(out) - 1 &&
	       (r = read(fd, out + used, sizeof(out) - 1 - used)) > 0)
		used += r;
	out[used] = '\0';
	close(fd);
	ASSERT_LE(1, kmod_param(MODULE_NAME, "hits"));
	ASSERT_EQ(0, kmod_param(MODULE_NAME, "missed"));
	TH_LOG("GET_READER while trace_pipe printed: %s, %lld events read meanwhile",
	       kmod_param(MODULE_NAME, "in_window") == 1 ? "returned" : "waited",
	       kmod_param(MODULE_NAME, "consumed_in_print"));

	/* Nobody consumed from under trace_pipe */
	EXPECT_EQ(0, kmod_param(MODULE_NAME, "consumed_in_print"));

	/* trace_pipe printed every marker once: no other reader got one */
	for (p = strstr(out, "seq="); p; p = strstr(p + 1, "seq="))
		if (sscanf(p, "seq=%u", &n) == 1 && n < NR_MARKERS)
			seen[n]++;
	for (i = 0; i < NR_MARKERS; i++)
		EXPECT_EQ(1, seen[i]) TH_LOG("seq=%06u printed %d times", i, seen[i]);

	/*
	 * The module's GET_READER, once it could, found nothing left. It
	 * runs on another CPU once trace_pipe lets the lock go, which may
	 * be after this task's read() returned: wait for it.
	 */
	for (i = 0; i < GET_READER_WAIT_MS &&
	     kmod_param(MODULE_NAME, "get_reader") == 1; i++)
		usleep(1000);
	EXPECT_EQ(0, kmod_param(MODULE_NAME, "get_reader"));
	EXPECT_EQ(NR_MARKERS, rb_seq_stat(&self->b, "read events: "));
}

TEST_HARNESS_MAIN
