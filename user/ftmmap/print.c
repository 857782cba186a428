// SPDX-License-Identifier: GPL-2.0
/*
 * Print events as trace-cmd report (3.1.6) does, in time order across CPUs
 *
 * The line is trace-cmd's (tracecmd/trace-read.c): "%16s-%-5d [%03d]" with
 * the comm, PID and CPU, " %6.1000d:" with the time, the event name padded
 * to 20 columns, then libtraceevent's rendering of the event
 * (tep_print_event): from the kernel's own format file, or by the plugin
 * that handles the event. The plugins are libtraceevent's own, as
 * trace-cmd report loads them (tep_load_plugins(): Debian's
 * libtraceevent1-plugin, in /usr/lib/<triplet>/traceevent/plugins, or
 * $TRACEEVENT_PLUGIN_DIR): sched_switch, hrtimer, kmem, function...
 *
 * The events of each CPU are queued in the order they were read, and the
 * queues merged by time stamp, the lowest CPU first on a tie, as trace-cmd
 * merges the CPUs of a file.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <event-parse.h>
#include <tracefs.h>

#include "print.h"

/* Events waiting to be printed in time order: one queue per CPU */
struct pending {
	unsigned long long ts;
	long long	missed;
	int		size;
	char		data[];
};

struct queue {
	struct pending	**ev;
	size_t		head, len, alloc;
};

/*
 * The start of a line, "%16s-%-5d [%03d]" (comm, PID, CPU), as
 * tep_print_event() renders it. It depends on the PID's comm, the PID and
 * the CPU only, and rendering it costs about a third of the line
 * (tep_print_event() copies and parses its format, and makes a printf call
 * for each field): so it is kept, for the last PID seen on a CPU in each
 * slot, and copied. It must change when the comm does:
 *  - a comm known to libtraceevent changes only by tep_override_comm(),
 *    which only load_cmdlines() calls: that forgets every start kept;
 *  - a PID without a comm prints as "<...>" until one is registered, which
 *    a plugin may do while it prints (sched_switch's tep_register_comm()):
 *    such starts are never kept (tep_is_pid_registered(); PID 0 always
 *    prints as "<idle>", and counts as registered).
 */
#define PREFIX_SLOTS	256
#define PREFIX_MAX	48	/* a comm of 16 and the widest PID and CPU fit */

struct prefix {
	int		pid;
	int		cpu;		/* -1: empty */
	char		text[PREFIX_MAX];
};

/* libtracecmd's calls, once loaded (print_graph_available()) */
struct tracecmd_input;

static struct {
	bool tried, ok;
	void *dl;
	struct tracecmd_input *(*alloc_fd)(int fd, int flags);
	int (*read_headers)(struct tracecmd_input *handle, int state);
	int (*make_pipe)(struct tracecmd_input *handle, int cpu, int fd, int cpus);
	struct tep_handle *(*get_tep)(struct tracecmd_input *handle);
	struct tep_record *(*peek_next)(struct tracecmd_input *handle, int *cpu);
	struct tep_record *(*read_data)(struct tracecmd_input *handle, int cpu);
	void (*free_record)(struct tep_record *record);
	void (*close)(struct tracecmd_input *handle);
	void (*set_loglevel)(enum tep_loglevel level);
} tcl;

/*
 * enum tracecmd_file_states: the headers up to the printk formats. The
 * calls that read from pipes (tracecmd_alloc_fd(), tracecmd_read_headers(),
 * tracecmd_make_pipe()) are exported by libtracecmd 1.3 but declared in
 * trace-cmd's private header, with this enum; trace-cmd stream uses them.
 */
#define TRACECMD_FILE_PRINTK	6
/* enum tracecmd_open_flags, in trace-cmd's public header (not packaged) */
#define TRACECMD_FL_LOAD_NO_PLUGINS	(1 << 0)

struct printer {
	struct tep_handle *tep;
	FILE		*out;
	struct queue	*q;
	int		nr_cpus;
	bool		any;		/* this round queued events */
	unsigned long long round_max;	/* the newest time stamp of this round */
	bool		have_limit;
	unsigned long long limit;	/* round_max of the last round */
	bool		raised;		/* the last round raised the limit */
	struct trace_seq seq;
	struct tep_plugin_list *plugins;
	int		out_errno;	/* the first write error on out */
	bool		cmdlines_due;	/* read saved_cmdlines before the next line */

	/* The graph printer (printer_new_graph()): libtracecmd reads the pieces */
	struct tracecmd_input *handle;
	int		*cpu_fd;	/* the pieces of each CPU, in a memfd */
	off_t		*cpu_end;	/* where the next piece goes */
	size_t		subbuf_size;
	struct tep_record *held;	/* read, printed once its successor is known */
	struct tracecmd_input *no_events; /* a handle with no CPUs: print_held() */

	struct prefix	*prefix;	/* PREFIX_SLOTS starts of lines */
	char		*cmdlines;	/* saved_cmdlines as last read, or NULL */
};

/**
 * printer_queue - queue an event for printing (a ftm_event_fn)
 * @ev:		the event, copied
 * @ctx:	the struct printer
 *
 * Return: 0, or -1 if out of memory.
 */
int printer_queue(const struct ftm_event *ev, void *ctx)
{
	struct printer *pr = ctx;
	struct pending *p, **tmp;
	struct queue *q;

	if (ev->cpu < 0 || ev->cpu >= pr->nr_cpus) {
		errno = EINVAL;
		return -1;
	}
	q = &pr->q[ev->cpu];

	if (q->len == q->alloc) {
		if (q->head) {
			memmove(q->ev, q->ev + q->head, (q->len - q->head) * sizeof(*q->ev));
			q->len -= q->head;
			q->head = 0;
		}
		if (q->len == q->alloc) {
			q->alloc = q->alloc ? q->alloc * 2 : 1024;
			tmp = realloc(q->ev, q->alloc * sizeof(*q->ev));
			if (!tmp)
				return -1;
			q->ev = tmp;
		}
	}
	p = malloc(sizeof(*p) + ev->size);
	if (!p)
		return -1;
	p->ts = ev->ts;
	p->missed = ev->missed;
	p->size = ev->size;
	memcpy(p->data, ev->data, ev->size);
	q->ev[q->len++] = p;
	if (!pr->any || ev->ts > pr->round_max)
		pr->round_max = ev->ts;
	pr->any = true;
	return 0;
}

static void forget_prefixes(struct printer *pr)
{
	int i;

	for (i = 0; i < PREFIX_SLOTS; i++)
		pr->prefix[i].cpu = -1;
}

/*
 * The comm of each PID as trace-cmd report gets it: saved_cmdlines (at the
 * time of printing here, at the end of the recording there). Read by the
 * first line of each round of printing (print_some() asks for it,
 * print_line() does it), not in a round that prints none: the kernel saves a comm only if it can take the lock that a read
 * of saved_cmdlines holds (arch_spin_trylock(), tried again at the next
 * sched_switch of that CPU), and a consumer woken for every event would
 * otherwise read it all the time. The same text as the last time changes
 * nothing.
 */
static void load_cmdlines(struct printer *pr)
{
	char *buf, *line, *next, *comm;
	long pid;

	buf = tracefs_instance_file_read(NULL, "saved_cmdlines", NULL);
	if (!buf)
		return;
	if (pr->cmdlines && !strcmp(buf, pr->cmdlines)) {
		free(buf);
		return;
	}
	free(pr->cmdlines);
	pr->cmdlines = strdup(buf);	/* NULL: compared with nothing next time */
	/* A comm may change: the starts of lines kept may be wrong now */
	forget_prefixes(pr);
	/* "PID COMM": the comm is the rest of the line, spaces included */
	for (line = strtok_r(buf, "\n", &next); line; line = strtok_r(NULL, "\n", &next)) {
		pid = strtol(line, &comm, 10);
		if (comm != line && *comm == ' ' && comm[1])
			tep_override_comm(pr->tep, comm + 1, pid);
	}
	free(buf);
}

/*
 * Write the start of @rec's line to the printer's trace_seq: kept, or
 * rendered and kept. Of an event of unknown format (@event NULL)
 * tep_print_event() writes "[UNKNOWN EVENT]" instead: never kept.
 */
static void print_prefix(struct printer *pr, struct tep_record *rec,
			 const struct tep_event *event)
{
	struct trace_seq *s = &pr->seq;
	int pid = tep_data_pid(pr->tep, rec);
	unsigned int start = s->len;
	struct prefix *p;

	p = &pr->prefix[((unsigned int)pid * 31 + rec->cpu) % PREFIX_SLOTS];
	if (event && p->cpu == rec->cpu && p->pid == pid) {
		trace_seq_puts(s, p->text);
		return;
	}
	tep_print_event(pr->tep, s, rec, "%16s-%-5d [%03d]", TEP_PRINT_COMM, TEP_PRINT_PID,
			TEP_PRINT_CPU);
	if (event && s->len - start < PREFIX_MAX && tep_is_pid_registered(pr->tep, pid)) {
		p->pid = pid;
		p->cpu = rec->cpu;
		memcpy(p->text, s->buffer + start, s->len - start);
		p->text[s->len - start] = '\0';
	}
}

/* The line of trace-cmd report 3.1.6 (trace-read.c: trace_show_data()) */
static void print_line(struct printer *pr, struct tep_record *rec)
{
	static const char spaces[] = "                    ";	/* 20 */
	struct trace_seq *s = &pr->seq;
	struct tep_event *event;
	const char *name;
	int len;

	if (pr->cmdlines_due) {
		load_cmdlines(pr);
		pr->cmdlines_due = false;
	}
	trace_seq_reset(s);
	if (rec->missed_events > 0)
		trace_seq_printf(s, "CPU:%d [%lld EVENTS DROPPED]\n", rec->cpu,
				 (long long)rec->missed_events);
	else if (rec->missed_events < 0)
		trace_seq_printf(s, "CPU:%d [EVENTS DROPPED]\n", rec->cpu);
	event = tep_find_event_by_record(pr->tep, rec);
	print_prefix(pr, rec, event);
	tep_print_event(pr->tep, s, rec, " %6.1000d:", TEP_PRINT_TIME);
	name = event ? event->name : "(NULL)";
	/* " NAME: ", padded to 20 */
	trace_seq_putc(s, ' ');
	trace_seq_puts(s, name);
	trace_seq_puts(s, ": ");
	len = strlen(name);
	if (len < 20)
		trace_seq_puts(s, spaces + len);
	tep_print_event(pr->tep, s, rec, "%s", TEP_PRINT_INFO);
	if (s->len && s->buffer[s->len - 1] == '\n')
		s->len--;
	trace_seq_putc(s, '\n');
	fwrite(s->buffer, 1, s->len, pr->out);
}

static void print_record(struct printer *pr, int cpu, struct pending *p)
{
	struct tep_record rec = {
		.ts = p->ts, .cpu = cpu, .size = p->size, .data = p->data,
		.missed_events = p->missed,
	};

	print_line(pr, &rec);
}

/* Print, in time order, the queued events up to @limit (all if @all) */
static void print_queued(struct printer *pr, bool all, unsigned long long limit)
{
	struct pending *p;
	struct queue *q;
	int cpu, best;

	for (;;) {
		best = -1;
		for (cpu = 0; cpu < pr->nr_cpus; cpu++) {
			q = &pr->q[cpu];
			if (q->head == q->len)
				continue;
			if (best < 0 || q->ev[q->head]->ts < pr->q[best].ev[pr->q[best].head]->ts)
				best = cpu;
		}
		if (best < 0)
			break;
		q = &pr->q[best];
		p = q->ev[q->head];
		if (!all && p->ts > limit)
			break;
		print_record(pr, best, p);
		free(p);
		q->head++;
		if (q->head == q->len)
			q->head = q->len = 0;
	}
}

/*
 * The function_graph tracer's lines as trace-cmd report prints them:
 * libtracecmd's graph printer puts a leaf function's entry and exit on one
 * line ("func();" with its duration), deciding it by looking at the next
 * event of the trace (tracecmd_peek_next_data() on the thread's current
 * input handle). Its handlers are registered on the tep of an input handle
 * (tracecmd_alloc_fd()), never on one a program made itself. So here, as
 * trace-cmd stream does, libtracecmd reads a trace.dat file's headers
 * (tracedat_headers(), in a memfd) and then each CPU's data as from a pipe
 * (tracecmd_make_pipe()): a memfd per CPU, to which each piece of events
 * the ring-buffer hands over (struct ftm_piece, a sub-buffer of its own) is
 * appended. A memfd, not a pipe: it never blocks nor fills, and a read at
 * its end just finds nothing yet, as libtracecmd's reads of a non-blocking
 * pipe do. What libtracecmd has read is given back to memory as it goes.
 *
 * The next event of the trace is known once it is at or below the limit of
 * printer_round(): every event up to the limit has been read, from every
 * CPU. So an event is printed when the one after it (on any CPU) is at or
 * below the limit too, or at the end; it is held until then. Its line
 * then is the one trace-cmd report prints of a file of the same events.
 *
 * libtracecmd is loaded with dlopen(): a system without it (the arm64
 * guest: Debian's libtracecmd1 is not Multi-Arch: same) still runs the
 * tool, which then prints each event from its format.
 */

/**
 * print_graph_available - whether printer_new_graph() can work here
 *
 * Loads libtracecmd (libtracecmd.so.1) the first time; it stays loaded.
 *
 * Return: true if it could be loaded, with every call the graph printer uses.
 */
bool print_graph_available(void)
{
	void *dl;

	if (tcl.tried)
		return tcl.ok;
	tcl.tried = true;
	dl = dlopen("libtracecmd.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		return false;
	tcl.alloc_fd = dlsym(dl, "tracecmd_alloc_fd");
	tcl.read_headers = dlsym(dl, "tracecmd_read_headers");
	tcl.make_pipe = dlsym(dl, "tracecmd_make_pipe");
	tcl.get_tep = dlsym(dl, "tracecmd_get_tep");
	tcl.peek_next = dlsym(dl, "tracecmd_peek_next_data");
	tcl.read_data = dlsym(dl, "tracecmd_read_data");
	tcl.free_record = dlsym(dl, "tracecmd_free_record");
	tcl.close = dlsym(dl, "tracecmd_close");
	tcl.set_loglevel = dlsym(dl, "tracecmd_set_loglevel");
	tcl.ok = tcl.alloc_fd && tcl.read_headers && tcl.make_pipe && tcl.get_tep &&
		 tcl.peek_next && tcl.read_data && tcl.free_record && tcl.close &&
		 tcl.set_loglevel && dlsym(dl, "tracecmd_curr_thread_handle");
	if (!tcl.ok)
		dlclose(dl);
	else
		tcl.dl = dl;
	return tcl.ok;
}

/**
 * printer_queue_piece - queue the events of a piece for printing (a ftm_piece_fn)
 * @piece:	the events, framed as a sub-buffer; copied
 * @ctx:	the struct printer, made by printer_new_graph()
 *
 * Return: 0, or -1 with errno set.
 */
int printer_queue_piece(const struct ftm_piece *piece, void *ctx)
{
	struct printer *pr = ctx;
	int cpu = piece->cpu;

	if (cpu < 0 || cpu >= pr->nr_cpus || piece->size != pr->subbuf_size) {
		errno = EINVAL;
		return -1;
	}
	if (pwrite(pr->cpu_fd[cpu], piece->subbuf, piece->size, pr->cpu_end[cpu]) !=
	    (ssize_t)piece->size) {
		errno = errno ? errno : ENOSPC;
		return -1;
	}
	pr->cpu_end[cpu] += piece->size;
	if (!pr->any || piece->last_ts > pr->round_max)
		pr->round_max = piece->last_ts;
	pr->any = true;
	return 0;
}

/*
 * Print the held event, @next the event after it in the trace.
 *
 * libtracecmd's function_graph handler prints an entry and the next event
 * of the trace on one line ("func();", a leaf call) when that event is the
 * exit of the same function by the same task, and takes the exit in: it
 * is never printed on its own. trace-cmd report (3.1.6, and 3.4 still)
 * does so even when the exit is the first event after a loss: the entry
 * and the exit of two different calls, events apart, make one line with
 * their difference as its duration, and the loss, which is reported with
 * the exit, is not shown at all. So when @next comes after a loss, the
 * handler peeks through a handle with no events (it finds the handle in
 * tracecmd_curr_thread_handle, which libtracecmd sets in each peek): the
 * entry prints as "func() {", and the exit then on its own line, after
 * the loss. Every loss is thus shown where it happened; it is the one
 * place where the lines are not trace-cmd report's.
 */
static void print_held(struct printer *pr, const struct tep_record *next)
{
	struct tracecmd_input **curr = NULL;

	/* The thread's own copy of the variable: looked up when needed */
	if (next && next->missed_events)
		curr = dlsym(tcl.dl, "tracecmd_curr_thread_handle");
	if (curr)
		*curr = pr->no_events;
	print_line(pr, pr->held);
	if (curr)
		*curr = pr->handle;
	tcl.free_record(pr->held);
	pr->held = NULL;
}

/* Print, in time order, what libtracecmd has read up to @limit (all if @all) */
static void print_graph(struct printer *pr, bool all, unsigned long long limit)
{
	struct tep_record *next;
	off_t done;
	int cpu;

	for (;;) {
		if (!pr->held) {
			next = tcl.peek_next(pr->handle, &cpu);
			if (!next || (!all && next->ts > limit))
				break;
			pr->held = tcl.read_data(pr->handle, cpu);
			if (!pr->held)
				break;
		}
		/* Its line may depend on the next event: known, or the end */
		next = tcl.peek_next(pr->handle, &cpu);
		if (!all && (!next || next->ts > limit))
			break;
		print_held(pr, next);
	}
	/* What libtracecmd read is in its own copies by now */
	for (cpu = 0; cpu < pr->nr_cpus; cpu++) {
		done = lseek(pr->cpu_fd[cpu], 0, SEEK_CUR);
		if (done > 0)
			fallocate(pr->cpu_fd[cpu], FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
				  done);
	}
}

/* Print the events waiting, by whichever printer this is */
static void print_some(struct printer *pr, bool all, unsigned long long limit)
{
	pr->cmdlines_due = true;
	if (pr->handle)
		print_graph(pr, all, limit);
	else
		print_queued(pr, all, limit);
	if ((fflush(pr->out) || ferror(pr->out)) && !pr->out_errno)
		pr->out_errno = errno ? errno : EIO;
}

static void free_graph(struct printer *pr)
{
	int cpu, in;

	if (pr->held)
		tcl.free_record(pr->held);
	/*
	 * tracecmd_close() of a handle made to read pipes (libtracecmd 1.3)
	 * miscounts its pages, and warns "N pages still allocated" for each
	 * CPU: quiet (libtracecmd's default level is warnings). It also
	 * closes descriptor 0 for each CPU (tracecmd_make_pipe() leaves its
	 * compress.fd at 0): stdin is kept.
	 */
	in = dup(STDIN_FILENO);
	tcl.set_loglevel(TEP_LOG_NONE);
	if (pr->handle)
		tcl.close(pr->handle);
	if (pr->no_events)
		tcl.close(pr->no_events);
	tcl.set_loglevel(TEP_LOG_WARNING);
	if (in >= 0) {
		dup2(in, STDIN_FILENO);
		close(in);
	}
	for (cpu = 0; cpu < pr->nr_cpus; cpu++)
		if (pr->cpu_fd[cpu] >= 0)
			close(pr->cpu_fd[cpu]);
	pr->handle = NULL;
	pr->no_events = NULL;
	pr->tep = NULL;
}

/* A printer without its events' source: the part both kinds share */
static struct printer *printer_alloc(int nr_cpus, FILE *out)
{
	struct printer *pr;

	pr = calloc(1, sizeof(*pr));
	if (!pr)
		return NULL;
	pr->prefix = malloc(PREFIX_SLOTS * sizeof(*pr->prefix));
	if (!pr->prefix) {
		free(pr);
		return NULL;
	}
	forget_prefixes(pr);
	pr->out = out;
	pr->nr_cpus = nr_cpus;
	trace_seq_init(&pr->seq);
	return pr;
}

/**
 * printer_new_graph - a printer that prints through libtracecmd
 * @events:	the events whose formats go into its headers (ftrace's always do)
 * @nr_events:	how many
 * @nr_cpus:	CPUs 0 to @nr_cpus - 1
 * @subbuf_size: the size of the sub-buffers, as of the pieces
 * @out:	where to print
 *
 * Its events come in pieces (printer_queue_piece()), and print as
 * trace-cmd report prints them, the function_graph tracer's included.
 *
 * Return: the printer, or NULL with errno set (ENOENT: no libtracecmd).
 */
struct printer *printer_new_graph(const struct tracedat_event *events, int nr_events,
				  int nr_cpus, size_t subbuf_size, FILE *out)
{
	struct printer *pr;
	FILE *hdr = NULL;
	int fd, cpu, err;

	if (!print_graph_available()) {
		errno = ENOENT;
		return NULL;
	}
	pr = printer_alloc(nr_cpus, out);
	if (!pr)
		return NULL;
	pr->subbuf_size = subbuf_size;
	pr->cpu_fd = malloc(nr_cpus * sizeof(*pr->cpu_fd));
	pr->cpu_end = calloc(nr_cpus, sizeof(*pr->cpu_end));
	if (!pr->cpu_fd || !pr->cpu_end)
		goto fail;
	for (cpu = 0; cpu < nr_cpus; cpu++)
		pr->cpu_fd[cpu] = -1;

	/* The headers; libtracecmd keeps the descriptor, and closes it */
	fd = memfd_create("ftmmap-headers", MFD_CLOEXEC);
	if (fd < 0)
		goto fail;
	hdr = fdopen(fd, "w+");
	if (!hdr) {
		close(fd);
		goto fail;
	}
	if (tracedat_headers(hdr, subbuf_size, events, nr_events))
		goto fail;
	/*
	 * The handle with no CPUs of print_held(): tracecmd_alloc_fd() reads
	 * the file's first bytes only (magic, version, sizes). Made first, as
	 * the descriptors share their offset: the printing handle's then
	 * starts again from 0, and this one reads no more.
	 */
	fd = dup(fd);
	if (fd < 0 || lseek(fd, 0, SEEK_SET)) {
		if (fd >= 0)
			close(fd);
		goto fail;
	}
	pr->no_events = tcl.alloc_fd(fd, TRACECMD_FL_LOAD_NO_PLUGINS);
	if (!pr->no_events) {
		close(fd);
		errno = EINVAL;
		goto fail;
	}
	fd = dup(fileno(hdr));
	if (fd < 0 || lseek(fd, 0, SEEK_SET)) {
		if (fd >= 0)
			close(fd);
		goto fail;
	}
	pr->handle = tcl.alloc_fd(fd, 0);
	if (!pr->handle) {
		close(fd);
		errno = EINVAL;
		goto fail;
	}
	if (tcl.read_headers(pr->handle, TRACECMD_FILE_PRINTK) < 0) {
		errno = EINVAL;
		goto fail;
	}
	pr->tep = tcl.get_tep(pr->handle);

	for (cpu = 0; cpu < nr_cpus; cpu++) {
		pr->cpu_fd[cpu] = memfd_create("ftmmap-cpu", MFD_CLOEXEC);
		if (pr->cpu_fd[cpu] < 0)
			goto fail;
		if (tcl.make_pipe(pr->handle, cpu, pr->cpu_fd[cpu], nr_cpus) < 0) {
			errno = ENOMEM;
			goto fail;
		}
	}
	fclose(hdr);
	return pr;

fail:
	err = errno ? errno : EINVAL;
	if (hdr)
		fclose(hdr);
	printer_free(pr);
	errno = err;
	return NULL;
}

/**
 * printer_new - a printer of the events of these systems
 * @systems:	the event systems to parse the formats of, NULL-terminated
 * @nr_cpus:	CPUs 0 to @nr_cpus - 1
 * @out:	where to print
 *
 * Reads the formats, kallsyms and printk formats, as trace-cmd report
 * reads them from a file.
 *
 * Return: the printer, or NULL with errno set.
 */
struct printer *printer_new(const char * const *systems, int nr_cpus, FILE *out)
{
	struct printer *pr;

	pr = printer_alloc(nr_cpus, out);
	if (!pr)
		return NULL;
	pr->q = calloc(nr_cpus, sizeof(*pr->q));
	/*
	 * libtracefs reads kallsyms, printk_formats and the page header
	 * into the handle along with the formats: reading them again
	 * doubled the tool's start (a Debian kernel's 5 MB of kallsyms,
	 * about 450 million instructions each time in tep_parse_kallsyms).
	 */
	pr->tep = tracefs_local_events_system(NULL, systems);
	if (!pr->q || !pr->tep) {
		printer_free(pr);
		return NULL;
	}

	/* None found is not an error: the events then print from their formats */
	pr->plugins = tep_load_plugins(pr->tep);
	return pr;
}

/**
 * printer_round - print what is safe to print after a round of reads
 * @pr:	the printer
 *
 * A round reads every CPU's buffer to its end, quiet CPUs too. An event
 * that no round read yet was written after the last round read its CPU,
 * so it is newer than every event read before that round began: once
 * round N is done, every event read up to round N - 1 can be printed, up
 * to the newest of them. (An event read in round N may be older than one
 * of round N - 1: it was written on its CPU while the round read the
 * others.) A line thus waits one more round after it was read; the caller
 * makes rounds come often enough (ppoll() timeout) while lines wait.
 */
void printer_round(struct printer *pr)
{
	if (pr->have_limit)
		print_some(pr, false, pr->limit);
	pr->raised = false;
	if (pr->any && (!pr->have_limit || pr->round_max > pr->limit)) {
		pr->limit = pr->round_max;
		pr->have_limit = true;
		pr->raised = true;
	}
	pr->any = false;
}

/**
 * printer_pending - whether events wait for a round to be printed
 * @pr:	the printer
 *
 * Return: true if some event is queued that a round, even with no new
 * event, can print.
 */
bool printer_pending(const struct printer *pr)
{
	int cpu;

	/*
	 * The graph printer holds the last event until the next is known: a
	 * round with no new event prints it no more than the one before, so
	 * it waits for a round only after one that raised the limit.
	 */
	if (pr->handle)
		return pr->raised && (pr->held || tcl.peek_next(pr->handle, &cpu));
	for (cpu = 0; cpu < pr->nr_cpus; cpu++)
		if (pr->q[cpu].head != pr->q[cpu].len)
			return true;
	return false;
}

/**
 * printer_flush - print every queued event
 * @pr:	the printer
 */
void printer_flush(struct printer *pr)
{
	print_some(pr, true, 0);
}

/**
 * printer_error - the first error in writing the events out
 * @pr:	the printer
 *
 * Return: its errno (EPIPE: the reader went away), or 0.
 */
int printer_error(const struct printer *pr)
{
	return pr->out_errno;
}

/**
 * printer_free - free a printer and the events it did not print
 * @pr:	the printer, or NULL
 */
void printer_free(struct printer *pr)
{
	struct queue *q;
	int cpu;

	if (!pr)
		return;
	if (pr->handle || pr->no_events)
		free_graph(pr);
	for (cpu = 0; pr->q && cpu < pr->nr_cpus; cpu++) {
		q = &pr->q[cpu];
		while (q->head < q->len)
			free(q->ev[q->head++]);
		free(q->ev);
	}
	free(pr->q);
	free(pr->cpu_fd);
	free(pr->cpu_end);
	free(pr->prefix);
	free(pr->cmdlines);
	if (pr->plugins)
		tep_unload_plugins(pr->plugins, pr->tep);
	if (pr->tep && !pr->handle)
		tep_free(pr->tep);
	trace_seq_destroy(&pr->seq);
	free(pr);
}
