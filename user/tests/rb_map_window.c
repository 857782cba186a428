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
 *
 * And a GET_READER through another descriptor of the file, which has no
 * mapping of its own, must not hand out a sub-buffer while the first
 * mapping is set up: if the mmap() then fails, no mapping shows the
 * sub-buffer, yet its events are consumed, and no count reports them
 * lost. The module makes vm_insert_pages() of the whole buffer fail with
 * -ENOMEM after its work item called GET_READER in the window; the call
 * must fail with -ENODEV once the mapping is undone, and every event must
 * still be in the buffer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kmod_common.h"
#include "ms_clock.h"
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

TEST_F(rb, get_reader_while_a_failing_mmap_inserts_pages)
{
	long long ret, t0, read, entries;
	unsigned int per_subbuf, prelim;
	char params[160];
	int err;

	per_subbuf = (4096 - 2 * sizeof(__u64) - sizeof(long)) / RB_SEQ_EVENT_BYTES;
	prelim = per_subbuf + per_subbuf / 2;
	snprintf(params, sizeof(params), "instance=%s pid=%d prelim=%u get_reader=1 fail=%d",
		 INSTANCE, getpid(), prelim, -ENOMEM);
	err = rb_seq_load(&self->b, params);
	if (err == -EOPNOTSUPP)
		SKIP(return, "rb_mapwin: no kretprobes here");
	ASSERT_EQ(0, err) TH_LOG("loading rb_mapwin: %s (see the kernel log)", strerror(-err));

	err = rb_seq_map(&self->b);
	ASSERT_EQ(-ENOMEM, err) TH_LOG("mapping: %s, not the error injected", strerror(-err));
	ASSERT_EQ(1, kmod_param(MODULE_NAME, "hits"))
		TH_LOG("no vm_insert_pages() of the whole buffer in this task");
	ASSERT_EQ(0, kmod_param(MODULE_NAME, "missed"));
	ASSERT_EQ(1, kmod_param(MODULE_NAME, "entered"))
		TH_LOG("the work item did not begin GET_READER before the mapping failed");

	/* A call held back until the mapping was undone ends now */
	t0 = now_ms();
	while ((ret = kmod_param(MODULE_NAME, "get_reader_ret")) == 1 && now_ms() - t0 < 2000)
		usleep(1000);
	read = rb_seq_stat(&self->b, "read events: ");
	entries = rb_seq_stat(&self->b, "entries: ");
	TH_LOG("GET_READER %s the window: %lld; events read %lld, in the buffer %lld of %u",
	       kmod_param(MODULE_NAME, "read_done") ? "returned in" : "was held past",
	       ret, read, entries, prelim);
	EXPECT_EQ(-ENODEV, ret) {
		if (!ret)
			TH_LOG("GET_READER handed out a sub-buffer of a mapping that then failed");
	}
	EXPECT_EQ(0, read) TH_LOG("events consumed that no mapping showed, and not counted lost");
	EXPECT_EQ(prelim, entries);
}

TEST_HARNESS_MAIN
