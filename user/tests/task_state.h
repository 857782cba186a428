/* SPDX-License-Identifier: GPL-2.0 */
/* Whether a thread of this process went to sleep, from /proc */
#ifndef TASK_STATE_H
#define TASK_STATE_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/types.h>

/* The state letter of thread @tid (R, S, D...), or 0 */
static inline char task_state(pid_t tid)
{
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	/* "tid (comm) S ...": the comm may hold spaces and parentheses */
	p = p ? strrchr(buf, ')') : NULL;
	return p && p[1] == ' ' ? p[2] : 0;
}

/*
 * Whether thread @tid is asleep (S) within @ms milliseconds: for a test
 * that must act only once a call it started waits
 */
static inline bool task_sleeps(pid_t tid, int ms)
{
	int i;

	for (i = 0; i < ms; i++) {
		if (task_state(tid) == 'S')
			return true;
		usleep(1000);
	}
	return task_state(tid) == 'S';
}

#endif /* TASK_STATE_H */
