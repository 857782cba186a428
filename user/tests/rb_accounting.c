// SPDX-License-Identifier: GPL-2.0
/*
 * Exact loss accounting of the mapped ring-buffer.
 *
 * Writers put sequence-numbered trace_marker lines ("seq=N cpu=C", one
 * sequence per CPU, from a thread pinned to that CPU) into a small
 * overwriting instance buffer. Consumers drain the per-CPU mappings of
 * trace_pipe_raw with TRACE_MMAP_IOCTL_GET_READER, alone or alternating
 * with read(). Sub-buffers are walked with libtraceevent's kbuffer and the
 * marker text is found at the offsets of the kernel's own ftrace/print
 * format (libtracefs loads it): the test shares no parser with the code it
 * checks.
 *
 * What a consumer relies on, per CPU:
 *  - after a GET_READER, the new events are those of sub-buffer reader.id
 *    at data offsets [from, reader.read), where from is the reader.read
 *    seen before the call if reader.id did not change, else 0. read() of
 *    trace_pipe_raw moves reader.id and reader.read too, so this holds for
 *    a consumer that alternates both;
 *  - a GET_READER that moves to a new sub-buffer reports in
 *    reader.lost_events the events lost just before it. If the header of
 *    that sub-buffer has the missed-events flag, the count stored after its
 *    data (kbuffer_missed_events()) is the same loss, to be counted once;
 *    the writer leaves room for the count, so the flag never comes alone;
 *  - a read() copy carries the flag and the count of the events lost
 *    before it.
 * Then: produced == consumed + lost, sequence numbers strictly increase,
 * every gap equals the loss reported just before it, and once drained,
 * every event the buffer counts was read or overwritten (entries ==
 * overrun + read in the meta-page).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <linux/trace_mmap.h>
#include <event-parse.h>
#include <kbuffer.h>
#include <tracefs/tracefs.h>

#include "kselftest_harness.h"
#include "ms_clock.h"

#define INSTANCE	"rb_accounting"
#define BUFFER_KB	"16"	/* a few sub-buffers per CPU: writers lap */
/*
 * 22 to 50 characters, the length changing from one marker to the next:
 * with the print entry, the newline and the NUL the kernel adds, records
 * of 44 to 72 bytes. Pages then end anywhere, also within a long of their
 * end, where a sub-buffer that events were lost before had no room left
 * for their count (the flag came alone).
 */
#define MARKER_FMT	"seq=%010u cpu=%03d%.*s"
#define MARKER_FILL	"............................"
#define MARKER_MAX	64

#define NR_MARKERS	20000	/* header_count: laps the buffer many times */
/*
 * How long the writers of a load test run: LOAD_MS, or RB_LOAD_MS from the
 * environment, and for the mixed readers RB_MIX_MS, for the consumers that
 * keep up RB_KEEP_UP_MS, if set (the stress stage runs the mix for
 * minutes). A consumer must have drained DRAIN_MS after that.
 */
#define LOAD_MS		3000
#define LOAD_MS_MAX	300000
#define DRAIN_MS	60000
#define LOAD_TIMEOUT_S	((LOAD_MS_MAX + DRAIN_MS) / 1000 + 60)
#define WRITER_MAX_MS	60000	/* bound on a writer */
#define IDLE_STEPS	4	/* empty steps in a row: the buffer is drained */
#define NAP_EVERY	16	/* a consumer naps after this many steps... */
#define NAP_US		150000	/* ...so that its writer laps it */
#define POLL_MS		10
#define HOTPLUG_CYCLES	3
#define ONLINE_MS	400	/* writing between two hotplug cycles */
#define OFFLINE_MS	300
#define HANDSHAKE_MS	5000
#define MAX_CPUS	64

#ifndef __printf
#define __printf(a, b)	__attribute__((format(printf, a, b)))
#endif

/*
 * A comment line of the TAP output. On stderr: the harness runs each test
 * in a child that ends with _exit(), which drops buffered stdout.
 */
__printf(1, 2)
static void info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("# ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* What the consumers of a load do */
enum load_kind {
	LOAD_MAP,	/* GET_READER, napping now and then */
	LOAD_MIXED,	/* alternate read() and GET_READER, napping */
	LOAD_KEEP_UP,	/* GET_READER, never napping */
	NR_LOAD_KINDS
};

/* The variable that sets a kind of load apart from RB_LOAD_MS */
static const char * const load_ms_env[NR_LOAD_KINDS] = {
	[LOAD_MIXED]	= "RB_MIX_MS",
	[LOAD_KEEP_UP]	= "RB_KEEP_UP_MS",
};

static int load_ms(enum load_kind kind)
{
	const char *own = load_ms_env[kind];
	const char *env = own && getenv(own) ? getenv(own) : getenv("RB_LOAD_MS");
	long ms = env ? strtol(env, NULL, 10) : 0;

	return ms > 0 && ms <= LOAD_MS_MAX ? ms : LOAD_MS;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int pin_to_cpu(int cpu)
{
	cpu_set_t set;
	int tries;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return -errno;
	/* The migration is done on return, unless the CPU is going away */
	for (tries = 0; tries < 100; tries++) {
		if (sched_getcpu() == cpu)
			return 0;
		sched_yield();
	}
	return -EAGAIN;
}

/* The CPUs this process may run on: the online ones */
static int online_cpus(int *cpus)
{
	cpu_set_t set;
	int cpu, n = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -errno;
	for (cpu = 0; cpu < CPU_SETSIZE && n < MAX_CPUS; cpu++)
		if (CPU_ISSET(cpu, &set))
			cpus[n++] = cpu;
	return n;
}

static int set_online(int cpu, bool on)
{
	char path[64];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	if (write(fd, on ? "1" : "0", 1) != 1)
		ret = -errno;
	close(fd);
	return ret;
}

static int inst_write(struct tracefs_instance *inst, const char *file,
		      const char *val)
{
	return tracefs_instance_file_write(inst, file, val) < 0 ? -errno : 0;
}

/* Where a trace_marker line sits in an ftrace/print event */
struct marker_fmt {
	struct tep_format_field	*type;		/* common_type */
	unsigned long long	print_id;
	int			buf_offset;
};

/* What one CPU's consumer saw, against the sequence its writer produced */
struct acct {
	unsigned int		first;		/* first seq seen, 0 before any */
	unsigned int		last;		/* last seq seen */
	unsigned long long	consumed;	/* events handed to the consumer */
	unsigned long long	lost;		/* events reported lost */
	unsigned long long	pending;	/* reported lost, no event since */
	unsigned long long	twice;		/* events not after the last one */
	unsigned long long	bad_gaps;	/* gaps other than the loss reported */
	unsigned long long	foreign;	/* not our marker, or another CPU's */
	unsigned long long	stored;		/* losses taken from a header count */
	unsigned long long	flag_only;	/* headers with the flag, no count */
	unsigned long long	disagree;	/* header count != reader.lost_events */
	unsigned long long	stray;		/* reader.lost_events, same sub-buffer */
	unsigned long long	bad_headers;	/* commit or count outside the page */
	unsigned long long	bad_entries;	/* meta->entries above produced */
	char			step[160];	/* the call that handed the events */
	char			why[320];	/* the first inconsistency seen */
};

__printf(2, 3)
static void note(struct acct *a, const char *fmt, ...)
{
	va_list ap;

	if (a->why[0])
		return;
	va_start(ap, fmt);
	vsnprintf(a->why, sizeof(a->why), fmt, ap);
	va_end(ap);
}

static void acct_loss(struct acct *a, unsigned long long n)
{
	a->lost += n;
	a->pending += n;
}

static void acct_event(struct acct *a, unsigned int seq)
{
	unsigned long long expected = a->last + 1ULL + a->pending;

	a->consumed++;
	if (seq <= a->last) {
		a->twice++;
		note(a, "seq %u handed again (last seq %u)", seq, a->last);
		return;
	}
	if (seq != expected) {
		a->bad_gaps++;
		note(a, "seq %u after seq %u, with %llu events reported lost; handed by %s",
		     seq, a->last, a->pending, a->step);
	}
	if (!a->first)
		a->first = seq;
	a->last = seq;
	a->pending = 0;
}

/* The header of a sub-buffer, as a consumer finds it */
struct header_view {
	unsigned long long	meta_lost;	/* reader.lost_events */
	int			stored;		/* kbuffer_missed_events() */
	int			free;		/* bytes after its last event */
};

/* One CPU buffer, mapped, and its consumer */
struct cpu_reader {
	int				cpu;
	int				fd;
	struct trace_buffer_meta	*meta;
	size_t				len;
	struct kbuffer			*kbuf;
	char				*copy;	/* a sub-buffer, for read() */
	const struct marker_fmt		*fmt;
	enum load_kind			kind;
	const atomic_bool		*writers_done;
	const unsigned int		*produced;	/* the writer's, or NULL */
	pthread_t			thread;
	bool				started;
	struct header_view		moved;	/* the last new sub-buffer */
	long long			left;	/* entries - overrun - read, drained */
	struct acct			acct;
	int				err;	/* -errno of a failed call */
	const char			*err_call;
	bool				timed_out;
};

static int reader_open(struct cpu_reader *r, struct tracefs_instance *inst,
		       struct tep_handle *tep, const struct marker_fmt *fmt,
		       int cpu)
{
	long page_size = sysconf(_SC_PAGESIZE);
	struct trace_buffer_meta *meta;
	char path[64];

	r->cpu = cpu;
	r->fmt = fmt;
	snprintf(path, sizeof(path), "per_cpu/cpu%d/trace_pipe_raw", cpu);
	/* Consumers wait in poll(), so GET_READER and read() never block */
	r->fd = tracefs_instance_file_open(inst, path, O_RDONLY | O_NONBLOCK);
	if (r->fd < 0)
		return -errno;

	/* The meta-page says how big the whole mapping is */
	meta = mmap(NULL, page_size, PROT_READ, MAP_SHARED, r->fd, 0);
	if (meta == MAP_FAILED)
		return -errno;
	r->len = meta->meta_page_size + (size_t)meta->nr_subbufs * meta->subbuf_size;
	munmap(meta, page_size);
	meta = mmap(NULL, r->len, PROT_READ, MAP_SHARED, r->fd, 0);
	if (meta == MAP_FAILED)
		return -errno;
	r->meta = meta;

	r->kbuf = tep_kbuffer(tep);
	r->copy = malloc(meta->subbuf_size);
	if (!r->kbuf || !r->copy)
		return -ENOMEM;
	return 0;
}

static void reader_close(struct cpu_reader *r)
{
	if (r->meta)
		munmap(r->meta, r->len);
	if (r->fd >= 0)
		close(r->fd);
	if (r->kbuf)
		kbuffer_free(r->kbuf);
	free(r->copy);
	r->meta = NULL;
	r->fd = -1;
	r->kbuf = NULL;
	r->copy = NULL;
}

/* Account the event kbuffer is at: our marker, written on this CPU? */
static void read_marker(struct cpu_reader *r, void *data)
{
	const struct marker_fmt *fmt = r->fmt;
	int size = kbuffer_event_size(r->kbuf);
	unsigned long long type = 0;
	char text[MARKER_MAX];
	unsigned int seq;
	int cpu, len;

	if (tep_read_number_field(fmt->type, data, &type) ||
	    type != fmt->print_id || size <= fmt->buf_offset) {
		r->acct.foreign++;
		note(&r->acct, "event of type %llu, %d bytes", type, size);
		return;
	}
	len = size - fmt->buf_offset;
	if (len > MARKER_MAX - 1)
		len = MARKER_MAX - 1;
	memcpy(text, (char *)data + fmt->buf_offset, len);
	text[len] = '\0';
	if (sscanf(text, "seq=%u cpu=%d", &seq, &cpu) != 2 || cpu != r->cpu) {
		r->acct.foreign++;
		note(&r->acct, "marker \"%.*s\" in the buffer of CPU %d",
		     (int)strcspn(text, "\n"), text, r->cpu);
		return;
	}
	acct_event(&r->acct, seq);
}

/*
 * Account the events of the sub-buffer loaded in r->kbuf that start at
 * data offsets [from, to). kbuffer skips padding and time stamps; its
 * index is the offset in the data, after the sub-buffer header.
 */
static void walk_events(struct cpu_reader *r, unsigned int from,
			unsigned int to)
{
	struct kbuffer *kbuf = r->kbuf;
	unsigned int off;
	void *data;

	for (data = kbuffer_read_event(kbuf, NULL); data;
	     data = kbuffer_next_event(kbuf, NULL)) {
		off = kbuffer_curr_index(kbuf);
		if (off >= to)
			break;
		if (off >= from)
			read_marker(r, data);
	}
}

/* Bytes of the loaded sub-buffer after its last event, padding excluded */
static int free_bytes(struct kbuffer *kbuf, unsigned int subbuf_size)
{
	int hdr = kbuffer_curr_offset(kbuf) - kbuffer_curr_index(kbuf);
	int end = 0;
	void *data;

	for (data = kbuffer_read_event(kbuf, NULL); data;
	     data = kbuffer_next_event(kbuf, NULL))
		end = kbuffer_curr_index(kbuf) + kbuffer_curr_size(kbuf);
	return subbuf_size - hdr - end;
}

/*
 * The header of every sub-buffer read, as the kernel wrote it: a time
 * stamp, then a word with the length of the data and the missed-events
 * flags. A header read before the writer's stores to it were visible (a
 * commit that is not final, a count stored over an event) breaks one of:
 * the data fits in the sub-buffer; a stored count fits after the data;
 * the count is only there with the missed-events flag.
 */
#define HDR_MISSED_EVENTS	(1UL << 31)
#define HDR_MISSED_STORED	(1UL << 30)
#define HDR_DATA_MASK		(HDR_MISSED_STORED - 1)

static void check_header(struct cpu_reader *r, const char *sb)
{
	unsigned long word, len, room;

	memcpy(&word, sb + sizeof(__u64), sizeof(word));
	len = word & HDR_DATA_MASK;
	room = r->meta->subbuf_size - sizeof(__u64) - sizeof(word);
	if (len > room ||
	    ((word & HDR_MISSED_STORED) &&
	     (!(word & HDR_MISSED_EVENTS) || len + sizeof(long) > room))) {
		r->acct.bad_headers++;
		note(&r->acct, "sub-buffer header 0x%lx: %lu bytes of data in %lu",
		     word, len, room);
	}
}

/*
 * The kernel's count of events written on this CPU never exceeds what the
 * writer produced, plus the one write it may have in flight. A stale
 * entries count carried into the counters would break it.
 */
static void check_entries(struct cpu_reader *r)
{
	unsigned long long entries = r->meta->entries;
	unsigned int produced;

	if (!r->produced)
		return;
	produced = __atomic_load_n(r->produced, __ATOMIC_ACQUIRE);
	if (entries > produced + 1ULL) {
		r->acct.bad_entries++;
		note(&r->acct, "meta->entries %llu, %u produced", entries, produced);
	}
}

/*
 * Load @sb into r->kbuf and describe its header. kbuffer_missed_events()
 * answers only before the first event is passed, so ask it first.
 */
static void load_subbuf(struct cpu_reader *r, void *sb,
			unsigned long long meta_lost, struct header_view *h)
{
	check_header(r, sb);
	kbuffer_load_subbuffer(r->kbuf, sb);
	h->meta_lost = meta_lost;
	h->stored = kbuffer_missed_events(r->kbuf);
	h->free = free_bytes(r->kbuf, r->meta->subbuf_size);
	kbuffer_load_subbuffer(r->kbuf, sb);
}

/*
 * The events lost before a sub-buffer: the count stored after its data if
 * the header has one, else reader.lost_events. The two report the same
 * loss: count it once. A read() copy has no reader.lost_events of its own;
 * the meta-page's is then only used when the header has the flag alone.
 */
static void acct_header(struct cpu_reader *r, const struct header_view *h,
			bool copy)
{
	struct acct *a = &r->acct;

	if (h->stored > 0) {
		a->stored++;
		if (!copy && (unsigned long long)h->stored != h->meta_lost) {
			a->disagree++;
			note(a, "header count %d, reader.lost_events %llu",
			     h->stored, h->meta_lost);
		}
		acct_loss(a, h->stored);
	} else if (h->stored < 0) {
		a->flag_only++;
		acct_loss(a, h->meta_lost);
	} else if (!copy) {
		acct_loss(a, h->meta_lost);
	}
}

/*
 * One TRACE_MMAP_IOCTL_GET_READER. Returns 1 if it handed something (a new
 * sub-buffer or more of the same one), 0 if not, -errno on failure.
 */
static int map_step(struct cpu_reader *r)
{
	struct trace_buffer_meta *meta = r->meta;
	__u32 id = meta->reader.id, from = meta->reader.read, to;
	char *sb;

	/* The kernel updates the meta-page only within our own calls */
	if (ioctl(r->fd, TRACE_MMAP_IOCTL_GET_READER) < 0)
		return -errno;
	check_entries(r);
	to = meta->reader.read;
	snprintf(r->acct.step, sizeof(r->acct.step),
		 "GET_READER: id %u -> %u, read %u -> %u, lost %llu, overrun %llu, entries %llu, read %llu",
		 id, meta->reader.id, from, to,
		 (unsigned long long)meta->reader.lost_events,
		 (unsigned long long)meta->overrun,
		 (unsigned long long)meta->entries,
		 (unsigned long long)meta->read);
	if (meta->reader.id >= meta->nr_subbufs)
		return -EPROTO;
	sb = (char *)meta + meta->meta_page_size +
	     (size_t)meta->reader.id * meta->subbuf_size;

	if (meta->reader.id != id) {
		load_subbuf(r, sb, meta->reader.lost_events, &r->moved);
		acct_header(r, &r->moved, false);
		walk_events(r, 0, to);
		return 1;
	}

	if (meta->reader.lost_events) {
		r->acct.stray++;
		note(&r->acct, "reader.lost_events %llu on the same sub-buffer",
		     (unsigned long long)meta->reader.lost_events);
	}
	if (to == from)
		return 0;
	if (to < from) {
		note(&r->acct, "reader.read went back from %u to %u", from, to);
		return -EPROTO;
	}
	kbuffer_load_subbuffer(r->kbuf, sb);
	walk_events(r, from, to);
	return 1;
}

/*
 * One read() of trace_pipe_raw: a copy of what is left of the reader
 * sub-buffer, or of the next one. Same return values as map_step().
 */
static int read_step(struct cpu_reader *r)
{
	struct header_view h;
	ssize_t n;

	n = read(r->fd, r->copy, r->meta->subbuf_size);
	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	if (n == 0)
		return 0;
	if (n != (ssize_t)r->meta->subbuf_size)
		return -EPROTO;
	snprintf(r->acct.step, sizeof(r->acct.step), "read(): reader.id %u",
		 r->meta->reader.id);
	load_subbuf(r, r->copy, r->meta->reader.lost_events, &h);
	acct_header(r, &h, true);
	walk_events(r, 0, UINT_MAX);
	return 1;
}

static void wait_data(struct cpu_reader *r)
{
	struct pollfd pfd = { .fd = r->fd, .events = POLLIN };

	poll(&pfd, 1, POLL_MS);
}

/*
 * The consumer of one CPU: take what the kernel hands until the writers
 * are done and a few steps in a row find nothing. It naps now and then
 * while the writers run, so that they lap it and it sees losses.
 */
static void *consume(void *arg)
{
	struct cpu_reader *r = arg;
	unsigned int steps = 0, idle = 0;
	bool use_read = false;
	long long deadline;
	int kind, load = 0;
	bool done;
	int ret;

	/* A bound for every kind of load */
	for (kind = 0; kind < NR_LOAD_KINDS; kind++)
		if (load_ms(kind) > load)
			load = load_ms(kind);
	deadline = now_ms() + load + DRAIN_MS;

	while (idle < IDLE_STEPS) {
		if (now_ms() > deadline) {
			r->timed_out = true;
			break;
		}
		/* Read before the step: an empty step after it means drained */
		done = atomic_load(r->writers_done);
		use_read = r->kind == LOAD_MIXED && !use_read;
		ret = use_read ? read_step(r) : map_step(r);
		if (ret < 0) {
			r->err = ret;
			r->err_call = use_read ? "read()" : "GET_READER";
			break;
		}
		if (ret) {
			idle = 0;
			if (!done && r->kind != LOAD_KEEP_UP &&
			    ++steps % NAP_EVERY == 0)
				usleep(NAP_US);
		} else if (done) {
			idle++;
		} else if (r->kind == LOAD_KEEP_UP) {
			/* Be back at the commit page as soon as possible */
			sched_yield();
		} else {
			wait_data(r);
		}
	}
	/*
	 * Drained: the last GET_READER found nothing new. Every event the
	 * buffer counts (entries) was then read or overwritten.
	 */
	if (idle >= IDLE_STEPS)
		r->left = (long long)(r->meta->entries - r->meta->overrun -
				      r->meta->read);
	return NULL;
}

/* The writer of one CPU, and the handshake that pauses it for hotplug */
struct cpu_writer {
	int			cpu;
	int			fd;		/* the instance's trace_marker */
	unsigned int		produced;	/* markers written: seq 1..produced */
	unsigned long long	refused;	/* writes the buffer refused */
	int			err;
	const atomic_bool	*stop;
	atomic_bool		pause;
	bool			paused;		/* under lock */
	pthread_mutex_t		lock;
	pthread_cond_t		cond;
	pthread_t		thread;
	bool			started;
};

static int writer_open(struct cpu_writer *w, struct tracefs_instance *inst,
		       int cpu)
{
	w->cpu = cpu;
	w->fd = tracefs_instance_file_open(inst, "trace_marker", O_WRONLY);
	if (w->fd < 0)
		return -errno;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	return 0;
}

static void writer_close(struct cpu_writer *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
}

static int write_marker(struct cpu_writer *w)
{
	char text[MARKER_MAX];
	int len;

	len = snprintf(text, sizeof(text), MARKER_FMT, w->produced + 1, w->cpu,
		       (int)((w->produced * 7) % sizeof(MARKER_FILL)), MARKER_FILL);
	if (write(w->fd, text, len) == len) {
		/* The consumer of this CPU reads it: check_entries() */
		__atomic_store_n(&w->produced, w->produced + 1, __ATOMIC_RELEASE);
		return 0;
	}
	/* The buffer had no room (-EBADF): nothing written, seq not used */
	if (errno == EBADF) {
		w->refused++;
		return 0;
	}
	return -errno;
}

static void deadline_ts(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/*
 * Tell the main thread this writer no longer writes, wait until its CPU is
 * back, and pin again: going offline broke the affinity.
 */
static int writer_pause(struct cpu_writer *w)
{
	struct timespec ts;
	int ret = 0;

	deadline_ts(&ts, WRITER_MAX_MS);
	pthread_mutex_lock(&w->lock);
	w->paused = true;
	pthread_cond_broadcast(&w->cond);
	while (atomic_load(&w->pause) && !ret)
		ret = pthread_cond_timedwait(&w->cond, &w->lock, &ts);
	w->paused = false;
	pthread_mutex_unlock(&w->lock);
	return ret ? -ret : pin_to_cpu(w->cpu);
}

static void *produce(void *arg)
{
	struct cpu_writer *w = arg;
	long long deadline = now_ms() + WRITER_MAX_MS;
	int ret = pin_to_cpu(w->cpu);

	while (!ret && !atomic_load(w->stop) && now_ms() < deadline) {
		if (atomic_load(&w->pause))
			ret = writer_pause(w);
		else
			ret = write_marker(w);
	}
	w->err = ret;
	return NULL;
}

/* Main thread: returns once the writer is parked, or -ETIMEDOUT */
static int writer_park(struct cpu_writer *w)
{
	struct timespec ts;
	int ret = 0;

	deadline_ts(&ts, HANDSHAKE_MS);
	pthread_mutex_lock(&w->lock);
	atomic_store(&w->pause, true);
	while (!w->paused && !ret)
		ret = pthread_cond_timedwait(&w->cond, &w->lock, &ts);
	pthread_mutex_unlock(&w->lock);
	return -ret;
}

static void writer_resume(struct cpu_writer *w)
{
	pthread_mutex_lock(&w->lock);
	atomic_store(&w->pause, false);
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* A writer and a consumer per online CPU */
struct load {
	enum load_kind		kind;
	int			nr;
	int			cpus[MAX_CPUS];
	struct cpu_writer	w[MAX_CPUS];
	struct cpu_reader	r[MAX_CPUS];
	atomic_bool		stop;
	atomic_bool		writers_done;
};

FIXTURE(rb) {
	struct tracefs_instance	*inst;
	struct tep_handle	*tep;
	struct marker_fmt	fmt;
	struct load		*load;
	int			offline_cpu;	/* to put back online, or -1 */
};

/* The fixture's data, as the helpers below take it */
#define rb_data FIXTURE_DATA(rb)

/* A run killed before its teardown leaves the instance behind */
static void remove_stale_instance(void)
{
	struct tracefs_instance *inst;

	if (!tracefs_instance_exists(INSTANCE))
		return;
	inst = tracefs_instance_alloc(NULL, INSTANCE);
	if (inst) {
		tracefs_instance_destroy(inst);
		tracefs_instance_free(inst);
	}
}

/* The ftrace/print format, as the kernel describes it */
static int load_marker_fmt(rb_data *self)
{
	const char * const systems[] = { "ftrace", NULL };
	struct tep_format_field *buf;
	struct tep_event *print;

	self->tep = tracefs_local_events_system(NULL, systems);
	if (!self->tep)
		return -ENOENT;
	print = tep_find_event_by_name(self->tep, "ftrace", "print");
	if (!print)
		return -ENOENT;
	self->fmt.type = tep_find_common_field(print, "common_type");
	buf = tep_find_field(print, "buf");
	if (!self->fmt.type || !buf)
		return -EPROTO;
	self->fmt.print_id = print->id;
	self->fmt.buf_offset = buf->offset;
	return 0;
}

FIXTURE_SETUP(rb)
{
	self->offline_cpu = -1;
	remove_stale_instance();
	self->inst = tracefs_instance_create(INSTANCE);
	ASSERT_NE(NULL, self->inst)
		TH_LOG("cannot create instances/%s: %s", INSTANCE, strerror(errno));
	/* Small and overwriting; poll() wakes up on any data */
	ASSERT_EQ(0, inst_write(self->inst, "buffer_size_kb", BUFFER_KB));
	ASSERT_EQ(0, inst_write(self->inst, "options/overwrite", "1"));
	ASSERT_EQ(0, inst_write(self->inst, "buffer_percent", "0"));
	/* Only trace_marker writes: the ftrace/print event */
	ASSERT_EQ(0, inst_write(self->inst, "events/enable", "0"));
	ASSERT_EQ(0, inst_write(self->inst, "tracing_on", "1"));
	ASSERT_EQ(0, load_marker_fmt(self))
		TH_LOG("cannot load the ftrace/print format from tracefs");
}

static void load_free(struct load *l)
{
	int i;

	for (i = 0; i < l->nr; i++) {
		reader_close(&l->r[i]);
		writer_close(&l->w[i]);
	}
	free(l);
}

FIXTURE_TEARDOWN(rb)
{
	if (self->offline_cpu >= 0)
		set_online(self->offline_cpu, true);
	/* The instance cannot go while its files are open */
	if (self->load)
		load_free(self->load);
	if (self->tep)
		tep_free(self->tep);
	if (self->inst) {
		tracefs_instance_destroy(self->inst);
		tracefs_instance_free(self->inst);
	}
}

/* Per CPU: every marker the writer produced is consumed or reported lost */
static void check_acct(struct __test_metadata *_metadata,
		       const struct cpu_reader *r, unsigned int produced)
{
	const struct acct *a = &r->acct;

	info("cpu%d: produced %u, consumed %llu, lost %llu (%llu header counts, %llu flags alone)",
	     r->cpu, produced, a->consumed, a->lost, a->stored, a->flag_only);
	EXPECT_EQ(0, r->err)
		TH_LOG("cpu%d: %s failed: %s", r->cpu, r->err_call, strerror(-r->err));
	EXPECT_FALSE(r->timed_out)
		TH_LOG("cpu%d: not drained %d ms after the writers", r->cpu,
		       DRAIN_MS);
	EXPECT_EQ(0, a->twice)
		TH_LOG("cpu%d: %llu events handed twice; first inconsistency: %s",
		       r->cpu, a->twice, a->why);
	EXPECT_EQ(0, a->bad_gaps)
		TH_LOG("cpu%d: %llu gaps differ from the loss reported; first inconsistency: %s",
		       r->cpu, a->bad_gaps, a->why);
	EXPECT_EQ(0, a->disagree)
		TH_LOG("cpu%d: %llu header counts differ from reader.lost_events: %s",
		       r->cpu, a->disagree, a->why);
	EXPECT_EQ(0, a->stray)
		TH_LOG("cpu%d: reader.lost_events set %llu times without a new sub-buffer",
		       r->cpu, a->stray);
	EXPECT_EQ(0, a->foreign)
		TH_LOG("cpu%d: %llu events not ours; first inconsistency: %s",
		       r->cpu, a->foreign, a->why);
	EXPECT_EQ(0, a->bad_headers)
		TH_LOG("cpu%d: %llu sub-buffer headers out of bounds; first inconsistency: %s",
		       r->cpu, a->bad_headers, a->why);
	/* Every sub-buffer handed over after a loss carries its count */
	EXPECT_EQ(0, a->flag_only)
		TH_LOG("cpu%d: %llu sub-buffers with the missed-events flag and no count",
		       r->cpu, a->flag_only);
	EXPECT_EQ(0, a->bad_entries)
		TH_LOG("cpu%d: meta->entries above what was produced %llu times: %s",
		       r->cpu, a->bad_entries, a->why);
	EXPECT_EQ(produced, a->consumed + a->lost)
		TH_LOG("cpu%d: produced %u != consumed %llu + lost %llu",
		       r->cpu, produced, a->consumed, a->lost);
	EXPECT_EQ(0, r->left)
		TH_LOG("cpu%d: drained, and entries - overrun - read is %lld",
		       r->cpu, r->left);
	/* The newest events are never the ones overwritten */
	EXPECT_EQ(produced, a->last);
}

/* Write NR_MARKERS on CPU 0, with nobody reading, then map and drain it */
TEST_F_TIMEOUT(rb, header_count, 120)
{
	static atomic_bool done = true;
	struct cpu_writer w = { .fd = -1 };
	struct cpu_reader r = { .fd = -1 };
	const struct header_view *h = &r.moved;
	long long deadline = now_ms() + WRITER_MAX_MS;

	ASSERT_EQ(0, pin_to_cpu(0));
	ASSERT_EQ(0, writer_open(&w, self->inst, 0));
	while (w.produced < NR_MARKERS && now_ms() < deadline)
		ASSERT_EQ(0, write_marker(&w));
	writer_close(&w);
	ASSERT_EQ(NR_MARKERS, w.produced);

	ASSERT_EQ(0, reader_open(&r, self->inst, self->tep, &self->fmt, 0));
	ASSERT_EQ(1, map_step(&r));
	info("first sub-buffer: reader.lost_events %llu, header count %d, %d bytes free",
	     h->meta_lost, h->stored, h->free);
	info("first seq %u", r.acct.first);
	EXPECT_LT(0, h->meta_lost);
	EXPECT_EQ(h->meta_lost, r.acct.first - 1);
	EXPECT_NE(0, h->stored)
		TH_LOG("no missed-events flag in the header of the first sub-buffer");
	/* The writer leaves room for the count at the end of every page */
	EXPECT_LT(0, h->stored)
		TH_LOG("missed-events flag without a count, %d bytes free",
		       h->free);
	EXPECT_EQ(h->meta_lost, h->stored);

	r.writers_done = &done;
	consume(&r);
	check_acct(_metadata, &r, w.produced);
	reader_close(&r);
}

/* Map every online CPU, start its consumer, then its writer */
static void load_start(struct __test_metadata *_metadata,
		       rb_data *self, enum load_kind kind)
{
	struct load *l;
	int i;

	l = calloc(1, sizeof(*l));
	ASSERT_NE(NULL, l);
	self->load = l;
	l->kind = kind;
	l->nr = online_cpus(l->cpus);
	ASSERT_LT(0, l->nr);
	for (i = 0; i < l->nr; i++) {
		l->r[i].fd = -1;
		l->w[i].fd = -1;
	}
	for (i = 0; i < l->nr; i++) {
		ASSERT_EQ(0, reader_open(&l->r[i], self->inst, self->tep,
					 &self->fmt, l->cpus[i]));
		ASSERT_EQ(0, writer_open(&l->w[i], self->inst, l->cpus[i]));
		l->r[i].kind = kind;
		l->r[i].writers_done = &l->writers_done;
		l->r[i].produced = &l->w[i].produced;
		l->w[i].stop = &l->stop;
	}
	/* From here on no ASSERT until load_stop() has joined the threads */
	for (i = 0; i < l->nr; i++)
		l->r[i].started = !pthread_create(&l->r[i].thread, NULL,
						  consume, &l->r[i]);
	for (i = 0; i < l->nr; i++)
		l->w[i].started = !pthread_create(&l->w[i].thread, NULL,
						  produce, &l->w[i]);
}

/* Stop the writers; once they are all done, the consumers drain */
static void load_stop(struct load *l)
{
	int i;

	atomic_store(&l->stop, true);
	for (i = 0; i < l->nr; i++)
		if (l->w[i].started)
			pthread_join(l->w[i].thread, NULL);
	atomic_store(&l->writers_done, true);
	for (i = 0; i < l->nr; i++)
		if (l->r[i].started)
			pthread_join(l->r[i].thread, NULL);
}

static void load_check(struct __test_metadata *_metadata, struct load *l)
{
	unsigned long long lost = 0;
	int i;

	for (i = 0; i < l->nr; i++) {
		EXPECT_TRUE(l->r[i].started && l->w[i].started);
		EXPECT_EQ(0, l->w[i].err)
			TH_LOG("writer of cpu%d: %s", l->cpus[i], strerror(-l->w[i].err));
		if (l->w[i].refused)
			info("cpu%d: %llu writes refused by a full buffer",
			     l->cpus[i], l->w[i].refused);
		check_acct(_metadata, &l->r[i], l->w[i].produced);
		lost += l->r[i].acct.lost;
	}
	/* Else the test did not exercise what it is about */
	if (l->kind != LOAD_KEEP_UP)
		EXPECT_LT(0, lost)
			TH_LOG("no event lost: the writers never lapped the consumers");
}

static void run_load(struct __test_metadata *_metadata,
		     rb_data *self, enum load_kind kind)
{
	load_start(_metadata, self, kind);
	sleep_ms(load_ms(kind));
	load_stop(self->load);
	load_check(_metadata, self->load);
}

/* One consumer per CPU, with GET_READER only */
TEST_F_TIMEOUT(rb, load, LOAD_TIMEOUT_S)
{
	run_load(_metadata, self, LOAD_MAP);
}

/* One consumer per CPU, alternating read() and GET_READER */
TEST_F_TIMEOUT(rb, mixed_readers, LOAD_TIMEOUT_S)
{
	run_load(_metadata, self, LOAD_MIXED);
}

/*
 * One consumer per CPU that never naps: it keeps up with its writer, on
 * the page the writer commits to, page after page. A writer that commits
 * more there and moves on while the consumer finds the page consumed must
 * not take those events with it (they are neither handed over nor lost).
 */
TEST_F_TIMEOUT(rb, keep_up, LOAD_TIMEOUT_S)
{
	run_load(_metadata, self, LOAD_KEEP_UP);
}

/*
 * Take @idx's CPU offline and back while everything runs. Its writer is
 * parked meanwhile, so that every marker lands on that CPU.
 */
static int hotplug_cycle(rb_data *self, int idx)
{
	struct cpu_writer *w = &self->load->w[idx];
	int ret;

	ret = writer_park(w);
	if (ret)
		return ret;
	ret = set_online(w->cpu, false);
	if (!ret) {
		self->offline_cpu = w->cpu;
		sleep_ms(OFFLINE_MS);
		ret = set_online(w->cpu, true);
		if (!ret)
			self->offline_cpu = -1;
	}
	writer_resume(w);
	return ret;
}

/* As load, while a CPU other than 0 goes offline and back a few times */
TEST_F_TIMEOUT(rb, hotplug, 150)
{
	int cpus[MAX_CPUS], n, cpu, ret, i, cycle;
	struct load *l;

	/* The last online CPU but 0, if it can go offline at all */
	n = online_cpus(cpus);
	if (n < 2)
		SKIP(return, "only one CPU is online");
	cpu = cpus[n - 1];
	ret = set_online(cpu, false);
	if (ret)
		SKIP(return, "cannot take cpu%d offline: %s", cpu, strerror(-ret));
	self->offline_cpu = cpu;
	ASSERT_EQ(0, set_online(cpu, true));
	self->offline_cpu = -1;

	load_start(_metadata, self, LOAD_MAP);
	l = self->load;
	for (i = 0; i < l->nr && l->cpus[i] != cpu; i++)
		;
	for (cycle = 0; cycle < HOTPLUG_CYCLES && !ret && i < l->nr; cycle++) {
		sleep_ms(ONLINE_MS);
		ret = hotplug_cycle(self, i);
	}
	sleep_ms(ONLINE_MS);
	load_stop(l);

	ASSERT_LT(i, l->nr);
	info("cpu%d went offline and back %d times", cpu, ret ? cycle - 1 : cycle);
	EXPECT_EQ(0, ret)
		TH_LOG("cpu%d offline/online cycle %d: %s", cpu, cycle, strerror(-ret));
	EXPECT_EQ(-1, self->offline_cpu);
	load_check(_metadata, l);
}

TEST_HARNESS_MAIN
