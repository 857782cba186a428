/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tracedat.h - write a trace.dat file, version 6 of the trace-cmd format
 *
 *   t = tracedat_open(path, instance, nr_cpus, subbuf_size);
 *   tracedat_add_subbuf(cpu, subbuf, size, t);   (as a ftm_subbuf_fn)
 *   tracedat_error(t);                           (the disk is full: stop)
 *   tracedat_finish(t, events, nr_events);
 *
 * or the headers alone, for libtracecmd to read (tracedat_headers()).
 *
 * The sub-buffers are kept in one unlinked file per CPU next to the output
 * until tracedat_finish() writes the headers and then copies them.
 */
#ifndef TRACEDAT_H
#define TRACEDAT_H

#include <stddef.h>
#include <stdio.h>

struct tracefs_instance;
struct tracedat;

/* An event whose format goes into the file */
struct tracedat_event {
	const char	*system;
	const char	*name;
};

struct tracedat *tracedat_open(const char *path, struct tracefs_instance *instance,
			       int nr_cpus, size_t subbuf_size);
int tracedat_add_subbuf(int cpu, const void *subbuf, size_t size, void *t);
int tracedat_error(const struct tracedat *t);
int tracedat_finish(struct tracedat *t, const struct tracedat_event *events, int nr_events);
void tracedat_abort(struct tracedat *t);
int tracedat_headers(FILE *out, size_t subbuf_size, const struct tracedat_event *events,
		     int nr_events);

#endif /* TRACEDAT_H */
