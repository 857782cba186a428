// SPDX-License-Identifier: GPL-2.0
/*
 * The loss a reader reports with a new head must count the page the head
 * moved off, even when a writer that interrupted the move flagged that
 * head before the moving writer counted the page.
 *
 * A writer moves the head off a full page in three cmpxchg()s: the
 * pointer into that page from HEAD to UPDATE, the pointer into the next
 * page to HEAD, the first pointer back to NORMAL. It adds the events of
 * the page it pushes out to the overrun right after the first step. A
 * writer that interrupts it there flags the next page HEAD itself, before
 * that count. A reader that swaps that page out, with the overrun it read
 * before the count, reports the loss short by the page, and the page's
 * events with the next page it swaps in: a consumer sees them lost after
 * events that were written after them.
 *
 * user/kmod/rb_head_loss.ko makes it happen on the CPU that loads it: a
 * breakpoint after the first step writes an event (the interrupting
 * writer) and lets a work item on another CPU call
 * TRACE_MMAP_IOCTL_GET_READER; a breakpoint on that CPU right after the
 * reader's load of the overrun holds the reader there until the move
 * ended. A reader that waits for the move to end before it reads the
 * overrun gets there only afterwards. This test maps the buffer first,
 * loads the module on CPU 0, and compares the loss in the meta-page with
 * the overrun the module read before and after.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kmod_common.h"
#include "rb_seq.h"

#define INSTANCE	"rb_head_loss"
#define MODULE_NAME	"rb_head_loss"
#define MODULE_PATH	"/lib/modules/ftmmap/rb_head_loss.ko"
#define BUFFER_KB	"16"
#define CPU		0
#define FUNC		"rb_move_tail"
#define RFUNC		"__rb_get_reader_page"

RB_SEQ_FIXTURE(2)

TEST_F(rb, loss_counts_the_page_of_a_head_move_interrupted)
{
	struct trace_buffer_meta *meta = self->b.meta;
	unsigned long long func, size, rfunc, rsize;
	long long before, after;
	char params[224];
	unsigned int ring;
	int err;

	if (!kallsyms_range(FUNC, &func, &size))
		SKIP(return, "no " FUNC " in /proc/kallsyms");
	if (!kallsyms_range(RFUNC, &rfunc, &rsize))
		SKIP(return, "no " RFUNC " in /proc/kallsyms (inlined)");
	ring = rb_seq_ring_pages(&self->b);
	snprintf(params, sizeof(params),
		 "instance=%s prelim=%u ring_pages=%u func=%llu size=%llu rfunc=%llu rsize=%llu",
		 INSTANCE, rb_seq_lap_and_a_half(&self->b), ring,
		 func, size, rfunc, rsize);

	err = rb_seq_load(&self->b, params);
	if (err == -EOPNOTSUPP)
		SKIP(return, "rb_head_loss: no instruction breakpoints here (x86-64 only)");
	ASSERT_NE(-ENOEXEC, err)
		TH_LOG("rb_head_loss: no load of the overrun after the barrier of " RFUNC);
	ASSERT_EQ(0, err) TH_LOG("loading rb_head_loss: %s (see the kernel log)", strerror(-err));
	ASSERT_EQ(CPU, kmod_param(MODULE_NAME, "cpu"));
	ASSERT_EQ(1, kmod_param(MODULE_NAME, "hits"));
	ASSERT_EQ(0, kmod_param(MODULE_NAME, "nested"))
		TH_LOG("the interrupting writer's event was refused");
	ASSERT_EQ(0, kmod_param(MODULE_NAME, "swapped"))
		TH_LOG("the work item's GET_READER failed");
	ASSERT_EQ(1, kmod_param(MODULE_NAME, "rhits"))
		TH_LOG("the reader never loaded the overrun after the barrier");

	before = kmod_param(MODULE_NAME, "overrun_before");
	after = kmod_param(MODULE_NAME, "overrun_after");
	TH_LOG("wrote %lld events; %lld breakpoints, %lld head moves seen; overrun %lld, then %lld; the reader %s",
	       kmod_param(MODULE_NAME, "written"), kmod_param(MODULE_NAME, "breakpoints"),
	       kmod_param(MODULE_NAME, "moves"), before, after,
	       kmod_param(MODULE_NAME, "in_move") ? "read the overrun during the move" :
						    "read the overrun once the move ended");
	EXPECT_EQ(after - before, (long long)meta->reader.lost_events)
		TH_LOG("the loss reported with the new head is not the overrun since the last one");
	EXPECT_EQ(0, kmod_param(MODULE_NAME, "in_move"));
}

TEST_HARNESS_MAIN
