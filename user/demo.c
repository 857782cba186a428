// SPDX-License-Identifier: GPL-2.0
/*
 * demo.c - watch trace_marker lines come out of a memory-mapped ring-buffer
 *
 * Maps the ring-buffer of CPU 0 (top-level trace array), writes a few lines
 * to trace_marker from CPU 0, then reads them back through the mapping with
 * TRACE_MMAP_IOCTL_GET_READER, showing the meta-page along the way.
 *
 * Build:  gcc -static -Wall -Wextra -I<kernel headers>/include -o demo demo.c
 * Run:    as root, on a kernel that can map its ring-buffer
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/trace_mmap.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

#define CPU		0
#define NR_LINES	5
#define LINE_FORMAT	"hello from the mapping #%d"

/* Header of each sub-buffer */
struct subbuf {
	uint64_t	time_stamp;
	unsigned long	commit;		/* bytes of data; flags from bit 30 on */
	unsigned char	data[];
};

#define SUBBUF_LOST_EVENTS	(1UL << 31)
#define SUBBUF_SIZE_MASK	((1UL << 30) - 1)

/* Header of each event */
struct event {
	uint32_t	type_len:5, time_delta:27;
	uint32_t	array[];
};

/* Where the text of a trace_marker write is in its event */
struct print_format {
	unsigned int	id;		/* event type of ftrace/print */
	unsigned int	buf_offset;	/* offset of its "buf" field */
};

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "demo: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static const char *find_tracefs(void)
{
	static const char * const dirs[] = {
		"/sys/kernel/tracing",
		"/sys/kernel/debug/tracing",
	};
	char path[PATH_MAX];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(dirs); i++) {
		snprintf(path, sizeof(path), "%s/trace_marker", dirs[i]);
		if (!access(path, F_OK))
			return dirs[i];
	}
	die("tracefs not found: mount it with 'mount -t tracefs nodev /sys/kernel/tracing'");
	return NULL;
}

static void read_print_format(const char *tracefs, struct print_format *fmt)
{
	bool have_id = false, have_buf = false;
	char path[PATH_MAX], line[256], *off;
	FILE *f;

	snprintf(path, sizeof(path), "%s/events/ftrace/print/format", tracefs);
	f = fopen(path, "r");
	if (!f)
		die("cannot open %s: %s", path, strerror(errno));

	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "ID: %u", &fmt->id) == 1)
			have_id = true;

		/* "\tfield:char buf[];\toffset:16;\tsize:0;..." */
		off = strstr(line, "offset:");
		if (strstr(line, " buf[") && off) {
			fmt->buf_offset = strtoul(off + strlen("offset:"), NULL, 10);
			have_buf = true;
		}
	}
	fclose(f);

	if (!have_id || !have_buf)
		die("%s: no ID or no buf field", path);
}

static void print_meta(const struct trace_buffer_meta *meta)
{
	printf("  meta_page_size      %u\n", meta->meta_page_size);
	printf("  meta_struct_len     %u\n", meta->meta_struct_len);
	printf("  subbuf_size         %u\n", meta->subbuf_size);
	printf("  nr_subbufs          %u\n", meta->nr_subbufs);
	printf("  reader.id           %u\n", meta->reader.id);
	printf("  reader.read         %u\n", meta->reader.read);
	printf("  reader.lost_events  %llu\n", (unsigned long long)meta->reader.lost_events);
	printf("  flags               %llu\n", (unsigned long long)meta->flags);
	printf("  entries             %llu\n", (unsigned long long)meta->entries);
	printf("  overrun             %llu\n", (unsigned long long)meta->overrun);
	printf("  read                %llu\n", (unsigned long long)meta->read);
}

/* Is this the text of one of the lines we wrote? */
static bool is_our_line(const char *text, size_t len)
{
	char line[64];
	int i;

	for (i = 1; i <= NR_LINES; i++) {
		snprintf(line, sizeof(line), LINE_FORMAT, i);
		if (len == strlen(line) && !memcmp(text, line, len))
			return true;
	}
	return false;
}

/*
 * Print the trace_marker lines among the events between bytes @from and @to
 * of the data of @sb. Returns how many of them are ours.
 */
static int print_lines(const struct subbuf *sb, unsigned int from, unsigned int to,
		       const struct print_format *fmt)
{
	int ours = 0;

	while (from < to) {
		const struct event *ev = (const void *)&sb->data[from];
		const unsigned char *payload = NULL;
		unsigned int size, len = 0;
		const char *text;
		size_t text_len;
		uint16_t type;

		if (to - from < 8)
			die("sub-buffer data cut in the middle of an event");

		switch (ev->type_len) {
		case 29:	/* padding */
			if (!ev->time_delta)
				return ours;	/* no more events */
			size = 4 + ev->array[0];
			break;
		case 30:	/* time extend */
		case 31:	/* absolute time stamp */
			size = 8;
			break;
		case 0:		/* length in array[0] */
			size = 4 + ev->array[0];
			len = ev->array[0] - 4;
			payload = (const void *)&ev->array[1];
			break;
		default:	/* length in type_len, in 4-byte words */
			size = 4 + 4 * ev->type_len;
			len = 4 * ev->type_len;
			payload = (const void *)&ev->array[0];
			break;
		}
		if (size < 8 || size > to - from)
			die("corrupted event at byte %u of the sub-buffer", from);
		from += size;

		if (!payload || len <= fmt->buf_offset)
			continue;
		memcpy(&type, payload, sizeof(type));
		if (type != fmt->id)
			continue;	/* not a trace_marker write */

		/* The text, and the newline the kernel added */
		text = (const char *)payload + fmt->buf_offset;
		text_len = strnlen(text, len - fmt->buf_offset);

		if (text_len && text[text_len - 1] == '\n')
			text_len--;
		printf("    \"%.*s\"\n", (int)text_len, text);
		if (is_our_line(text, text_len))
			ours++;
	}

	return ours;
}

int main(void)
{
	long page_size = sysconf(_SC_PAGESIZE);
	char path[PATH_MAX], line[64];
	struct trace_buffer_meta *meta;
	struct print_format fmt;
	const char *tracefs;
	unsigned int id, pos, from;
	int fd, marker_fd, i, calls, ours = 0;
	cpu_set_t cpus;
	size_t len;

	tracefs = find_tracefs();
	read_print_format(tracefs, &fmt);

	/* trace_marker writes go to the buffer of the CPU that writes */
	CPU_ZERO(&cpus);
	CPU_SET(CPU, &cpus);
	if (sched_setaffinity(0, sizeof(cpus), &cpus))
		die("cannot run on CPU %d: %s", CPU, strerror(errno));

	snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/trace_pipe_raw", tracefs, CPU);
	fd = open(path, O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		die("cannot open %s: %s", path, strerror(errno));

	/* Map the meta-page alone to learn the size, then everything */
	meta = mmap(NULL, page_size, PROT_READ, MAP_SHARED, fd, 0);
	if (meta == MAP_FAILED)
		die("cannot map %s: %s%s", path, strerror(errno),
		    errno == ENODEV ? " (this kernel cannot map its ring-buffer)" : "");
	len = meta->meta_page_size + (size_t)meta->nr_subbufs * meta->subbuf_size;
	munmap(meta, page_size);

	meta = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (meta == MAP_FAILED)
		die("cannot map all %zu bytes of %s: %s", len, path, strerror(errno));

	printf("Mapped the ring-buffer of CPU %d: %u sub-buffers of %u bytes, %zu KiB in all.\n",
	       CPU, meta->nr_subbufs, meta->subbuf_size, len >> 10);
	printf("Its meta-page says:\n");
	print_meta(meta);

	/* Where reading starts: what was already consumed of the reader */
	id = meta->reader.id;
	pos = meta->reader.read;

	snprintf(path, sizeof(path), "%s/trace_marker", tracefs);
	marker_fd = open(path, O_WRONLY);
	if (marker_fd < 0)
		die("cannot open %s: %s", path, strerror(errno));

	printf("\nWriting %d lines to trace_marker from CPU %d.\n", NR_LINES, CPU);
	for (i = 1; i <= NR_LINES; i++) {
		int n = snprintf(line, sizeof(line), LINE_FORMAT, i);

		if (write(marker_fd, line, n) != n)
			die("cannot write to %s: %s (is tracing_on 0?)", path,
			    strerror(errno));
	}
	close(marker_fd);

	printf("\nReading back through the mapping:\n");
	for (calls = 1; ; calls++) {
		const struct subbuf *sb;

		if (ioctl(fd, TRACE_MMAP_IOCTL_GET_READER) < 0)
			die("TRACE_MMAP_IOCTL_GET_READER: %s", strerror(errno));

		printf("\nGET_READER #%d: reader sub-buffer %u, readable up to byte %u\n"
		       "  counters: entries %llu, overrun %llu, read %llu, "
		       "lost before this sub-buffer %llu\n",
		       calls, meta->reader.id, meta->reader.read,
		       (unsigned long long)meta->entries,
		       (unsigned long long)meta->overrun,
		       (unsigned long long)meta->read,
		       (unsigned long long)meta->reader.lost_events);

		if (meta->reader.id == id && meta->reader.read == pos) {
			printf("  nothing new: the buffer is drained.\n");
			break;
		}

		/* A new reader sub-buffer is read from its start */
		from = meta->reader.id == id ? pos : 0;
		id = meta->reader.id;
		pos = meta->reader.read;

		sb = (const void *)((const char *)meta + meta->meta_page_size +
				    (size_t)id * meta->subbuf_size);
		if (!from && (sb->commit & SUBBUF_LOST_EVENTS))
			printf("  (events were lost before this sub-buffer)\n");
		if (pos > (sb->commit & SUBBUF_SIZE_MASK))
			die("reader.read %u is past the data of sub-buffer %u", pos, id);

		printf("  trace_marker lines in bytes %u to %u of sub-buffer %u:\n",
		       from, pos, id);
		ours += print_lines(sb, from, pos, &fmt);
	}

	if (munmap(meta, len))
		die("munmap: %s", strerror(errno));
	close(fd);

	printf("\n%d of the %d lines written came back through the mapping.\n",
	       ours, NR_LINES);
	if (ours != NR_LINES)
		die("%d lines missing", NR_LINES - ours);

	return 0;
}
