// SPDX-License-Identifier: GPL-2.0
/*
 * ftmmap - stream, record and watch ftrace events through the ring-buffer
 * mapping (per_cpu/cpuN/trace_pipe_raw, TRACE_MMAP_IOCTL_GET_READER)
 *
 *   ftmmap stream [OPTIONS] [-- COMMAND...]
 *   ftmmap record -o FILE [OPTIONS] [-- COMMAND...]
 *   ftmmap stats [--instance NAME] [-d SECONDS] [--read | --map]
 *
 * The options of a capture are trace-cmd record's letters with their
 * meanings (-e -v -f -P -F -c -p -l -n -g -C -b -M -B -T -o); the tool's
 * own settings are long options (--subbuf-kb, --cpus, --instance,
 * --print, --read).
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
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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

/* How often record looks for events that someone else enabled */
#define OTHERS_WAIT_MS	100

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
	const char	*filter;	/* -f: its filter, NULL: none */
};

/* -e ARG [-f FILTER], in the order given; -v negates the -e after it */
struct event_arg {
	const char	*arg;
	const char	*filter;
	bool		negate;
};

/* A list of strings given by repeating an option (-P, -l, -n, -g) */
struct strlist {
	const char	**v;
	int		n;
};

struct options {
	const char	*cmd;
	const char	*instance;	/* --instance: an existing instance */
	const char	*new_instance;	/* -B: one to create and remove (or use) */
	const char	*output;
	const char	*cpus;		/* --cpus: a CPU list */
	const char	*cpumask;	/* -M: tracing_cpumask */
	const char	*tracer;	/* -p */
	const char	*clock;		/* -C */
	long		subbuf_kb;	/* --subbuf-kb, 0: unchanged */
	long		buffer_kb;	/* -b, 0: unchanged */
	long		duration;	/* stats: seconds, 0: until a signal */
	bool		force_read;
	bool		map_meta;	/* stats --map */
	bool		print;		/* record --print: print the events too */
	bool		follow;		/* -F: only COMMAND */
	bool		children;	/* -c: and its children */
	bool		stacktrace;	/* -T */
	char		**command;
	struct event_arg *eargs;
	int		nr_eargs;
	struct strlist	pids;		/* -P */
	struct strlist	funcs;		/* -l */
	struct strlist	notrace;	/* -n */
	struct strlist	graph;		/* -g */
};

/*
 * A tracefs file of the trace array changed for the capture, and how to
 * put it back: FILE_VALUE writes the old text back, FILE_LIST empties the
 * file (O_TRUNC) and writes the old entries back one by one (set_event,
 * set_ftrace_filter, set_event_pid...), FILE_CLOCK picks the clock in
 * brackets, FILE_FILTER writes "0" for "none".
 */
enum file_kind { FILE_VALUE, FILE_LIST, FILE_CLOCK, FILE_FILTER };

struct saved_file {
	char		*file;		/* relative to the trace array */
	char		*old;
	enum file_kind	kind;
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
	struct saved_file *saved;		/* put back last to first */
	int		nr_saved;
	char		*old_tracing_on;
	char		*old_buffer_kb;
	char		*old_subbuf_kb;
	struct ftm_buf	**bufs;
	struct tracedat	*dat;
	struct tep_handle *tep;
	pid_t		child;
	int		go_fd;			/* COMMAND waits for a byte on it */
	int		exit_status;		/* of fail_restore(), 0: 1 */
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
	fputs("usage: ftmmap stream [OPTIONS] [-- COMMAND...]\n"
	      "       ftmmap record -o FILE [OPTIONS] [--print] [-- COMMAND...]\n"
	      "       ftmmap stats [--instance NAME] [-d SECONDS] [--read | --map]\n"
	      "\n"
	      "stream  print the events, in time order across CPUs, as 'trace-cmd report' does\n"
	      "record  write them to FILE, a trace.dat file (trace-cmd format version 6)\n"
	      "stats   show the counters of every CPU buffer and the event rate, every second\n"
	      "\n"
	      "As in trace-cmd record:\n"
	      "  -e EVENT       trace SYSTEM, SYSTEM:EVENT or EVENT (globs; repeatable; default:\n"
	      "                 ftrace:print, sched:sched_switch, sched:sched_wakeup; none with -p)\n"
	      "  -v             the -e options after it remove events instead\n"
	      "  -f FILTER      the filter of the events of the -e before it\n"
	      "  -P PID         only events of PID (set_event_pid; with -p, set_ftrace_pid too)\n"
	      "  -F             only events of COMMAND\n"
	      "  -c             with -F or -P: their children too (options/event-fork, function-fork)\n"
	      "  -p TRACER      the tracer: function, function_graph, nop...\n"
	      "  -l FUNC        the tracer traces FUNC only (set_ftrace_filter; repeatable)\n"
	      "  -n FUNC        the tracer does not trace FUNC (set_ftrace_notrace; repeatable)\n"
	      "  -g FUNC        function_graph graphs FUNC (set_graph_function; repeatable)\n"
	      "  -C CLOCK       the trace clock (trace_clock)\n"
	      "  -b KB          the ring-buffer size of each CPU in KB (buffer_size_kb)\n"
	      "  -M CPUMASK     only the CPUs of CPUMASK, in hex (tracing_cpumask; -1: all)\n"
	      "  -B NAME        trace in the instance NAME, created for the capture and removed\n"
	      "                 after (an existing one is used and kept)\n"
	      "  -T             a stack trace with every event (options/stacktrace)\n"
	      "  -o FILE        record: the trace.dat file to write\n"
	      "Of ftmmap:\n"
	      "  --instance NAME  trace the existing instance NAME, not the top level\n"
	      "  --cpus LIST      only these CPUs, e.g. 0,2-3 (default: all)\n"
	      "  --subbuf-kb KB   sub-buffer size in KB: a power of two, a page to 512 pages\n"
	      "  --print          record: also print the events, as stream does\n"
	      "  --read           read() trace_pipe_raw instead of mapping it\n"
	      "  -d SECONDS       stats: stop after SECONDS (default: at Ctrl-C)\n"
	      "  --map            stats: map the meta-pages (a buffer cannot be resized while\n"
	      "                   it is mapped), not read per_cpu/cpuN/stats\n"
	      "  -- COMMAND       trace while COMMAND runs (default: until Ctrl-C)\n"
	      "\n"
	      "Settings changed for the capture (events, filters, pids, tracer, function\n"
	      "filters, options, clock, cpumask, sizes, tracing_on, a new instance) are put\n"
	      "back at the end; events, filters and a tracer that were on before and not\n"
	      "asked for are off during the capture. Per-CPU totals go to stderr. Exit\n"
	      "status: 0; 1 on a failure; 2 on bad usage; COMMAND's own when it failed\n"
	      "(128 + N: signal N).\n", f);
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

static void strlist_add(struct strlist *l, const char *s)
{
	const char **v = realloc(l->v, (l->n + 1) * sizeof(*v));

	if (!v)
		error(1, "out of memory");
	l->v = v;
	l->v[l->n++] = s;
}

/* Long options that have no letter */
enum { OPT_READ = 256, OPT_HELP, OPT_INSTANCE, OPT_CPUS, OPT_SUBBUF, OPT_PRINT, OPT_MAP };

static void parse_options(int argc, char **argv, struct options *opt)
{
	static const struct option longopts[] = {
		{ "read", no_argument, NULL, OPT_READ },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "instance", required_argument, NULL, OPT_INSTANCE },
		{ "cpus", required_argument, NULL, OPT_CPUS },
		{ "subbuf-kb", required_argument, NULL, OPT_SUBBUF },
		{ "print", no_argument, NULL, OPT_PRINT },
		{ "map", no_argument, NULL, OPT_MAP },
		{ }
	};
	/* The letters and long options of a capture only */
	static const char capture_only[] = "evfPFcplngCbMBTo";
	long page_kb = sysconf(_SC_PAGESIZE) / 1024;
	bool capture, negate = false;
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

	opt->eargs = calloc(argc, sizeof(*opt->eargs));
	if (!opt->eargs)
		error(1, "out of memory");

	opterr = 0;
	optind = 2;
	while ((c = getopt_long(argc, argv, "+:e:vf:P:Fcp:l:n:g:C:b:M:B:To:d:h", longopts,
				NULL)) != -1) {
		if (!capture && c < 256 && strchr(capture_only, c))
			usage_error("option -%c is not for %s", c, opt->cmd);
		if (!capture && (c == OPT_CPUS || c == OPT_SUBBUF || c == OPT_PRINT))
			usage_error("option %s is not for %s", argv[optind - 1], opt->cmd);
		if (capture && (c == 'd' || c == OPT_MAP))
			usage_error("option %s is only for stats", argv[optind - 1]);
		switch (c) {
		case OPT_INSTANCE:
			opt->instance = optarg;
			break;
		case 'B':
			opt->new_instance = optarg;
			break;
		case 'e':
			opt->eargs[opt->nr_eargs].arg = optarg;
			opt->eargs[opt->nr_eargs++].negate = negate;
			break;
		case 'v':
			negate = true;
			break;
		case 'f':
			if (!opt->nr_eargs)
				usage_error("-f FILTER goes after the -e EVENT it filters");
			if (opt->eargs[opt->nr_eargs - 1].negate)
				usage_error("-f FILTER after a negated -e (-v)");
			opt->eargs[opt->nr_eargs - 1].filter = optarg;
			break;
		case 'P':
			parse_number("pid", optarg, 1, INT_MAX);
			strlist_add(&opt->pids, optarg);
			break;
		case 'F':
			opt->follow = true;
			break;
		case 'c':
			opt->children = true;
			break;
		case 'p':
			opt->tracer = optarg;
			break;
		case 'l':
			strlist_add(&opt->funcs, optarg);
			break;
		case 'n':
			strlist_add(&opt->notrace, optarg);
			break;
		case 'g':
			strlist_add(&opt->graph, optarg);
			break;
		case 'C':
			opt->clock = optarg;
			break;
		case 'M':
			opt->cpumask = optarg;
			break;
		case 'T':
			opt->stacktrace = true;
			break;
		case OPT_CPUS:
			opt->cpus = optarg;
			break;
		case OPT_SUBBUF:
			opt->subbuf_kb = parse_number("sub-buffer size", optarg, 1, LONG_MAX);
			/* One page to 2^7 pages (RING_BUFFER_MAX_SUBBUF_ORDER, 4K pages) */
			if (opt->subbuf_kb & (opt->subbuf_kb - 1) || opt->subbuf_kb < page_kb ||
			    opt->subbuf_kb > 512)
				usage_error("invalid sub-buffer size '%s': a power of two from %ld to 512 KB",
					    optarg, page_kb);
			break;
		case 'b':
			opt->buffer_kb = parse_number("buffer size", optarg, 1, 1L << 30);
			break;
		case 'o':
			opt->output = optarg;
			break;
		case OPT_PRINT:
			if (strcmp(opt->cmd, "record"))
				usage_error("option --print is only for record");
			opt->print = true;
			break;
		case 'd':
			opt->duration = parse_number("duration", optarg, 1, 1L << 30);
			break;
		case OPT_READ:
			opt->force_read = true;
			break;
		case OPT_MAP:
			opt->map_meta = true;
			break;
		case 'h':
		case OPT_HELP:
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
		usage_error("--instance and -B exclude each other");
	if (opt->cpus && opt->cpumask)
		usage_error("--cpus and -M exclude each other");
	if (opt->force_read && opt->map_meta)
		usage_error("--read and --map exclude each other");
	if (opt->follow && !opt->command)
		usage_error("-F needs a command (-- COMMAND)");
	if (opt->children && !opt->follow && !opt->pids.n)
		usage_error("-c goes with -F or -P");
	if (opt->graph.n && (!opt->tracer || strcmp(opt->tracer, "function_graph")))
		usage_error("-g is for the function_graph tracer (-p function_graph)");
	if ((opt->funcs.n || opt->notrace.n) && !opt->tracer)
		usage_error("-l and -n filter a tracer: give it with -p (function, function_graph)");
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

/*
 * -M CPUMASK: hex, as tracing_cpumask takes it (commas allowed between
 * groups of 8 digits), or -1 for every CPU. Only the CPUs of the mask that
 * are online are captured; a CPU in the mask that the system does not have
 * is an error, as is a mask without any.
 */
static void parse_cpumask(struct session *s)
{
	const char *mask = s->opt->cpumask, *p;
	int cpu = 0, bit, any = 0, v;

	if (!strcmp(mask, "-1")) {
		for (cpu = 0; cpu < s->nr_cpus; cpu++)
			s->cpu_on[cpu] = cpu_online(cpu);
		return;
	}
	p = mask + strlen(mask);
	if (!strncasecmp(mask, "0x", 2))
		mask += 2;
	if (p == mask)
		usage_error("invalid CPU mask '%s': hex, as in tracing_cpumask", s->opt->cpumask);
	while (p-- > mask) {
		if (*p == ',')
			continue;
		if (*p >= '0' && *p <= '9')
			v = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			v = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F')
			v = *p - 'A' + 10;
		else
			usage_error("invalid CPU mask '%s': hex, as in tracing_cpumask",
				    s->opt->cpumask);
		for (bit = 0; bit < 4; bit++, cpu++) {
			if (!(v & (1 << bit)))
				continue;
			if (cpu >= s->nr_cpus)
				usage_error("no CPU %d in mask '%s' (CPUs: 0 to %d)", cpu,
					    s->opt->cpumask, s->nr_cpus - 1);
			any = 1;
			s->cpu_on[cpu] = cpu_online(cpu);
			if (!s->cpu_on[cpu])
				error(0, "CPU %d is offline: not traced", cpu);
		}
	}
	if (!any)
		usage_error("CPU mask '%s' has no CPU", s->opt->cpumask);
}

static void parse_cpus(struct session *s)
{
	const char *p = s->opt->cpus;
	long first, last, cpu;
	char *end;

	if (s->opt->cpumask) {
		parse_cpumask(s);
		return;
	}
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

static void add_event(struct session *s, const char *system, const char *name,
		      const char *filter)
{
	struct event *ev;
	int i;

	for (i = 0; i < s->nr_events; i++) {
		if (!strcmp(s->events[i].system, system) && !strcmp(s->events[i].name, name)) {
			if (filter)
				s->events[i].filter = filter;
			return;
		}
	}
	ev = realloc(s->events, (s->nr_events + 1) * sizeof(*ev));
	if (!ev)
		error(1, "out of memory");
	s->events = ev;
	ev = &s->events[s->nr_events++];
	ev->system = strdup(system);
	ev->name = strdup(name);
	ev->filter = filter;
	if (!ev->system || !ev->name)
		error(1, "out of memory");
}

static void del_event(struct session *s, const char *system, const char *name)
{
	int i;

	for (i = 0; i < s->nr_events; i++) {
		if (strcmp(s->events[i].system, system) || strcmp(s->events[i].name, name))
			continue;
		free(s->events[i].system);
		free(s->events[i].name);
		s->events[i] = s->events[--s->nr_events];
		return;
	}
}

/*
 * The event systems: the folders of events/ (tracefs_event_systems() leaves
 * out those without an enable file, as ftrace)
 */
static char **event_systems(void)
{
	char *dir = tracefs_get_tracing_file("events");
	char **list = NULL;
	struct dirent *d;
	DIR *dp;

	dp = dir ? opendir(dir) : NULL;
	tracefs_put_tracing_file(dir);
	while (dp && (d = readdir(dp))) {
		if (d->d_type != DT_DIR || d->d_name[0] == '.')
			continue;
		list = tracefs_list_add(list, d->d_name);
		if (!list)
			error(1, "out of memory");
	}
	if (dp)
		closedir(dp);
	return list;
}

/*
 * -e ARG as trace-cmd takes it: SYSTEM, SYSTEM:EVENT (or SYSTEM/EVENT), or
 * EVENT of any system; each part may be a glob ("sched:*wak*", "*stat*"),
 * "all" is every event. A word without ':' names the systems it matches
 * and the events of that name in any system. Adds (or, negated, removes)
 * the events; an ARG that matches no event is an error.
 */
static void resolve_event(struct session *s, const struct event_arg *ea)
{
	char *sys_pat, *ev_pat, **systems, **list;
	int i, j, found = 0;
	bool sys_match;

	sys_pat = strdup(!strcmp(ea->arg, "all") ? "*:*" : ea->arg);
	if (!sys_pat)
		error(1, "out of memory");
	ev_pat = strpbrk(sys_pat, ":/");
	if (ev_pat)
		*ev_pat++ = '\0';
	if (!*sys_pat || (ev_pat && (!*ev_pat || strpbrk(ev_pat, ":/"))))
		usage_error("invalid event '%s': SYSTEM, SYSTEM:EVENT or EVENT", ea->arg);

	systems = event_systems();
	for (i = 0; systems && systems[i]; i++) {
		sys_match = !fnmatch(sys_pat, systems[i], 0);
		if (ev_pat && !sys_match)
			continue;
		list = tracefs_system_events(NULL, systems[i]);
		for (j = 0; list && list[j]; j++) {
			/* SYSTEM:EVENT; SYSTEM alone; or EVENT of any system */
			if (ev_pat ? fnmatch(ev_pat, list[j], 0) :
			    !sys_match && fnmatch(sys_pat, list[j], 0))
				continue;
			found++;
			if (ea->negate)
				del_event(s, systems[i], list[j]);
			else
				add_event(s, systems[i], list[j], ea->filter);
		}
		tracefs_list_free(list);
	}
	tracefs_list_free(systems);
	if (!found) {
		if (ev_pat)
			env_error("unknown event '%s'", ea->arg);
		env_error("unknown event or event system '%s'", ea->arg);
	}
	free(sys_pat);
}

/* Is WORD one of the words of the tracefs file FILE ("[local] global", ...)? */
static bool tracefs_word(struct session *s, const char *file, const char *word)
{
	char *text = tracefs_instance_file_read(s->instance, file, NULL), *tok, *save;
	bool found = false;

	for (tok = text ? strtok_r(text, " \t\n[]", &save) : NULL; tok && !found;
	     tok = strtok_r(NULL, " \t\n[]", &save))
		found = !strcmp(tok, word);
	free(text);
	return found;
}

/*
 * -l/-n/-g FUNC: a glob (or a regex, which the kernel takes too) is left to
 * the kernel; a plain name must be in available_filter_functions, so that
 * a typo is an error before anything changed rather than a tracer of
 * every function.
 */
static void check_functions(const struct strlist *l, const char *opt, char **avail)
{
	size_t len;
	char *p;
	int i;

	for (i = 0; i < l->n; i++) {
		const char *f = l->v[i];

		if (!*f)
			usage_error("empty function name for %s", opt);
		if (strpbrk(f, "*?[^$:. "))
			continue;
		if (!*avail) {
			char *path = tracefs_get_tracing_file("available_filter_functions");

			size_t size;

			*avail = path ? ftm_read_file(path, &size) : NULL;
			tracefs_put_tracing_file(path);
			if (!*avail)
				env_error("cannot read available_filter_functions: %s",
					  strerror(errno));
		}
		len = strlen(f);
		for (p = *avail; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
			if (!strncmp(p, f, len) && (p[len] == '\n' || p[len] == ' '))
				break;
		if (!p)
			env_error("no function '%s' to trace (%s): not in available_filter_functions",
				  f, opt);
	}
}

/* Everything that can be checked before changing anything in tracefs */
static void validate(struct session *s)
{
	struct options *opt = s->opt;
	const char *mount;
	char *avail = NULL;
	size_t i;
	int c;

	if (geteuid())
		env_error("must be run as root (tracefs needs it)");
	if (tracefs_tracing_dir_is_mounted(false, &mount) != 1 || !tracefs_tracing_dir())
		env_error("tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing)");

	/* -B of an instance that exists: trace-cmd uses it, and keeps it */
	if (opt->new_instance && *opt->new_instance &&
	    tracefs_instance_exists(opt->new_instance)) {
		opt->instance = opt->new_instance;
		opt->new_instance = NULL;
	}
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

	if (opt->nr_eargs) {
		for (c = 0; c < opt->nr_eargs; c++)
			resolve_event(s, &opt->eargs[c]);
		if (!s->nr_events && !opt->tracer)
			usage_error("no event left to trace (-v removed them all)");
	} else if (!opt->tracer) {
		for (i = 0; i < ARRAY_SIZE(default_events); i++) {
			struct event_arg ea = { .arg = default_events[i] };

			resolve_event(s, &ea);
		}
	}

	if (opt->tracer && !tracefs_word(s, "available_tracers", opt->tracer))
		env_error("no tracer '%s' in this kernel (available_tracers)", opt->tracer);
	if (opt->clock && !tracefs_word(s, "trace_clock", opt->clock))
		env_error("no trace clock '%s' (trace_clock)", opt->clock);
	check_functions(&opt->funcs, "-l", &avail);
	check_functions(&opt->notrace, "-n", &avail);
	check_functions(&opt->graph, "-g", &avail);
	free(avail);
	for (c = 0; c < opt->pids.n; c++)
		if (kill(atoi(opt->pids.v[c]), 0) && errno == ESRCH)
			env_error("no process %s (-P)", opt->pids.v[c]);
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
 * Write @text to @file of the trace array: truncated first (which empties
 * set_event, set_event_pid, set_ftrace_filter...), or appended to. The
 * list files take one entry per write(), so a short write goes on with the
 * rest. An empty @text only truncates.
 */
static int put_file(struct session *s, const char *file, const char *text, bool append)
{
	char *path = tracefs_instance_get_file(s->instance, file);
	size_t len = strlen(text);
	ssize_t n;
	int fd;

	if (!path)
		return -1;
	fd = open(path, O_WRONLY | O_CLOEXEC | (append ? O_APPEND : O_TRUNC));
	tracefs_put_tracing_file(path);
	if (fd < 0)
		return -1;
	while (len) {
		n = write(fd, text, len);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			close(fd);
			return -1;
		}
		text += n;
		len -= n;
	}
	return close(fd);
}

/* Keep the text of @file, to be put back by restore() as @kind says */
static int save_file(struct session *s, const char *file, enum file_kind kind)
{
	struct saved_file *sf;
	char *old;

	old = tracefs_instance_file_read(s->instance, file, NULL);
	if (!old) {
		if (!tracefs_file_exists(s->instance, file))
			return -1;
		old = strdup("");	/* an empty file */
		if (!old)
			return -1;
	}
	sf = realloc(s->saved, (s->nr_saved + 1) * sizeof(*sf));
	if (!sf) {
		free(old);
		return -1;
	}
	s->saved = sf;
	sf = &s->saved[s->nr_saved++];
	sf->file = strdup(file);
	sf->old = old;
	sf->kind = kind;
	return sf->file ? 0 : -1;
}

/* The entries of a list file: its lines but the comments and "no pid" */
static bool list_entry(const char *line)
{
	return *line && *line != '#' && strcmp(line, "no pid");
}

/* Does the list file @file hold an entry? */
static bool list_has_entries(struct session *s, const char *file)
{
	char *text = tracefs_instance_file_read(s->instance, file, NULL), *line, *save;
	bool any = false;

	for (line = text ? strtok_r(text, "\n", &save) : NULL; line && !any;
	     line = strtok_r(NULL, "\n", &save))
		any = list_entry(line);
	free(text);
	return any;
}

/* Save @file, then make its entries those of @l (none: empty it) */
static int change_list(struct session *s, const char *file, const struct strlist *l)
{
	int i;

	if (save_file(s, file, FILE_LIST) || put_file(s, file, "", false))
		return -1;
	for (i = 0; i < l->n; i++) {
		if (put_file(s, file, l->v[i], true)) {
			error(0, "cannot write '%s' to %s: %s", l->v[i], file, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* Save @file, then write @val to it */
static int change_file(struct session *s, const char *file, enum file_kind kind,
		       const char *val)
{
	if (save_file(s, file, kind))
		return -1;
	if (put_file(s, file, val, false)) {
		error(0, "cannot write '%s' to %s: %s", val, file, strerror(errno));
		return -1;
	}
	return 0;
}

/* Put one saved file back */
static int put_back(struct session *s, struct saved_file *sf)
{
	char *line, *save, *p, *end;
	int ret = 0;

	switch (sf->kind) {
	case FILE_LIST:
		ret = put_file(s, sf->file, "", false);
		for (line = strtok_r(sf->old, "\n", &save); line && !ret;
		     line = strtok_r(NULL, "\n", &save)) {
			if (!list_entry(line))
				continue;
			/* "func [module]": the name alone */
			p = strchr(line, ' ');
			if (p && !strcmp(sf->file, "set_ftrace_filter"))
				*p = '\0';
			if (put_file(s, sf->file, line, true))
				error(0, "cannot put '%s' back into %s: %s", line, sf->file,
				      strerror(errno));
		}
		break;
	case FILE_CLOCK:
		p = strchr(sf->old, '[');
		end = p ? strchr(p, ']') : NULL;
		if (!end)
			return 0;
		*end = '\0';
		ret = put_file(s, sf->file, p + 1, false);
		break;
	case FILE_FILTER:
		if (!strncmp(sf->old, "none", 4))
			ret = put_file(s, sf->file, "0", false);
		else
			ret = put_file(s, sf->file, sf->old, false);
		break;
	case FILE_VALUE:
		p = strchr(sf->old, '\n');
		if (p)
			*p = '\0';
		ret = put_file(s, sf->file, sf->old, false);
		break;
	}
	if (ret)
		error(0, "cannot put %s back: %s", sf->file, strerror(errno));
	return ret;
}

/*
 * Put back what setup() changed; safe on a half-done setup. The buffers
 * are unmapped first: a mapped buffer cannot be resized and its instance
 * cannot be removed. The saved files go back last to first, the tracer
 * stopped before anything else.
 */
static int restore(struct session *s)
{
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

	for (i = 0; i < s->nr_saved; i++)
		if (!strcmp(s->saved[i].file, "current_tracer"))
			put_file(s, "current_tracer", "nop", false);
	for (i = s->nr_saved - 1; i >= 0; i--) {
		ret |= put_back(s, &s->saved[i]);
		free(s->saved[i].file);
		free(s->saved[i].old);
	}
	s->nr_saved = 0;
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
	exit(s->exit_status ? s->exit_status : 1);
}

/* tracing_cpumask of every CPU, for -M -1 */
static void all_cpus_mask(int nr_cpus, char *buf, size_t size)
{
	size_t n = 0;
	int digit;

	for (digit = (nr_cpus + 3) / 4 - 1; digit >= 0 && n + 1 < size; digit--) {
		int bits = nr_cpus - digit * 4;

		buf[n++] = "0137f"[bits >= 4 ? 4 : bits];
	}
	buf[n] = '\0';
}

/*
 * What is traced: the clock, the tracer (off until setup() is done) and
 * its function filters, the events and their filters, the pids, the
 * options, the CPU mask. What was on before and was not asked for is off
 * during the capture (every event: set_event emptied; a tracer; a filter
 * of a traced event; the pid lists; options/stacktrace), so that the
 * capture holds what the options say; restore() puts it all back.
 */
static void setup_tracing(struct session *s)
{
	struct options *opt = s->opt;
	struct strlist pids = { };
	char *old, mask[80];
	int i;

	if (opt->clock && change_file(s, "trace_clock", FILE_CLOCK, opt->clock))
		fail_restore(s, "cannot set the trace clock");

	old = read_setting(s, "current_tracer");
	if (opt->tracer || strcmp(old, "nop")) {
		if (strcmp(old, "nop") && !opt->tracer)
			error(0, "the tracer '%s' is off during the capture (-p traces with one)",
			      old);
		if (change_file(s, "current_tracer", FILE_VALUE, "nop"))
			fail_restore(s, "cannot stop the tracer '%s'", old);
	}
	free(old);
	if (opt->tracer) {
		static const char * const lists[] = {
			"set_ftrace_filter", "set_ftrace_notrace", "set_graph_function",
		};
		const struct strlist *given[] = { &opt->funcs, &opt->notrace, &opt->graph };

		for (i = 0; i < (int)ARRAY_SIZE(lists); i++) {
			if (!tracefs_file_exists(s->instance, lists[i])) {
				if (given[i]->n)
					fail_restore(s, "this trace array has no %s", lists[i]);
				continue;
			}
			if ((given[i]->n || list_has_entries(s, lists[i])) &&
			    change_list(s, lists[i], given[i]))
				fail_restore(s, "cannot set %s", lists[i]);
		}
	}

	/* Every event off, then those asked for on, with their filters */
	if (change_list(s, "set_event", &pids))
		fail_restore(s, "cannot disable the events: %s", strerror(errno));
	for (i = 0; i < s->nr_events; i++) {
		struct event *ev = &s->events[i];
		char file[512];

		if (!tracefs_event_file_exists(s->instance, ev->system, ev->name, "enable"))
			continue;	/* ftrace events: always on */
		snprintf(file, sizeof(file), "events/%s/%s/filter", ev->system, ev->name);
		old = tracefs_instance_file_read(s->instance, file, NULL);
		if (ev->filter || (old && strncmp(old, "none", 4))) {
			if (save_file(s, file, FILE_FILTER))
				fail_restore(s, "cannot read %s:%s/filter: %s", ev->system,
					     ev->name, strerror(errno));
			if (put_file(s, file, ev->filter ? ev->filter : "0", false)) {
				s->exit_status = EXIT_USAGE;
				fail_restore(s, "invalid filter '%s' for %s:%s: %s", ev->filter,
					     ev->system, ev->name, strerror(errno));
			}
		}
		free(old);
		if (tracefs_event_file_write(s->instance, ev->system, ev->name, "enable", "1") < 0)
			fail_restore(s, "cannot enable %s:%s: %s", ev->system, ev->name,
				     strerror(errno));
	}

	/* -P and -F: the pids of the events, and of the tracer */
	for (i = 0; i < opt->pids.n; i++)
		strlist_add(&pids, opt->pids.v[i]);
	if (opt->follow) {
		snprintf(mask, sizeof(mask), "%d", s->child);
		strlist_add(&pids, mask);
	}
	if ((pids.n || list_has_entries(s, "set_event_pid")) &&
	    change_list(s, "set_event_pid", &pids))
		fail_restore(s, "cannot set set_event_pid");
	if (opt->tracer && tracefs_file_exists(s->instance, "set_ftrace_pid") &&
	    (pids.n || list_has_entries(s, "set_ftrace_pid")) &&
	    change_list(s, "set_ftrace_pid", &pids))
		fail_restore(s, "cannot set set_ftrace_pid");
	free(pids.v);
	if (pids.n) {
		const char *val = opt->children ? "1" : "0";

		if (change_file(s, "options/event-fork", FILE_VALUE, val) ||
		    (opt->tracer && tracefs_file_exists(s->instance, "options/function-fork") &&
		     change_file(s, "options/function-fork", FILE_VALUE, val)))
			fail_restore(s, "cannot set the fork options");
	}

	old = read_setting(s, "options/stacktrace");
	if (strcmp(old, opt->stacktrace ? "1" : "0") &&
	    change_file(s, "options/stacktrace", FILE_VALUE, opt->stacktrace ? "1" : "0"))
		fail_restore(s, "cannot set options/stacktrace");
	free(old);

	if (opt->cpumask) {
		const char *m = opt->cpumask;

		if (!strcmp(m, "-1"))
			all_cpus_mask(s->nr_cpus, mask, sizeof(mask));
		else
			snprintf(mask, sizeof(mask), "%s",
				 strncasecmp(m, "0x", 2) ? m : m + 2);
		if (change_file(s, "tracing_cpumask", FILE_VALUE, mask))
			fail_restore(s, "cannot set tracing_cpumask");
	}
}

/* Tracing off, sizes and events set, buffers cleared and opened */
static void setup(struct session *s)
{
	struct options *opt = s->opt;
	const char *why = NULL;
	char num[32], *p;
	int cpu;

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

	setup_tracing(s);

	if (opt->tracer && put_file(s, "current_tracer", opt->tracer, false))
		fail_restore(s, "cannot start the tracer '%s': %s", opt->tracer, strerror(errno));
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

/*
 * Fork COMMAND, which waits until release_command() before it executes:
 * its pid goes into set_event_pid (-F) before it runs, and it starts with
 * the capture. If the tool dies first, the pipe closes and it exits 127.
 */
static pid_t start_command(struct session *s, char **argv, const sigset_t *mask)
{
	int go[2];
	ssize_t n;
	pid_t pid;
	char c = 0;

	if (pipe2(go, O_CLOEXEC))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid) {
		close(go[0]);
		if (pid < 0)
			close(go[1]);
		else
			s->go_fd = go[1];
		return pid;
	}
	close(go[1]);
	/* The tool ignores SIGPIPE (| head ends a capture): COMMAND must not */
	signal(SIGPIPE, SIG_DFL);
	sigprocmask(SIG_SETMASK, mask, NULL);
	do {
		n = read(go[0], &c, 1);
	} while (n < 0 && errno == EINTR);
	if (n != 1 || c != 'g')
		_exit(127);
	close(go[0]);
	execvp(argv[0], argv);
	error(0, "cannot run '%s': %s", argv[0], strerror(errno));
	_exit(127);
}

/* Let COMMAND go on to execute */
static void release_command(struct session *s)
{
	if (s->go_fd <= 0)
		return;
	if (write(s->go_fd, "g", 1) != 1)
		error(0, "cannot start the command: %s", strerror(errno));
	close(s->go_fd);
	s->go_fd = -1;
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

/*
 * " (and N more ...)": the events lost that the kernel counted but no
 * sub-buffer reported a count of (ftm_buf_lost_unreported(): @more, -1
 * when it cannot be told), and how many losses the sub-buffers reported
 * without their count (@nocount: "CPU:N [EVENTS DROPPED]" lines).
 */
static void print_unreported(uint64_t nocount, long long more)
{
	const char *es = nocount == 1 ? "" : "es";

	if (more > 0 && nocount)
		fprintf(stderr, " (and %lld more in %llu loss%s of no count, by the kernel's overrun count)",
			more, (unsigned long long)nocount, es);
	else if (more > 0)
		fprintf(stderr, " (and %lld more, by the kernel's overrun count)", more);
	else if (nocount)
		fprintf(stderr, " (and more, of unknown number, in %llu loss%s)",
			(unsigned long long)nocount, es);
}

static void print_totals(struct session *s)
{
	uint64_t events = 0, lost = 0, subbufs = 0, nocount = 0;
	const struct ftm_totals *t;
	long long more, all_more = 0;
	bool known = true;
	int cpu;

	for (cpu = 0; cpu < s->nr_cpus; cpu++) {
		if (!s->bufs[cpu])
			continue;
		t = ftm_buf_totals(s->bufs[cpu]);
		if (t->resets)
			error(0, "CPU %d: the buffer was reset during the capture (%llu times): kept what was read before, went on after",
			      cpu, (unsigned long long)t->resets);
		more = ftm_buf_lost_unreported(s->bufs[cpu]);
		fprintf(stderr, "CPU %d: %llu events, %llu lost", cpu,
			(unsigned long long)t->events, (unsigned long long)t->lost);
		print_unreported(t->lost_unknown, more);
		fprintf(stderr, ", %llu sub-buffers\n", (unsigned long long)t->subbufs);
		events += t->events;
		lost += t->lost;
		subbufs += t->subbufs;
		nocount += t->lost_unknown;
		/* The sum is told only if every CPU's part is */
		if (more > 0)
			all_more += more;
		else if (t->lost_unknown)
			known = false;
	}
	fprintf(stderr, "total: %llu events, %llu lost", (unsigned long long)events,
		(unsigned long long)lost);
	print_unreported(nocount, known ? all_more : -1);
	fprintf(stderr, ", %llu sub-buffers\n", (unsigned long long)subbufs);
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

static int both_piece(const struct ftm_piece *piece, void *ctx)
{
	struct both *b = ctx;

	return printer_queue_piece(piece, b->pr);
}

/*
 * Take what the buffers hold: those poll() said are ready, or, with @all,
 * every one (the printer needs every CPU read in each round: see
 * printer_round()); @flush gives out the sub-buffers still being read, at
 * the end of a capture.
 */
static int consume_all(struct session *s, struct printer *pr, bool graph, struct pollfd *pfd,
		       const int *pcpu, int nfds, bool all, bool flush)
{
	struct both both = { pr, s->dat };
	ftm_event_fn on_event = NULL;
	ftm_subbuf_fn on_subbuf = NULL;
	void *ctx = NULL;
	int i, ret;

	/* The graph printer takes the events as pieces (ftm_buf_set_piece_fn()) */
	if (pr && s->dat) {
		on_event = graph ? NULL : both_event;
		on_subbuf = both_subbuf;
		ctx = &both;
	} else if (pr) {
		on_event = graph ? NULL : printer_queue;
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

/* The session's events, as the trace.dat writer takes them; to free() */
static struct tracedat_event *file_events(const struct session *s)
{
	struct tracedat_event *evs;
	int i;

	evs = calloc(s->nr_events + 1, sizeof(*evs));
	for (i = 0; evs && i < s->nr_events; i++) {
		evs[i].system = s->events[i].system;
		evs[i].name = s->events[i].name;
	}
	return evs;
}

/*
 * The printer of stream and record -p: ftrace's formats and those of the
 * events; through libtracecmd for @graph (printer_new_graph()), with the
 * sub-buffer size of the buffers.
 */
static struct printer *new_printer(struct session *s, bool graph, size_t subbuf_size)
{
	struct tracedat_event *evs;
	const char **systems;
	struct printer *pr;
	int i, j, n = 0;

	if (graph) {
		evs = file_events(s);
		if (!evs)
			return NULL;
		pr = printer_new_graph(evs, s->nr_events, s->nr_cpus, subbuf_size, stdout);
		free(evs);
		return pr;
	}

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

/*
 * The events someone else enabled during the capture (set_event now) can
 * be in the file: their formats must go in too, or trace-cmd report can
 * only say [UNKNOWN EVENT] of them. record looks at set_event every
 * OTHERS_WAIT_MS and at the end: an event enabled and disabled again in
 * between can still be missed.
 */
static void note_other_events(struct session *s)
{
	char *set, *line, *save, *colon;
	int i;

	set = tracefs_instance_file_read(s->instance, "set_event", NULL);
	for (line = set ? strtok_r(set, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = '\0';
		for (i = 0; i < s->nr_events; i++)
			if (!strcmp(s->events[i].system, line) &&
			    !strcmp(s->events[i].name, colon + 1))
				break;
		if (i < s->nr_events)
			continue;
		error(0, "%s:%s was enabled by someone else during the capture: its format goes into the file",
		      line, colon + 1);
		add_event(s, line, colon + 1, NULL);
	}
	free(set);
}

/* Write the headers of the trace.dat file, then the CPU data */
static int finish_record(struct session *s)
{
	struct tracedat_event *evs;
	int ret, err;

	note_other_events(s);
	evs = file_events(s);
	if (!evs)
		return -1;
	ret = tracedat_finish(s->dat, evs, s->nr_events);
	err = errno;
	s->dat = NULL;
	free(evs);
	errno = err;
	return ret;
}

static int capture(struct options *opt)
{
	struct session s = { .opt = opt, .go_fd = -1 };
	struct printer *pr = NULL;
	struct pollfd *pfd;
	int *pcpu;
	sigset_t block, orig;
	struct sigaction sa = { .sa_handler = on_signal };
	const struct timespec flush_wait = { 0, FLUSH_WAIT_MS * 1000000L };
	struct timespec now, others_at = { };
	bool print, graph = false, exited = false;
	int cpu, nfds = 0, status, ret = 0, dat_err = 0;
	size_t subbuf_size = 0;

	print = !strcmp(opt->cmd, "stream") || opt->print;
	validate(&s);
	/*
	 * The function_graph tracer: trace-cmd report puts a leaf function's
	 * entry and exit on one line, which libtracecmd's graph printer
	 * decides by looking at the next event. With libtracecmd here, the
	 * events print through it (printer_new_graph()); without it, each
	 * event as it comes.
	 */
	if (print && opt->tracer && !strcmp(opt->tracer, "function_graph")) {
		graph = print_graph_available();
		if (!graph)
			error(0, "no libtracecmd (libtracecmd.so.1): the function_graph events print one a line, not joined into trace-cmd report's graph");
	}

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

	/* COMMAND exists first (-F traces its pid), and runs with the capture */
	if (opt->command) {
		s.child = start_command(&s, opt->command, &orig);
		if (s.child < 0)
			error(1, "cannot fork: %s", strerror(errno));
	}
	setup(&s);

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
		if (graph && ftm_buf_set_piece_fn(s.bufs[cpu], opt->output ? both_piece :
						  printer_queue_piece))
			fail_restore(&s, "out of memory");
	}

	if (print) {
		pr = new_printer(&s, graph, subbuf_size);
		if (!pr)
			fail_restore(&s, "cannot read the event formats: %s", strerror(errno));
	}

	if (opt->output) {
		s.dat = tracedat_open(opt->output, s.instance, s.nr_cpus, subbuf_size);
		if (!s.dat)
			fail_restore(&s, "cannot write %s: %s", opt->output, strerror(errno));
	}

	if (write_setting(&s, "tracing_on", "1"))
		fail_restore(&s, "cannot start tracing");
	release_command(&s);

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
		if (ppoll(pfd, nfds, (pr && printer_pending(pr)) || s.dat ? &flush_wait : NULL,
			  &orig) < 0) {
			if (errno == EINTR)
				continue;
			fail_restore(&s, "poll: %s", strerror(errno));
		}
		if (consume_all(&s, pr, graph, pfd, pcpu, nfds, pr != NULL, false))
			fail_restore(&s, "reading the buffers: %s", strerror(errno));
		if (s.dat) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if ((now.tv_sec - others_at.tv_sec) * 1000 +
			    (now.tv_nsec - others_at.tv_nsec) / 1000000 >= OTHERS_WAIT_MS) {
				note_other_events(&s);
				others_at = now;
			}
		}
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
	if (consume_all(&s, pr, graph, pfd, pcpu, nfds, true, true))
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
	bool tty = isatty(STDOUT_FILENO), said = false, from_stats = false;
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
			ret = ftm_read_counters(s.dir, cpu, !opt->map_meta, &now[cpu]);
			if (ret < 0)
				error(1, "cannot read the counters of CPU %d: %s", cpu,
				      strerror(errno));
			if (ret > 0 && opt->map_meta && !said) {
				error(0, "not mapping the ring-buffer (this kernel cannot map it): reading per_cpu/cpuN/stats instead");
				said = true;
			}
			if (ret > 0) {
				/* As the meta-page: written since the last reset */
				now[cpu].entries += now[cpu].overrun + now[cpu].read;
				from_stats = true;
			}
		}

		if (tty)
			fputs("\033[H\033[2J", stdout);
		printf("ftmmap stats: %s, %d CPUs, %s, %lds\n",
		       opt->instance ? opt->instance : "top level", s.nr_cpus,
		       from_stats ? "per_cpu/cpuN/stats" : "meta-pages", tick);
		printf("%4s %12s %12s %12s %10s %8s %11s %10s\n", "CPU", "entries", "overrun",
		       "read", "lost", "subbufs", "subbuf_size", "events/s");
		for (cpu = 0; cpu < s.nr_cpus; cpu++) {
			struct ftm_counters *c = &now[cpu];
			char rate[24] = "-", lost[24], subbufs[16];

			if (tick) {
				/*
				 * A reset (echo > trace, a resize, a new clock)
				 * zeroes the counters: what is there now was
				 * written since.
				 */
				uint64_t d = c->entries >= prev[cpu].entries ?
					     c->entries - prev[cpu].entries : c->entries;

				snprintf(rate, sizeof(rate), "%llu", (unsigned long long)d);
				rate_all += d;
			}
			entries_all += c->entries;
			if (from_stats) {
				snprintf(lost, sizeof(lost), "-");
				snprintf(subbufs, sizeof(subbufs), "-");
			} else {
				snprintf(lost, sizeof(lost), "%llu", (unsigned long long)c->lost);
				snprintf(subbufs, sizeof(subbufs), "%u", c->nr_subbufs);
			}
			printf("%4d %12llu %12llu %12llu %10s %8s %11u %10s\n", cpu,
			       (unsigned long long)c->entries, (unsigned long long)c->overrun,
			       (unsigned long long)c->read, lost, subbufs, c->subbuf_size, rate);
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
