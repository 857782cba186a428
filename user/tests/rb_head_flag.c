// SPDX-License-Identifier: GPL-2.0
/*
 * A writer that interrupts another one moving the head must not flag the
 * reader's old page as a second head.
 *
 * A writer moves the head off a full page in three cmpxchg()s: the
 * pointer into that page from HEAD to UPDATE, the pointer into the next
 * page to HEAD, the first pointer back to NORMAL. A writer that
 * interrupts it in between finds the UPDATE flag and flags the page after
 * the one the head moved off. A reader that swapped the new head out
 * meanwhile put its old page there: the interrupting writer flags that
 * page, which no writer entered, as a second head. Writers then move the
 * head over it as over the oldest events and count it in pages_lost
 * though it lost nothing: poll() finds fewer dirty pages than there are
 * (buffer_percent wakes a page late per such page), and
 * ring_buffer_nr_dirty_pages() warns once it is two (met in kcsan_load's
 * poll() readers on the normal kernel, at one boot in about 40 loads).
 *
 * user/kmod/rb_head.ko makes it happen on the CPU that loads it: its
 * breakpoint on the third cmpxchg() has a work item on another CPU call
 * TRACE_MMAP_IOCTL_GET_READER, waits for it a while, and writes an event
 * (the interrupting writer); then it writes once round the ring. This
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

#define INSTANCE	"rb_head_flag"
#define MODULE_NAME	"rb_head"
#define MODULE_PATH	"/lib/modules/ftmmap/rb_head.ko"
#define BUFFER_KB	"16"
#define CPU		0
#define FUNC		"rb_move_tail"

RB_SEQ_FIXTURE(2)

TEST_F(rb, no_second_head_from_an_interrupting_writer)
{
	unsigned long long func, size;
	unsigned int ring;
	char params[160];
	short revents = 0;
	int err, ready;

	if (!kallsyms_range(FUNC, &func, &size))
		SKIP(return, "no " FUNC " in /proc/kallsyms");
	ring = rb_seq_ring_pages(&self->b);
	snprintf(params, sizeof(params),
		 "instance=%s prelim=%u ring_pages=%u func=%llu size=%llu",
		 INSTANCE, rb_seq_lap_and_a_half(&self->b), ring,
		 func, size);

	err = rb_seq_load(&self->b, params);
	if (err == -EOPNOTSUPP)
		SKIP(return, "rb_head: no instruction breakpoints here (x86-64 only)");
	ASSERT_EQ(0, err) TH_LOG("loading rb_head: %s (see the kernel log)", strerror(-err));
	ASSERT_EQ(CPU, kmod_param(MODULE_NAME, "cpu"));
	ASSERT_EQ(1, kmod_param(MODULE_NAME, "hits"));
	ASSERT_EQ(0, kmod_param(MODULE_NAME, "nested"))
		TH_LOG("the interrupting writer's event was refused");
	TH_LOG("wrote %lld events; %lld breakpoints, %lld head moves seen; GET_READER on CPU %lld in the handler's wait: %lld (-110: it waited for the move to end)",
	       kmod_param(MODULE_NAME, "written"), kmod_param(MODULE_NAME, "breakpoints"),
	       kmod_param(MODULE_NAME, "moves"), kmod_param(MODULE_NAME, "reader_cpu"),
	       kmod_param(MODULE_NAME, "swapped"));

	/*
	 * The writer went once round the ring after the handler: every page
	 * but the writer's holds events, and a poll() that waits for a full
	 * buffer finds it full (the writer's page counted as one).
	 */
	ready = rb_seq_poll_full(&self->b, &revents);
	TH_LOG("poll() at buffer_percent 100: %d (revents %#x), overrun %lld",
	       ready, revents, rb_seq_stat(&self->b, "overrun: "));
	EXPECT_EQ(1, ready)
		TH_LOG("a full ring polled not full: a page counted lost that no writer entered");
}

TEST_HARNESS_MAIN
