/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ftmmap.h - consume the ftrace ring-buffer of one CPU through its mapping
 *
 * A struct ftm_buf is the ring-buffer of one CPU of the top-level trace
 * array or of an instance, opened through per_cpu/cpuN/trace_pipe_raw. It is
 * mapped (meta-page and sub-buffers, read-only) and consumed with
 * TRACE_MMAP_IOCTL_GET_READER; on a kernel that cannot map its ring-buffer
 * (mmap() fails with ENODEV or EINVAL) or when asked to, whole sub-buffers
 * are read() from the same file instead. Either way the caller sees the
 * same thing: events, walked in place with libtraceevent's kbuffer, and
 * whole sub-buffers, as they appear in a trace.dat file.
 *
 *   b = ftm_buf_open(dir, cpu, flags);
 *   while (...)
 *           ftm_buf_consume(b, on_event, on_subbuf, ctx);   (once per wakeup)
 *   ftm_buf_flush(b, on_subbuf, ctx);                       (end of capture)
 *   ftm_buf_close(b);
 */
#ifndef FTMMAP_H
#define FTMMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ftm_buf;

/* ftm_buf_open() flags */
#define FTM_READ	(1U << 0)	/* read() trace_pipe_raw, do not map */
#define FTM_NONBLOCK	(1U << 1)	/* open with O_NONBLOCK */

/* One event, as walked in place by kbuffer */
struct ftm_event {
	int		cpu;
	unsigned long long ts;		/* ring-buffer clock, nanoseconds */
	void		*data;		/* the trace event: common fields first */
	int		size;		/* bytes of data */
	long long	missed;		/* lost just before: count, -1 unknown, 0 none */
};

/*
 * Callbacks of ftm_buf_consume(). A non-zero return stops the walk and is
 * returned by ftm_buf_consume().
 */
typedef int (*ftm_event_fn)(const struct ftm_event *ev, void *ctx);
typedef int (*ftm_subbuf_fn)(int cpu, const void *subbuf, size_t size, void *ctx);

/*
 * The events one ftm_buf_consume() handed over, framed as a sub-buffer of
 * their own (header, events, the loss before them in the header's flags
 * and count), as read() frames the part of a sub-buffer it takes: what a
 * reader of whole sub-buffers (libtracecmd) can be given event by event.
 */
struct ftm_piece {
	int		cpu;
	const void	*subbuf;
	size_t		size;		/* the sub-buffer size */
	unsigned long long last_ts;	/* of its last event */
};

typedef int (*ftm_piece_fn)(const struct ftm_piece *piece, void *ctx);

/* Totals of what a buffer handed over since it was opened */
struct ftm_totals {
	uint64_t	events;		/* events handed over */
	uint64_t	lost;		/* events lost, as the kernel reported them */
	uint64_t	lost_unknown;	/* losses reported without their size */
	uint64_t	subbufs;	/* sub-buffers handed over */
	uint64_t	resets;		/* resets of the buffer seen (mapped only) */
};

/* A CPU buffer's counters: the meta-page, or per_cpu/cpuN/stats */
struct ftm_counters {
	uint64_t	entries;
	uint64_t	overrun;
	uint64_t	read;
	uint64_t	lost;		/* reader.lost_events of the meta-page */
	uint32_t	nr_subbufs;	/* 0 when read from stats */
	uint32_t	subbuf_size;
};

/* Why a buffer is not mapped; 0 when it is */
extern int ftm_map_errno(const struct ftm_buf *b);

struct ftm_buf *ftm_buf_open(const char *dir, int cpu, unsigned int flags);
void ftm_buf_close(struct ftm_buf *b);
int ftm_buf_fd(const struct ftm_buf *b);
int ftm_buf_cpu(const struct ftm_buf *b);
bool ftm_buf_mapped(const struct ftm_buf *b);
size_t ftm_buf_subbuf_size(const struct ftm_buf *b);
const struct ftm_totals *ftm_buf_totals(const struct ftm_buf *b);
long long ftm_buf_lost_unreported(const struct ftm_buf *b);
int ftm_buf_consume(struct ftm_buf *b, ftm_event_fn on_event, ftm_subbuf_fn on_subbuf,
		    void *ctx);
int ftm_buf_flush(struct ftm_buf *b, ftm_subbuf_fn on_subbuf, void *ctx);
int ftm_buf_set_piece_fn(struct ftm_buf *b, ftm_piece_fn on_piece);

int ftm_subbuf_size(const char *dir, size_t *size);
int ftm_read_counters(const char *dir, int cpu, bool use_read, struct ftm_counters *c);
char *ftm_read_file(const char *path, size_t *size);
int ftm_walk_subbuf(const void *subbuf, int cpu, ftm_event_fn on_event, void *ctx);

#endif /* FTMMAP_H */
