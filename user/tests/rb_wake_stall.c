// SPDX-License-Identifier: GPL-2.0
/*
 * A reader that waits for a writer must not stall that writer's CPU.
 *
 * __rb_get_reader_page() waits, with the reader lock held and for up to a
 * second, while a writer that overfilled the page it returns is still in
 * rb_move_tail(). rb_wake_up_waiters(), the irq_work that wakes the
 * waiters, takes the reader lock when a full waiter is pending (a poll()
 * or read at buffer_percent above 0). It runs in the interrupt of the CPU
 * whose event queued it: in that writer's move, the irq_work spins on the
 * lock, the reader waits for the writer, and both CPUs stall with
 * interrupts off until the reader gives up after a second, with a
 * warning, and disables recording in the whole buffer. Met once in 60
 * kcsan_load loads on the normal kernel (its poll() readers wait at
 * buffer_percent 100).
 *
 * user/kmod/rb_wake.ko makes it happen on the CPU that loads it: its
 * breakpoint on rb_move_tail() lets a GET_READER on another CPU swap the
 * writer's overfilled page in, then queues the irq_work (as an interrupt's
 * event would) for when it returns to the writer. This test maps the
 * buffer, polls it once at buffer_percent 100 (a full waiter pending),
 * loads the module on CPU 0, and checks that the reader did not wait out
 * its second and that recording is still on.
 *
 * The same module without the irq_work has a reader take a page whose
 * writer is still in its move, and the test drains what it left: every
 * event once, in order, and the buffer's counts back to zero. With events
 * of 16 bytes, the event that overfills the page ends inside it (at 4080
 * of 4080 bytes, past the room the series keeps for a lost count), where
 * the reader does not wait for the writer to leave.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kmod_common.h"
#include "rb_seq.h"

#define INSTANCE	"rb_wake_stall"
#define MODULE_NAME	"rb_wake"
#define MODULE_PATH	"/lib/modules/ftmmap/rb_wake.ko"
#define BUFFER_KB	"16"
#define CPU		0
#define FUNC		"rb_move_tail"
#define WAKE		"ring_buffer_wake_waiters"
/* The handler holds the writer 50 ms; the reader gives up after 1 s */
#define WAIT_MAX_US	500000

RB_SEQ_FIXTURE(2)

/*
 * Drain what the module left, from the page its second GET_READER took
 * while the writer was in its move (the module's reader handed over the
 * pages before it) to the event written after the move.
 */
static void drain_after_the_move(struct __test_metadata *_metadata, struct rb_seq *b)
{
	struct rb_seq_seen first = RB_SEQ_SEEN_INIT, s = RB_SEQ_SEEN_INIT;

	/* The first sequence number of that page: the rest follow it */
	rb_seq_account(b, true, 0, &first);
	ASSERT_LT(0, first.first_seq) TH_LOG("no event on the page the reader took");
	s.next_seq = first.first_seq;
	rb_seq_account(b, true, 0, &s);
	ASSERT_EQ(0, rb_seq_drain(b, &s));
	TH_LOG("drained %lld events from %lld, next due %lld: %lld out of order",
	       s.events, first.first_seq, s.next_seq, s.bad_seq);
	TH_LOG("lost %lld in headers, %lld in the meta-page, %lld flags without a count",
	       s.header_lost, s.meta_lost, s.flag_only);
	EXPECT_EQ(0, s.bad_seq)
		TH_LOG("event %lld where %lld was due", s.first_bad, s.first_bad_due);
	EXPECT_EQ(kmod_param(MODULE_NAME, "written"), s.next_seq)
		TH_LOG("the events after the move did not all reach the reader");
	EXPECT_EQ(0, s.header_lost + s.meta_lost + s.flag_only);
	EXPECT_EQ(0, rb_seq_stat(b, "entries: "));
	EXPECT_EQ(0, rb_seq_stat(b, "bytes: "))
		TH_LOG("bytes left in a drained buffer: the page's padding not counted read");
}

/*
 * Load rb_wake with @params and log what it did: false if this kernel has
 * no instruction breakpoints for it (the test skips).
 */
static bool rb_wake_run(struct __test_metadata *_metadata, struct rb_seq *b,
			const char *params)
{
	int err = rb_seq_load(b, params);

	if (err == -EOPNOTSUPP)
		return false;
	ASSERT_EQ(0, err) TH_LOG("loading rb_wake: %s (see the kernel log)", strerror(-err));
	ASSERT_EQ(CPU, kmod_param(MODULE_NAME, "cpu"));
	ASSERT_EQ(2, kmod_param(MODULE_NAME, "hits"));
	TH_LOG("wrote %lld events, the writer stalled at offset %lld; GET_READER on CPU %lld: %lld after %lld us",
	       kmod_param(MODULE_NAME, "written"), kmod_param(MODULE_NAME, "tail"),
	       kmod_param(MODULE_NAME, "reader_cpu"), kmod_param(MODULE_NAME, "get_reader"),
	       kmod_param(MODULE_NAME, "waited_us"));
	return true;
}

TEST_F(rb, waiters_irq_work_does_not_stall_a_writer)
{
	unsigned long long func, size, wake, wake_size;
	char params[160];
	short revents = 0;
	long long waited;

	if (!kallsyms_range(FUNC, &func, &size))
		SKIP(return, "no " FUNC " in /proc/kallsyms");
	ASSERT_TRUE(kallsyms_range(WAKE, &wake, &wake_size));

	/*
	 * An event, so that poll() records its watermark (shortest_full at
	 * 100: the writers never reach it here), and not ready: a full
	 * waiter is pending from now on.
	 */
	ASSERT_LT(0, tracefs_instance_file_write(self->b.inst, "trace_marker", "x"));
	ASSERT_EQ(0, rb_seq_poll_full(&self->b, &revents));

	snprintf(params, sizeof(params), "instance=%s func=%llu size=%llu wake=%llu",
		 INSTANCE, func, size, wake);
	if (!rb_wake_run(_metadata, &self->b, params))
		SKIP(return, "rb_wake: no instruction breakpoints here (x86-64 only)");
	waited = kmod_param(MODULE_NAME, "waited_us");
	EXPECT_EQ(0, kmod_param(MODULE_NAME, "get_reader"));
	EXPECT_GT(WAIT_MAX_US, waited)
		TH_LOG("the reader waited out its second: the irq_work spun on its lock in the writer's move");
	EXPECT_EQ(0, kmod_param(MODULE_NAME, "write_after"))
		TH_LOG("recording disabled after the reader gave up on the writer");
	drain_after_the_move(_metadata, &self->b);
}

/*
 * A 16-byte event overfills the page when it starts at 4064: it ends at
 * 4080, inside the page, so the reader swaps the page in without waiting
 * for the writer. The writer then pads the page and records where its
 * data stopped; the reader hands over each event once and counts the
 * padding read.
 */
TEST_F(rb, reader_takes_a_page_overfilled_inside_its_end)
{
	/* The data of a sub-buffer, after its 16-byte header (64-bit) */
	long long data = self->b.meta->subbuf_size - 2 * sizeof(__u64);
	unsigned long long func, size;
	char params[160];
	long long end;

	if (!kallsyms_range(FUNC, &func, &size))
		SKIP(return, "no " FUNC " in /proc/kallsyms");

	snprintf(params, sizeof(params), "instance=%s func=%llu size=%llu words=1",
		 INSTANCE, func, size);
	if (!rb_wake_run(_metadata, &self->b, params))
		SKIP(return, "rb_wake: no instruction breakpoints here (x86-64 only)");
	ASSERT_EQ(0, kmod_param(MODULE_NAME, "get_reader"));
	/* The case itself: past the room kept for a count, not past the end */
	end = kmod_param(MODULE_NAME, "tail") + 16;
	ASSERT_LT(data - (long long)sizeof(__u64), end);
	ASSERT_GE(data, end);
	EXPECT_EQ(0, kmod_param(MODULE_NAME, "write_after"));
	drain_after_the_move(_metadata, &self->b);
}

TEST_HARNESS_MAIN
