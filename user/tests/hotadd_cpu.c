// SPDX-License-Identifier: GPL-2.0
/*
 * A CPU that comes online for the first time gets its CPU buffers then
 * (trace_rb_cpu_prepare()), one in each ring buffer. Until then its
 * trace_pipe_raw cannot be mapped (EINVAL); from then on the mapping
 * describes a buffer like the other CPUs' (the buffer's sub-buffer size
 * and number of sub-buffers) and hands over the events written on that
 * CPU. A thread maps the file in a loop while the CPU comes online: it
 * gets EINVAL until the buffer is there, then a mapping, never anything
 * else. The buffer stays when the CPU goes offline again.
 *
 * user/kmod/rb_cpusync.ko counts the IPIs that make a new CPU buffer
 * visible to readers (rb_cpu_sync_readers() on each online CPU): one per
 * ring buffer at the CPU's first online, none when an instance is created
 * (its buffers are not readable yet) or when the CPU comes online again.
 *
 * This needs a CPU that is possible but was never online: make check's
 * "boot fresh" starts its 4 vCPUs with maxcpus=3, for this test and
 * fresh_top_level. Other boots list it as "?tests/hotadd_cpu" and run it
 * only when named. Output is TAP.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <linux/trace_mmap.h>

#include "kmod_common.h"
#include "ms_clock.h"

#define TRACEFS		"/sys/kernel/tracing"
#define INSTANCE	TRACEFS "/instances/hotadd_cpu"
#define NR_TESTS	18
#define NR_MARKERS	50
#define MODULE_PATH	"/lib/modules/ftmmap/rb_cpusync.ko"
#define MODULE_NAME	"rb_cpusync"

static int test_nr;
static int failed;
static int cpu;

/* Why the IPIs cannot be counted: a skip, not a failure */
static const char *no_count;

static void vresult(bool ok, const char *skip, const char *fmt, va_list ap)
{
	printf("%sok %d ", ok || skip ? "" : "not ", ++test_nr);
	vprintf(fmt, ap);
	if (skip)
		printf(" # SKIP %s", skip);
	printf("\n");
	fflush(stdout);
	if (!ok && !skip)
		failed++;
}

static void result(bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vresult(ok, NULL, fmt, ap);
	va_end(ap);
}

/* A test of the IPI count */
static void count_result(bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vresult(ok, no_count, fmt, ap);
	va_end(ap);
}

/* 0 or -errno of the write */
static int write_file(const char *path, const char *val)
{
	int fd, ret = 0;

	fd = open(path, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static int read_int(const char *path)
{
	char buf[32] = "";
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? atoi(buf) : -1;
}

static int set_online(int on)
{
	char path[64];

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	return write_file(path, on ? "1" : "0");
}

struct mapping {
	int fd;
	struct trace_buffer_meta *meta;
	size_t len;
};

/* Map a CPU's whole buffer (meta-page and sub-buffers): 0 or -errno */
static int map_cpu(const char *top, int c, struct mapping *m)
{
	long page = sysconf(_SC_PAGESIZE);
	char path[128];
	void *p;
	int err;

	snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/trace_pipe_raw", top, c);
	m->fd = open(path, O_RDONLY | O_NONBLOCK);
	if (m->fd < 0)
		return -errno;
	m->meta = mmap(NULL, page, PROT_READ, MAP_SHARED, m->fd, 0);
	if (m->meta == MAP_FAILED) {
		err = -errno;
		close(m->fd);
		return err;
	}
	m->len = m->meta->meta_page_size +
		 (size_t)m->meta->nr_subbufs * m->meta->subbuf_size;
	p = mmap(NULL, m->len, PROT_READ, MAP_SHARED, m->fd, 0);
	err = p == MAP_FAILED ? -errno : 0;
	munmap(m->meta, page);
	if (err) {
		close(m->fd);
		return err;
	}
	m->meta = p;
	return 0;
}

static void unmap_cpu(struct mapping *m)
{
	munmap(m->meta, m->len);
	close(m->fd);
}

/* The thread that maps the new CPU's buffer while it comes online */
static volatile bool stop;
static volatile int nr_einval, nr_mapped, nr_other, other_err, bad_subbuf;
static unsigned int want_subbuf;

static void *mapper(void *unused)
{
	struct mapping m;
	int ret;

	while (!stop) {
		ret = map_cpu(INSTANCE, cpu, &m);
		if (ret == -EINVAL && !nr_mapped) {
			nr_einval++;
			continue;
		}
		if (ret) {
			nr_other++;
			other_err = -ret;
			continue;
		}
		if (m.meta->subbuf_size != want_subbuf)
			bad_subbuf = m.meta->subbuf_size;
		nr_mapped++;
		unmap_cpu(&m);
	}
	return NULL;
}

static void pin(int c)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(c, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		printf("Bail out! cannot move to CPU %d: %s\n", c, strerror(errno));
		exit(1);
	}
}

/* Is the marker number @i in the reader sub-buffer of @m? */
static bool reader_has(struct mapping *m, int i)
{
	const char *subbuf = (const char *)m->meta + m->meta->meta_page_size +
			     (size_t)m->meta->reader.id * m->meta->subbuf_size;
	char text[32];

	snprintf(text, sizeof(text), "hotadd marker %d\n", i);
	return memmem(subbuf, m->meta->subbuf_size, text, strlen(text)) != NULL;
}

int main(void)
{
	struct mapping m, ref;
	pthread_t thread;
	int ret, i, nr, nr_found;
	long ncpus = sysconf(_SC_NPROCESSORS_CONF);
	long long t0;
	char path[128], text[32];
	long long hits, delta;
	int fd, online;

	printf("TAP version 13\n1..%d\n", NR_TESTS);

	/* The highest possible CPU that is offline */
	for (cpu = ncpus - 1; cpu > 0; cpu--) {
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
		if (read_int(path) == 0)
			break;
	}
	if (cpu <= 0) {
		printf("Bail out! no offline CPU: boot with maxcpus= below the CPUs\n");
		return 1;
	}
	ret = map_cpu(TRACEFS, cpu, &m);
	if (ret != -EINVAL) {
		printf("Bail out! CPU %d's top level buffer %s: it was online before\n",
		       cpu, ret ? strerror(-ret) : "maps");
		return 1;
	}
	online = sysconf(_SC_NPROCESSORS_ONLN);
	printf("# CPU %d was never online, %d are\n", cpu, online);

	fd = open(MODULE_PATH, O_RDONLY | O_CLOEXEC);
	ret = fd < 0 || syscall(SYS_finit_module, fd, "", 0) ? -errno : 0;
	if (fd >= 0)
		close(fd);
	/*
	 * register_kprobe() fails with ENOENT where the function is not,
	 * and with EOPNOTSUPP in a kernel without kprobes (GKI's)
	 */
	if (ret == -EOPNOTSUPP)
		no_count = "no kprobes in this kernel";
	count_result(!ret, "%s counts the IPIs of rb_cpu_sync_readers() (%s)", MODULE_NAME,
		     ret == -ENOENT && fd >= 0 ? "the kernel has no such function" :
		     ret ? strerror(-ret) : "loaded");
	hits = kmod_param(MODULE_NAME, "hits");

	if (mkdir(INSTANCE, 0755)) {
		printf("Bail out! mkdir %s: %s\n", INSTANCE, strerror(errno));
		return 1;
	}
	delta = kmod_param(MODULE_NAME, "hits") - hits;
	count_result(!ret && !delta, "creating an instance sends no IPI (%lld calls)", delta);
	/* A size of its own, which the new CPU buffer must take */
	ret = write_file(INSTANCE "/buffer_subbuf_size_kb", "8");
	if (!ret)
		ret = write_file(INSTANCE "/buffer_size_kb", "64");
	if (ret) {
		printf("Bail out! cannot size the instance: %s\n", strerror(-ret));
		return 1;
	}
	ret = map_cpu(INSTANCE, 0, &ref);
	if (ret) {
		printf("Bail out! cannot map the instance's CPU 0: %s\n", strerror(-ret));
		return 1;
	}
	want_subbuf = ref.meta->subbuf_size;
	printf("# instance: %u sub-buffers of %u bytes per CPU\n",
	       ref.meta->nr_subbufs, want_subbuf);
	result(want_subbuf == 8192, "the instance has sub-buffers of 8 KiB (%u)",
	       want_subbuf);

	ret = map_cpu(INSTANCE, cpu, &m);
	result(ret == -EINVAL, "CPU %d's buffer does not map before it came online (%s)",
	       cpu, ret ? strerror(-ret) : "mapped");
	if (!ret)
		unmap_cpu(&m);

	if (pthread_create(&thread, NULL, mapper, NULL)) {
		printf("Bail out! pthread_create\n");
		return 1;
	}
	/* Let the thread fail a few times first */
	while (nr_einval < 10 && !nr_other)
		usleep(1000);
	hits = kmod_param(MODULE_NAME, "hits");
	ret = set_online(1);
	delta = kmod_param(MODULE_NAME, "hits") - hits;
	result(!ret, "CPU %d comes online while a thread maps its buffer (%s)",
	       cpu, ret ? strerror(-ret) : "ok");
	/* The top level's and the instance's buffers at least */
	count_result(delta >= 2 * online && !(delta % online),
	       "its first online runs the IPI on the %d online CPUs once per ring buffer (%lld calls: %lld buffers)",
	       online, delta, delta / online);
	t0 = now_ms();
	do {
		usleep(1000);
	} while (nr_mapped < 10 && !nr_other && now_ms() - t0 < 5000);
	stop = true;
	pthread_join(thread, NULL);
	printf("# the thread: EINVAL %d times, then %d mappings\n", nr_einval, nr_mapped);
	result(nr_mapped >= 10 && !nr_other,
	       "the thread got EINVAL until the buffer was there, then mappings (%d other errors, last %s)",
	       nr_other, nr_other ? strerror(other_err) : "none");
	result(!bad_subbuf, "the thread's mappings had the instance's sub-buffer size (%s %u)",
	       bad_subbuf ? "got" : "all", bad_subbuf ? (unsigned int)bad_subbuf : want_subbuf);

	ret = map_cpu(INSTANCE, cpu, &m);
	if (ret) {
		printf("Bail out! CPU %d's buffer does not map after it came online: %s\n",
		       cpu, strerror(-ret));
		return 1;
	}
	result(m.meta->subbuf_size == ref.meta->subbuf_size &&
	       m.meta->nr_subbufs == ref.meta->nr_subbufs &&
	       m.meta->meta_page_size == ref.meta->meta_page_size,
	       "CPU %d's buffer is like CPU 0's: %u sub-buffers of %u bytes",
	       cpu, m.meta->nr_subbufs, m.meta->subbuf_size);

	/* Events written on the new CPU, through its mapping */
	pin(cpu);
	fd = open(INSTANCE "/trace_marker", O_WRONLY);
	for (i = 0, nr = 0; fd >= 0 && i < NR_MARKERS; i++) {
		snprintf(text, sizeof(text), "hotadd marker %d\n", i);
		nr += write(fd, text, strlen(text)) == (ssize_t)strlen(text);
	}
	if (fd >= 0)
		close(fd);
	pin(0);
	result(nr == NR_MARKERS, "%d markers written on CPU %d", nr, cpu);
	ret = ioctl(m.fd, TRACE_MMAP_IOCTL_GET_READER);
	for (i = 0, nr_found = 0; !ret && i < NR_MARKERS; i++)
		nr_found += reader_has(&m, i);
	result(!ret && m.meta->entries == NR_MARKERS && nr_found == NR_MARKERS,
	       "GET_READER hands them over: entries %llu, %d of %d in sub-buffer %u (%s)",
	       (unsigned long long)m.meta->entries, nr_found, NR_MARKERS,
	       m.meta->reader.id, ret ? strerror(errno) : "ok");

	/* The buffer stays, mapped or not, when the CPU goes offline */
	ret = set_online(0);
	result(!ret, "CPU %d goes offline while mapped (%s)", cpu,
	       ret ? strerror(-ret) : "ok");
	ret = ioctl(m.fd, TRACE_MMAP_IOCTL_GET_READER);
	result(!ret && m.meta->read == NR_MARKERS,
	       "GET_READER on the offline CPU's buffer: read %llu (%s)",
	       (unsigned long long)m.meta->read, ret ? strerror(errno) : "ok");
	unmap_cpu(&m);
	ret = map_cpu(INSTANCE, cpu, &m);
	result(!ret && m.meta->read == NR_MARKERS && m.meta->entries == NR_MARKERS,
	       "the offline CPU's buffer maps again, with its counts (%s)",
	       ret ? strerror(-ret) : "ok");
	if (!ret)
		unmap_cpu(&m);
	hits = kmod_param(MODULE_NAME, "hits");
	ret = set_online(1);
	delta = kmod_param(MODULE_NAME, "hits") - hits;
	result(!ret, "CPU %d comes online again (%s)", cpu, ret ? strerror(-ret) : "ok");
	count_result(!delta, "its next online finds its buffers: no IPI (%lld calls)", delta);

	/* The top level buffer got its CPU buffer too */
	ret = map_cpu(TRACEFS, cpu, &m);
	result(!ret, "the top level buffer of CPU %d maps (%s)", cpu,
	       ret ? strerror(-ret) : "ok");
	if (!ret)
		unmap_cpu(&m);

	unmap_cpu(&ref);
	ret = rmdir(INSTANCE) ? -errno : 0;
	result(!ret, "the instance is removed (%s)", ret ? strerror(-ret) : "ok");
	set_online(0);
	syscall(SYS_delete_module, MODULE_NAME, O_NONBLOCK);

	return failed ? 1 : 0;
}
