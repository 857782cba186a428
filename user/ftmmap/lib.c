// SPDX-License-Identifier: GPL-2.0
/*
 * lib.c - consume the ftrace ring-buffer of one CPU through its mapping
 *
 * The mapping of per_cpu/cpuN/trace_pipe_raw (Documentation/trace/
 * ring-buffer-map.rst):
 *
 *   0                          meta-page (struct trace_buffer_meta)
 *   meta_page_size             sub-buffer ID 0
 *   + subbuf_size              sub-buffer ID 1
 *   ...                        ...
 *
 * Only the reader sub-buffer (meta->reader.id) belongs to the consumer, and
 * only its first meta->reader.read bytes of data. Each
 * TRACE_MMAP_IOCTL_GET_READER hands over the events from where reader.read
 * was before the call (from 0 if reader.id changed) to where it is after.
 *
 * The loss before a new reader sub-buffer is reported in one or both of two
 * places, depending on the kernel:
 *
 *   header     RB_MISSED_EVENTS in the commit word, and RB_MISSED_STORED
 *              with the count in a long right after the data (mainline
 *              since 6.10; our 6.1 series when the writer is done with the
 *              sub-buffer at the swap)
 *   meta-page  reader.lost_events of the GET_READER that handed over the
 *              first events of the sub-buffer, whichever reader swapped it
 *              in (our series, 6.1 and 6.12; 0 on mainline)
 *
 * Both describe the same loss: it is counted once, from the header when it
 * has a count, else from the meta-page, else as a loss of unknown size when
 * only the flag is set.
 *
 * A trace.dat file wants whole sub-buffers. The reader sub-buffer goes back
 * into the ring, where the writer may overwrite it, as soon as the next
 * GET_READER swaps it out; and until then the writer may still be adding
 * events to it. So the bytes are copied as they are handed over, which are
 * stable, into a private copy of the reader sub-buffer that is given out
 * when the reader moves on or at the end of the capture.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <kbuffer.h>
#include <linux/trace_mmap.h>

#include "ftmmap.h"

/* Flags in the commit word of a sub-buffer header (kernel/trace/ring_buffer.c) */
#define RB_MISSED_EVENTS	(1UL << 31)
#define RB_MISSED_STORED	(1UL << 30)

/* Header of a sub-buffer: u64 time stamp, then the commit word, a long */
#define SUBBUF_HDR_SIZE		(sizeof(uint64_t) + sizeof(long))

struct ftm_buf {
	int			cpu;
	int			fd;
	int			map_errno;	/* why it is not mapped, or 0 */
	size_t			subbuf_size;
	struct kbuffer		*kbuf;
	struct ftm_totals	totals;

	/*
	 * Mapped: the mapping, and the reader position after the last call
	 * (then, during a call, before it)
	 */
	struct trace_buffer_meta *meta;
	size_t			map_len;
	uint32_t		id;
	uint32_t		read;
	uint64_t		meta_read;	/* meta->read at the last call */
	uint64_t		start_overrun;	/* meta->overrun when mapped */
	uint32_t		last_id;	/* of the last sub-buffer handed over */
	bool			restart;	/* reset seen: a new sub-buffer */
	bool			no_meta_lost;	/* FTMMAP_NO_META_LOST: as on mainline */

	/* Mapped: our copy of the reader sub-buffer, for ftm_subbuf_fn */
	unsigned char		*copy;
	size_t			copy_len;	/* bytes of event data in it */
	long long		copy_lost;	/* lost before it: count, -1 unknown, 0 none */
	bool			copy_used;

	/* Not mapped: the sub-buffer that read() returned */
	unsigned char		*page;

	/* ftm_buf_set_piece_fn(): where each call's events are framed */
	ftm_piece_fn		on_piece;
	unsigned char		*piece;
};

static char *cpu_file(const char *dir, int cpu, const char *name)
{
	char *path;

	if (asprintf(&path, "%s/per_cpu/cpu%d/%s", dir, cpu, name) < 0)
		return NULL;
	return path;
}

/**
 * ftm_subbuf_size - size of a sub-buffer of a trace array, header included
 * @dir:	the tracefs directory of the trace array
 * @size:	where to store it
 *
 * From buffer_subbuf_size_kb when the kernel has it, else the page size.
 * This is what one read() of trace_pipe_raw returns at most.
 *
 * Return: 0, or -1 with errno set.
 */
int ftm_subbuf_size(const char *dir, size_t *size)
{
	char *path, buf[32];
	ssize_t n;
	int fd;

	*size = sysconf(_SC_PAGESIZE);
	if (asprintf(&path, "%s/buffer_subbuf_size_kb", dir) < 0)
		return -1;
	fd = open(path, O_RDONLY);
	free(path);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) {
		errno = n ? errno : EINVAL;
		return -1;
	}
	buf[n] = '\0';
	*size = strtoul(buf, NULL, 10) * 1024;
	if (!*size) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

static int map_buffer(struct ftm_buf *b)
{
	long page_size = sysconf(_SC_PAGESIZE);
	struct trace_buffer_meta *meta;

	/* The meta-page alone first, to learn the size of the rest */
	meta = mmap(NULL, page_size, PROT_READ, MAP_SHARED, b->fd, 0);
	if (meta == MAP_FAILED)
		return -1;
	b->map_len = meta->meta_page_size + (size_t)meta->nr_subbufs * meta->subbuf_size;
	munmap(meta, page_size);

	meta = mmap(NULL, b->map_len, PROT_READ, MAP_SHARED, b->fd, 0);
	if (meta == MAP_FAILED)
		return -1;

	b->meta = meta;
	b->subbuf_size = meta->subbuf_size;
	b->id = meta->reader.id;
	b->last_id = b->id;
	b->read = meta->reader.read;
	b->meta_read = meta->read;
	b->start_overrun = meta->overrun;
	return 0;
}

/**
 * ftm_buf_open - open the ring-buffer of one CPU, mapped if possible
 * @dir:	the tracefs directory of the trace array (top level or instance)
 * @cpu:	the CPU
 * @flags:	FTM_READ to read() instead of mapping, FTM_NONBLOCK
 *
 * When mmap() fails with ENODEV or EINVAL (a kernel that cannot map its
 * ring-buffer), the buffer is read() instead and ftm_map_errno() says why.
 *
 * Return: the buffer, or NULL with errno set.
 */
struct ftm_buf *ftm_buf_open(const char *dir, int cpu, unsigned int flags)
{
	struct ftm_buf *b;
	char *path;
	int err;

	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->cpu = cpu;
	b->fd = -1;
	/*
	 * For the tests: ignore reader.lost_events, as on a mainline kernel
	 * whose meta-page does not report losses (the header alone does).
	 */
	b->no_meta_lost = getenv("FTMMAP_NO_META_LOST");

	path = cpu_file(dir, cpu, "trace_pipe_raw");
	if (!path)
		goto fail;
	b->fd = open(path, O_RDONLY | O_CLOEXEC | (flags & FTM_NONBLOCK ? O_NONBLOCK : 0));
	free(path);
	if (b->fd < 0)
		goto fail;

	if (flags & FTM_READ) {
		b->map_errno = EPERM;	/* not asked to */
	} else if (map_buffer(b)) {
		if (errno != ENODEV && errno != EINVAL)
			goto fail;
		b->map_errno = errno;
	}

	if (b->meta) {
		b->copy = malloc(b->subbuf_size);
		if (!b->copy)
			goto fail;
	} else {
		if (ftm_subbuf_size(dir, &b->subbuf_size))
			goto fail;
		b->page = malloc(b->subbuf_size);
		if (!b->page)
			goto fail;
	}

	b->kbuf = kbuffer_alloc(KBUFFER_LSIZE_SAME_AS_HOST, KBUFFER_ENDIAN_SAME_AS_HOST);
	if (!b->kbuf)
		goto fail;
	return b;

fail:
	err = errno;
	ftm_buf_close(b);
	errno = err;
	return NULL;
}

/**
 * ftm_buf_close - unmap and close a buffer opened by ftm_buf_open()
 * @b:	the buffer, or NULL
 */
void ftm_buf_close(struct ftm_buf *b)
{
	if (!b)
		return;
	if (b->meta)
		munmap(b->meta, b->map_len);
	if (b->fd >= 0)
		close(b->fd);
	if (b->kbuf)
		kbuffer_free(b->kbuf);
	free(b->copy);
	free(b->page);
	free(b->piece);
	free(b);
}

int ftm_buf_fd(const struct ftm_buf *b)
{
	return b->fd;
}

int ftm_buf_cpu(const struct ftm_buf *b)
{
	return b->cpu;
}

bool ftm_buf_mapped(const struct ftm_buf *b)
{
	return b->meta;
}

int ftm_map_errno(const struct ftm_buf *b)
{
	return b->map_errno;
}

size_t ftm_buf_subbuf_size(const struct ftm_buf *b)
{
	return b->subbuf_size;
}

const struct ftm_totals *ftm_buf_totals(const struct ftm_buf *b)
{
	return &b->totals;
}

/**
 * ftm_buf_lost_unreported - events lost that no sub-buffer reported a count of
 * @b:	the buffer
 *
 * The kernel counts every event its writer overwrote (the meta-page's
 * overrun, as of the last GET_READER), and reports each loss with the
 * sub-buffer after it: the count in the header when there was room after
 * the data, else the flag alone (mainline leaves reader.lost_events at 0).
 * A sub-buffer filled to its end thus reports a loss of unknown size.
 * The buffer was cleared before it was mapped (the capture starts with
 * overrun and the kernel's last reported overrun equal): the overrun since
 * the mapping, less the losses that were reported with a count, is what
 * the others add up to.
 *
 * Return: that number of events, or -1 when it cannot be told (not mapped,
 * a kernel whose meta-page has no overrun, or a reset in between, which
 * zeroes the count).
 */
long long ftm_buf_lost_unreported(const struct ftm_buf *b)
{
	const struct trace_buffer_meta *meta = b->meta;
	uint64_t since;

	if (!meta || b->totals.resets ||
	    meta->meta_struct_len < offsetof(struct trace_buffer_meta, overrun) +
				    sizeof(meta->overrun))
		return -1;
	since = meta->overrun - b->start_overrun;
	if (meta->overrun < b->start_overrun || since < b->totals.lost)
		return -1;
	return (long long)(since - b->totals.lost);
}

/*
 * The events one call walked, in the sub-buffer: from the first one's own
 * header (after the time extends before it) to the end of the last one.
 */
struct span {
	const unsigned char	*start, *end;
	int			first_size;	/* bytes of the first event, header included */
	unsigned long long	first_ts, last_ts;
};

/*
 * Walk the events of the sub-buffer loaded in @kbuf that start at byte
 * @from of its data or after it, and before byte @to. @missed goes with the
 * first.
 *
 * kbuffer's index (kbuffer_curr_index()) is where the current event's own
 * header is, from the start of the data: after the time extends and stamps
 * that go with it, which kbuffer_next_event() folds into the time stamp.
 * An event whose time extend starts at @from is thus the first one walked,
 * with its time, and one that starts at @to is the first one left out. The
 * sub-buffer is walked from its first event, so that every delta before
 * @from is added into the time stamp as kbuffer means it to be. @span, if
 * not NULL, is filled in with where the walked events are.
 */
static int walk_events(struct kbuffer *kbuf, int cpu, unsigned int from, unsigned int to,
		       long long missed, ftm_event_fn on_event, void *ctx, uint64_t *count,
		       struct span *span)
{
	struct ftm_event ev = { .cpu = cpu, .missed = missed };
	const unsigned char *hdr;
	void *data;

	for (data = kbuffer_read_event(kbuf, &ev.ts); data;
	     data = kbuffer_next_event(kbuf, &ev.ts)) {
		if ((unsigned int)kbuffer_curr_index(kbuf) < from)
			continue;
		if ((unsigned int)kbuffer_curr_index(kbuf) >= to)
			break;
		ev.data = data;
		ev.size = kbuffer_event_size(kbuf);
		(*count)++;
		if (span) {
			/* The event's own header: its data less the header's size */
			hdr = (const unsigned char *)data -
			      (kbuffer_curr_size(kbuf) - kbuffer_event_size(kbuf));
			if (!span->start) {
				span->start = hdr;
				span->first_size = kbuffer_curr_size(kbuf);
				span->first_ts = ev.ts;
			}
			span->end = hdr + kbuffer_curr_size(kbuf);
			span->last_ts = ev.ts;
		}
		if (on_event && on_event(&ev, ctx))
			return -1;
		ev.missed = 0;
	}
	return 0;
}

/*
 * The loss that the header of the sub-buffer just loaded in @kbuf reports
 * before it: a count, -1 when the count was not stored, 0 for none.
 * kbuffer_missed_events() says it for the first event only, and a
 * sub-buffer that starts with a time extend has its first event after it:
 * for that one, the flags are read from the commit word.
 */
static long long header_lost(struct kbuffer *kbuf, const void *subbuf)
{
	unsigned long commit;

	if (!kbuffer_curr_index(kbuf))
		return kbuffer_missed_events(kbuf);
	memcpy(&commit, (const unsigned char *)subbuf + sizeof(uint64_t), sizeof(commit));
	if (!(commit & RB_MISSED_EVENTS))
		return 0;
	if (!(commit & RB_MISSED_STORED))
		return -1;
	memcpy(&commit, (const unsigned char *)subbuf + SUBBUF_HDR_SIZE +
	       kbuffer_subbuffer_size(kbuf), sizeof(commit));
	return (long long)commit;
}

/* Add a loss to the totals: a count, or -1 for one of unknown size */
static void count_lost(struct ftm_buf *b, long long lost)
{
	if (lost > 0)
		b->totals.lost += lost;
	else if (lost < 0)
		b->totals.lost_unknown++;
}

/**
 * ftm_walk_subbuf - call @on_event for every event of a whole sub-buffer
 * @subbuf:	the sub-buffer, header included
 * @cpu:	its CPU, for struct ftm_event
 * @on_event:	the callback
 * @ctx:	passed to @on_event
 *
 * Return: the number of events, or -1 if @on_event failed.
 */
int ftm_walk_subbuf(const void *subbuf, int cpu, ftm_event_fn on_event, void *ctx)
{
	struct kbuffer *kbuf;
	uint64_t count = 0;
	int ret;

	kbuf = kbuffer_alloc(KBUFFER_LSIZE_SAME_AS_HOST, KBUFFER_ENDIAN_SAME_AS_HOST);
	if (!kbuf)
		return -1;
	ret = kbuffer_load_subbuffer(kbuf, (void *)subbuf);
	if (!ret)
		ret = walk_events(kbuf, cpu, 0, kbuffer_subbuffer_size(kbuf),
				  header_lost(kbuf, subbuf), on_event, ctx, &count, NULL);
	kbuffer_free(kbuf);
	return ret ? -1 : (int)count;
}

/*
 * Finish the header of a sub-buffer whose first @len bytes of data are
 * filled in: the commit word with the loss before them as the kernel
 * reports it (the flag, and the count in a long right after the data when
 * it is known and there is room), and zeroes after.
 */
static void put_commit(unsigned char *subbuf, size_t subbuf_size, size_t len, long long lost)
{
	unsigned long commit = len;
	size_t end = SUBBUF_HDR_SIZE + len;

	if (lost) {
		commit |= RB_MISSED_EVENTS;
		if (lost > 0 && end + sizeof(long) <= subbuf_size) {
			unsigned long count = lost;

			memcpy(subbuf + end, &count, sizeof(count));
			end += sizeof(count);
			commit |= RB_MISSED_STORED;
		}
	}
	memcpy(subbuf + sizeof(uint64_t), &commit, sizeof(commit));
	memset(subbuf + end, 0, subbuf_size - end);
}

/*
 * Give out our copy of the last reader sub-buffer, with its final header
 * (put_commit()): the size of what was handed over, and the loss before
 * it, wherever the kernel reported it.
 */
static int emit_copy(struct ftm_buf *b, ftm_subbuf_fn on_subbuf, void *ctx)
{
	if (!b->copy_used)
		return 0;
	b->copy_used = false;

	put_commit(b->copy, b->subbuf_size, b->copy_len, b->copy_lost);
	return on_subbuf ? on_subbuf(b->cpu, b->copy, b->subbuf_size, ctx) : 0;
}

/*
 * Give the events a call walked to ftm_piece_fn, framed as a sub-buffer of
 * their own, as the kernel frames what read() takes of a sub-buffer that
 * its writer is still filling: the header's time stamp is the one the
 * first event's delta is from, the commit word their size with the loss
 * before them (put_commit()), and the data the events' bytes as they are
 * in the ring-buffer, time extends included. The piece starts at
 * the first event's own header, so that a reader of the piece reports the
 * loss with that event (kbuffer_missed_events() does for the first entry
 * only). That event's own delta is what kbuffer adds for it alone in a
 * sub-buffer whose time stamp is 0.
 */
static int emit_piece(struct ftm_buf *b, const struct span *span, long long lost, void *ctx)
{
	struct ftm_piece p = { .cpu = b->cpu, .subbuf = b->piece, .size = b->subbuf_size };
	unsigned long long delta = 0;
	uint64_t ts = 0;

	if (!b->on_piece || !span->start)
		return 0;

	memcpy(b->piece, &ts, sizeof(ts));
	memcpy(b->piece + SUBBUF_HDR_SIZE, span->start, span->first_size);
	put_commit(b->piece, b->subbuf_size, span->first_size, 0);
	if (kbuffer_load_subbuffer(b->kbuf, b->piece) || !kbuffer_read_event(b->kbuf, &delta)) {
		errno = EPROTO;
		return -1;
	}

	ts = span->first_ts - delta;
	memcpy(b->piece, &ts, sizeof(ts));
	memcpy(b->piece + SUBBUF_HDR_SIZE, span->start, span->end - span->start);
	put_commit(b->piece, b->subbuf_size, span->end - span->start, lost);
	p.last_ts = span->last_ts;
	return b->on_piece(&p, ctx);
}

static int consume_mapped(struct ftm_buf *b, ftm_event_fn on_event, ftm_subbuf_fn on_subbuf,
			  void *ctx)
{
	const struct trace_buffer_meta *meta = b->meta;
	uint32_t id, read, from;
	uint64_t events = 0;
	long long lost = 0;
	const unsigned char *sb;
	bool new_subbuf;

	/*
	 * A reset of the buffer (echo > trace, a new trace clock) empties it
	 * and zeroes its counters, and the reader starts over, maybe in the
	 * same sub-buffer: the meta-page's read count goes back, or the read
	 * position in the same reader sub-buffer does (read() by others only
	 * moves them on). What was handed over before the reset is given out
	 * as it was; what follows starts a new sub-buffer.
	 */
	if (meta->read < b->meta_read ||
	    (meta->reader.id == b->id && meta->reader.read < b->read)) {
		b->totals.resets++;
		if (emit_copy(b, on_subbuf, ctx))
			return -1;
		b->restart = true;
	}

	/*
	 * Where the reader is just before the call: read() and splice() of
	 * the file move it too, and what they returned is not handed over.
	 */
	b->id = meta->reader.id;
	b->read = meta->reader.read;
	b->meta_read = meta->read;
	if (ioctl(b->fd, TRACE_MMAP_IOCTL_GET_READER) < 0)
		return errno == EAGAIN ? 0 : -1;

	id = meta->reader.id;
	read = meta->reader.read;
	if (id >= meta->nr_subbufs || read > b->subbuf_size - SUBBUF_HDR_SIZE) {
		errno = EPROTO;
		return -1;
	}
	if (id == b->id && read == b->read)
		return 0;

	/* Another sub-buffer than the last one handed over, or a restart */
	new_subbuf = id != b->last_id || b->restart;
	b->restart = false;
	b->last_id = id;
	from = id == b->id ? b->read : 0;
	b->id = id;
	b->read = read;
	sb = (const unsigned char *)meta + meta->meta_page_size + (size_t)id * b->subbuf_size;
	if (kbuffer_load_subbuffer(b->kbuf, (void *)sb)) {
		errno = EPROTO;
		return -1;
	}
	if (new_subbuf) {
		/* The same loss in both places: the header's count first */
		lost = header_lost(b->kbuf, sb);
		if (lost <= 0 && meta->reader.lost_events && !b->no_meta_lost)
			lost = meta->reader.lost_events;
		b->totals.subbufs++;
		count_lost(b, lost);
	}

	if (on_subbuf) {
		if (new_subbuf) {
			if (emit_copy(b, on_subbuf, ctx))
				return -1;
			memcpy(b->copy, sb, SUBBUF_HDR_SIZE);
			b->copy_len = 0;
			b->copy_lost = lost;
			b->copy_used = true;
		}
		/* From where the copy ends: a read() in between may have moved "from" */
		if (read > b->copy_len) {
			memcpy(b->copy + SUBBUF_HDR_SIZE + b->copy_len,
			       sb + SUBBUF_HDR_SIZE + b->copy_len, read - b->copy_len);
			b->copy_len = read;
		}
	}

	if (on_event || b->on_piece) {
		struct span span = { };

		if (walk_events(b->kbuf, b->cpu, from, read, lost, on_event, ctx, &events, &span) ||
		    emit_piece(b, &span, lost, ctx))
			return -1;
	} else {
		/* Not walked: the kernel's count of what was handed over */
		events = meta->read - b->meta_read;
	}
	b->meta_read = meta->read;
	b->totals.events += events;
	return 1;
}

static int consume_read(struct ftm_buf *b, ftm_event_fn on_event, ftm_subbuf_fn on_subbuf,
			void *ctx)
{
	struct span span = { };
	uint64_t events = 0;
	long long missed;
	ssize_t n;

	n = read(b->fd, b->page, b->subbuf_size);
	if (n < 0)
		return errno == EAGAIN ? 0 : -1;
	if (!n)
		return 0;
	memset(b->page + n, 0, b->subbuf_size - n);
	if (kbuffer_load_subbuffer(b->kbuf, b->page)) {
		errno = EPROTO;
		return -1;
	}

	b->totals.subbufs++;
	missed = header_lost(b->kbuf, b->page);
	count_lost(b, missed);

	if (on_subbuf && on_subbuf(b->cpu, b->page, b->subbuf_size, ctx))
		return -1;
	if (walk_events(b->kbuf, b->cpu, 0, b->subbuf_size, missed, on_event, ctx, &events, &span) ||
	    emit_piece(b, &span, missed, ctx))
		return -1;
	b->totals.events += events;
	return 1;
}

/**
 * ftm_buf_set_piece_fn - have each call hand its events over as a piece too
 * @b:		the buffer
 * @on_piece:	called by ftm_buf_consume() with the events it handed over,
 *		framed as a sub-buffer (struct ftm_piece), with its ctx
 *
 * Return: 0, or -1 if out of memory.
 */
int ftm_buf_set_piece_fn(struct ftm_buf *b, ftm_piece_fn on_piece)
{
	if (!b->piece) {
		b->piece = malloc(b->subbuf_size);
		if (!b->piece)
			return -1;
	}
	b->on_piece = on_piece;
	return 0;
}

/**
 * ftm_buf_consume - take the next events of a buffer
 * @b:		the buffer
 * @on_event:	called for each event handed over, or NULL
 * @on_subbuf:	called for each complete sub-buffer, or NULL
 * @ctx:	passed to the callbacks
 *
 * One TRACE_MMAP_IOCTL_GET_READER, or one read() of a sub-buffer. It
 * blocks unless the buffer was opened with FTM_NONBLOCK (until the buffer
 * is filled to buffer_percent, as a read of trace_pipe_raw does).
 *
 * Return: 1 if events were handed over, 0 if there was nothing new, -1 on
 * error with errno set (EINTR: a signal interrupted the wait).
 */
int ftm_buf_consume(struct ftm_buf *b, ftm_event_fn on_event, ftm_subbuf_fn on_subbuf,
		    void *ctx)
{
	if (b->meta)
		return consume_mapped(b, on_event, on_subbuf, ctx);
	return consume_read(b, on_event, on_subbuf, ctx);
}

/**
 * ftm_buf_flush - give out the sub-buffer that is still being read
 * @b:		the buffer
 * @on_subbuf:	called with it, if there is one
 * @ctx:	passed to @on_subbuf
 *
 * A mapped reader sub-buffer is given to ftm_subbuf_fn only when the next
 * GET_READER moves on to another one; at the end of a capture this gives
 * out the last one, with what was handed over of it.
 *
 * Return: 0, or -1 if @on_subbuf failed.
 */
int ftm_buf_flush(struct ftm_buf *b, ftm_subbuf_fn on_subbuf, void *ctx)
{
	return b->meta ? emit_copy(b, on_subbuf, ctx) : 0;
}

/**
 * ftm_read_file - read a whole file, such as /proc/kallsyms (whose size is 0)
 * @path:	the file
 * @size:	where to store its size
 *
 * Return: its contents, NUL-terminated, to free(); or NULL with errno set.
 */
char *ftm_read_file(const char *path, size_t *size)
{
	size_t len = 0, alloc = 0;
	char *buf = NULL, *tmp;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	for (;;) {
		if (alloc - len < 65536 + 1) {
			alloc = alloc ? alloc * 2 : 65536;
			tmp = realloc(buf, alloc);
			if (!tmp)
				goto fail;
			buf = tmp;
		}
		n = read(fd, buf + len, alloc - len - 1);
		if (n < 0)
			goto fail;
		if (!n)
			break;
		len += n;
	}
	close(fd);
	buf[len] = '\0';
	*size = len;
	return buf;

fail:
	free(buf);
	close(fd);
	return NULL;
}

static int read_stats_file(const char *dir, int cpu, struct ftm_counters *c)
{
	unsigned long long val;
	char *path, line[128];
	FILE *f;

	path = cpu_file(dir, cpu, "stats");
	if (!path)
		return -1;
	f = fopen(path, "r");
	free(path);
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "entries: %llu", &val) == 1)
			c->entries = val;
		else if (sscanf(line, "overrun: %llu", &val) == 1)
			c->overrun = val;
		else if (sscanf(line, "read events: %llu", &val) == 1)
			c->read = val;
	}
	fclose(f);
	return 0;
}

/**
 * ftm_read_counters - the counters of one CPU buffer, without consuming it
 * @dir:	the tracefs directory of the trace array
 * @cpu:	the CPU
 * @use_read:	read per_cpu/cpuN/stats instead of mapping the meta-page
 * @c:		where to store them
 *
 * Maps the meta-page alone and copies it: mapping a buffer that is not yet
 * mapped refreshes the meta-page; if another process maps it, its counters
 * are those of that consumer's last GET_READER. If the kernel cannot map
 * (ENODEV, EINVAL), or @use_read, the stats file gives what it can.
 *
 * Return: 0 from the meta-page, 1 from the stats file, -1 on error.
 */
int ftm_read_counters(const char *dir, int cpu, bool use_read, struct ftm_counters *c)
{
	long page_size = sysconf(_SC_PAGESIZE);
	struct trace_buffer_meta *meta;
	size_t subbuf_size;
	char *path;
	int fd;

	memset(c, 0, sizeof(*c));
	if (!use_read) {
		path = cpu_file(dir, cpu, "trace_pipe_raw");
		if (!path)
			return -1;
		fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		free(path);
		if (fd < 0)
			return -1;
		meta = mmap(NULL, page_size, PROT_READ, MAP_SHARED, fd, 0);
		close(fd);
		if (meta != MAP_FAILED) {
			c->entries = meta->entries;
			c->overrun = meta->overrun;
			c->read = meta->read;
			c->lost = meta->reader.lost_events;
			c->nr_subbufs = meta->nr_subbufs;
			c->subbuf_size = meta->subbuf_size;
			munmap(meta, page_size);
			return 0;
		}
		if (errno != ENODEV && errno != EINVAL)
			return -1;
	}
	if (read_stats_file(dir, cpu, c) || ftm_subbuf_size(dir, &subbuf_size))
		return -1;
	c->subbuf_size = subbuf_size;
	return 1;
}
