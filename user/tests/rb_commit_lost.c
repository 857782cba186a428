// SPDX-License-Identifier: GPL-2.0
/*
 * A loss before the commit page of a writer a lap ahead goes into the
 * header of that sub-buffer, where libtraceevent's kbuffer reads it.
 *
 * An interrupt that fills the whole buffer inside the reservation of
 * another event leaves the commit a lap behind: the head it pushes while
 * overwriting lands on the commit page. A mapped consumer that asks for
 * the next sub-buffer right then must not be handed that page with the
 * loss in the meta-page alone: the writer still owns its header, and a
 * consumer that reads losses where libtraceevent does (the missed-events
 * flag and the count after the data) would never see it.
 *
 * user/kmod/rb_nest.ko makes that state on the CPU that loads it, and a
 * work item on another CPU calls TRACE_MMAP_IOCTL_GET_READER in it; this
 * test maps the buffer first, loads the module on one CPU, and drains the
 * buffer with
 * TRACE_MMAP_IOCTL_GET_READER. Then, with sub-buffers walked by kbuffer:
 * every event the module wrote is either seen or counted in a header, the
 * headers' counts add up to the kernel's overrun, and the first event after
 * the loss comes right after the lost ones.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <linux/trace_mmap.h>
#include <kbuffer.h>
#include <tracefs/tracefs.h>

#include "kselftest_harness.h"
#include "kmod_common.h"

#define INSTANCE	"rb_commit_lost"
#define MODULE_PATH	"/lib/modules/ftmmap/rb_nest.ko"
#define BUFFER_KB	"12"	/* three sub-buffers of 4 KiB: a short lap */
/* 4 of header, 8 of sequence number, 4 more: 12 is not a length it uses */
#define EVENT_BYTES	16
#define CPU		0

static long long stat_of(struct tracefs_instance *inst, const char *key)
{
	char *stats = tracefs_instance_file_read(inst, "per_cpu/cpu0/stats", NULL);
	long long v = -1;
	char *p;

	if (!stats)
		return -1;
	p = strstr(stats, key);
	if (p)
		v = strtoll(p + strlen(key), NULL, 10);
	free(stats);
	return v;
}

FIXTURE(rb) {
	struct tracefs_instance	*inst;
	int			fd;
	int			mod_fd;
	struct trace_buffer_meta *meta;
	size_t			len;
	struct kbuffer		*kbuf;
	bool			loaded;
};

/*
 * Where the commit is when the interrupt comes: half-way into the page
 * after the head (the consumer is handed that much of it), or at the start
 * of the page after that (nothing of it).
 */
FIXTURE_VARIANT(rb) {
	unsigned int	prelim_halves;	/* sub-buffers filled first, in halves */
};

FIXTURE_VARIANT_ADD(rb, commit_page_with_data) {
	.prelim_halves = 3,
};

FIXTURE_VARIANT_ADD(rb, commit_page_empty) {
	.prelim_halves = 4,
};

FIXTURE_SETUP(rb)
{
	long page_size = sysconf(_SC_PAGESIZE);
	struct trace_buffer_meta *meta;
	cpu_set_t set;

	self->fd = -1;
	self->mod_fd = open(MODULE_PATH, O_RDONLY | O_CLOEXEC);
	if (self->mod_fd < 0)
		SKIP(return, "no %s (a kernel without loadable modules)", MODULE_PATH);

	CPU_ZERO(&set);
	CPU_SET(CPU, &set);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(set), &set));

	self->inst = tracefs_instance_create(INSTANCE);
	ASSERT_NE(NULL, self->inst);
	ASSERT_LT(0, tracefs_instance_file_write(self->inst, "buffer_size_kb", BUFFER_KB));

	self->fd = tracefs_instance_file_open(self->inst, "per_cpu/cpu0/trace_pipe_raw",
					      O_RDONLY | O_NONBLOCK);
	ASSERT_LE(0, self->fd);
	meta = mmap(NULL, page_size, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, meta);
	self->len = meta->meta_page_size + (size_t)meta->nr_subbufs * meta->subbuf_size;
	munmap(meta, page_size);
	self->meta = mmap(NULL, self->len, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, self->meta);

	self->kbuf = kbuffer_alloc(sizeof(long) == 8 ? KBUFFER_LSIZE_8 : KBUFFER_LSIZE_4,
				   KBUFFER_ENDIAN_LITTLE);
	ASSERT_NE(NULL, self->kbuf);
}

FIXTURE_TEARDOWN(rb)
{
	if (self->loaded && syscall(SYS_delete_module, "rb_nest", O_NONBLOCK))
		TH_LOG("cannot unload rb_nest: %s", strerror(errno));
	if (self->kbuf)
		kbuffer_free(self->kbuf);
	if (self->meta && self->meta != MAP_FAILED)
		munmap(self->meta, self->len);
	if (self->fd >= 0)
		close(self->fd);
	if (self->mod_fd >= 0)
		close(self->mod_fd);
	if (self->inst) {
		tracefs_instance_destroy(self->inst);
		tracefs_instance_free(self->inst);
	}
}

/*
 * Account the sub-buffer the last GET_READER (the module's or ours) left
 * at reader.id: its header's loss if it is new, and the events at data
 * offsets [from, reader.read).
 */
struct seen {
	long long	events;
	long long	header_lost;
	long long	meta_lost;
	long long	flag_only;
	long long	next_seq;	/* expected next sequence number */
	long long	bad_seq;
	long long	first_after_loss;
};

static void account(struct trace_buffer_meta *meta, struct kbuffer *kbuf,
		    bool moved, unsigned int from, struct seen *s)
{
	char *sb = (char *)meta + meta->meta_page_size +
		   (size_t)meta->reader.id * meta->subbuf_size;
	int missed = 0;
	void *data;
	__u64 seq;

	kbuffer_load_subbuffer(kbuf, sb);
	if (moved) {
		/* Asked before the first event is passed */
		missed = kbuffer_missed_events(kbuf);
		if (missed > 0) {
			s->header_lost += missed;
			s->next_seq += missed;
		} else if (missed < 0) {
			s->flag_only++;
		}
		s->meta_lost += meta->reader.lost_events;
		kbuffer_load_subbuffer(kbuf, sb);
	}
	for (data = kbuffer_read_event(kbuf, NULL); data;
	     data = kbuffer_next_event(kbuf, NULL)) {
		if (kbuffer_curr_index(kbuf) >= meta->reader.read)
			break;
		if (kbuffer_curr_index(kbuf) < from)
			continue;
		memcpy(&seq, data, sizeof(seq));
		if (missed > 0 && s->first_after_loss < 0)
			s->first_after_loss = seq;
		if ((long long)seq != s->next_seq)
			s->bad_seq++;
		s->next_seq = seq + 1;
		s->events++;
	}
}

/*
 * Account what a GET_READER (the module's or ours) handed over, given
 * reader.id and reader.read before it: false if nothing.
 */
static bool account_step(struct trace_buffer_meta *meta, struct kbuffer *kbuf,
			 unsigned int id, unsigned int from, struct seen *s)
{
	if (meta->reader.id != id)
		account(meta, kbuf, true, 0, s);
	else if (meta->reader.read != from)
		account(meta, kbuf, false, from, s);
	else
		return false;
	return true;
}

TEST_F(rb, loss_before_late_commit_page_in_header)
{
	struct trace_buffer_meta *meta = self->meta;
	struct seen s = { .first_after_loss = -1 };
	unsigned int per_page, id, from;
	long long written, overrun, commit_overrun;
	char params[96];
	int idle = 0;

	/* A sub-buffer: its header, the events, room for a lost count */
	per_page = (meta->subbuf_size - 2 * sizeof(__u64) - sizeof(long)) / EVENT_BYTES;
	snprintf(params, sizeof(params), "instance=%s prelim=%u", INSTANCE,
		 per_page * variant->prelim_halves / 2);

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "one CPU online: no reader beside the writer");
	id = meta->reader.id;
	from = meta->reader.read;
	ASSERT_EQ(0, syscall(SYS_finit_module, self->mod_fd, params, 0)) {
		TH_LOG("loading rb_nest: %s (see the kernel log)", strerror(errno));
	}
	self->loaded = true;
	ASSERT_EQ(CPU, kmod_param("rb_nest", "cpu"));
	ASSERT_EQ(0, kmod_param("rb_nest", "get_reader"));
	written = kmod_param("rb_nest", "written");
	overrun = stat_of(self->inst, "overrun: ");
	commit_overrun = stat_of(self->inst, "commit overrun: ");
	TH_LOG("wrote %lld events (%lld from the interrupt), overrun %lld, commit overrun %lld",
	       written, kmod_param("rb_nest", "nested"), overrun, commit_overrun);
	ASSERT_LT(0, overrun) TH_LOG("the interrupt did not lap the buffer");
	ASSERT_LT(0, commit_overrun);

	/* The module's GET_READER, as seen by the consumer */
	account_step(meta, self->kbuf, id, from, &s);

	while (idle < 2) {
		id = meta->reader.id;
		from = meta->reader.read;
		ASSERT_EQ(0, ioctl(self->fd, TRACE_MMAP_IOCTL_GET_READER));
		idle = account_step(meta, self->kbuf, id, from, &s) ? 0 : idle + 1;
	}

	TH_LOG("seen %lld, lost in headers %lld, in the meta-page %lld, first after the loss %lld",
	       s.events, s.header_lost, s.meta_lost, s.first_after_loss);
	EXPECT_EQ(0, s.flag_only);
	EXPECT_EQ(0, s.bad_seq);
	EXPECT_EQ(overrun, s.header_lost);
	EXPECT_EQ(overrun, s.meta_lost);
	EXPECT_EQ(written, s.events + s.header_lost);
	EXPECT_EQ(s.header_lost, s.first_after_loss);
}

TEST_HARNESS_MAIN
