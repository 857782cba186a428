/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Print events as trace-cmd report (3.1.6) does, in time order across CPUs
 *
 *   pr = printer_new(systems, nr_cpus);
 *   ftm_buf_consume(b, printer_queue, NULL, pr);   (every CPU: one round)
 *   printer_round(pr);                             (prints what is safe)
 *   ...
 *   printer_flush(pr);                             (prints the rest)
 *
 * or, through libtracecmd (if present), which prints the function_graph
 * tracer's leaf calls on one line as trace-cmd report does:
 *
 *   pr = printer_new_graph(events, nr_events, nr_cpus, subbuf_size, stdout);
 *   ftm_buf_set_piece_fn(b, printer_queue_piece);  (every CPU)
 *   ftm_buf_consume(b, NULL, NULL, pr);            (then as above)
 */
#ifndef FTMMAP_PRINT_H
#define FTMMAP_PRINT_H

#include <stdbool.h>
#include <stdio.h>

#include "ftmmap.h"
#include "tracedat.h"

struct printer;

struct printer *printer_new(const char * const *systems, int nr_cpus, FILE *out);
int printer_queue(const struct ftm_event *ev, void *printer);
void printer_round(struct printer *pr);
bool printer_pending(const struct printer *pr);
void printer_flush(struct printer *pr);
int printer_error(const struct printer *pr);
void printer_free(struct printer *pr);

bool print_graph_available(void);
struct printer *printer_new_graph(const struct tracedat_event *events, int nr_events,
				  int nr_cpus, size_t subbuf_size, FILE *out);
int printer_queue_piece(const struct ftm_piece *piece, void *ctx);

#endif /* FTMMAP_PRINT_H */
