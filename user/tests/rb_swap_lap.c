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

#define INSTANCE	"rb_swap_lap"
#define MODULE_NAME	"rb_lap"
#define MODULE_PATH	"/lib/modules/ftmmap/rb_lap.ko"
#define BUFFER_KB	"12"
/* 4 of header, 8 of sequence number, 4 more: 12 is not a length it uses */
#define EVENT_BYTES	16
#define CPU		0
#define FUNC		"__rb_get_reader_page"

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

/*
 * The address of @name in /proc/kallsyms and its size, up to the next
 * symbol of the kernel's text: false if not found.
 */
static bool kallsyms_range(const char *name, unsigned long long *addr,
			   unsigned long long *size)
{
	unsigned long long a, next = ~0ULL;
	char type, sym[256], line[512];
	bool found = false;
	FILE *f;

	f = fopen("/proc/kallsyms", "r");
	if (!f)
		return false;
	*addr = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &a, &type, sym) != 3)
			continue;
		if (!found && !strcmp(sym, name) && (type == 't' || type == 'T')) {
			*addr = a;
			found = true;
		}
	}
	if (found) {
		rewind(f);
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "%llx %c %255s", &a, &type, sym) == 3 &&
			    a > *addr && a < next)
				next = a;
		}
	}
	fclose(f);
	if (!found || !*addr || next == ~0ULL)
		return false;
	*size = next - *addr;
	return true;
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
	if (self->loaded && syscall(SYS_delete_module, MODULE_NAME, O_NONBLOCK))
		TH_LOG("cannot unload %s: %s", MODULE_NAME, strerror(errno));
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

/* What the consumer saw */
struct seen {
	long long	events;
	long long	header_lost;
	long long	meta_lost;
	long long	flag_only;
	long long	next_seq;	/* expected next sequence number */
	long long	bad_seq;
	long long	first_bad;	/* the first event not where expected */
	long long	first_bad_expected;
	long long	first_seq;	/* the first event seen, -1 before */
};

/*
 * Account the sub-buffer the last GET_READER (the module's or ours) left
 * at reader.id: its header's loss if it is new, and the events at data
 * offsets [from, reader.read).
 */
static void account(struct trace_buffer_meta *meta, struct kbuffer *kbuf,
		    bool moved, unsigned int from, struct seen *s)
{
	char *sb = (char *)meta + meta->meta_page_size +
		   (size_t)meta->reader.id * meta->subbuf_size;
	void *data;
	__u64 seq;
	int missed;

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
		if (s->first_seq < 0)
			s->first_seq = seq;
		if ((long long)seq != s->next_seq && !s->bad_seq++) {
			s->first_bad = seq;
			s->first_bad_expected = s->next_seq;
		}
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

TEST_F(rb, loss_before_page_swapped_after_a_lap)
{
	struct trace_buffer_meta *meta = self->meta;
	unsigned long long func, size;
	struct seen s = { .first_seq = -1 };
	unsigned int per_page, ring, id, from;
	long long written, overrun;
	char params[160];
	int idle = 0;

	if (!kallsyms_range(FUNC, &func, &size))
		SKIP(return, "no " FUNC " in /proc/kallsyms");
	/* A sub-buffer: its header, the events, room for a lost count */
	per_page = (meta->subbuf_size - 2 * sizeof(__u64) - sizeof(long)) / EVENT_BYTES;
	ring = meta->nr_subbufs - 1;	/* the reader page is not in the ring */
	/* A lap and a half: events are lost before the head page */
	snprintf(params, sizeof(params),
		 "instance=%s prelim=%u lap_pages=%u func=%llu size=%llu",
		 INSTANCE, per_page * (ring * 3 / 2 + 1), ring, func, size);

	id = meta->reader.id;
	from = meta->reader.read;
	if (syscall(SYS_finit_module, self->mod_fd, params, 0)) {
		if (errno == EOPNOTSUPP)
			SKIP(return, "rb_lap: no instruction breakpoints here (x86-64 only)");
		ASSERT_EQ(0, -errno) TH_LOG("loading rb_lap: %s (see the kernel log)",
					    strerror(errno));
	}
	self->loaded = true;
	ASSERT_EQ(CPU, kmod_param(MODULE_NAME, "cpu"));
	ASSERT_EQ(0, kmod_param(MODULE_NAME, "get_reader"));
	ASSERT_EQ(1, kmod_param(MODULE_NAME, "hits"));
	ASSERT_EQ(ring, kmod_param(MODULE_NAME, "moves"))
		TH_LOG("the handler did not take the head once round the ring");
	written = kmod_param(MODULE_NAME, "written");
	overrun = stat_of(self->inst, "overrun: ");
	TH_LOG("wrote %lld events (%lld in the lap), overrun %lld, %lld breakpoints",
	       written, kmod_param(MODULE_NAME, "lapped"), overrun,
	       kmod_param(MODULE_NAME, "breakpoints"));

	/* The module's GET_READER, as seen by the consumer */
	ASSERT_NE(id, meta->reader.id) TH_LOG("the module's GET_READER swapped nothing");
	account_step(meta, self->kbuf, id, from, &s);
	TH_LOG("first sub-buffer: %llu events reported lost, first event seq %lld",
	       (unsigned long long)meta->reader.lost_events, s.first_seq);

	while (idle < 2) {
		id = meta->reader.id;
		from = meta->reader.read;
		ASSERT_EQ(0, ioctl(self->fd, TRACE_MMAP_IOCTL_GET_READER));
		idle = account_step(meta, self->kbuf, id, from, &s) ? 0 : idle + 1;
	}

	TH_LOG("seen %lld, lost in headers %lld, in the meta-page %lld",
	       s.events, s.header_lost, s.meta_lost);
	EXPECT_EQ(0, s.bad_seq)
		TH_LOG("%lld events not right after the loss reported; the first: seq %lld where %lld was due",
		       s.bad_seq, s.first_bad, s.first_bad_expected);
	EXPECT_EQ(0, s.flag_only);
	EXPECT_EQ(overrun, s.header_lost);
	EXPECT_EQ(overrun, s.meta_lost);
	EXPECT_EQ(written, s.events + s.header_lost);
}

TEST_HARNESS_MAIN
