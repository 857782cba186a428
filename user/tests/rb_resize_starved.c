// SPDX-License-Identifier: GPL-2.0
/*
 * A resize finishes while no kworker can be created.
 *
 * ring_buffer_resize() holds buffer->mutex (and the CPU hotplug lock)
 * while it waits for its per-CPU page updates, which run as work items
 * on each CPU. ring_buffer_map() takes buffer->mutex under mmap_lock. A
 * cgroup migration of the mapping process waits for that mmap_lock in
 * cpuset_attach() (mpol_rebind_mm()) with cgroup_threadgroup_rwsem held
 * for writing, and kthreadd needs that rwsem to fork. If the CPU's worker
 * pool needs a new kworker to run the update just then, nothing moves:
 * the resize waits for the update, the update for a kworker, kthreadd
 * for the migration, the migration for the mapper and the mapper for the
 * resize. Seen once in make check (load_test's cpuset_migration, a CPU
 * going offline held the pool's other worker); lockdep cannot see it,
 * the last wait is for a thread, not a lock.
 *
 * Here that state is made on purpose. user/kmod/wq_starve.ko leaves the
 * pool of CPU 1 with one idle kworker and a work item that spins, so that
 * what is queued there waits. Then: a resize of the instance (it queues
 * its update for CPU 1 and waits, buffer->mutex held), a process that
 * maps the instance (waits for the mutex under mmap_lock), a move of that
 * process into another cpuset (waits for its mmap_lock with the rwsem
 * held). Then the spinner sleeps: the pool's last idle kworker must
 * create another, and kthreadd waits for the move. The resize must end:
 * its update runs on a workqueue whose rescuer needs no new kworker.
 * Unloading the module wakes its work items, whose kworkers then run the
 * update in any case, so a failure does not leave the guest stuck.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <tracefs/tracefs.h>

#include "kselftest_harness.h"
#include "kmod_common.h"
#include "ms_clock.h"

#define INSTANCE	"rb_resize_starved"
#define CGROUP_ROOT	"/sys/fs/cgroup"
#define CGROUP		CGROUP_ROOT "/rb_resize_starved"
#define MODULE_PATH	"/lib/modules/ftmmap/wq_starve.ko"
#define MODULE_PARAMS	"/sys/module/wq_starve/parameters/"
#define SMALL_KB	"64"
#define BIG_KB		"256"
#define WQ_THRESH	"/sys/module/workqueue/parameters/cpu_intensive_thresh_us"
#define WRITER_CPU	0
#define STARVED_CPU	1
#define SLEEPERS	32
#define RESIZE_WAIT_MS	30000	/* the rescuer needs a few ms */
#define BLOCK_WAIT_MS	10000

/* The state letter of /proc/PID/stat, 0 if it cannot be read */
static char state_of(pid_t pid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* Where @pid sleeps (/proc/PID/wchan: "0" without kallsyms) */
static const char *wchan_of(pid_t pid, char *buf, size_t size)
{
	char path[64];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/wchan", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, size - 1);
		close(fd);
	}
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* The kernel stack of @pid, for a failure's log */
static void log_stack(struct __test_metadata *_metadata, pid_t pid)
{
	char path[64], line[160];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stack", pid);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		TH_LOG("  %d: %s", pid, line);
	}
	fclose(f);
}

/*
 * Whether @pid sleeps with @func on its kernel stack: /proc/PID/stack
 * where there is one (wchan is its first frame, which a guessing unwinder
 * can get wrong), else wchan; -1 if neither names functions.
 */
static int sleeps_in(pid_t pid, const char *func)
{
	char path[64], line[160], pat[80];
	bool found = false;
	FILE *f;

	snprintf(pat, sizeof(pat), "] %s+", func);
	snprintf(path, sizeof(path), "/proc/%d/stack", pid);
	f = fopen(path, "r");
	if (f) {
		while (fgets(line, sizeof(line), f))
			found |= !!strstr(line, pat);
		fclose(f);
		return found && state_of(pid) == 'D';
	}
	wchan_of(pid, line, sizeof(line));
	if (!strcmp(line, "0"))
		return -1;
	return !strcmp(line, func);
}

/*
 * Wait until @pid sleeps in @func or, where the kernel names no
 * functions, sleeps uninterruptibly for a while: false if it ends or @ms
 * pass.
 */
static bool wait_in(pid_t pid, const char *func, int ms)
{
	long long end = now_ms() + ms;
	int d = 0, in;
	char s;

	do {
		in = sleeps_in(pid, func);
		if (in > 0)
			return true;
		s = state_of(pid);
		if (in < 0 && s == 'D' && ++d == 50)
			return true;
		if (s == 'Z' || s == 0)
			return false;
		usleep(10000);
	} while (now_ms() < end);
	return false;
}

/* Whether @pid, @what, comes to sleep in @func: if not, where it is */
static bool waits_in(struct __test_metadata *_metadata, pid_t pid, const char *func,
		     const char *what)
{
	char buf[64];

	if (wait_in(pid, func, BLOCK_WAIT_MS))
		return true;
	TH_LOG("%s does not wait in %s (wchan %s)", what, func,
	       wchan_of(pid, buf, sizeof(buf)));
	log_stack(_metadata, pid);
	return false;
}

/* Whether @pid has not ended (it is not reaped) */
static bool alive(pid_t pid)
{
	siginfo_t si = { 0 };

	if (waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT))
		return false;
	return si.si_pid == 0;
}

/* Reap @pid within @ms: its exit status, -1 if it does not end */
static int reap(pid_t *pid, int ms)
{
	long long end = now_ms() + ms;
	int status;
	pid_t r;

	if (*pid <= 0)
		return -1;
	do {
		r = waitpid(*pid, &status, WNOHANG);
		if (r == *pid) {
			*pid = 0;
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		}
		if (r < 0)
			return -1;
		usleep(10000);
	} while (now_ms() < end);
	return -1;
}

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	n = n < 0 ? -errno : 0;
	close(fd);
	return n;
}

/* The first line of @path into @buf ("" if none): 0, or -errno */
static int first_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");

	if (!f)
		return -errno;
	if (!fgets(buf, size, f))
		buf[0] = '\0';
	fclose(f);
	return 0;
}

FIXTURE(starved) {
	struct tracefs_instance	*inst;
	int			fd;
	int			mod_fd;
	bool			loaded;
	bool			cgroup_mounted;
	bool			cpuset_enabled;
	bool			cgroup_made;
	pid_t			writer, mapper, mover;
	char			thresh[32];	/* cpu_intensive_thresh_us before */
	char			skip[96];	/* why the test cannot run */
};

FIXTURE_SETUP(starved)
{
	char buf[256] = "";

	/* SKIP() here does not keep the test from running on 6.1: say why */
	self->fd = -1;
	self->mod_fd = open(MODULE_PATH, O_RDONLY | O_CLOEXEC);
	if (self->mod_fd < 0) {
		snprintf(self->skip, sizeof(self->skip),
			 "no %s (a kernel without loadable modules)", MODULE_PATH);
		return;
	}
	if (sysconf(_SC_NPROCESSORS_ONLN) <= STARVED_CPU) {
		snprintf(self->skip, sizeof(self->skip), "CPU %d is not online", STARVED_CPU);
		return;
	}
	/* Without NUMA, cpuset_attach() does not take mmap_lock */
	if (access("/sys/devices/system/node/node0", F_OK)) {
		snprintf(self->skip, sizeof(self->skip),
			 "no NUMA (CONFIG_NUMA): a cgroup move takes no mmap_lock");
		return;
	}

	if (access(CGROUP_ROOT "/cgroup.controllers", F_OK)) {
		ASSERT_EQ(0, mount("none", CGROUP_ROOT, "cgroup2", 0, NULL));
		self->cgroup_mounted = true;
	}
	ASSERT_EQ(0, first_line(CGROUP_ROOT "/cgroup.controllers", buf, sizeof(buf)));
	if (!strstr(buf, "cpuset")) {
		snprintf(self->skip, sizeof(self->skip),
			 "no cpuset controller in cgroup v2 (CONFIG_CPUSETS)");
		return;
	}
	ASSERT_EQ(0, first_line(CGROUP_ROOT "/cgroup.subtree_control", buf, sizeof(buf)));
	if (!strstr(buf, "cpuset")) {
		ASSERT_EQ(0, write_file(CGROUP_ROOT "/cgroup.subtree_control", "+cpuset"));
		self->cpuset_enabled = true;
	}
	ASSERT_EQ(0, mkdir(CGROUP, 0755));
	self->cgroup_made = true;
	/*
	 * Other CPUs than the root's: cpuset_attach() of 6.6 and later
	 * rebinds the memory policy only when the cpuset changes something.
	 */
	ASSERT_EQ(0, write_file(CGROUP "/cpuset.cpus", "0"));

	self->inst = tracefs_instance_create(INSTANCE);
	ASSERT_NE(NULL, self->inst);
	ASSERT_LT(0, tracefs_instance_file_write(self->inst, "buffer_size_kb", SMALL_KB));
	/* Opened now: the open takes trace_types_lock, which the resize holds */
	self->fd = tracefs_instance_file_open(self->inst, "per_cpu/cpu0/trace_pipe_raw",
					      O_RDONLY | O_NONBLOCK);
	ASSERT_LE(0, self->fd);

	/*
	 * 6.5 and later mark a work item that runs for longer than this
	 * without sleeping CPU-intensive, and the pool no longer waits for
	 * it: not while the spinner keeps the pool busy.
	 */
	if (!first_line(WQ_THRESH, self->thresh, sizeof(self->thresh)) && self->thresh[0])
		ASSERT_EQ(0, write_file(WQ_THRESH, "600000000"));
}

FIXTURE_TEARDOWN(starved)
{
	/* Frees the pool whatever happened; then everything can end */
	if (self->loaded && syscall(SYS_delete_module, "wq_starve", O_NONBLOCK))
		TH_LOG("cannot unload wq_starve: %s", strerror(errno));
	if (reap(&self->writer, 30000) < 0 && self->writer)
		TH_LOG("the resize (pid %d) did not end", self->writer);
	if (reap(&self->mapper, 30000) < 0 && self->mapper)
		TH_LOG("the mapper (pid %d) did not end", self->mapper);
	if (reap(&self->mover, 30000) < 0 && self->mover)
		TH_LOG("the cgroup move (pid %d) did not end", self->mover);
	if (self->fd >= 0)
		close(self->fd);
	if (self->mod_fd >= 0)
		close(self->mod_fd);
	if (self->inst) {
		tracefs_instance_destroy(self->inst);
		tracefs_instance_free(self->inst);
	}
	if (self->cgroup_made && rmdir(CGROUP))
		TH_LOG("cannot remove %s: %s", CGROUP, strerror(errno));
	if (self->cpuset_enabled)
		write_file(CGROUP_ROOT "/cgroup.subtree_control", "-cpuset");
	if (self->cgroup_mounted)
		umount(CGROUP_ROOT);
	if (self->thresh[0] && write_file(WQ_THRESH, self->thresh))
		TH_LOG("cannot put back %s", WQ_THRESH);
}

/* The resize, on WRITER_CPU: exits with 0 or the errno of the write */
static void resize(void)
{
	char path[128];
	cpu_set_t set;
	int ret;

	CPU_ZERO(&set);
	CPU_SET(WRITER_CPU, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		_exit(errno);
	snprintf(path, sizeof(path), "/sys/kernel/tracing/instances/%s/buffer_size_kb",
		 INSTANCE);
	ret = write_file(path, BIG_KB);
	_exit(-ret);
}

/* The mapper: exits with 0 or the errno of the mmap() */
static void map(int fd)
{
	long page_size = sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, page_size, PROT_READ, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		_exit(errno);
	munmap(p, page_size);
	_exit(0);
}

/* The move of @pid into CGROUP: exits with 0 or the errno of the write */
static void move(pid_t pid)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%d", pid);
	_exit(-write_file(CGROUP "/cgroup.procs", buf));
}

TEST_F_TIMEOUT(starved, resize_while_kthreadd_waits, 240)
{
	char params[64];
	int started, rw, rm, rc;
	long long t0, kb;

	if (self->skip[0])
		SKIP(return, "%s", self->skip);

	snprintf(params, sizeof(params), "cpu=%d nr=%d", STARVED_CPU, SLEEPERS);
	ASSERT_EQ(0, syscall(SYS_finit_module, self->mod_fd, params, 0)) {
		TH_LOG("loading wq_starve: %s (see the kernel log)", strerror(errno));
	}
	self->loaded = true;
	started = kmod_param("wq_starve", "started");
	ASSERT_EQ(SLEEPERS + 1, started);

	self->writer = fork();
	ASSERT_LE(0, self->writer);
	if (!self->writer)
		resize();
	/* For its update on STARVED_CPU */
	ASSERT_TRUE(waits_in(_metadata, self->writer, "ring_buffer_resize", "the resize"));

	self->mapper = fork();
	ASSERT_LE(0, self->mapper);
	if (!self->mapper)
		map(self->fd);
	/* For buffer->mutex */
	ASSERT_TRUE(waits_in(_metadata, self->mapper, "ring_buffer_map", "the mapper"));

	self->mover = fork();
	ASSERT_LE(0, self->mover);
	if (!self->mover)
		move(self->mapper);
	/* For the mapper's mmap_lock, cgroup_threadgroup_rwsem held */
	ASSERT_TRUE(waits_in(_metadata, self->mover, "mpol_rebind_mm", "the cgroup move"));
	/* Until the move ends, a fork() waits: none here from now on */
	usleep(100000);
	ASSERT_TRUE(alive(self->writer) && alive(self->mapper) && alive(self->mover));
	TH_LOG("the resize, the mapper and the cgroup move wait");

	/* The spinner sleeps: the pool's last idle kworker must fork */
	ASSERT_EQ(0, write_file(MODULE_PARAMS "stop_spin", "Y"));
	t0 = now_ms();
	rw = reap(&self->writer, RESIZE_WAIT_MS);
	if (rw >= 0)
		TH_LOG("the resize ended %lld ms after the spinner slept", now_ms() - t0);
	EXPECT_EQ(0, rw) {
		TH_LOG("the resize %s", rw < 0 ? "did not end: deadlock" : strerror(rw));
	}
	rm = reap(&self->mapper, 10000);
	EXPECT_EQ(0, rm) {
		TH_LOG("the mapper %s", rm < 0 ? "did not end" : strerror(rm));
	}
	rc = reap(&self->mover, 10000);
	EXPECT_EQ(0, rc) {
		TH_LOG("the cgroup move %s", rc < 0 ? "did not end" : strerror(rc));
	}
	if (rw == 0) {
		ASSERT_EQ(0, tracefs_instance_file_read_number(self->inst, "buffer_size_kb",
							       &kb));
		/* Whole sub-buffers */
		EXPECT_LE(atoll(BIG_KB), kb);
		EXPECT_GT(atoll(BIG_KB) + 16, kb);
	}
}

TEST_HARNESS_MAIN
