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
 * or, for a finished trace.dat file (through libtracecmd, if present):
 *
 *   print_file(file, stdout);
 */
#ifndef FTMMAP_PRINT_H
#define FTMMAP_PRINT_H

#include <stdbool.h>
#include <stdio.h>

#include "ftmmap.h"

struct printer;

struct printer *printer_new(const char * const *systems, int nr_cpus, FILE *out);
int printer_queue(const struct ftm_event *ev, void *printer);
void printer_round(struct printer *pr);
bool printer_pending(const struct printer *pr);
void printer_flush(struct printer *pr);
int printer_error(const struct printer *pr);
void printer_free(struct printer *pr);

bool print_file_available(void);
int print_file(const char *file, FILE *out);

#endif /* FTMMAP_PRINT_H */
