// SPDX-License-Identifier: GPL-2.0
/*
 * Print events as trace-cmd report (3.1.6) does, in time order across CPUs
 *
 * The line is trace-cmd's (tracecmd/trace-read.c): "%16s-%-5d [%03d]" with
 * the comm, PID and CPU, " %6.1000d:" with the time, the event name padded
 * to 20 columns, then libtraceevent's rendering of the event from the
 * kernel's own format file (tep_print_event). trace-cmd report also loads
 * libtraceevent's plugins; of those, the sched_switch plugin changes the
 * lines of the events traced by default, so its output is reproduced here
 * with tep event handlers (a static program cannot load plugins).
 *
 * The events of each CPU are queued in the order they were read, and the
 * queues merged by time stamp, the lowest CPU first on a tie, as trace-cmd
 * merges the CPUs of a file.
 */
#define _GNU_SOURCE
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
static void print_record(struct printer *pr, int cpu, struct pending *p)
{
	static const char spaces[] = "                    ";	/* 20 */
	struct tep_record rec = {
		.ts = p->ts, .cpu = cpu, .size = p->size, .data = p->data,
		.missed_events = p->missed,
	};
	struct trace_seq *s = &pr->seq;
	struct tep_event *event;
	const char *name;
	int len;

	trace_seq_reset(s);
	if (p->missed > 0)
		trace_seq_printf(s, "CPU:%d [%lld EVENTS DROPPED]\n", cpu, p->missed);
	else if (p->missed < 0)
		trace_seq_printf(s, "CPU:%d [EVENTS DROPPED]\n", cpu);
	tep_print_event(pr->tep, s, &rec, "%16s-%-5d [%03d]", TEP_PRINT_COMM, TEP_PRINT_PID,
			TEP_PRINT_CPU);
	tep_print_event(pr->tep, s, &rec, " %6.1000d:", TEP_PRINT_TIME);
	event = tep_find_event_by_record(pr->tep, &rec);
	name = event ? event->name : "(NULL)";
	trace_seq_printf(s, " %s: ", name);
	len = strlen(name);
	if (len < 20)
		trace_seq_printf(s, "%.*s", 20 - len, spaces);
	tep_print_event(pr->tep, s, &rec, "%s", TEP_PRINT_INFO);
	if (s->len && s->buffer[s->len - 1] == '\n')
		s->len--;
	trace_seq_terminate(s);
	fprintf(pr->out, "%s\n", s->buffer);
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
	fflush(pr->out);
}

/* trace-cmd report's sched_switch and sched_wakeup output (libtraceevent's plugin) */
static void write_state(struct trace_seq *s, unsigned long long val)
{
	static const char states[] = "SDTtZXxW";
	bool found = false;
	unsigned int i;

	for (i = 0; i < sizeof(states) - 1; i++) {
		if (!(val & (1ULL << i)))
			continue;
		if (found)
			trace_seq_putc(s, '|');
		found = true;
		trace_seq_putc(s, states[i]);
	}
	if (!found)
		trace_seq_putc(s, 'R');
}

static void write_comm(struct trace_seq *s, struct tep_event *event, struct tep_record *rec,
		       const char *field_name, unsigned long long pid)
{
	struct tep_format_field *field = tep_find_any_field(event, field_name);
	int len;

	if (!field)
		return;
	len = s->len;
	trace_seq_printf(s, "%.*s", field->size, (char *)rec->data + field->offset);
	trace_seq_terminate(s);
	/* As the plugin does: the comm of a PID that saved_cmdlines lacks */
	tep_register_comm(event->tep, &s->buffer[len], pid);
	trace_seq_putc(s, ':');
}

static int sched_wakeup_handler(struct trace_seq *s, struct tep_record *rec,
				struct tep_event *event, void *ctx)
{
	unsigned long long val;

	(void)ctx;
	if (tep_get_field_val(s, event, "pid", rec, &val, 1))
		return trace_seq_putc(s, '!');
	write_comm(s, event, rec, "comm", val);
	trace_seq_printf(s, "%lld", val);
	if (!tep_get_field_val(s, event, "prio", rec, &val, 1))
		trace_seq_printf(s, " [%lld]", val);
	if (!tep_get_field_val(s, event, "success", rec, &val, 0))
		trace_seq_printf(s, " success=%lld", val);
	if (!tep_get_field_val(s, event, "target_cpu", rec, &val, 0))
		trace_seq_printf(s, " CPU:%03llu", val);
	return 0;
}

static int sched_switch_handler(struct trace_seq *s, struct tep_record *rec,
				struct tep_event *event, void *ctx)
{
	unsigned long long val;

	(void)ctx;
	if (tep_get_field_val(s, event, "prev_pid", rec, &val, 1))
		return trace_seq_putc(s, '!');
	write_comm(s, event, rec, "prev_comm", val);
	trace_seq_printf(s, "%lld ", val);
	if (!tep_get_field_val(s, event, "prev_prio", rec, &val, 1))
		trace_seq_printf(s, "[%d] ", (int)val);
	if (!tep_get_field_val(s, event, "prev_state", rec, &val, 1))
		write_state(s, val);
	trace_seq_puts(s, " ==> ");
	if (tep_get_field_val(s, event, "next_pid", rec, &val, 1))
		return trace_seq_putc(s, '!');
	write_comm(s, event, rec, "next_comm", val);
	trace_seq_printf(s, "%lld", val);
	if (!tep_get_field_val(s, event, "next_prio", rec, &val, 1))
		trace_seq_printf(s, " [%d]", (int)val);
	return 0;
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

	tep_register_event_handler(pr->tep, -1, "sched", "sched_switch", sched_switch_handler,
				   NULL);
	tep_register_event_handler(pr->tep, -1, "sched", "sched_wakeup", sched_wakeup_handler,
				   NULL);
	tep_register_event_handler(pr->tep, -1, "sched", "sched_wakeup_new",
				   sched_wakeup_handler, NULL);
	return pr;
}

/**
 * printer_round - print what is safe to print after a round of reads
 * @pr:	the printer
 *
 * An event read in this round may be older than one read in the last
 * round (it was written while the buffers were being read), but not older
 * than the newest event of the round before that, which was read before
 * this round began: print up to that one.
 */
void printer_round(struct printer *pr)
{
	if (pr->have_limit)
		print_queued(pr, false, pr->limit);
	if (pr->any) {
		pr->limit = pr->round_max;
		pr->have_limit = true;
	}
	pr->any = false;
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
	if (pr->tep)
		tep_free(pr->tep);
	trace_seq_destroy(&pr->seq);
	free(pr);
}
