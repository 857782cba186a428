// SPDX-License-Identifier: GPL-2.0
/*
 * A writer that moves off its page while readers take the whole ring out,
 * its own page last, must move to the page that is the head then.
 *
 * rb_move_tail() loads the page after the tail page, then looks whether
 * the commit is on the reader page. When the ring is full, the page it
 * loaded is the head. Readers that swap every page out in between, the
 * writer's own last, replace that head by their old page and make the
 * writer's page the reader page: the writer then "moves out of the reader
 * page" to the page it loaded, one page past the head. No writer entered
 * that head page, yet it is counted as read when a reader swaps it out
 * (and swaps again at once, as it is empty) or as lost when a writer laps
 * onto it: the meta-page's pages_lost counts a sub-buffer that lost
 * nothing, and pages_read runs ahead of pages_touched - pages_lost, so
 * that poll() finds fewer dirty pages than there are (buffer_percent
 * wakes a page late), and ring_buffer_nr_dirty_pages() warns when it is
 * two pages ahead (seen in a KCSAN boot and in kcsan_load's poll()
 * readers on the normal kernel, at one boot in about 40 loads).
 *
 * user/kmod/rb_tail.ko makes it happen on the CPU that loads it: its
 * breakpoint in rb_move_tail() waits there while a work item on another
 * CPU calls TRACE_MMAP_IOCTL_GET_READER once per page of the ring; then
 * it writes once round the ring, over the page those readers left. This
 * test maps the buffer first, loads the module on CPU 0, and polls the
 * buffer with buffer_percent at 100: the ring is full.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kmod_common.h"
#include "rb_seq.h"

#define INSTANCE	"rb_tail_skip"
#define MODULE_NAME	"rb_tail"
#define MODULE_PATH	"/lib/modules/ftmmap/rb_tail.ko"
#define BUFFER_KB	"16"
#define CPU		0
#define FUNC		"rb_move_tail"

RB_SEQ_FIXTURE(2)

TEST_F(rb, writer_moves_to_the_head_readers_left)
{
	unsigned long long func, size;
	unsigned int ring;
	char params[160];
	short revents = 0;
	int err, ready;

	if (!kallsyms_range(FUNC, &func, &size))
		SKIP(return, "no " FUNC " in /proc/kallsyms");
	ring = rb_seq_ring_pages(&self->b);
	/* A lap and a half: the ring is full, the head after the tail */
	snprintf(params, sizeof(params),
		 "instance=%s prelim=%u ring_pages=%u func=%llu size=%llu",
		 INSTANCE, rb_seq_lap_and_a_half(&self->b), ring,
		 func, size);

	err = rb_seq_load(&self->b, params);
	if (err == -EOPNOTSUPP)
		SKIP(return, "rb_tail: no instruction breakpoints here (x86-64 only)");
	ASSERT_EQ(0, err) TH_LOG("loading rb_tail: %s (see the kernel log)", strerror(-err));
	ASSERT_EQ(CPU, kmod_param(MODULE_NAME, "cpu"));
	ASSERT_EQ(1, kmod_param(MODULE_NAME, "hits"));
	ASSERT_EQ(0, kmod_param(MODULE_NAME, "get_reader"));
	ASSERT_EQ(ring, kmod_param(MODULE_NAME, "swaps"))
		TH_LOG("the readers did not take every page out");
	TH_LOG("wrote %lld events, %lld pages overwritten; breakpoint at %s+%lld, readers on CPU %lld",
	       kmod_param(MODULE_NAME, "written"), kmod_param(MODULE_NAME, "moves"), FUNC,
	       kmod_param(MODULE_NAME, "offset"), kmod_param(MODULE_NAME, "reader_cpu"));

	/*
	 * The writer went once round the ring after the readers: every page
	 * but the writer's holds events, and a poll() that waits for a full
	 * buffer finds it full (the writer's page counted as one).
	 */
	ready = rb_seq_poll_full(&self->b, &revents);
	TH_LOG("poll() at buffer_percent 100: %d (revents %#x), overrun %lld",
	       ready, revents, rb_seq_stat(&self->b, "overrun: "));
	EXPECT_EQ(1, ready)
		TH_LOG("a full ring polled not full: a page counted read or lost that no writer entered");
}

TEST_HARNESS_MAIN
