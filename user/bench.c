// SPDX-License-Identifier: GPL-2.0
/*
 * ftmmap-bench: the guest side of "make bench" (scripts/bench.sh).
 *
 *   ftmmap-bench drain  -s SUBBUF_KB [-k BUFFER_KB] [-n EVENTS] [-m METHOD,...]
 *   ftmmap-bench writer [-k BUFFER_KB] [-n EVENTS] [-M]
 *   ftmmap-bench setup  -b BUFFER_MB [-R REPEATS]
 *
 * drain: fill the buffer of CPU 0 with EVENTS trace_marker events (each
 *   carries its sequence number), stop tracing and drain it with one method:
 *     read         read() of trace_pipe_raw, a sub-buffer a call
 *     splice-null  splice() of trace_pipe_raw to a pipe, then to /dev/null
 *     splice-file  the same to a file in /tmp
 *     mmap         the mapping and TRACE_MMAP_IOCTL_GET_READER
 *   Only the drain's system calls are timed. Every method's events are then
 *   walked with libtraceevent (kbuffer for the sub-buffers, tep for the
 *   fields) and checked: all EVENTS seen once, in order (splice-null, whose
 *   data is gone, is checked on per_cpu/cpu0/stats). The walk of the events
 *   read() returned is timed too: "parse", what a consumer pays whatever
 *   the method, the floor of any method's cost per event.
 * writer: the cost of EVENTS trace_marker writes, then of EVENTS getppid()
 *   calls with the event syscalls:sys_enter_getppid on; -M: while the buffer
 *   is mapped (meta-page and sub-buffers) by this process.
 * setup: the cost of open() and mmap() of the meta-page and sub-buffers,
 *   and of munmap() and close(), for a buffer of BUFFER_MB per CPU.
 *
 * Under QEMU with "-icount shift=0,sleep=off" the guest clock counts
 * instructions: the figures repeat to the instruction on the same kernel.
 * Each timed call is bracketed by two clock reads; their own cost, measured
 * at the start, is taken off.
 *
 * Output: TAP; each figure on a "# result: measure=NAME key=value..." line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/trace_mmap.h>

#include <event-parse.h>
#include <kbuffer.h>
#include <tracefs.h>

#define TRACEFS		"/sys/kernel/tracing"
#define CPU_DIR		TRACEFS "/per_cpu/cpu0"
#define SPLICE_FILE	"/tmp/ftmmap-bench.splice"
#define GETPPID_EVENT	TRACEFS "/events/syscalls/sys_enter_getppid/enable"

/* What the event walk checks */
struct check {
	uint64_t	events;		/* print events seen */
	uint64_t	bad;		/* out of sequence */
	uint32_t	next;		/* sequence number expected next */
};

/* One drain: the timed system calls and what they moved */
struct drain {
	uint64_t	ns;
	uint64_t	calls;
	uint64_t	subbufs;
	uint64_t	last_ns;	/* of the last call */
	uint64_t	max_ns;		/* mmap: the dearest call, */
	uint64_t	max_events;	/* and the events it handed over */
	struct check	chk;
};

static struct tep_handle *tep;
static struct tep_format_field *type_field, *buf_field;
static int print_id;
static struct kbuffer *kbuf;
static uint64_t clock_cost;	/* two clock reads, back to back */
static int test_nr;
static int failed;

static void die(const char *fmt, ...)
{
	va_list ap;
	int err = errno;

	printf("Bail out! ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(": %s\n", strerror(err));
	exit(1);
}

static void tap(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d ", ok ? "" : "not ", ++test_nr);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	failed += !ok;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* The time between two clock reads with nothing in between */
static void measure_clock(void)
{
	uint64_t t0, sum = 0;
	int i;

	for (i = 0; i < 1000; i++) {
		t0 = now_ns();
		sum += now_ns() - t0;
	}
	clock_cost = sum / 1000;
}

static int write_file(const char *path, const char *fmt, ...)
{
	char val[64];
	va_list ap;
	int fd, len, ret = 0;

	va_start(ap, fmt);
	len = vsnprintf(val, sizeof(val), fmt, ap);
	va_end(ap);
	fd = open(path, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return -1;
	if (write(fd, val, len) != len)
		ret = -1;
	close(fd);
	return ret;
}

static void set(const char *path, const char *fmt, ...)
{
	char val[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(val, sizeof(val), fmt, ap);
	va_end(ap);
	if (write_file(path, "%s", val))
		die("echo %s > %s", val, path);
}

/* A number of per_cpu/cpu0/stats ("entries: 12") */
static uint64_t cpu_stat(const char *name)
{
	char line[128];
	size_t len = strlen(name);
	uint64_t val = UINT64_MAX;
	FILE *f = fopen(CPU_DIR "/stats", "r");

	if (!f)
		die("%s", CPU_DIR "/stats");
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, len) && line[len] == ':')
			val = strtoull(line + len + 1, NULL, 10);
	fclose(f);
	return val;
}

/* ftrace:print's ID and fields, from the kernel's own format */
static void load_formats(void)
{
	const char *systems[] = { "ftrace", NULL };
	struct tep_event *ev;

	tep = tracefs_local_events_system(NULL, systems);
	if (!tep)
		die("cannot read the ftrace event formats");
	ev = tep_find_event_by_name(tep, "ftrace", "print");
	if (!ev)
		die("no ftrace:print event");
	print_id = ev->id;
	type_field = tep_find_common_field(ev, "common_type");
	buf_field = tep_find_field(ev, "buf");
	if (!type_field || !buf_field)
		die("ftrace:print has no common_type or buf field");
	kbuf = kbuffer_alloc(KBUFFER_LSIZE_SAME_AS_HOST, KBUFFER_ENDIAN_SAME_AS_HOST);
	if (!kbuf)
		die("kbuffer_alloc");
}

/*
 * Walk the events of a sub-buffer from data offset @from to @to (-1: its
 * end) with kbuffer and check the sequence numbers of the print events.
 */
static void walk(struct check *c, void *subbuf, unsigned int from, int to)
{
	unsigned long long ts, type;
	int start;
	void *ev;

	if (kbuffer_load_subbuffer(kbuf, subbuf))
		die("kbuffer cannot load a sub-buffer");
	start = kbuffer_start_of_data(kbuf);
	if (to < 0)
		to = kbuffer_subbuffer_size(kbuf);
	for (ev = kbuffer_read_at_offset(kbuf, start + from, &ts);
	     ev && kbuffer_curr_offset(kbuf) < start + to;
	     ev = kbuffer_next_event(kbuf, &ts)) {
		uint32_t seq;

		if (tep_read_number_field(type_field, ev, &type) || type != (unsigned)print_id)
			continue;
		memcpy(&seq, (char *)ev + buf_field->offset, sizeof(seq));
		c->bad += seq != c->next;
		c->next = seq + 1;
		c->events++;
	}
}

static void walk_all(struct check *c, char *data, size_t len, size_t subbuf_size)
{
	size_t off;

	for (off = 0; off + subbuf_size <= len; off += subbuf_size)
		walk(c, data + off, 0, -1);
}

static void pin_cpu0(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
}

static int open_raw(int flags)
{
	int fd = open(CPU_DIR "/trace_pipe_raw", O_RDONLY | flags);

	if (fd < 0)
		die("%s", CPU_DIR "/trace_pipe_raw");
	return fd;
}

/* The buffer of CPU 0 emptied, then @n markers numbered from 0 */
static void fill(int n)
{
	uint32_t seq;
	int fd;

	set(TRACEFS "/tracing_on", "0");
	set(TRACEFS "/trace", "");
	fd = open(TRACEFS "/trace_marker", O_WRONLY);
	if (fd < 0)
		die("trace_marker");
	set(TRACEFS "/tracing_on", "1");
	for (seq = 0; seq < (uint32_t)n; seq++)
		if (write(fd, &seq, sizeof(seq)) != sizeof(seq))
			die("write trace_marker");
	set(TRACEFS "/tracing_on", "0");
	close(fd);
}

#define TIMED(d, call) ({					\
	uint64_t __t0 = now_ns();				\
	typeof(call) __ret = (call);				\
	(d)->last_ns = now_ns() - __t0 - clock_cost;		\
	(d)->ns += (d)->last_ns;				\
	(d)->calls++;						\
	__ret;							\
})

/* read() the sub-buffers into @data, which holds the whole buffer */
static void drain_read(struct drain *d, char *data, size_t len, size_t subbuf_size)
{
	int fd = open_raw(O_NONBLOCK);
	size_t off = 0;
	ssize_t r;

	for (;;) {
		if (off + subbuf_size > len)
			die("more data than the buffer holds");
		r = TIMED(d, read(fd, data + off, subbuf_size));
		if (r < 0 && errno == EAGAIN)
			break;
		if (r != (ssize_t)subbuf_size)
			die("read trace_pipe_raw returned %zd", r);
		off += subbuf_size;
		d->subbufs++;
	}
	close(fd);
}

/*
 * splice() moves only sub-buffers the writer has left: what is left, the
 * sub-buffer being written, is read() and written, as trace-cmd does at the
 * end of a recording. Returns the bytes that reached @out.
 */
static size_t drain_splice(struct drain *d, int out, char *page, size_t subbuf_size)
{
	size_t chunk = subbuf_size < 65536 ? 65536 : subbuf_size, total = 0;
	int fd = open_raw(O_NONBLOCK), p[2];
	ssize_t in, o;

	if (pipe(p))
		die("pipe");
	if (fcntl(p[1], F_SETPIPE_SZ, chunk * 2) < 0)
		die("F_SETPIPE_SZ %zu", chunk * 2);
	for (;;) {
		in = TIMED(d, splice(fd, NULL, p[1], NULL, chunk, SPLICE_F_NONBLOCK));
		if (in < 0 && errno == EAGAIN)
			break;
		if (in <= 0 || in % subbuf_size)
			die("splice from trace_pipe_raw returned %zd", in);
		d->subbufs += in / subbuf_size;
		while (in) {
			o = TIMED(d, splice(p[0], NULL, out, NULL, in, 0));
			if (o <= 0)
				die("splice to the output returned %zd", o);
			in -= o;
			total += o;
		}
	}
	for (;;) {
		in = TIMED(d, read(fd, page, subbuf_size));
		if (in < 0 && errno == EAGAIN)
			break;
		if (in != (ssize_t)subbuf_size)
			die("read trace_pipe_raw returned %zd", in);
		d->subbufs++;
		if (TIMED(d, write(out, page, in)) != in)
			die("write of a sub-buffer");
		total += in;
	}
	close(p[0]);
	close(p[1]);
	close(fd);
	return total;
}

static void drain_mmap(struct drain *d, size_t page_size)
{
	struct trace_buffer_meta *meta;
	uint32_t id, read;
	size_t data_len;
	char *data;
	int fd = open_raw(O_NONBLOCK);

	meta = mmap(NULL, page_size, PROT_READ, MAP_SHARED, fd, 0);
	if (meta == MAP_FAILED)
		die("mmap of the meta-page");
	data_len = (size_t)meta->subbuf_size * meta->nr_subbufs;
	data = mmap(NULL, data_len, PROT_READ, MAP_SHARED, fd, meta->meta_page_size);
	if (data == MAP_FAILED)
		die("mmap of the sub-buffers");

	id = meta->reader.id;
	read = meta->reader.read;
	for (;;) {
		uint64_t before;
		uint32_t from;

		if (TIMED(d, ioctl(fd, TRACE_MMAP_IOCTL_GET_READER)) < 0)
			die("TRACE_MMAP_IOCTL_GET_READER");
		if (meta->reader.id == id && meta->reader.read == read)
			break;
		before = d->chk.events;
		from = meta->reader.id == id ? read : 0;
		id = meta->reader.id;
		read = meta->reader.read;
		d->subbufs++;
		walk(&d->chk, data + (size_t)id * meta->subbuf_size, from, read);
		if (d->last_ns > d->max_ns) {
			d->max_ns = d->last_ns;
			d->max_events = d->chk.events - before;
		}
	}
	munmap(data, data_len);
	munmap(meta, page_size);
	close(fd);
}

static void result_drain(const char *method, const struct drain *d, size_t kb, int n)
{
	printf("# result: measure=drain method=%s subbuf_kb=%zu events=%d subbufs=%llu calls=%llu ns=%llu",
	       method, kb, n, (unsigned long long)d->subbufs, (unsigned long long)d->calls,
	       (unsigned long long)d->ns);
	if (d->max_ns)
		printf(" max_call_ns=%llu max_call_events=%llu", (unsigned long long)d->max_ns,
		       (unsigned long long)d->max_events);
	printf("\n");
}

static void check_events(const char *method, const struct check *c, int n)
{
	tap(c->events == (uint64_t)n && !c->bad, "drain %s: %llu of %d events, %llu out of order",
	    method, (unsigned long long)c->events, n, (unsigned long long)c->bad);
}

static int drain(int argc, char **argv)
{
	size_t page_size = sysconf(_SC_PAGESIZE), subbuf_kb = 0, buffer_kb = 8192, len, sb;
	const char *methods = "read,splice-null,splice-file,mmap";
	char *list, *method, *data;
	int opt, n = 0, nr_methods = 1;

	while ((opt = getopt(argc, argv, "s:k:n:m:")) != -1) {
		switch (opt) {
		case 's': subbuf_kb = atoi(optarg); break;
		case 'k': buffer_kb = atoi(optarg); break;
		case 'n': n = atoi(optarg); break;
		case 'm': methods = optarg; break;
		default: return 2;
		}
	}
	if (!subbuf_kb)
		return 2;
	/* 28 bytes an event: three quarters of the buffer by default */
	if (!n)
		n = buffer_kb * 1024 / 28 * 3 / 4;
	for (list = (char *)methods; *list; list++)
		nr_methods += *list == ',';

	set(TRACEFS "/tracing_on", "0");
	/* Without the knob (unpatched 6.1), sub-buffers are pages */
	if (!access(TRACEFS "/buffer_subbuf_size_kb", F_OK))
		set(TRACEFS "/buffer_subbuf_size_kb", "%zu", subbuf_kb);
	else if (subbuf_kb * 1024 != page_size)
		die("no buffer_subbuf_size_kb: cannot make %zu KiB sub-buffers", subbuf_kb);
	set(TRACEFS "/buffer_size_kb", "%zu", buffer_kb);
	sb = subbuf_kb * 1024;
	len = buffer_kb * 1024 + 4 * sb;
	data = malloc(len);
	if (!data)
		die("malloc");
	memset(data, 0, len);

	/* parse: one result line more, after read's */
	printf("TAP version 13\n1..%d\n", nr_methods + !!strstr(methods, "read"));
	list = strdup(methods);
	for (method = strtok(list, ","); method; method = strtok(NULL, ",")) {
		struct drain d = { 0 };

		/* A first round in the same state, so nothing is done a first time */
		fill(n / 10);
		if (!strcmp(method, "mmap")) {
			drain_mmap(&d, page_size);
			memset(&d, 0, sizeof(d));
			fill(n);
			drain_mmap(&d, page_size);
			result_drain(method, &d, subbuf_kb, n);
			check_events(method, &d.chk, n);
		} else if (!strcmp(method, "read")) {
			struct drain p = { 0 };

			drain_read(&d, data, len, sb);
			memset(&d, 0, sizeof(d));
			fill(n);
			drain_read(&d, data, len, sb);
			result_drain(method, &d, subbuf_kb, n);
			p.subbufs = d.subbufs;
			p.calls = 1;
			p.ns = now_ns();
			walk_all(&p.chk, data, d.subbufs * sb, sb);
			p.ns = now_ns() - p.ns - clock_cost;
			result_drain("parse", &p, subbuf_kb, n);
			check_events(method, &p.chk, n);
			tap(p.chk.events == (uint64_t)n, "parse: %llu events walked",
			    (unsigned long long)p.chk.events);
		} else if (!strcmp(method, "splice-null") || !strcmp(method, "splice-file")) {
			bool to_file = !strcmp(method, "splice-file");
			size_t bytes;
			int out, round;

			for (round = 0; round < 2; round++) {
				if (round) {
					memset(&d, 0, sizeof(d));
					fill(n);
				}
				out = to_file ? open(SPLICE_FILE, O_RDWR | O_CREAT | O_TRUNC, 0600) :
						open("/dev/null", O_WRONLY);
				if (out < 0)
					die("%s", to_file ? SPLICE_FILE : "/dev/null");
				if (round && cpu_stat("entries") != (uint64_t)n)
					die("the buffer does not hold %d events", n);
				bytes = drain_splice(&d, out, data + len - sb, sb);
				if (round && to_file) {
					if (bytes > len - sb ||
					    pread(out, data, bytes, 0) != (ssize_t)bytes)
						die("read %s", SPLICE_FILE);
					walk_all(&d.chk, data, bytes, sb);
				}
				close(out);
			}
			unlink(SPLICE_FILE);
			result_drain(method, &d, subbuf_kb, n);
			if (to_file)
				check_events(method, &d.chk, n);
			else
				tap(bytes == d.subbufs * sb && cpu_stat("entries") == 0 &&
				    cpu_stat("overrun") == 0,
				    "drain %s: %zu bytes, the buffer left empty, nothing overrun",
				    method, bytes);
		} else {
			errno = EINVAL;
			die("unknown method %s", method);
		}
	}
	free(list);
	free(data);
	set(TRACEFS "/tracing_on", "1");
	return failed ? 1 : 0;
}

struct mapping {
	int	fd;
	void	*meta;
	void	*data;
	size_t	meta_len;
	size_t	data_len;
};

static int map_cpu0(struct mapping *m)
{
	size_t page_size = sysconf(_SC_PAGESIZE);
	struct trace_buffer_meta *meta;

	m->fd = open_raw(0);
	meta = mmap(NULL, page_size, PROT_READ, MAP_SHARED, m->fd, 0);
	if (meta == MAP_FAILED)
		return -1;
	m->meta = meta;
	m->meta_len = page_size;
	m->data_len = (size_t)meta->subbuf_size * meta->nr_subbufs;
	m->data = mmap(NULL, m->data_len, PROT_READ, MAP_SHARED, m->fd, meta->meta_page_size);
	return m->data == MAP_FAILED ? -1 : 0;
}

static void unmap_cpu0(struct mapping *m)
{
	munmap(m->data, m->data_len);
	munmap(m->meta, m->meta_len);
	close(m->fd);
}

/* @n markers, then @n getppid() with their event on: cost per event */
static int writer(int argc, char **argv)
{
	struct mapping m;
	size_t buffer_kb = 16384;
	uint64_t t, entries;
	bool mapped = false;
	int opt, n = 100000, fd, i;
	uint32_t seq;

	while ((opt = getopt(argc, argv, "k:n:M")) != -1) {
		switch (opt) {
		case 'k': buffer_kb = atoi(optarg); break;
		case 'n': n = atoi(optarg); break;
		case 'M': mapped = true; break;
		default: return 2;
		}
	}
	printf("TAP version 13\n1..2\n");
	set(TRACEFS "/tracing_on", "0");
	set(TRACEFS "/buffer_size_kb", "%zu", buffer_kb);
	fd = open(TRACEFS "/trace_marker", O_WRONLY);
	if (fd < 0)
		die("trace_marker");

	/* marker: a first round, then the timed one */
	for (i = 0; i < 2; i++) {
		set(TRACEFS "/trace", "");
		if (i && mapped && map_cpu0(&m))
			die("mmap of trace_pipe_raw");
		set(TRACEFS "/tracing_on", "1");
		t = now_ns();
		for (seq = 0; seq < (uint32_t)(i ? n : n / 10); seq++)
			if (write(fd, &seq, sizeof(seq)) != sizeof(seq))
				die("write trace_marker");
		t = now_ns() - t - clock_cost;
		set(TRACEFS "/tracing_on", "0");
	}
	entries = cpu_stat("entries");
	if (mapped)
		unmap_cpu0(&m);
	printf("# result: measure=writer event=marker mapped=%d events=%d ns=%llu\n",
	       mapped, n, (unsigned long long)t);
	tap(entries == (uint64_t)n, "writer marker%s: %llu of %d events in the buffer",
	    mapped ? " (mapped)" : "", (unsigned long long)entries, n);
	close(fd);

	/* getppid() with syscalls:sys_enter_getppid on */
	set(GETPPID_EVENT, "1");
	for (i = 0; i < 2; i++) {
		set(TRACEFS "/trace", "");
		if (i && mapped && map_cpu0(&m))
			die("mmap of trace_pipe_raw");
		set(TRACEFS "/tracing_on", "1");
		t = now_ns();
		for (seq = 0; seq < (uint32_t)(i ? n : n / 10); seq++)
			syscall(SYS_getppid);
		t = now_ns() - t - clock_cost;
		set(TRACEFS "/tracing_on", "0");
	}
	entries = cpu_stat("entries");
	if (mapped)
		unmap_cpu0(&m);
	set(GETPPID_EVENT, "0");
	printf("# result: measure=writer event=syscall mapped=%d events=%d ns=%llu\n",
	       mapped, n, (unsigned long long)t);
	tap(entries == (uint64_t)n, "writer syscall%s: %llu of %d events in the buffer",
	    mapped ? " (mapped)" : "", (unsigned long long)entries, n);
	set(TRACEFS "/trace", "");
	set(TRACEFS "/tracing_on", "1");
	return failed ? 1 : 0;
}

/* open() + mmap(), munmap() + close() of a buffer of @mb MiB */
static int setup(int argc, char **argv)
{
	uint64_t t, t_map = 0, t_unmap = 0;
	int opt, mb = 0, repeats = 5, i;
	struct mapping m;

	while ((opt = getopt(argc, argv, "b:R:")) != -1) {
		switch (opt) {
		case 'b': mb = atoi(optarg); break;
		case 'R': repeats = atoi(optarg); break;
		default: return 2;
		}
	}
	if (mb <= 0 || repeats <= 0)
		return 2;
	printf("TAP version 13\n1..1\n");
	set(TRACEFS "/tracing_on", "0");
	set(TRACEFS "/buffer_size_kb", "%d", mb * 1024);
	/* The first round is not counted */
	for (i = 0; i <= repeats; i++) {
		t = now_ns();
		if (map_cpu0(&m))
			die("mmap of trace_pipe_raw");
		t = now_ns() - t;
		if (i)
			t_map += t - clock_cost;
		t = now_ns();
		unmap_cpu0(&m);
		t = now_ns() - t;
		if (i)
			t_unmap += t - clock_cost;
	}
	printf("# result: measure=setup buffer_mb=%d bytes=%zu repeats=%d map_ns=%llu unmap_ns=%llu\n",
	       mb, m.data_len, repeats,
	       (unsigned long long)(t_map / repeats), (unsigned long long)(t_unmap / repeats));
	tap(m.data_len >= (size_t)mb << 20, "setup: %zu bytes of sub-buffers mapped for %d MiB",
	    m.data_len, mb);
	set(TRACEFS "/buffer_size_kb", "1408");
	set(TRACEFS "/tracing_on", "1");
	return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	int ret = 2;

	pin_cpu0();
	measure_clock();
	load_formats();
	if (!strcmp(cmd, "drain"))
		ret = drain(argc - 1, argv + 1);
	else if (!strcmp(cmd, "writer"))
		ret = writer(argc - 1, argv + 1);
	else if (!strcmp(cmd, "setup"))
		ret = setup(argc - 1, argv + 1);
	if (ret == 2)
		fprintf(stderr, "usage: ftmmap-bench drain -s SUBBUF_KB [-k BUFFER_KB] [-n EVENTS] [-m METHOD,...]\n"
			"       ftmmap-bench writer [-k BUFFER_KB] [-n EVENTS] [-M]\n"
			"       ftmmap-bench setup -b BUFFER_MB [-R REPEATS]\n");
	printf("# clock: %llu ns between two clock reads\n", (unsigned long long)clock_cost);
	return ret;
}
