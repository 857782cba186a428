// SPDX-License-Identifier: GPL-2.0
/*
 * A writer that laps the buffer while the reader swaps the head page out
 * must not make the reader report the loss before that page short.
 *
 * The reader loads the overrun, then replaces the head page by its own page
 * with a cmpxchg() that expects the head where it found it. A writer that
 * goes once round the ring in between puts the head back on the same page:
 * the cmpxchg() succeeds, and the page comes with the loss of one lap less
 * than there was before it (the rest is reported with the next page: the
 * totals balance, the places do not). Seen on the 6.12 series' RT kernel
 * under QEMU (rb_accounting's keep_up), where a vCPU can stall for a lap.
 *
 * user/kmod/rb_lap.ko makes it happen on the CPU that loads it: its
 * breakpoint on the cmpxchg() writes the lap from the #DB handler (as an
 * NMI that traces would) inside the module's own GET_READER. This test maps
 * the buffer first, loads the module on CPU 0, and drains the buffer with
 * TRACE_MMAP_IOCTL_GET_READER. Then, with sub-buffers walked by kbuffer:
 * the first event after the loss is the one right after the lost ones,
 * every event the module wrote is either seen or counted lost, and the
 * counts add up to the kernel's overrun.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "kselftest_harness.h"
#include "kmod_common.h"
#include "rb_seq.h"

#define INSTANCE	"rb_swap_lap"
#define MODULE_NAME	"rb_lap"
#define MODULE_PATH	"/lib/modules/ftmmap/rb_lap.ko"
#define BUFFER_KB	"12"
#define CPU		0
#define FUNC		"__rb_get_reader_page"

RB_SEQ_FIXTURE(1)

TEST_F(rb, loss_before_page_swapped_after_a_lap)
{
	struct trace_buffer_meta *meta = self->b.meta;
	struct rb_seq_seen s = RB_SEQ_SEEN_INIT;
	unsigned long long func, size;
	unsigned int ring, id, from;
	long long written, overrun;
	char params[160];
	int err;

	if (!kallsyms_range(FUNC, &func, &size))
		SKIP(return, "no " FUNC " in /proc/kallsyms");
	ring = rb_seq_ring_pages(&self->b);
	/* A lap and a half: events are lost before the head page */
	snprintf(params, sizeof(params),
		 "instance=%s prelim=%u lap_pages=%u func=%llu size=%llu",
		 INSTANCE, rb_seq_lap_and_a_half(&self->b), ring,
		 func, size);

	id = meta->reader.id;
	from = meta->reader.read;
	err = rb_seq_load(&self->b, params);
	if (err == -EOPNOTSUPP)
		SKIP(return, "rb_lap: no instruction breakpoints here (x86-64 only)");
	ASSERT_EQ(0, err) TH_LOG("loading rb_lap: %s (see the kernel log)", strerror(-err));
	ASSERT_EQ(CPU, kmod_param(MODULE_NAME, "cpu"));
	ASSERT_EQ(0, kmod_param(MODULE_NAME, "get_reader"));
	ASSERT_EQ(1, kmod_param(MODULE_NAME, "hits"));
	ASSERT_EQ(ring, kmod_param(MODULE_NAME, "moves"))
		TH_LOG("the handler did not take the head once round the ring");
	written = kmod_param(MODULE_NAME, "written");
	overrun = rb_seq_stat(&self->b, "overrun: ");
	TH_LOG("wrote %lld events (%lld in the lap), overrun %lld, %lld breakpoints",
	       written, kmod_param(MODULE_NAME, "lapped"), overrun,
	       kmod_param(MODULE_NAME, "breakpoints"));

	/* The module's GET_READER, as seen by the consumer */
	ASSERT_NE(id, meta->reader.id) TH_LOG("the module's GET_READER swapped nothing");
	rb_seq_step(&self->b, id, from, &s);
	TH_LOG("first sub-buffer: %llu events reported lost, first event seq %lld",
	       (unsigned long long)meta->reader.lost_events, s.first_seq);

	err = rb_seq_drain(&self->b, &s);
	ASSERT_EQ(0, err) TH_LOG("GET_READER: %s", strerror(-err));

	TH_LOG("seen %lld, lost in headers %lld, in the meta-page %lld",
	       s.events, s.header_lost, s.meta_lost);
	EXPECT_EQ(0, s.bad_seq)
		TH_LOG("%lld events not right after the loss reported; the first: seq %lld, due %lld",
		       s.bad_seq, s.first_bad, s.first_bad_due);
	EXPECT_EQ(0, s.flag_only);
	EXPECT_EQ(overrun, s.header_lost);
	EXPECT_EQ(overrun, s.meta_lost);
	EXPECT_EQ(written, s.events + s.header_lost);
	EXPECT_EQ(s.header_lost, s.first_after_loss);
}

TEST_HARNESS_MAIN
