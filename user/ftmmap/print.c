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
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

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

struct printer {
	struct tep_handle *tep;
	FILE		*out;
	struct queue	*q;
	int		nr_cpus;
	bool		any;		/* this round queued events */
	unsigned long long round_max;	/* the newest time stamp of this round */
	bool		have_limit;
	unsigned long long limit;	/* round_max of the last round */
	struct trace_seq seq;
	struct tep_plugin_list *plugins;
	int		out_errno;	/* the first write error on out */
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

/*
 * The comm of each PID as trace-cmd report gets it: saved_cmdlines (at the
 * time of printing here, at the end of the recording there).
 */
static void load_cmdlines(struct tep_handle *tep)
{
	char *buf, *line, *next, *comm;
	long pid;

	buf = tracefs_instance_file_read(NULL, "saved_cmdlines", NULL);
	if (!buf)
		return;
	/* "PID COMM": the comm is the rest of the line, spaces included */
	for (line = strtok_r(buf, "\n", &next); line; line = strtok_r(NULL, "\n", &next)) {
		pid = strtol(line, &comm, 10);
		if (comm != line && *comm == ' ' && comm[1])
			tep_override_comm(tep, comm + 1, pid);
	}
	free(buf);
}

/* The line of trace-cmd report 3.1.6 (trace-read.c: trace_show_data()) */
static void print_line(struct tep_handle *tep, struct trace_seq *s, FILE *out,
		       struct tep_record *rec)
{
	static const char spaces[] = "                    ";	/* 20 */
	struct tep_event *event;
	const char *name;
	int len;

	trace_seq_reset(s);
	if (rec->missed_events > 0)
		trace_seq_printf(s, "CPU:%d [%lld EVENTS DROPPED]\n", rec->cpu,
				 (long long)rec->missed_events);
	else if (rec->missed_events < 0)
		trace_seq_printf(s, "CPU:%d [EVENTS DROPPED]\n", rec->cpu);
	tep_print_event(tep, s, rec, "%16s-%-5d [%03d]", TEP_PRINT_COMM, TEP_PRINT_PID,
			TEP_PRINT_CPU);
	tep_print_event(tep, s, rec, " %6.1000d:", TEP_PRINT_TIME);
	event = tep_find_event_by_record(tep, rec);
	name = event ? event->name : "(NULL)";
	trace_seq_printf(s, " %s: ", name);
	len = strlen(name);
	if (len < 20)
		trace_seq_printf(s, "%.*s", 20 - len, spaces);
	tep_print_event(tep, s, rec, "%s", TEP_PRINT_INFO);
	if (s->len && s->buffer[s->len - 1] == '\n')
		s->len--;
	trace_seq_terminate(s);
	fprintf(out, "%s\n", s->buffer);
}

static void print_record(struct printer *pr, int cpu, struct pending *p)
{
	struct tep_record rec = {
		.ts = p->ts, .cpu = cpu, .size = p->size, .data = p->data,
		.missed_events = p->missed,
	};

	print_line(pr->tep, &pr->seq, pr->out, &rec);
}

/* Print, in time order, the queued events up to @limit (all if @all) */
static void print_queued(struct printer *pr, bool all, unsigned long long limit)
{
	struct pending *p;
	struct queue *q;
	int cpu, best;

	load_cmdlines(pr->tep);
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
	if ((fflush(pr->out) || ferror(pr->out)) && !pr->out_errno)
		pr->out_errno = errno ? errno : EIO;
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
	size_t size;
	char *buf;

	pr = calloc(1, sizeof(*pr));
	if (!pr)
		return NULL;
	pr->out = out;
	pr->nr_cpus = nr_cpus;
	trace_seq_init(&pr->seq);
	pr->q = calloc(nr_cpus, sizeof(*pr->q));
	pr->tep = tracefs_local_events_system(NULL, systems);
	if (!pr->q || !pr->tep) {
		printer_free(pr);
		return NULL;
	}

	buf = tracefs_instance_file_read(NULL, "printk_formats", NULL);
	if (buf)
		tep_parse_printk_formats(pr->tep, buf);
	free(buf);
	buf = ftm_read_file("/proc/kallsyms", &size);
	if (buf)
		tep_parse_kallsyms(pr->tep, buf);
	free(buf);

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
		print_queued(pr, false, pr->limit);
	if (pr->any && (!pr->have_limit || pr->round_max > pr->limit)) {
		pr->limit = pr->round_max;
		pr->have_limit = true;
	}
	pr->any = false;
}

/**
 * printer_pending - whether events wait to be printed
 * @pr:	the printer
 *
 * Return: true if some event is queued.
 */
bool printer_pending(const struct printer *pr)
{
	int cpu;

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
	print_queued(pr, true, 0);
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
	for (cpu = 0; pr->q && cpu < pr->nr_cpus; cpu++) {
		q = &pr->q[cpu];
		while (q->head < q->len)
			free(q->ev[q->head++]);
		free(q->ev);
	}
	free(pr->q);
	if (pr->plugins)
		tep_unload_plugins(pr->plugins, pr->tep);
	if (pr->tep)
		tep_free(pr->tep);
	trace_seq_destroy(&pr->seq);
	free(pr);
}

/*
 * A finished trace.dat file printed through libtracecmd, as trace-cmd
 * report prints it. libtracecmd's function_graph handlers put a leaf
 * function's entry and exit on one line ("func();" with its duration):
 * they look ahead in the file for the exit (tracecmd_peek_next_data() on
 * the input handle that tracecmd_read_data() last used), which events
 * read from the ring-buffer do not come with. libtracecmd is loaded with
 * dlopen(): a system without it (the arm64 guest: Debian's libtracecmd1 is
 * not Multi-Arch: same) still runs the tool, and prints each event.
 */
struct tracecmd_input;

/* libtracecmd's calls, once loaded: open is NULL if it cannot be */
static struct {
	bool tried;
	struct tracecmd_input *(*open)(const char *file, int flags);
	struct tep_handle *(*get_tep)(struct tracecmd_input *handle);
	struct tep_record *(*read_next)(struct tracecmd_input *handle, int *cpu);
	void (*free_record)(struct tep_record *record);
	void (*close)(struct tracecmd_input *handle);
} tcl;

/**
 * print_file_available - whether print_file() can print here
 *
 * Loads libtracecmd (libtracecmd.so.1) the first time; it stays loaded.
 *
 * Return: true if it could be loaded, with every call print_file() uses.
 */
bool print_file_available(void)
{
	void *dl;

	if (tcl.tried)
		return tcl.open != NULL;
	tcl.tried = true;
	dl = dlopen("libtracecmd.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		return false;
	tcl.get_tep = dlsym(dl, "tracecmd_get_tep");
	tcl.read_next = dlsym(dl, "tracecmd_read_next_data");
	tcl.free_record = dlsym(dl, "tracecmd_free_record");
	tcl.close = dlsym(dl, "tracecmd_close");
	if (tcl.get_tep && tcl.read_next && tcl.free_record && tcl.close)
		tcl.open = dlsym(dl, "tracecmd_open");
	if (!tcl.open)
		dlclose(dl);
	return tcl.open != NULL;
}

/**
 * print_file - print the events of a trace.dat file as trace-cmd report
 * @file:	the file
 * @out:	where to print
 *
 * Return: 0, or -1 with errno set (ENOENT: no libtracecmd; EIO: the file
 * does not open, or @out cannot be written).
 */
int print_file(const char *file, FILE *out)
{
	struct tracecmd_input *handle;
	struct tep_record *rec;
	struct tep_handle *tep;
	struct trace_seq s;
	int cpu;

	if (!print_file_available()) {
		errno = ENOENT;
		return -1;
	}
	handle = tcl.open(file, 0);
	if (!handle) {
		errno = EIO;
		return -1;
	}
	tep = tcl.get_tep(handle);
	trace_seq_init(&s);
	while ((rec = tcl.read_next(handle, &cpu))) {
		print_line(tep, &s, out, rec);
		tcl.free_record(rec);
	}
	trace_seq_destroy(&s);
	tcl.close(handle);
	if (fflush(out) || ferror(out)) {
		errno = errno ? errno : EIO;
		return -1;
	}
	return 0;
}
