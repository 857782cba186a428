// SPDX-License-Identifier: GPL-2.0
/*
 * A loss that another reader's swap found and left must reach the mapped
 * consumer once, right before the events it came before, without a
 * warning.
 *
 * A read() of trace_pipe_raw too short for the first event swaps in a new
 * reader page, finds the events lost before it, and returns with nothing
 * read: the count stays. The mapped consumer is then handed that page,
 * and the count with it (before the fix, with the page it swapped in
 * next). In a ring of two pages that the writer went round, that next
 * page is the one the writer is on: the reader page is then the commit
 * page and the tail page. Mainline's ring_buffer_map_get_reader() takes a
 * count there for a commit overrun, and warns (WARN_ONCE "Reader on
 * commit with %ld missed events").
 *
 * With the buffer written by trace_marker alone, the test counts what the
 * consumer sees: every marker written is seen or counted lost once, the
 * loss is reported with the first sub-buffer handed over, the first marker
 * seen comes right after the lost ones, and the kernel is not tainted by a
 * warning.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "kselftest_harness.h"
#include "rb_seq.h"

#define INSTANCE	"rb_left_loss"
#define BUFFER_KB	"4"	/* the smallest ring: two pages */
#define CPU		0
#define TAINT_WARN	(1UL << 9)

static unsigned long tainted(void)
{
	unsigned long t = 0;
	FILE *f = fopen("/proc/sys/kernel/tainted", "r");

	if (f) {
		if (fscanf(f, "%lu", &t) != 1)
			t = 0;
		fclose(f);
	}
	return t;
}

/* What the mapped consumer saw of the markers "seq=N" */
struct seen {
	long long	events;
	long long	lost;		/* the losses reported */
	long long	lost_first;	/* ... with the first sub-buffer */
	long long	first;		/* the first N seen, -1 before */
	long long	next;		/* the N due next */
	long long	bad;		/* markers not where due */
	long long	handed;		/* hand-overs that started a sub-buffer */
};

/*
 * The markers of the sub-buffer at reader.id, at data offsets [from,
 * read). From 0, the hand-over starts the sub-buffer, and a loss before it
 * is in reader.lost_events and, once the writer left the sub-buffer, in
 * its header too: the same loss, counted once.
 */
static void account(struct __test_metadata *_metadata, struct rb_seq *b,
		    unsigned int from, struct seen *s)
{
	struct trace_buffer_meta *meta = b->meta;
	char *sb = (char *)meta + meta->meta_page_size +
		   (size_t)meta->reader.id * meta->subbuf_size;
	struct kbuffer *kbuf = b->kbuf;
	unsigned int n;
	char *data;
	int missed;

	kbuffer_load_subbuffer(kbuf, sb);
	if (from == 0) {
		missed = kbuffer_missed_events(kbuf);
		if (missed > 0)
			EXPECT_EQ(meta->reader.lost_events, missed);
		s->lost += meta->reader.lost_events;
		if (!s->handed++)
			s->lost_first = meta->reader.lost_events;
		kbuffer_load_subbuffer(kbuf, sb);
	} else {
		EXPECT_EQ(0, meta->reader.lost_events);
	}
	for (data = rb_seq_next_event(b, NULL, from); data;
	     data = rb_seq_next_event(b, data, from)) {
		/* struct print_entry: the common fields, ip, the text */
		if (sscanf(data + 8 + sizeof(long), "seq=%u", &n) != 1) {
			s->bad++;
			continue;
		}
		if (s->first < 0)
			s->first = n;
		else if (n != s->next)
			s->bad++;
		s->next = n + 1;
		s->events++;
	}
}

FIXTURE(rb) {
	struct rb_seq	b;
	int		marker;
};

FIXTURE_SETUP(rb)
{
	int err;

	self->marker = -1;
	rb_seq_init(&self->b, "/nonexistent", NULL);
	err = rb_seq_open(&self->b, INSTANCE, BUFFER_KB, CPU);
	ASSERT_EQ(0, err) TH_LOG("instance and mapping: %s", strerror(-err));
	self->marker = tracefs_instance_file_open(self->b.inst, "trace_marker",
						  O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, self->marker);
}

FIXTURE_TEARDOWN(rb)
{
	if (self->marker >= 0)
		close(self->marker);
	rb_seq_close(&self->b);
}

TEST_F(rb, loss_left_by_a_short_read_reported_once)
{
	struct trace_buffer_meta *meta = self->b.meta;
	struct seen s = { .first = -1 };
	unsigned int i, nr, id, from;
	long long overrun, entries;
	unsigned long taint;
	char buf[32];
	int fd, idle = 0;
	ssize_t n;

	ASSERT_EQ(2, meta->nr_subbufs - 1)
		TH_LOG("buffer_size_kb %s: %u pages in the ring, not two",
		       BUFFER_KB, meta->nr_subbufs - 1);
	taint = tainted();

	/* Three laps of the ring: markers of 24 bytes or more */
	nr = 3 * 2 * meta->subbuf_size / 24;
	for (i = 0; i < nr; i++)
		ASSERT_LT(0, dprintf(self->marker, "seq=%06u", i));
	ASSERT_LT(0, tracefs_instance_file_write(self->b.inst, "tracing_on", "0"));
	overrun = rb_seq_stat(&self->b, "overrun: ");
	entries = rb_seq_stat(&self->b, "entries: ");
	ASSERT_LT(0, overrun);
	ASSERT_EQ(nr, overrun + entries);

	/* Too short for an event: a new reader page, nothing read */
	fd = tracefs_instance_file_open(self->b.inst, "per_cpu/cpu0/trace_pipe_raw",
					O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ASSERT_LE(0, fd);
	n = read(fd, buf, 20);
	EXPECT_GE(0, n) TH_LOG("read() of 20 bytes returned %zd", n);
	close(fd);

	/* Drain through the mapping until two calls hand nothing over */
	while (idle < 2) {
		id = meta->reader.id;
		from = meta->reader.read;
		ASSERT_EQ(0, ioctl(self->b.fd, TRACE_MMAP_IOCTL_GET_READER));
		if (meta->reader.id != id)
			account(_metadata, &self->b, 0, &s);
		else if (meta->reader.read != from)
			account(_metadata, &self->b, from, &s);
		else {
			idle++;
			continue;
		}
		idle = 0;
	}

	TH_LOG("%u markers, overrun %lld: %lld seen from seq=%lld, %lld reported lost",
	       nr, overrun, s.events, s.first, s.lost);
	EXPECT_EQ(0, s.bad);
	EXPECT_EQ(entries, s.events);
	EXPECT_EQ(overrun, s.lost) TH_LOG("the loss is not reported once");
	EXPECT_EQ(overrun, s.lost_first)
		TH_LOG("the loss is not reported with the sub-buffer after it");
	EXPECT_EQ(s.lost, s.first);
	EXPECT_EQ(taint & TAINT_WARN, tainted() & TAINT_WARN)
		TH_LOG("a warning (see the kernel log)");
}

TEST_HARNESS_MAIN
