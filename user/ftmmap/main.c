// SPDX-License-Identifier: GPL-2.0
/*
 * ftmmap - stream, record and watch ftrace events through the ring-buffer
 * mapping (per_cpu/cpuN/trace_pipe_raw, TRACE_MMAP_IOCTL_GET_READER)
 *
 *   ftmmap stream [OPTIONS] [-- COMMAND...]
 *   ftmmap record -o FILE [OPTIONS] [-- COMMAND...]
 *   ftmmap stats [-i INSTANCE] [-d SECONDS] [--read]
 *
 * Exit status: 0, 1 on a failure at run time (writing the events out
 * included), 2 on bad usage or an environment it cannot work in (no
 * tracefs, not root, unknown event or instance; then nothing in tracefs
 * was changed); when COMMAND ended by itself with a status that is not 0,
 * that status (128 + N when signal N killed it), as a shell gives it, the
 * capture being complete. SIGINT, SIGTERM, SIGHUP, SIGQUIT and a closed
 * stdout end a capture cleanly, with status 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event-parse.h>
#include <tracefs.h>

#include "ftmmap.h"
#include "print.h"
#include "tracedat.h"

#define EXIT_USAGE	2

/* The longest a read event waits for the next round of reads (stream, -p) */
#define FLUSH_WAIT_MS	100

#define __printf(a, b)	__attribute__((format(printf, a, b)))
#define __noreturn	__attribute__((noreturn))

/* The events traced when no -e is given */
static const char * const default_events[] = {
	"ftrace:print", "sched:sched_switch", "sched:sched_wakeup",
};

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

struct event {
	char		*system;
	char		*name;
	int		old_enable;	/* '0', '1', or 0: nothing to enable */
};

struct options {
	const char	*cmd;
	const char	*instance;	/* -i: an existing instance */
	const char	*new_instance;	/* -B: one to create and remove */
	const char	*output;
	const char	*cpus;
	long		subbuf_kb;	/* 0: unchanged */
	long		buffer_kb;	/* 0: unchanged */
	long		duration;	/* stats: seconds, 0: until a signal */
	bool		force_read;
	bool		print;		/* record: print the events too */
	char		**command;
	const char	**event_args;
	int		nr_event_args;
};

/* What a capture set up, and what it must put back */
struct session {
	struct options	*opt;
	struct tracefs_instance *instance;	/* NULL: top level */
	bool		created;
	char		*dir;			/* tracefs directory of the trace array */
	int		nr_cpus;		/* CPUs of the system, 0 to nr_cpus - 1 */
	bool		*cpu_on;
	struct event	*events;
	int		nr_events;
	char		*old_tracing_on;
	char		*old_buffer_kb;
	char		*old_subbuf_kb;
	struct ftm_buf	**bufs;
	struct tracedat	*dat;
	struct tep_handle *tep;
	pid_t		child;
};

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t child_exited;

static void on_signal(int sig)
{
	if (sig == SIGCHLD)
		child_exited = 1;
	else
		stop_requested = 1;
}

static void __printf(1, 2) __noreturn usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("ftmmap: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see 'ftmmap --help')\n", stderr);
	exit(EXIT_USAGE);
}

/* Something of the system, not of the command line: exit 2 too, no hint */
#define env_error(...)	error(EXIT_USAGE, __VA_ARGS__)

static void __printf(2, 3) error(int status, const char *fmt, ...)
{
	va_list ap;

	fputs("ftmmap: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (status)
		exit(status);
}

static void usage(FILE *f)
{
	fputs("usage: ftmmap stream [-i INSTANCE | -B NEW_INSTANCE] [-e SYSTEM[:EVENT]]...\n"
	      "                     [-C CPUS] [-b SUBBUF_KB] [-m BUFFER_KB] [--read]\n"
	      "                     [-- COMMAND...]\n"
	      "       ftmmap record -o FILE [same options] [-p]\n"
	      "       ftmmap stats [-i INSTANCE] [-d SECONDS] [--read]\n"
	      "\n"
	      "stream  print the events, in time order across CPUs, as 'trace-cmd report' does\n"
	      "record  write them to FILE, a trace.dat file (trace-cmd format version 6)\n"
	      "stats   show the meta-page of every CPU buffer and the event rate, every second\n"
	      "\n"
	      "  -i INSTANCE    trace the instance INSTANCE (it must exist), not the top level\n"
	      "  -B INSTANCE    create the instance INSTANCE for the capture, remove it after\n"
	      "  -e SYS[:EVENT] trace this event, or every event of SYS (repeatable; default:\n"
	      "                 ftrace:print, sched:sched_switch, sched:sched_wakeup)\n"
	      "  -C CPUS        only these CPUs, e.g. 0,2-3 (default: all)\n"
	      "  -b SUBBUF_KB   sub-buffer size in KB: a power of two, a page to 512 pages\n"
	      "  -m BUFFER_KB   ring-buffer size of each CPU in KB\n"
	      "  -o FILE        record: the trace.dat file to write\n"
	      "  -p             record: also print the events, as stream does\n"
	      "  -d SECONDS     stats: stop after SECONDS (default: at Ctrl-C)\n"
	      "  --read         read() trace_pipe_raw instead of mapping it\n"
	      "  -- COMMAND     trace while COMMAND runs (default: until Ctrl-C)\n"
	      "\n"
	      "Settings changed for the capture (events, sizes, tracing_on, a new instance)\n"
	      "are put back at the end. Per-CPU totals go to stderr. Exit status: 0; 1 on a\n"
	      "failure; 2 on bad usage; COMMAND's own when it failed (128 + N: signal N).\n", f);
}

static long parse_number(const char *opt, const char *arg, long min, long max)
{
	char *end;
	long val;

	errno = 0;
	val = strtol(arg, &end, 10);
	if (errno || end == arg || *end || val < min || val > max)
		usage_error("invalid %s '%s': a number from %ld to %ld", opt, arg, min, max);
	return val;
}

static void parse_options(int argc, char **argv, struct options *opt)
{
	static const struct option longopts[] = {
		{ "read", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	long page_kb = sysconf(_SC_PAGESIZE) / 1024;
	bool capture;
	int c;

	if (argc < 2)
		usage_error("no subcommand");
	opt->cmd = argv[1];
	if (!strcmp(opt->cmd, "-h") || !strcmp(opt->cmd, "--help")) {
		usage(stdout);
		exit(0);
	}
	capture = !strcmp(opt->cmd, "stream") || !strcmp(opt->cmd, "record");
	if (!capture && strcmp(opt->cmd, "stats"))
		usage_error("unknown subcommand '%s'", opt->cmd);

	opt->event_args = calloc(argc, sizeof(*opt->event_args));
	if (!opt->event_args)
		error(1, "out of memory");

	opterr = 0;
	optind = 2;
	while ((c = getopt_long(argc, argv, "+:i:B:e:C:b:m:o:d:ph", longopts, NULL)) != -1) {
		if (!capture && strchr("BeCbmop", c))
			usage_error("option -%c is not for %s", c, opt->cmd);
		if (capture && c == 'd')
			usage_error("option -d is only for stats");
		switch (c) {
		case 'i':
			opt->instance = optarg;
			break;
		case 'B':
			opt->new_instance = optarg;
			break;
		case 'e':
			opt->event_args[opt->nr_event_args++] = optarg;
			break;
		case 'C':
			opt->cpus = optarg;
			break;
		case 'b':
			opt->subbuf_kb = parse_number("sub-buffer size", optarg, 1, LONG_MAX);
			/* One page to 2^7 pages (RING_BUFFER_MAX_SUBBUF_ORDER, 4K pages) */
			if (opt->subbuf_kb & (opt->subbuf_kb - 1) || opt->subbuf_kb < page_kb ||
			    opt->subbuf_kb > 512)
				usage_error("invalid sub-buffer size '%s': a power of two from %ld to 512 KB",
					    optarg, page_kb);
			break;
		case 'm':
			opt->buffer_kb = parse_number("buffer size", optarg, 1, 1L << 30);
			break;
		case 'o':
			opt->output = optarg;
			break;
		case 'p':
			if (strcmp(opt->cmd, "record"))
				usage_error("option -p is only for record");
			opt->print = true;
			break;
		case 'd':
			opt->duration = parse_number("duration", optarg, 1, 1L << 30);
			break;
		case 'r':
			opt->force_read = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case ':':
			usage_error("option %s needs an argument", argv[optind - 1]);
		default:
			if (optopt)
				usage_error("unknown option -%c", optopt);
			usage_error("unknown option %s", argv[optind - 1]);
		}
	}

	if (optind < argc) {
		if (!capture)
			usage_error("unexpected argument '%s'", argv[optind]);
		if (strcmp(argv[optind - 1], "--"))
			usage_error("unexpected argument '%s' (a command goes after --)",
				    argv[optind]);
		opt->command = &argv[optind];
	}
	if (opt->instance && opt->new_instance)
		usage_error("-i and -B exclude each other");
	if (!strcmp(opt->cmd, "record") && !opt->output)
		usage_error("record needs -o FILE");
	if (strcmp(opt->cmd, "record") && opt->output)
		usage_error("option -o is only for record");
}

/*
 * A CPU that is offline has no buffer in an instance made while it was
 * (poll() says EPOLLERR, read() ENODEV), and writes nothing in the top
 * level's: it is not traced. cpu0 often has no "online" file: it is online.
 */
static bool cpu_online(long cpu)
{
	char path[64], val = '1';
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%ld/online", cpu);
	f = fopen(path, "re");
	if (!f)
		return true;
	if (fread(&val, 1, 1, f) != 1)
		val = '1';
	fclose(f);
	return val != '0';
}

static void parse_cpus(struct session *s)
{
	const char *p = s->opt->cpus;
	long first, last, cpu;
	char *end;

	if (!p) {
		for (cpu = 0; cpu < s->nr_cpus; cpu++) {
			s->cpu_on[cpu] = cpu_online(cpu);
			if (!s->cpu_on[cpu])
				error(0, "CPU %ld is offline: not traced", cpu);
		}
		return;
	}
	if (!*p)
		usage_error("empty CPU list");
	while (*p) {
		errno = 0;
		first = strtol(p, &end, 10);
		last = first;
		if (end != p && *end == '-') {
			p = end + 1;
			last = strtol(p, &end, 10);
		}
		if (errno || end == p || (*end && *end != ',') || first < 0 || last < first)
			usage_error("invalid CPU list '%s'", s->opt->cpus);
		if (last >= s->nr_cpus)
			usage_error("no CPU %ld (CPUs: 0 to %d)", last, s->nr_cpus - 1);
		for (cpu = first; cpu <= last; cpu++) {
			if (!cpu_online(cpu))
				env_error("CPU %ld is offline", cpu);
			s->cpu_on[cpu] = true;
		}
		p = *end ? end + 1 : end;
	}
}

/* The CPUs that have a buffer in tracefs: per_cpu/cpu0 ... */
static int count_cpus(const char *dir)
{
	char path[PATH_MAX];
	struct stat st;
	int n = 0;

	for (;;) {
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%d", dir, n);
		if (stat(path, &st))
			return n;
		n++;
	}
}

static void add_event(struct session *s, const char *system, const char *name)
{
	struct event *ev;
	int i;

	for (i = 0; i < s->nr_events; i++)
		if (!strcmp(s->events[i].system, system) && !strcmp(s->events[i].name, name))
			return;
	ev = realloc(s->events, (s->nr_events + 1) * sizeof(*ev));
	if (!ev)
		error(1, "out of memory");
	s->events = ev;
	ev = &s->events[s->nr_events++];
	ev->system = strdup(system);
	ev->name = strdup(name);
	ev->old_enable = 0;
	if (!ev->system || !ev->name)
		error(1, "out of memory");
}

/* -e SYSTEM[:EVENT] (or SYSTEM/EVENT): check it exists, add its events */
static void resolve_event(struct session *s, const char *arg)
{
	char *system, *name, **list;
	int i;

	system = strdup(arg);
	if (!system)
		error(1, "out of memory");
	name = strpbrk(system, ":/");
	if (name)
		*name++ = '\0';
	if (!*system || (name && (!*name || strpbrk(name, ":/"))))
		usage_error("invalid event '%s': SYSTEM or SYSTEM:EVENT", arg);

	if (name) {
		if (!tracefs_event_file_exists(s->instance, system, name, "format"))
			env_error("unknown event '%s'", arg);
		add_event(s, system, name);
	} else {
		list = tracefs_system_events(NULL, system);
		if (!list || !tracefs_list_size(list))
			env_error("unknown event system '%s'", arg);
		for (i = 0; list[i]; i++)
			add_event(s, system, list[i]);
		tracefs_list_free(list);
	}
	free(system);
}

/* Everything that can be checked before changing anything in tracefs */
static void validate(struct session *s)
{
	struct options *opt = s->opt;
	const char *mount;
	size_t i;
	int c;

	if (geteuid())
		env_error("must be run as root (tracefs needs it)");
	if (tracefs_tracing_dir_is_mounted(false, &mount) != 1 || !tracefs_tracing_dir())
		env_error("tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing)");

	if (opt->instance) {
		if (!tracefs_instance_exists(opt->instance))
			env_error("no instance '%s' (-B creates one)", opt->instance);
		s->instance = tracefs_instance_alloc(NULL, opt->instance);
		if (!s->instance)
			error(1, "cannot open instance '%s': %s", opt->instance, strerror(errno));
	} else if (opt->new_instance) {
		if (!*opt->new_instance || strchr(opt->new_instance, '/') ||
		    !strcmp(opt->new_instance, ".") || !strcmp(opt->new_instance, ".."))
			usage_error("invalid instance name '%s'", opt->new_instance);
		if (tracefs_instance_exists(opt->new_instance))
			env_error("instance '%s' exists already (-i uses it)", opt->new_instance);
	}

	s->dir = tracefs_instance_get_dir(s->instance);
	if (!s->dir)
		error(1, "no tracefs directory: %s", strerror(errno));
	s->nr_cpus = count_cpus(s->dir);
	if (!s->nr_cpus)
		env_error("no per_cpu buffers in %s", s->dir);
	s->cpu_on = calloc(s->nr_cpus, sizeof(*s->cpu_on));
	if (!s->cpu_on)
		error(1, "out of memory");
	if (!strcmp(opt->cmd, "stats"))
		return;
	parse_cpus(s);

	if (opt->output) {
		char *copy = strdup(opt->output);

		if (!copy)
			error(1, "out of memory");
		if (access(dirname(copy), W_OK))
			env_error("cannot write %s: %s", opt->output, strerror(errno));
		free(copy);
	}

	if (opt->subbuf_kb && !tracefs_file_exists(NULL, "buffer_subbuf_size_kb") &&
	    opt->subbuf_kb != sysconf(_SC_PAGESIZE) / 1024)
		env_error("this kernel has no buffer_subbuf_size_kb: -b must be the page size");

	if (opt->nr_event_args) {
		for (c = 0; c < opt->nr_event_args; c++)
			resolve_event(s, opt->event_args[c]);
	} else {
		for (i = 0; i < ARRAY_SIZE(default_events); i++)
			resolve_event(s, default_events[i]);
	}
}

/* Read a tracefs file of the trace array, without its trailing newline */
static char *read_setting(struct session *s, const char *file)
{
	char *val, *nl;

	val = tracefs_instance_file_read(s->instance, file, NULL);
	if (!val)
		error(1, "cannot read %s: %s", file, strerror(errno));
	nl = strchr(val, '\n');
	if (nl)
		*nl = '\0';
	return val;
}

static int write_setting(struct session *s, const char *file, const char *val)
{
	if (tracefs_instance_file_write(s->instance, file, val) < 0) {
		error(0, "cannot write '%s' to %s: %s", val, file, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Put back what setup() changed; safe on a half-done setup. The buffers
 * are unmapped first: a mapped buffer cannot be resized and its instance
 * cannot be removed.
 */
static int restore(struct session *s)
{
	char val[2] = "0";
	int cpu, i, ret = 0;

	for (cpu = 0; s->bufs && cpu < s->nr_cpus; cpu++) {
		ftm_buf_close(s->bufs[cpu]);
		s->bufs[cpu] = NULL;
	}
	if (s->created) {
		if (tracefs_instance_destroy(s->instance)) {
			error(0, "cannot remove instance '%s': %s",
			      s->opt->new_instance, strerror(errno));
			ret = -1;
		}
		s->created = false;
		return ret;
	}

	for (i = 0; i < s->nr_events; i++) {
		struct event *ev = &s->events[i];

		if (!ev->old_enable)
			continue;
		val[0] = ev->old_enable;
		if (tracefs_event_file_write(s->instance, ev->system, ev->name, "enable",
					     val) < 0) {
			error(0, "cannot put back %s:%s/enable: %s", ev->system, ev->name,
			      strerror(errno));
			ret = -1;
		}
		ev->old_enable = 0;
	}
	if (s->old_subbuf_kb) {
		ret |= write_setting(s, "buffer_subbuf_size_kb", s->old_subbuf_kb);
		free(s->old_subbuf_kb);
		s->old_subbuf_kb = NULL;
	}
	if (s->old_buffer_kb) {
		ret |= write_setting(s, "buffer_size_kb", s->old_buffer_kb);
		free(s->old_buffer_kb);
		s->old_buffer_kb = NULL;
	}
	if (s->old_tracing_on) {
		ret |= write_setting(s, "tracing_on", s->old_tracing_on);
		free(s->old_tracing_on);
		s->old_tracing_on = NULL;
	}
	return ret;
}

static void stop_child(struct session *s);

static void __printf(2, 3) __noreturn fail_restore(struct session *s, const char *fmt, ...)
{
	va_list ap;

	fputs("ftmmap: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (s->child > 0)
		stop_child(s);
	s->child = 0;
	if (s->dat)
		tracedat_abort(s->dat);
	s->dat = NULL;
	restore(s);
	exit(1);
}

/* Tracing off, sizes and events set, buffers cleared and opened */
static void setup(struct session *s)
{
	struct options *opt = s->opt;
	const char *why = NULL;
	char num[32], *p;
	int cpu, i;

	if (opt->new_instance) {
		s->instance = tracefs_instance_create(opt->new_instance);
		if (!s->instance)
			error(1, "cannot create instance '%s': %s", opt->new_instance,
			      strerror(errno));
		s->created = true;
		free(s->dir);
		s->dir = tracefs_instance_get_dir(s->instance);
		if (!s->dir)
			fail_restore(s, "no directory for instance '%s'", opt->new_instance);
	}

	s->old_tracing_on = read_setting(s, "tracing_on");
	if (write_setting(s, "tracing_on", "0"))
		fail_restore(s, "cannot stop tracing");

	if (opt->subbuf_kb && tracefs_file_exists(s->instance, "buffer_subbuf_size_kb")) {
		s->old_subbuf_kb = read_setting(s, "buffer_subbuf_size_kb");
		snprintf(num, sizeof(num), "%ld", opt->subbuf_kb);
		if (write_setting(s, "buffer_subbuf_size_kb", num))
			fail_restore(s, "cannot set the sub-buffer size");
	}
	if (opt->buffer_kb) {
		/* "7 (expanded: 1408)": the size it gets is what to put back */
		s->old_buffer_kb = read_setting(s, "buffer_size_kb");
		p = strstr(s->old_buffer_kb, "expanded: ");
		if (p)
			memmove(s->old_buffer_kb, p + strlen("expanded: "),
				strcspn(p + strlen("expanded: "), ")") + 1);
		p = strchr(s->old_buffer_kb, ')');
		if (p)
			*p = '\0';
		snprintf(num, sizeof(num), "%ld", opt->buffer_kb);
		if (write_setting(s, "buffer_size_kb", num))
			fail_restore(s, "cannot set the buffer size");
	} else {
		/*
		 * "7 (expanded: 1408)": the top level buffer is kept small
		 * until tracing is first used, and a mapped buffer keeps its
		 * size. Give it the size it would get now; there is no way
		 * back to the small one, nor a need to restore it.
		 */
		char *kb = read_setting(s, "buffer_size_kb");

		p = strstr(kb, "expanded: ");
		if (p) {
			snprintf(num, sizeof(num), "%ld",
				 strtol(p + strlen("expanded: "), NULL, 10));
			if (write_setting(s, "buffer_size_kb", num))
				fail_restore(s, "cannot set the buffer size");
		}
		free(kb);
	}

	for (i = 0; i < s->nr_events; i++) {
		struct event *ev = &s->events[i];
		char *old;

		if (!tracefs_event_file_exists(s->instance, ev->system, ev->name, "enable"))
			continue;	/* ftrace events: always on */
		old = tracefs_event_file_read(s->instance, ev->system, ev->name, "enable", NULL);
		if (!old)
			fail_restore(s, "cannot read %s:%s/enable: %s", ev->system, ev->name,
				     strerror(errno));
		ev->old_enable = old[0] == '1' ? '1' : '0';
		free(old);
		if (tracefs_event_file_write(s->instance, ev->system, ev->name, "enable", "1") < 0)
			fail_restore(s, "cannot enable %s:%s: %s", ev->system, ev->name,
				     strerror(errno));
	}

	if (tracefs_instance_file_clear(s->instance, "trace"))
		fail_restore(s, "cannot clear the buffer: %s", strerror(errno));

	s->bufs = calloc(s->nr_cpus, sizeof(*s->bufs));
	if (!s->bufs)
		fail_restore(s, "out of memory");
	for (cpu = 0; cpu < s->nr_cpus; cpu++) {
		if (!s->cpu_on[cpu])
			continue;
		s->bufs[cpu] = ftm_buf_open(s->dir, cpu,
					    FTM_NONBLOCK | (opt->force_read ? FTM_READ : 0));
		if (!s->bufs[cpu])
			fail_restore(s, "cannot open the buffer of CPU %d: %s", cpu,
				     strerror(errno));
		if (!why && !ftm_buf_mapped(s->bufs[cpu]))
			why = opt->force_read ? "--read" : strerror(ftm_map_errno(s->bufs[cpu]));
	}
	if (why)
		error(0, "not mapping the ring-buffer (%s): reading trace_pipe_raw instead", why);
}

static pid_t start_command(char **argv, const sigset_t *mask)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid)
		return pid;
	/* The tool ignores SIGPIPE (| head ends a capture): COMMAND must not */
	signal(SIGPIPE, SIG_DFL);
	sigprocmask(SIG_SETMASK, mask, NULL);
	execvp(argv[0], argv);
	error(0, "cannot run '%s': %s", argv[0], strerror(errno));
	_exit(127);
}

/* How long COMMAND has to stop on SIGTERM before it gets SIGKILL */
#define STOP_WAIT_MS	2000

/*
 * End COMMAND when the capture ends before it does (Ctrl-C, an error):
 * SIGTERM, and SIGKILL if it is still there STOP_WAIT_MS later (it may
 * ignore SIGTERM), so that the tool always gets to put tracefs back.
 */
static void stop_child(struct session *s)
{
	const struct timespec tick = { 0, 10 * 1000000L };
	int i, status;

	kill(s->child, SIGTERM);
	for (i = 0; i < STOP_WAIT_MS / 10; i++) {
		if (waitpid(s->child, &status, WNOHANG) != 0)
			return;
		nanosleep(&tick, NULL);
	}
	error(0, "'%s' did not stop on SIGTERM in %d s: killed", s->opt->command[0],
	      STOP_WAIT_MS / 1000);
	kill(s->child, SIGKILL);
	waitpid(s->child, &status, 0);
}

/*
 * The exit status of the tool when COMMAND ended by itself: as a shell
 * gives it (its own, 128 + the signal that killed it), with a line on
 * stderr when it is not 0. The capture is complete either way.
 */
static int command_status(int status)
{
	if (WIFSIGNALED(status)) {
		error(0, "the command was killed by signal %d (%s)", WTERMSIG(status),
		      strsignal(WTERMSIG(status)));
		return 128 + WTERMSIG(status);
	}
	if (WIFEXITED(status) && WEXITSTATUS(status)) {
		error(0, "the command exited with status %d", WEXITSTATUS(status));
		return WEXITSTATUS(status);
	}
	return 0;
}

static void print_totals(struct session *s)
{
	uint64_t events = 0, lost = 0, subbufs = 0;
	const struct ftm_totals *t;
	int cpu;

	for (cpu = 0; cpu < s->nr_cpus; cpu++) {
		if (!s->bufs[cpu])
			continue;
		t = ftm_buf_totals(s->bufs[cpu]);
		if (t->resets)
			error(0, "CPU %d: the buffer was reset during the capture (%llu times): kept what was read before, went on after",
			      cpu, (unsigned long long)t->resets);
		fprintf(stderr, "CPU %d: %llu events, %llu lost%s, %llu sub-buffers\n", cpu,
			(unsigned long long)t->events, (unsigned long long)t->lost,
			t->lost_unknown ? " (and more, of unknown number)" : "",
			(unsigned long long)t->subbufs);
		events += t->events;
		lost += t->lost;
		subbufs += t->subbufs;
	}
	fprintf(stderr, "total: %llu events, %llu lost, %llu sub-buffers\n",
		(unsigned long long)events, (unsigned long long)lost,
		(unsigned long long)subbufs);
}

/*
 * The ctx of ftm_buf_consume() is the printer or the trace.dat file; record
 * -p needs both, through this.
 */
struct both {
	struct printer	*pr;
	struct tracedat	*dat;
};

static int both_subbuf(int cpu, const void *subbuf, size_t size, void *ctx)
{
	struct both *b = ctx;

	return tracedat_add_subbuf(cpu, subbuf, size, b->dat);
}

static int both_event(const struct ftm_event *ev, void *ctx)
{
	struct both *b = ctx;

	return printer_queue(ev, b->pr);
}

/*
 * Take what the buffers hold: those poll() said are ready, or, with @all,
 * every one (the printer needs every CPU read in each round: see
 * printer_round()); @flush gives out the sub-buffers still being read, at
 * the end of a capture.
 */
static int consume_all(struct session *s, struct printer *pr, struct pollfd *pfd,
		       const int *pcpu, int nfds, bool all, bool flush)
{
	struct both both = { pr, s->dat };
	ftm_event_fn on_event = NULL;
	ftm_subbuf_fn on_subbuf = NULL;
	void *ctx = NULL;
	int i, ret;

	if (pr && s->dat) {
		on_event = both_event;
		on_subbuf = both_subbuf;
		ctx = &both;
	} else if (pr) {
		on_event = printer_queue;
		ctx = pr;
	} else {
		on_subbuf = tracedat_add_subbuf;
		ctx = s->dat;
	}

	for (i = 0; i < nfds; i++) {
		struct ftm_buf *b = s->bufs[pcpu[i]];

		if (!all && !(pfd[i].revents & (POLLIN | POLLERR | POLLHUP)))
			continue;
		do {
			ret = ftm_buf_consume(b, on_event, on_subbuf, ctx);
		} while (ret > 0);
		if (ret < 0)
			return -1;
		if (flush && s->dat && ftm_buf_flush(b, on_subbuf, ctx))
			return -1;
	}
	return 0;
}

/* The printer of stream and record -p: ftrace's formats and those of the events */
static struct printer *new_printer(struct session *s)
{
	const char **systems;
	struct printer *pr;
	int i, j, n = 0;

	systems = calloc(s->nr_events + 2, sizeof(*systems));
	if (!systems)
		return NULL;
	systems[n++] = "ftrace";
	for (i = 0; i < s->nr_events; i++) {
		for (j = 0; j < n && strcmp(systems[j], s->events[i].system); j++)
			;
		if (j == n)
			systems[n++] = s->events[i].system;
	}
	pr = printer_new(systems, s->nr_cpus, stdout);
	free(systems);
	return pr;
}

/* Write the headers of the trace.dat file, then the CPU data */
static int finish_record(struct session *s)
{
	struct tracedat_event *evs;
	int i, ret, err;

	evs = calloc(s->nr_events, sizeof(*evs));
	if (!evs)
		return -1;
	for (i = 0; i < s->nr_events; i++) {
		evs[i].system = s->events[i].system;
		evs[i].name = s->events[i].name;
	}
	ret = tracedat_finish(s->dat, evs, s->nr_events);
	err = errno;
	s->dat = NULL;
	free(evs);
	errno = err;
	return ret;
}

static int capture(struct options *opt)
{
	struct session s = { .opt = opt };
	struct printer *pr = NULL;
	struct pollfd *pfd;
	int *pcpu;
	sigset_t block, orig;
	struct sigaction sa = { .sa_handler = on_signal };
	const struct timespec flush_wait = { 0, FLUSH_WAIT_MS * 1000000L };
	bool print, exited = false;
	int cpu, nfds = 0, status, ret = 0, dat_err;
	size_t subbuf_size = 0;

	print = !strcmp(opt->cmd, "stream") || opt->print;
	validate(&s);

	/*
	 * Signals arrive only while waiting (ppoll), never in the middle.
	 * Every signal that would end the tool (a closed terminal, Ctrl-\\
	 * too) ends the capture instead, which puts tracefs back.
	 */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGQUIT);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, &orig);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	/* A closed stdout (| head) ends the capture like Ctrl-C, cleanly */
	signal(SIGPIPE, SIG_IGN);

	setup(&s);

	if (print) {
		pr = new_printer(&s);
		if (!pr)
			fail_restore(&s, "cannot read the event formats: %s", strerror(errno));
	}

	pfd = calloc(s.nr_cpus, sizeof(*pfd));
	pcpu = calloc(s.nr_cpus, sizeof(*pcpu));
	if (!pfd || !pcpu)
		fail_restore(&s, "out of memory");
	for (cpu = 0; cpu < s.nr_cpus; cpu++) {
		if (!s.bufs[cpu])
			continue;
		subbuf_size = ftm_buf_subbuf_size(s.bufs[cpu]);
		pfd[nfds].fd = ftm_buf_fd(s.bufs[cpu]);
		pfd[nfds].events = POLLIN;
		pcpu[nfds++] = cpu;
	}

	if (opt->output) {
		s.dat = tracedat_open(opt->output, s.instance, s.nr_cpus, subbuf_size);
		if (!s.dat)
			fail_restore(&s, "cannot write %s: %s", opt->output, strerror(errno));
	}

	if (write_setting(&s, "tracing_on", "1"))
		fail_restore(&s, "cannot start tracing");
	if (opt->command)
		s.child = start_command(opt->command, &orig);
	if (s.child < 0)
		fail_restore(&s, "cannot fork: %s", strerror(errno));

	while (!stop_requested && !exited) {
		if (child_exited) {
			child_exited = 0;
			exited = waitpid(s.child, &status, WNOHANG) == s.child;
			if (exited) {
				s.child = 0;
				break;
			}
		}
		/*
		 * Printed lines wait for a round of reads of every CPU (see
		 * printer_round()): while some wait, a round comes at least
		 * every FLUSH_WAIT_MS, even if no buffer fills up.
		 */
		if (ppoll(pfd, nfds, pr && printer_pending(pr) ? &flush_wait : NULL, &orig) < 0) {
			if (errno == EINTR)
				continue;
			fail_restore(&s, "poll: %s", strerror(errno));
		}
		if (consume_all(&s, pr, pfd, pcpu, nfds, pr != NULL, false))
			fail_restore(&s, "reading the buffers: %s", strerror(errno));
		/* The file cannot take more (a full disk): keep what it has */
		if (s.dat && tracedat_error(s.dat))
			stop_requested = 1;
		if (pr) {
			printer_round(pr);
			if (ferror(stdout))
				stop_requested = 1;
		}
	}

	/* Stop, and take what is left */
	write_setting(&s, "tracing_on", "0");
	if (consume_all(&s, pr, pfd, pcpu, nfds, true, true))
		fail_restore(&s, "reading the buffers: %s", strerror(errno));
	if (pr)
		printer_flush(pr);

	if (s.child > 0 && !exited)
		stop_child(&s);
	s.child = 0;

	print_totals(&s);
	if (s.dat) {
		dat_err = tracedat_error(s.dat);
		ret = finish_record(&s);
		if (ret < 0)
			fail_restore(&s, "cannot write %s: %s", opt->output, strerror(errno));
		if (ret > 0)
			dat_err = errno;
		ret = 0;
		if (dat_err) {
			error(0, "cannot write %s: %s: it holds what was recorded until then",
			      opt->output, strerror(dat_err));
			ret = 1;
		}
	}
	if (restore(&s))
		ret = 1;
	if (pr && printer_error(pr) && printer_error(pr) != EPIPE) {
		/* A closed pipe (| head) is a way to stop; a full disk is not */
		error(0, "cannot write the events to stdout: %s", strerror(printer_error(pr)));
		ret = 1;
	}
	printer_free(pr);
	if (ret)
		return 1;
	return exited ? command_status(status) : 0;
}

static int stats(struct options *opt)
{
	struct session s = { .opt = opt };
	struct ftm_counters *now, *prev;
	struct sigaction sa = { .sa_handler = on_signal };
	bool tty = isatty(STDOUT_FILENO), said = false;
	struct timespec next;
	long tick;
	int cpu, ret;

	validate(&s);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	now = calloc(s.nr_cpus, sizeof(*now));
	prev = calloc(s.nr_cpus, sizeof(*prev));
	if (!now || !prev)
		error(1, "out of memory");

	clock_gettime(CLOCK_MONOTONIC, &next);
	for (tick = 0; !stop_requested; tick++) {
		uint64_t rate_all = 0, entries_all = 0;

		for (cpu = 0; cpu < s.nr_cpus; cpu++) {
			ret = ftm_read_counters(s.dir, cpu, opt->force_read, &now[cpu]);
			if (ret < 0)
				error(1, "cannot read the counters of CPU %d: %s", cpu,
				      strerror(errno));
			if (ret > 0 && !said) {
				error(0, "not mapping the ring-buffer (%s): reading per_cpu/cpuN/stats instead",
				      opt->force_read ? "--read" : "this kernel cannot map it");
				said = true;
			}
		}

		if (tty)
			fputs("\033[H\033[2J", stdout);
		printf("ftmmap stats: %s, %d CPUs, %s, %lds\n",
		       opt->instance ? opt->instance : "top level", s.nr_cpus,
		       said ? "per_cpu/cpuN/stats" : "meta-pages", tick);
		printf("%4s %12s %12s %12s %10s %8s %11s %10s\n", "CPU", "entries", "overrun",
		       "read", "lost", "subbufs", "subbuf_size", "events/s");
		for (cpu = 0; cpu < s.nr_cpus; cpu++) {
			struct ftm_counters *c = &now[cpu];
			char rate[24] = "-";

			if (tick) {
				snprintf(rate, sizeof(rate), "%llu",
					 (unsigned long long)(c->entries - prev[cpu].entries));
				rate_all += c->entries - prev[cpu].entries;
			}
			entries_all += c->entries;
			printf("%4d %12llu %12llu %12llu %10llu %8u %11u %10s\n", cpu,
			       (unsigned long long)c->entries, (unsigned long long)c->overrun,
			       (unsigned long long)c->read, (unsigned long long)c->lost,
			       c->nr_subbufs, c->subbuf_size, rate);
		}
		if (tick)
			printf("%4s %12llu %60llu\n", "all", (unsigned long long)entries_all,
			       (unsigned long long)rate_all);
		else
			printf("%4s %12llu %60s\n", "all", (unsigned long long)entries_all, "-");
		if (!tty)
			putchar('\n');
		fflush(stdout);
		memcpy(prev, now, s.nr_cpus * sizeof(*now));

		if (opt->duration && tick >= opt->duration)
			break;
		next.tv_sec++;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR &&
		       !stop_requested)
			;
	}
	free(now);
	free(prev);
	return 0;
}

int main(int argc, char **argv)
{
	struct options opt = { };

	parse_options(argc, argv, &opt);
	if (!strcmp(opt.cmd, "stats"))
		return stats(&opt);
	return capture(&opt);
}
