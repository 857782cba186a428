/* SPDX-License-Identifier: GPL-2.0 */
/*
 * For the tests whose module (user/kmod/) writes 8-byte sequence numbers
 * into the buffer of one CPU of a trace instance, starting at 0: the
 * instance, the mapping of that CPU's trace_pipe_raw, and the accounting
 * of what a consumer of the mapping sees, with sub-buffers walked by
 * libtraceevent's kbuffer.
 */
#ifndef RB_SEQ_H
#define RB_SEQ_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
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

/* 4 of header, 8 of sequence number, 4 more: 12 is not a length it uses */
#define RB_SEQ_EVENT_BYTES	16

/* The instance, the mapped CPU buffer, the test module */
struct rb_seq {
	struct tracefs_instance	*inst;
	int			cpu;
	int			fd;	/* the CPU's trace_pipe_raw */
	struct trace_buffer_meta *meta;
	size_t			len;
	struct kbuffer		*kbuf;
	int			mod_fd;
	const char		*module;
	bool			loaded;
};

/* Before anything that can fail: what rb_seq_close() may look at */
static inline void rb_seq_init(struct rb_seq *b, const char *module_path,
			       const char *module)
{
	memset(b, 0, sizeof(*b));
	b->fd = -1;
	b->module = module;
	b->mod_fd = open(module_path, O_RDONLY | O_CLOEXEC);
}

/*
 * Keep the task on @cpu and make the instance with a buffer of @kb KiB per
 * CPU: 0, or -errno of the step that failed.
 */
static inline int rb_seq_instance(struct rb_seq *b, const char *instance,
				  const char *kb, int cpu)
{
	cpu_set_t set;

	b->cpu = cpu;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return -errno;

	b->inst = tracefs_instance_create(instance);
	if (!b->inst)
		return -errno;
	if (tracefs_instance_file_write(b->inst, "buffer_size_kb", kb) <= 0)
		return -EIO;
	return 0;
}

/* Map the buffer of the CPU of rb_seq_instance(): 0, or -errno */
static inline int rb_seq_map(struct rb_seq *b)
{
	long page_size = sysconf(_SC_PAGESIZE);
	struct trace_buffer_meta *meta;
	char path[64];

	snprintf(path, sizeof(path), "per_cpu/cpu%d/trace_pipe_raw", b->cpu);
	b->fd = tracefs_instance_file_open(b->inst, path, O_RDONLY | O_NONBLOCK);
	if (b->fd < 0)
		return -errno;
	/* The meta-page says how big the whole mapping is */
	meta = mmap(NULL, page_size, PROT_READ, MAP_SHARED, b->fd, 0);
	if (meta == MAP_FAILED)
		return -errno;
	b->len = meta->meta_page_size + (size_t)meta->nr_subbufs * meta->subbuf_size;
	munmap(meta, page_size);
	meta = mmap(NULL, b->len, PROT_READ, MAP_SHARED, b->fd, 0);
	if (meta == MAP_FAILED)
		return -errno;
	b->meta = meta;

	b->kbuf = kbuffer_alloc(sizeof(long) == 8 ? KBUFFER_LSIZE_8 : KBUFFER_LSIZE_4,
				KBUFFER_ENDIAN_LITTLE);
	return b->kbuf ? 0 : -ENOMEM;
}

/* Both: the instance, then the mapping of @cpu's buffer */
static inline int rb_seq_open(struct rb_seq *b, const char *instance,
			      const char *kb, int cpu)
{
	int err = rb_seq_instance(b, instance, kb, cpu);

	return err ? err : rb_seq_map(b);
}

/* Load the module with @params: 0, or -errno */
static inline int rb_seq_load(struct rb_seq *b, const char *params)
{
	if (syscall(SYS_finit_module, b->mod_fd, params, 0))
		return -errno;
	b->loaded = true;
	return 0;
}

/* Unload the module: 0, or -errno */
static inline int rb_seq_unload(struct rb_seq *b)
{
	if (syscall(SYS_delete_module, b->module, O_NONBLOCK))
		return -errno;
	b->loaded = false;
	return 0;
}

/*
 * Run on any CPU but @cpu, which a test module holds with interrupts off:
 * 0, or -errno. The held CPU answers no cross-call, so a task that makes
 * one and waits for it (a kworker freeing a module's init text, a static
 * key's text patching, a TLB flush) spins, preemption off, on its own CPU
 * until the hold ends. A test pinned there could neither see the hold nor
 * end it: it would see only the hold's timeout (a 6.12 PREEMPT_RT guest
 * in CI did). Off the held CPU and not pinned, the test is moved to a CPU
 * that runs; it waits for the hold by spinning (spin_ms()).
 */
static inline int rb_seq_keep_off(int cpu)
{
	cpu_set_t set;
	int i;

	/* The kernel keeps the CPUs of the set that exist */
	CPU_ZERO(&set);
	for (i = 0; i < CPU_SETSIZE; i++)
		if (i != cpu)
			CPU_SET(i, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

/* Undo all of it, whatever got done; a message if the module stays */
static inline void rb_seq_close(struct rb_seq *b)
{
	int err = b->loaded ? rb_seq_unload(b) : 0;

	if (err)
		fprintf(stderr, "# cannot unload %s: %s\n", b->module, strerror(-err));
	if (b->kbuf)
		kbuffer_free(b->kbuf);
	if (b->meta)
		munmap(b->meta, b->len);
	if (b->fd >= 0)
		close(b->fd);
	if (b->mod_fd >= 0)
		close(b->mod_fd);
	if (b->inst) {
		tracefs_instance_destroy(b->inst);
		tracefs_instance_free(b->inst);
	}
}

/* A number of @inst's per_cpu/cpu@cpu/stats: the one after @key, -1 if none */
static inline long long rb_cpu_stat(struct tracefs_instance *inst, int cpu,
				    const char *key)
{
	char path[32], *stats, *p;
	long long v = -1;

	snprintf(path, sizeof(path), "per_cpu/cpu%d/stats", cpu);
	stats = tracefs_instance_file_read(inst, path, NULL);
	if (!stats)
		return -1;
	p = strstr(stats, key);
	if (p)
		v = strtoll(p + strlen(key), NULL, 10);
	free(stats);
	return v;
}

/* The same, of the test's CPU buffer */
static inline long long rb_seq_stat(struct rb_seq *b, const char *key)
{
	return rb_cpu_stat(b->inst, b->cpu, key);
}

/*
 * poll() of the CPU's trace_pipe_raw, at once, with buffer_percent at 100
 * (readable only when every page but the writer's holds events): what
 * poll() returned, -1 if buffer_percent could not be set.
 */
static inline int rb_seq_poll_full(struct rb_seq *b, short *revents)
{
	struct pollfd pfd = { .fd = b->fd, .events = POLLIN };
	int ret;

	if (tracefs_instance_file_write(b->inst, "buffer_percent", "100") <= 0)
		return -1;
	ret = poll(&pfd, 1, 0);
	*revents = pfd.revents;
	return ret;
}

/* Events of RB_SEQ_EVENT_BYTES a sub-buffer holds, with room for a count */
static inline unsigned int rb_seq_per_subbuf(const struct rb_seq *b)
{
	return (b->meta->subbuf_size - 2 * sizeof(__u64) - sizeof(long)) /
	       RB_SEQ_EVENT_BYTES;
}

/* Pages of the ring, the reader page not counted */
static inline unsigned int rb_seq_ring_pages(const struct rb_seq *b)
{
	return b->meta->nr_subbufs - 1;
}

/* Events of a lap and a half of the ring: once written, the ring is full */
static inline unsigned int rb_seq_lap_and_a_half(const struct rb_seq *b)
{
	return rb_seq_per_subbuf(b) * (rb_seq_ring_pages(b) * 3 / 2 + 1);
}

/* What the consumer saw */
struct rb_seq_seen {
	long long	events;
	long long	header_lost;	/* the counts stored in headers */
	long long	meta_lost;	/* the meta-page's reader.lost_events */
	long long	flag_only;	/* headers with the flag, no count */
	long long	next_seq;	/* the next sequence number due */
	long long	first_seq;	/* the first event seen, -1 before */
	long long	first_after_loss; /* the first after a header's count */
	long long	bad_seq;	/* events not where due */
	long long	first_bad;	/* the first of them... */
	long long	first_bad_due;	/* ...and what was due there */
};

#define RB_SEQ_SEEN_INIT { .first_seq = -1, .first_after_loss = -1 }

/*
 * The events of the sub-buffer kbuffer has loaded (the one at reader.id)
 * that the last GET_READER handed over at data offsets [@from,
 * reader.read): the first with @data NULL, then the one after @data;
 * NULL after the last.
 */
static inline void *rb_seq_next_event(struct rb_seq *b, void *data,
				      unsigned int from)
{
	struct kbuffer *kbuf = b->kbuf;

	for (data = data ? kbuffer_next_event(kbuf, NULL) :
			   kbuffer_read_event(kbuf, NULL);
	     data; data = kbuffer_next_event(kbuf, NULL)) {
		if (kbuffer_curr_index(kbuf) >= b->meta->reader.read)
			return NULL;
		if (kbuffer_curr_index(kbuf) >= from)
			return data;
	}
	return NULL;
}

/*
 * Account the sub-buffer the last GET_READER (the module's or ours) left
 * at reader.id: its header's loss if it is new, and the events at data
 * offsets [from, reader.read).
 */
static inline void rb_seq_account(struct rb_seq *b, bool moved,
				  unsigned int from, struct rb_seq_seen *s)
{
	struct trace_buffer_meta *meta = b->meta;
	char *sb = (char *)meta + meta->meta_page_size +
		   (size_t)meta->reader.id * meta->subbuf_size;
	struct kbuffer *kbuf = b->kbuf;
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
	for (data = rb_seq_next_event(b, NULL, from); data;
	     data = rb_seq_next_event(b, data, from)) {
		memcpy(&seq, data, sizeof(seq));
		if (s->first_seq < 0)
			s->first_seq = seq;
		if (missed > 0 && s->first_after_loss < 0)
			s->first_after_loss = seq;
		if ((long long)seq != s->next_seq && !s->bad_seq++) {
			s->first_bad = seq;
			s->first_bad_due = s->next_seq;
		}
		s->next_seq = seq + 1;
		s->events++;
	}
}

/*
 * Account what a GET_READER (the module's or ours) handed over, given
 * reader.id and reader.read before it: false if nothing.
 */
static inline bool rb_seq_step(struct rb_seq *b, unsigned int id,
			       unsigned int from, struct rb_seq_seen *s)
{
	if (b->meta->reader.id != id)
		rb_seq_account(b, true, 0, s);
	else if (b->meta->reader.read != from)
		rb_seq_account(b, false, from, s);
	else
		return false;
	return true;
}

/*
 * Drain the buffer with GET_READER until two calls in a row hand nothing
 * over, accounting each step: 0, or -errno of the ioctl that failed.
 */
static inline int rb_seq_drain(struct rb_seq *b, struct rb_seq_seen *s)
{
	unsigned int id, from;
	int idle = 0;

	while (idle < 2) {
		id = b->meta->reader.id;
		from = b->meta->reader.read;
		if (ioctl(b->fd, TRACE_MMAP_IOCTL_GET_READER))
			return -errno;
		idle = rb_seq_step(b, id, from, s) ? 0 : idle + 1;
	}
	return 0;
}

/*
 * The fixture of the tests whose module of user/kmod/ (MODULE_PATH,
 * MODULE_NAME) writes into the buffer of CPU of the trace instance
 * INSTANCE (BUFFER_KB KiB per CPU), which the fixture maps first
 * (RB_SEQ_FIXTURE) or leaves for the test to map (RB_SEQ_FIXTURE_UNMAPPED:
 * rb_seq_map()). @min_cpus: the CPUs online the test needs (2: a reader
 * beside the writer). The file includes kselftest_harness.h before this
 * one.
 */
#define RB_SEQ_FIXTURE_WITH(min_cpus, open)					\
FIXTURE(rb) {									\
	struct rb_seq	b;							\
};										\
										\
FIXTURE_SETUP(rb)								\
{										\
	int err;								\
										\
	rb_seq_init(&self->b, MODULE_PATH, MODULE_NAME);			\
	if (self->b.mod_fd < 0)							\
		SKIP(return, "no %s (a kernel without loadable modules)",	\
		     MODULE_PATH);						\
	if (sysconf(_SC_NPROCESSORS_ONLN) < (min_cpus))				\
		SKIP(return, "one CPU online: no reader beside the writer");	\
	err = open(&self->b, INSTANCE, BUFFER_KB, CPU);				\
	ASSERT_EQ(0, err) TH_LOG("%s: %s", #open, strerror(-err));		\
}										\
										\
FIXTURE_TEARDOWN(rb)								\
{										\
	rb_seq_close(&self->b);							\
}

#define RB_SEQ_FIXTURE(min_cpus)	RB_SEQ_FIXTURE_WITH(min_cpus, rb_seq_open)
#define RB_SEQ_FIXTURE_UNMAPPED(min_cpus) \
	RB_SEQ_FIXTURE_WITH(min_cpus, rb_seq_instance)

#endif /* RB_SEQ_H */
