// SPDX-License-Identifier: GPL-2.0
/*
 * A reader that swaps a whole sub-buffer out (read() or splice() of
 * trace_pipe_raw, ring_buffer_read_page()) while the first mmap() of the
 * CPU buffer has put the pages into the VMA, but not yet counted the
 * mapping, takes a data page that the VMA maps out of the ring and leaves
 * one there that the VMA does not map. 6.12 numbers the sub-buffers under
 * the reader lock, drops it, inserts the pages, and only then counts the
 * mapping, which makes readers copy instead of swap: in between, a reader
 * swaps. Events written later into that sub-buffer are handed over by
 * GET_READER where the mapping shows the old page: events already read,
 * again.
 *
 * user/kmod/rb_mapwin.ko makes the reader run right then: it writes
 * events of sequence numbers on the test's CPU at load, and a kretprobe
 * on vm_insert_pages() has a work item on another CPU call
 * ring_buffer_read_page() when the mapping of the whole buffer has been
 * inserted. The test then drains the buffer through the mapping, has the
 * module write three laps of the ring more, and drains it again: with
 * kbuffer, every event must come where its sequence number is due (after
 * those the reader took, and after the losses the sub-buffers report).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kmod_common.h"
#include "rb_seq.h"

#define INSTANCE	"rb_map_window"
#define MODULE_NAME	"rb_mapwin"
#define MODULE_PATH	"/lib/modules/ftmmap/rb_mapwin.ko"
#define BUFFER_KB	"16"
#define CPU		0

RB_SEQ_FIXTURE_UNMAPPED(2)

TEST_F(rb, read_swap_while_mmap_inserts_pages)
{
	struct rb_seq_seen s = RB_SEQ_SEEN_INIT;
	long long taken;
	unsigned int per_subbuf, ring;
	char params[128], more[32];
	int err;

	/* 4 KiB sub-buffers: the head one full, the writer on the next */
	per_subbuf = (4096 - 2 * sizeof(__u64) - sizeof(long)) / RB_SEQ_EVENT_BYTES;
	snprintf(params, sizeof(params), "instance=%s pid=%d prelim=%u",
		 INSTANCE, getpid(), per_subbuf + per_subbuf / 2);
	err = rb_seq_load(&self->b, params);
	if (err == -EOPNOTSUPP)
		SKIP(return, "rb_mapwin: no kretprobes here");
	ASSERT_EQ(0, err) TH_LOG("loading rb_mapwin: %s (see the kernel log)", strerror(-err));
	ASSERT_EQ(CPU, kmod_param(MODULE_NAME, "cpu"));

	err = rb_seq_map(&self->b);
	ASSERT_EQ(0, err) TH_LOG("mapping: %s", strerror(-err));
	ASSERT_EQ(1, kmod_param(MODULE_NAME, "hits"))
		TH_LOG("no vm_insert_pages() of the whole buffer in this task");
	ASSERT_EQ(1, kmod_param(MODULE_NAME, "read_done"));
	ASSERT_EQ(0, kmod_param(MODULE_NAME, "missed"));
	ASSERT_LE(0, kmod_param(MODULE_NAME, "read_ret"))
		TH_LOG("the reader found nothing to read");
	taken = rb_seq_stat(&self->b, "read events: ");
	ASSERT_LT(0, taken);
	TH_LOG("the reader on CPU %lld took %lld events in the window",
	       kmod_param(MODULE_NAME, "reader_cpu"), taken);

	/* What the reader took is not handed over again */
	s.next_seq = taken;
	ASSERT_EQ(0, rb_seq_drain(&self->b, &s));

	/* Every sub-buffer written again, the one the reader took included */
	ring = rb_seq_ring_pages(&self->b);
	snprintf(more, sizeof(more), "%u", 3 * ring * per_subbuf);
	ASSERT_EQ(0, kmod_param_write(MODULE_NAME, "write", more));
	ASSERT_EQ(0, kmod_param(MODULE_NAME, "write_err"));
	ASSERT_EQ(0, rb_seq_drain(&self->b, &s));

	TH_LOG("%lld events written, %lld taken by the reader, %lld handed over, %lld lost (headers), %lld (meta-page)",
	       kmod_param(MODULE_NAME, "written"), taken, s.events, s.header_lost, s.meta_lost);
	EXPECT_EQ(0, s.bad_seq)
		TH_LOG("%lld events not where due, the first %lld where %lld was: the mapping shows a page the ring no longer has",
		       s.bad_seq, s.first_bad, s.first_bad_due);
	EXPECT_EQ(kmod_param(MODULE_NAME, "written"), s.next_seq);
}

TEST_HARNESS_MAIN
