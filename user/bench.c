// SPDX-License-Identifier: GPL-2.0
/*
 * ftmmap-bench: the cost of draining a CPU's ring buffer with read() of
 * trace_pipe_raw against the cost of draining it through the mapping with
 * TRACE_MMAP_IOCTL_GET_READER.
 *
 * Both runs fill the buffer of one CPU with the same trace_marker events,
 * stop tracing, and time only the drain. Every event carries its sequence
 * number; both drains walk the events with the same code and check that
 * each one is seen exactly once and in order.
 *
 * Under QEMU with "-icount shift=0,sleep=off" the guest clock counts
 * instructions, so the times printed are instruction counts, repeatable
 * to the instruction. Quote the ratio, not the absolute values.
 *
 * Usage: ftmmap-bench [-n events] [-c cpu] [-k buffer_size_kb]
 *                     [-r max_ratio] [-R repeats]
 * Output: TAP, and a "# result:" line with the numbers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/trace_mmap.h>

#define TRACEFS "/sys/kernel/tracing"

/* Ring-buffer event types, as include/linux/ring_buffer.h lays them out */
#define RB_TYPE_DATA_MAX	28
#define RB_TYPE_PADDING		29
#define RB_TYPE_TIME_EXTEND	30
#define RB_TYPE_TIME_STAMP	31

/* The data page header: u64 time_stamp, then the commit (a long) */
#define SUBBUF_HDR		16
#define COMMIT_MASK		0xfffffUL

struct drain {
	uint64_t events;	/* print events seen */
	uint64_t next_seq;	/* sequence number expected next */
	uint64_t bad;		/* events out of sequence */
	uint64_t subbufs;	/* sub-buffers walked (reads or GET_READERs) */
	uint64_t ns;
};

static int print_id = -1;
static unsigned int buf_offset;

static void die(const char *what)
{
	printf("Bail out! %s: %s\n", what, strerror(errno));
	exit(1);
}

static void write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_TRUNC);

	if (fd < 0 || write(fd, val, strlen(val)) != (ssize_t)strlen(val))
		die(path);
	close(fd);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* The print event's ID and the offset of its buf field, from its format */
static void read_print_format(void)
{
	char line[256];
	FILE *f = fopen(TRACEFS "/events/ftrace/print/format", "r");

	if (!f)
		die("events/ftrace/print/format");
	while (fgets(line, sizeof(line), f)) {
		char *p;

		if (sscanf(line, "ID: %d", &print_id) == 1)
			continue;
		p = strstr(line, "char buf[];");
		if (p && (p = strstr(p, "offset:")))
			buf_offset = strtoul(p + 7, NULL, 10);
	}
	fclose(f);
	if (print_id < 0 || !buf_offset) {
		printf("Bail out! cannot parse the print event format\n");
		exit(1);
	}
}

/*
 * Walk the events of one sub-buffer's data between @from and @to, and
 * check the sequence numbers of the print events.
 */
static void walk_events(struct drain *d, const unsigned char *data,
			unsigned long from, unsigned long to)
{
	unsigned long pos = from;

	while (pos + 4 <= to) {
		uint32_t hdr, len;
		const unsigned char *payload;
		unsigned int type;

		memcpy(&hdr, data + pos, 4);
		type = hdr & 0x1f;

		switch (type) {
		case RB_TYPE_PADDING:
			if (!(hdr >> 5))	/* the rest of the page */
				return;
			memcpy(&len, data + pos + 4, 4);
			pos += 4 + len;
			continue;
		case RB_TYPE_TIME_EXTEND:
		case RB_TYPE_TIME_STAMP:
			pos += 8;
			continue;
		case 0:
			memcpy(&len, data + pos + 4, 4);
			payload = data + pos + 8;
			pos += 4 + len;
			break;
		default:
			payload = data + pos + 4;
			pos += 4 + type * 4;
			break;
		}

		if (*(const uint16_t *)payload == print_id) {
			uint32_t seq;

			memcpy(&seq, payload + buf_offset, sizeof(seq));
			if (seq != d->next_seq)
				d->bad++;
			d->next_seq = seq + 1;
			d->events++;
		}
	}
}

static int open_raw(int cpu)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), TRACEFS "/per_cpu/cpu%d/trace_pipe_raw",
		 cpu);
	fd = open(path, O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		die(path);
	return fd;
}

/* Clear the buffer and fill it with @n events numbered from 0 */
static void fill(int n)
{
	uint32_t seq;
	int fd;

	write_file(TRACEFS "/tracing_on", "0");
	write_file(TRACEFS "/trace", "");
	fd = open(TRACEFS "/trace_marker", O_WRONLY);
	if (fd < 0)
		die("trace_marker");
	write_file(TRACEFS "/tracing_on", "1");
	for (seq = 0; seq < (uint32_t)n; seq++) {
		if (write(fd, &seq, sizeof(seq)) != sizeof(seq))
			die("write trace_marker");
	}
	write_file(TRACEFS "/tracing_on", "0");
	close(fd);
}

static void drain_read(struct drain *d, int cpu, long page_size)
{
	unsigned char *buf = malloc(page_size);
	uint64_t start;
	int fd = open_raw(cpu);

	if (!buf)
		die("malloc");
	start = now_ns();
	for (;;) {
		ssize_t r = read(fd, buf, page_size);
		unsigned long commit;

		if (r < 0 && errno == EAGAIN)
			break;
		if (r <= 0)
			die("read trace_pipe_raw");
		commit = *(unsigned long *)(buf + 8) & COMMIT_MASK;
		walk_events(d, buf + SUBBUF_HDR, 0, commit);
		d->subbufs++;
	}
	d->ns = now_ns() - start;
	close(fd);
	free(buf);
}

static void drain_mmap(struct drain *d, int cpu, long page_size)
{
	struct trace_buffer_meta *meta;
	unsigned char *data;
	uint32_t id, read;
	uint64_t start;
	size_t data_len;
	int fd = open_raw(cpu);

	meta = mmap(NULL, page_size, PROT_READ, MAP_SHARED, fd, 0);
	if (meta == MAP_FAILED)
		die("mmap meta-page");
	data_len = (size_t)meta->subbuf_size * meta->nr_subbufs;
	data = mmap(NULL, data_len, PROT_READ, MAP_SHARED, fd,
		    meta->meta_page_size);
	if (data == MAP_FAILED)
		die("mmap sub-buffers");

	start = now_ns();
	id = meta->reader.id;
	read = meta->reader.read;
	for (;;) {
		uint32_t from;

		if (ioctl(fd, TRACE_MMAP_IOCTL_GET_READER) < 0)
			die("GET_READER");
		d->subbufs++;
		from = meta->reader.id == id ? read : 0;
		if (meta->reader.id == id && meta->reader.read == read)
			break;
		id = meta->reader.id;
		read = meta->reader.read;
		walk_events(d, data + (size_t)id * meta->subbuf_size +
			    SUBBUF_HDR, from, read);
	}
	d->ns = now_ns() - start;

	munmap(data, data_len);
	munmap(meta, page_size);
	close(fd);
}

/* One TAP line: were all @n events seen once, in order? Returns 1 if not */
static int report_drain(int test, const char *how, const struct drain *d,
			int n)
{
	if (d->events == (uint64_t)n && !d->bad) {
		printf("ok %d %s drained %d events exactly once\n", test, how, n);
		return 0;
	}
	printf("not ok %d %s drained %llu of %d events, %llu out of sequence\n",
	       test, how, (unsigned long long)d->events, n,
	       (unsigned long long)d->bad);
	return 1;
}

int main(int argc, char **argv)
{
	long page_size = sysconf(_SC_PAGESIZE);
	double max_ratio = 0, worst_ratio = 0;
	int n = 100000, cpu = 0, kb = 4096, repeats = 1;
	struct drain rd = { 0 }, mm = { 0 };
	char val[32];
	cpu_set_t set;
	int opt, i, test = 0, failed = 0;

	while ((opt = getopt(argc, argv, "n:c:k:r:R:")) != -1) {
		switch (opt) {
		case 'n': n = atoi(optarg); break;
		case 'c': cpu = atoi(optarg); break;
		case 'k': kb = atoi(optarg); break;
		case 'r': max_ratio = atof(optarg); break;
		case 'R': repeats = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-n events] [-c cpu] [-k kb] [-r max_ratio] [-R repeats]\n",
				argv[0]);
			return 2;
		}
	}

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");

	read_print_format();
	snprintf(val, sizeof(val), "%d", kb);
	write_file(TRACEFS "/buffer_size_kb", val);

	printf("TAP version 13\n1..%d\n", 2 * repeats + (max_ratio > 0));
	for (i = 0; i < repeats; i++) {
		double ratio;

		memset(&rd, 0, sizeof(rd));
		memset(&mm, 0, sizeof(mm));
		fill(n);
		drain_read(&rd, cpu, page_size);
		fill(n);
		drain_mmap(&mm, cpu, page_size);

		ratio = (double)mm.ns / (double)rd.ns;
		if (ratio > worst_ratio)
			worst_ratio = ratio;

		printf("# result: run=%d events=%d read_ns=%llu read_calls=%llu mmap_ns=%llu get_reader_calls=%llu ratio=%.3f\n",
		       i, n, (unsigned long long)rd.ns,
		       (unsigned long long)rd.subbufs,
		       (unsigned long long)mm.ns,
		       (unsigned long long)mm.subbufs, ratio);
		printf("# per sub-buffer: read %.0f ns, mmap %.0f ns\n",
		       (double)rd.ns / rd.subbufs, (double)mm.ns / mm.subbufs);

		failed += report_drain(++test, "read()", &rd, n);
		failed += report_drain(++test, "mapping", &mm, n);
	}

	if (max_ratio > 0) {
		test++;
		if (worst_ratio <= max_ratio) {
			printf("ok %d mapping costs %.3fx read() (limit %.2fx)\n",
			       test, worst_ratio, max_ratio);
		} else {
			failed++;
			printf("not ok %d mapping costs %.3fx read() (limit %.2fx)\n",
			       test, worst_ratio, max_ratio);
		}
	}

	write_file(TRACEFS "/tracing_on", "1");
	return failed ? 1 : 0;
}
