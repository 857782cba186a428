// SPDX-License-Identifier: GPL-2.0
/*
 * tracedat.c - write a trace.dat file, version 6 of the trace-cmd format
 *
 * The layout (trace-cmd's Documentation/trace-cmd/trace-cmd.dat.v6.5.txt),
 * numbers in the host's byte order, which the file declares:
 *
 *   "\027\010\104tracing" "6\0"  endian (0 little)  long size  u32 page size
 *   "header_page\0"  u64 size  events/header_page
 *   "header_event\0" u64 size  events/header_event
 *   u32 count, then u64 size + format of each ftrace event
 *   u32 systems; per system: "name\0" u32 count, u64 size + format per event
 *   u32 size  /proc/kallsyms
 *   u32 size  printk_formats
 *   u64 size  saved_cmdlines
 *   u32 CPUs
 *   "options  \0"  (u16 id, u32 size, data)...  u16 0
 *   "flyrecord\0"  (u64 offset, u64 size) per CPU  u64 size + trace_clock
 *   CPU data, each at a multiple of the page size
 *
 * The "page size" is the sub-buffer size: trace-cmd reads the CPU data a
 * page at a time, and here a page is a whole sub-buffer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <tracefs.h>

#include "ftmmap.h"
#include "tracedat.h"

#define TRACECMD_MAGIC		"\027\010\104tracing"
#define TRACECMD_VERSION	"6"

/* Option IDs, enum tracecmd_option of trace-cmd */
#define OPTION_DONE		0
#define OPTION_TRACECLOCK	4
#define OPTION_UNAME		5

struct tracedat {
	char			*path;
	int			fd;		/* the file */
	bool			written;	/* something readable is in it */
	FILE			*out;		/* its headers, built in memory */
	char			*hdr;
	size_t			hdr_len;
	struct tracefs_instance	*instance;
	int			nr_cpus;
	size_t			subbuf_size;
	int			*cpu_fd;	/* unlinked files of CPU data */
	uint64_t		*cpu_size;
	uint64_t		dropped;	/* sub-buffers dropped to make room */
	bool			regular;	/* out is a regular file: removable */
	int			error;		/* first error adding CPU data */
};

/**
 * tracedat_open - start a trace.dat file
 * @path:	the file to write
 * @instance:	the trace array recorded (NULL: top level)
 * @nr_cpus:	CPUs in the file, 0 to @nr_cpus - 1
 * @subbuf_size: size of the sub-buffers that will be added
 *
 * Return: the file being written, or NULL with errno set.
 */
struct tracedat *tracedat_open(const char *path, struct tracefs_instance *instance,
			       int nr_cpus, size_t subbuf_size)
{
	struct tracedat *t;
	struct stat st;
	char *tmp;
	int cpu, err;

	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->fd = -1;
	t->instance = instance;
	t->nr_cpus = nr_cpus;
	t->subbuf_size = subbuf_size;
	t->path = strdup(path);
	t->cpu_fd = calloc(nr_cpus, sizeof(*t->cpu_fd));
	t->cpu_size = calloc(nr_cpus, sizeof(*t->cpu_size));
	if (!t->path || !t->cpu_fd || !t->cpu_size)
		goto fail;
	for (cpu = 0; cpu < nr_cpus; cpu++)
		t->cpu_fd[cpu] = -1;

	/* Not inherited by COMMAND */
	t->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (t->fd < 0)
		goto fail;
	/* Only a regular file is removed on failure (not /dev/full...) */
	t->regular = !fstat(t->fd, &st) && S_ISREG(st.st_mode);
	for (cpu = 0; cpu < nr_cpus; cpu++) {
		if (asprintf(&tmp, "%s.cpu%d", path, cpu) < 0)
			goto fail;
		t->cpu_fd[cpu] = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (t->cpu_fd[cpu] >= 0)
			unlink(tmp);
		free(tmp);
		if (t->cpu_fd[cpu] < 0)
			goto fail;
	}
	return t;

fail:
	err = errno;
	tracedat_abort(t);
	errno = err;
	return NULL;
}

/**
 * tracedat_abort - drop a file started by tracedat_open()
 * @t:	the file, or NULL
 */
void tracedat_abort(struct tracedat *t)
{
	int cpu;

	if (!t)
		return;
	if (t->out)
		fclose(t->out);
	free(t->hdr);
	if (t->fd >= 0) {
		close(t->fd);
		if (t->regular && !t->written)
			unlink(t->path);
	}
	for (cpu = 0; t->cpu_fd && cpu < t->nr_cpus; cpu++)
		if (t->cpu_fd[cpu] >= 0)
			close(t->cpu_fd[cpu]);
	free(t->cpu_fd);
	free(t->cpu_size);
	free(t->path);
	free(t);
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= n;
	}
	return 0;
}

/**
 * tracedat_add_subbuf - add a whole sub-buffer to the data of a CPU
 * @cpu:	its CPU
 * @subbuf:	the sub-buffer, header included
 * @size:	its size, the sub-buffer size
 * @ctx:	the struct tracedat
 *
 * A ftm_subbuf_fn: the sub-buffer is copied as it is. When it cannot be
 * stored (a full disk), neither it nor any later one is: the file keeps
 * what was stored before, tracedat_error() says why, and the caller stops.
 *
 * Return: 0, or -1 with errno set on bad arguments.
 */
int tracedat_add_subbuf(int cpu, const void *subbuf, size_t size, void *ctx)
{
	struct tracedat *t = ctx;
	off_t end;

	if (cpu < 0 || cpu >= t->nr_cpus || size != t->subbuf_size) {
		errno = EINVAL;
		return -1;
	}
	if (t->error)
		return 0;
	if (write_all(t->cpu_fd[cpu], subbuf, size)) {
		t->error = errno;
		/* Whole sub-buffers only */
		end = t->cpu_size[cpu];
		if (ftruncate(t->cpu_fd[cpu], end) || lseek(t->cpu_fd[cpu], end, SEEK_SET) != end)
			t->cpu_size[cpu] = 0;
		return 0;
	}
	t->cpu_size[cpu] += size;
	return 0;
}

/**
 * tracedat_error - why CPU data could not be stored
 * @t:	the file
 *
 * Return: the errno of the first sub-buffer that could not be stored, or 0.
 */
int tracedat_error(const struct tracedat *t)
{
	return t->error;
}

static void put(struct tracedat *t, const void *p, size_t len)
{
	fwrite(p, 1, len, t->out);
}

static void put_u16(struct tracedat *t, uint16_t v)
{
	put(t, &v, sizeof(v));
}

static void put_u32(struct tracedat *t, uint32_t v)
{
	put(t, &v, sizeof(v));
}

static void put_u64(struct tracedat *t, uint64_t v)
{
	put(t, &v, sizeof(v));
}

/* A size of @size_len bytes, then the data */
static void put_sized(struct tracedat *t, int size_len, const char *data, size_t len)
{
	if (size_len == 4)
		put_u32(t, len);
	else
		put_u64(t, len);
	put(t, data, len);
}

/* A file of the top-level tracefs directory, or an empty one */
static int put_tracefs_file(struct tracedat *t, struct tracefs_instance *instance,
			    const char *name, int size_len)
{
	char *data;
	int size = 0;

	/* An empty file gives NULL too, and leaves errno as it was */
	errno = 0;
	data = tracefs_instance_file_read(instance, name, &size);
	if (!data && errno && errno != ENOENT)
		return -1;
	put_sized(t, size_len, data ? data : "", data ? size : 0);
	free(data);
	return 0;
}

static int put_format(struct tracedat *t, const char *system, const char *event)
{
	char *data;
	int size;

	data = tracefs_event_file_read(NULL, system, event, "format", &size);
	if (!data)
		return -1;
	put_sized(t, 8, data, size);
	free(data);
	return 0;
}

static int put_ftrace_formats(struct tracedat *t)
{
	char **events;
	int i, n;

	events = tracefs_system_events(NULL, "ftrace");
	n = events ? tracefs_list_size(events) : 0;
	put_u32(t, n);
	for (i = 0; i < n; i++) {
		if (put_format(t, "ftrace", events[i])) {
			tracefs_list_free(events);
			return -1;
		}
	}
	tracefs_list_free(events);
	return 0;
}

/* The formats of @events, by system; ftrace's are all in already */
static int put_event_formats(struct tracedat *t, const struct tracedat_event *events, int nr)
{
	int i, j, k, nr_systems = 0, count;
	bool seen;

	for (i = 0; i < nr; i++) {
		seen = !strcmp(events[i].system, "ftrace");
		for (j = 0; j < i && !seen; j++)
			seen = !strcmp(events[j].system, events[i].system);
		nr_systems += !seen;
	}
	put_u32(t, nr_systems);

	for (i = 0; i < nr; i++) {
		seen = !strcmp(events[i].system, "ftrace");
		for (j = 0; j < i && !seen; j++)
			seen = !strcmp(events[j].system, events[i].system);
		if (seen)
			continue;

		put(t, events[i].system, strlen(events[i].system) + 1);
		count = 0;
		for (j = i; j < nr; j++) {
			seen = false;
			for (k = i; k < j && !seen; k++)
				seen = !strcmp(events[k].system, events[j].system) &&
				       !strcmp(events[k].name, events[j].name);
			count += !seen && !strcmp(events[j].system, events[i].system);
		}
		put_u32(t, count);
		for (j = i; j < nr; j++) {
			seen = false;
			for (k = i; k < j && !seen; k++)
				seen = !strcmp(events[k].system, events[j].system) &&
				       !strcmp(events[k].name, events[j].name);
			if (seen || strcmp(events[j].system, events[i].system))
				continue;
			if (put_format(t, events[j].system, events[j].name))
				return -1;
		}
	}
	return 0;
}

/*
 * The file up to the CPU count: the machine, the event formats, kallsyms,
 * printk formats and saved cmdlines.
 */
static int put_headers(struct tracedat *t, const struct tracedat_event *events, int nr_events)
{
	uint16_t one = 1;
	char endian = *(char *)&one ? 0 : 1;
	char long_size = sizeof(long), *data;
	size_t size;

	put(t, TRACECMD_MAGIC, strlen(TRACECMD_MAGIC));
	put(t, TRACECMD_VERSION, strlen(TRACECMD_VERSION) + 1);
	put(t, &endian, 1);
	put(t, &long_size, 1);
	put_u32(t, t->subbuf_size);

	put(t, "header_page", strlen("header_page") + 1);
	if (put_tracefs_file(t, NULL, "events/header_page", 8))
		return -1;
	put(t, "header_event", strlen("header_event") + 1);
	if (put_tracefs_file(t, NULL, "events/header_event", 8))
		return -1;
	if (put_ftrace_formats(t) || put_event_formats(t, events, nr_events))
		return -1;

	data = ftm_read_file("/proc/kallsyms", &size);
	put_sized(t, 4, data ? data : "", data ? size : 0);
	free(data);
	if (put_tracefs_file(t, NULL, "printk_formats", 4) ||
	    put_tracefs_file(t, NULL, "saved_cmdlines", 8))
		return -1;
	return 0;
}

/**
 * tracedat_headers - write the headers of a trace.dat file, no CPU data
 * @out:	where to write them
 * @subbuf_size: the size of the sub-buffers (the file's page size)
 * @events:	the events whose formats go in (ftrace's always do)
 * @nr_events:	how many
 *
 * What libtracecmd reads before the CPU data (tracecmd_read_headers(),
 * up to the printk formats and the saved cmdlines).
 *
 * Return: 0, or -1 with errno set.
 */
int tracedat_headers(FILE *out, size_t subbuf_size, const struct tracedat_event *events,
		     int nr_events)
{
	struct tracedat t = { .out = out, .subbuf_size = subbuf_size };

	if (put_headers(&t, events, nr_events))
		return -1;
	if (fflush(out) || ferror(out)) {
		errno = errno ? errno : EIO;
		return -1;
	}
	return 0;
}

static void put_option(struct tracedat *t, uint16_t id, const char *data, size_t len)
{
	put_u16(t, id);
	put_u32(t, len);
	put(t, data, len);
}

/*
 * Make room on a full disk for @need more bytes: drop the newest whole
 * sub-buffers of the CPU that has the most, in their temporary files.
 * Return: false when there is nothing left to drop.
 */
static bool drop_newest(struct tracedat *t, size_t need)
{
	uint64_t drop;
	int cpu, most = 0;

	for (cpu = 1; cpu < t->nr_cpus; cpu++)
		if (t->cpu_size[cpu] > t->cpu_size[most])
			most = cpu;
	if (!t->cpu_size[most])
		return false;
	drop = (need + t->subbuf_size - 1) / t->subbuf_size * t->subbuf_size;
	if (drop > t->cpu_size[most])
		drop = t->cpu_size[most];
	t->cpu_size[most] -= drop;
	t->dropped += drop / t->subbuf_size;
	return !ftruncate(t->cpu_fd[most], t->cpu_size[most]);
}

/*
 * Write @len bytes at @offset of the file; on a full disk, make room by
 * dropping the newest sub-buffers recorded, as long as there are some.
 */
static int write_at(struct tracedat *t, const void *buf, size_t len, off_t offset)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = pwrite(t->fd, p, len, offset);
		if (n > 0) {
			p += n;
			len -= n;
			offset += n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (!n)
			errno = ENOSPC;
		if (errno != ENOSPC || !drop_newest(t, len))
			return -1;
	}
	return 0;
}

/*
 * Write the data of @cpu at @offset of the file, whole sub-buffers at a
 * time. Each chunk leaves its temporary file before it goes into the
 * file, so that a disk that is nearly full still takes it. *@copied is the
 * size of the sub-buffers that are in the file, when it fails too.
 */
static int copy_cpu_data(struct tracedat *t, int cpu, off_t offset, uint64_t *copied)
{
	size_t chunk = t->subbuf_size * (t->subbuf_size < 65536 ? 65536 / t->subbuf_size : 1);
	int in = t->cpu_fd[cpu];
	size_t len, done;
	ssize_t n;
	char *buf;

	*copied = 0;
	buf = malloc(chunk);
	if (!buf)
		return -1;
	while (*copied < t->cpu_size[cpu]) {
		len = t->cpu_size[cpu] - *copied < chunk ? t->cpu_size[cpu] - *copied : chunk;
		n = pread(in, buf, len, *copied);
		if (n != (ssize_t)len) {
			errno = n < 0 ? errno : EIO;
			goto fail;
		}
		fallocate(in, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, *copied, len);
		for (done = 0; done < len; done += n) {
			n = pwrite(t->fd, buf + done, len - done, offset + *copied + done);
			if (n < 0 && errno == EINTR) {
				n = 0;
				continue;
			}
			if (n <= 0) {
				errno = n ? errno : ENOSPC;
				*copied += done / t->subbuf_size * t->subbuf_size;
				goto fail;
			}
		}
		*copied += len;
	}
	free(buf);
	return 0;

fail:
	free(buf);
	return -1;
}

/**
 * tracedat_finish - write the headers and the CPU data, and close the file
 * @t:		the file
 * @events:	the events recorded, whose formats go in
 * @nr_events:	how many
 *
 * saved_cmdlines is read now, at the end of the capture, as trace-cmd does.
 * @t is freed either way. On a full disk the newest sub-buffers recorded
 * make room for the headers, and the file keeps the whole sub-buffers that
 * fit: a valid, shorter file. When not even the headers fit, or on another
 * error, a regular file is removed (a device such as /dev/full is not).
 *
 * Return: 0; 1 when the file holds only part of the CPU data, errno set to
 * why; -1 with errno set.
 */
int tracedat_finish(struct tracedat *t, const struct tracedat_event *events, int nr_events)
{
	char *clock = NULL;
	struct utsname uts;
	uint64_t offset, copied, entry[2];
	off_t table, end;
	int cpu, err = 0;

	/* The headers are built in memory, then written where there is room */
	t->out = open_memstream(&t->hdr, &t->hdr_len);
	if (!t->out || put_headers(t, events, nr_events))
		goto fail;

	put_u32(t, t->nr_cpus);
	put(t, "options  ", 10);
	/* The clock of the recorded trace array, "[local] global ..." */
	clock = tracefs_instance_file_read(t->instance, "trace_clock", NULL);
	if (clock)
		put_option(t, OPTION_TRACECLOCK, clock, strlen(clock) + 1);
	if (!uname(&uts)) {
		char *str;

		if (asprintf(&str, "%s %s %s %s", uts.sysname, uts.nodename, uts.release,
			     uts.machine) >= 0) {
			put_option(t, OPTION_UNAME, str, strlen(str) + 1);
			free(str);
		}
	}
	put_u16(t, OPTION_DONE);

	put(t, "flyrecord", 10);
	table = ftello(t->out);
	for (cpu = 0; cpu < t->nr_cpus; cpu++) {
		put_u64(t, 0);
		put_u64(t, 0);
	}
	/* With a trace clock option, version 6 repeats the clock here */
	if (clock)
		put_sized(t, 8, clock, strlen(clock));

	free(clock);
	clock = NULL;
	if (ferror(t->out) || fclose(t->out)) {
		t->out = NULL;
		goto fail;
	}
	t->out = NULL;

	/*
	 * The headers must be in the file, or nothing of it can be read: on
	 * a full disk, the newest sub-buffers recorded make room for them.
	 */
	if (write_at(t, t->hdr, t->hdr_len, 0))
		goto fail;
	t->written = true;

	/*
	 * The CPU data, each at a multiple of the page size. When the disk
	 * fills, the file keeps the whole sub-buffers that are in it: the
	 * table says so, and it is cut after them. It is still a file that
	 * trace-cmd reads, only shorter.
	 */
	end = t->hdr_len;
	for (cpu = 0; cpu < t->nr_cpus; cpu++) {
		offset = (end + t->subbuf_size - 1) / t->subbuf_size * t->subbuf_size;
		copied = 0;
		if (!err && copy_cpu_data(t, cpu, offset, &copied))
			err = errno;
		entry[0] = offset;
		entry[1] = copied;
		if (pwrite(t->fd, entry, sizeof(entry), table + 16 * cpu) != sizeof(entry))
			goto fail;
		if (copied)
			end = offset + copied;
	}
	if ((err || t->dropped) && ftruncate(t->fd, end))
		goto fail;
	if (close(t->fd)) {
		t->fd = -1;
		goto fail;
	}
	t->fd = -1;
	if (!err && t->dropped)
		err = ENOSPC;
	tracedat_abort(t);
	if (err) {
		errno = err;
		return 1;
	}
	return 0;

fail:
	err = errno ? errno : EIO;
	free(clock);
	t->written = false;
	if (t->fd < 0 && t->regular)
		unlink(t->path);
	tracedat_abort(t);
	errno = err;
	return -1;
}
