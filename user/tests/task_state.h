/* SPDX-License-Identifier: GPL-2.0 */
/*
 * For the tests whose thread makes a call that waits: whether it went to
 * sleep (from /proc), and its end within a bound once woken
 */
#ifndef TASK_STATE_H
#define TASK_STATE_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/types.h>

#include "ms_clock.h"

/* The state letter (R, S, D, T...) in the stat file at @path, or 0 */
static inline char stat_state(const char *path)
{
	char buf[512], *p;
	FILE *f;

	f = fopen(path, "r");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	/* "tid (comm) S ...": the comm may hold spaces and parentheses */
	p = p ? strrchr(buf, ')') : NULL;
	return p && p[1] == ' ' ? p[2] : 0;
}

/* The stat file of thread @tid of this process, or of process @tid */
static inline void stat_path(char *path, size_t size, pid_t tid, bool process)
{
	if (process)
		snprintf(path, size, "/proc/%d/stat", (int)tid);
	else
		snprintf(path, size, "/proc/self/task/%d/stat", (int)tid);
}

/*
 * Whether the stat file at @path says asleep (S) within @ms milliseconds:
 * for a test that must act only once a call it started waits. Here and in
 * thread_join_within() the test does not sleep (spin_ms()): while a test
 * module holds a CPU with interrupts off, a sleep's wake-up may be stuck.
 */
static inline bool stat_sleeps(const char *path, int ms)
{
	long long t0 = now_ms();

	while (now_ms() - t0 < ms) {
		if (stat_state(path) == 'S')
			return true;
		spin_ms(1);
	}
	return stat_state(path) == 'S';
}

/* The same, of thread @tid of this process */
static inline bool task_sleeps(pid_t tid, int ms)
{
	char path[64];

	stat_path(path, sizeof(path), tid, false);
	return stat_sleeps(path, ms);
}

/* The same, of process @pid (its main thread) */
static inline bool process_sleeps(pid_t pid, int ms)
{
	char path[64];

	stat_path(path, sizeof(path), pid, true);
	return stat_sleeps(path, ms);
}

/*
 * Wait up to @bound_ms for @thread to set *@done (with a release store),
 * then join it: the milliseconds it took, or -1 if it had not, and then
 * SIGUSR1, whose handler the test installed without SA_RESTART, ended
 * its call so that the test ends either way
 */
static inline long long thread_join_within(pthread_t thread, bool *done,
					   int bound_ms)
{
	long long t0 = now_ms(), took = -1;

	while (!__atomic_load_n(done, __ATOMIC_ACQUIRE) && now_ms() - t0 < bound_ms)
		spin_ms(1);
	if (__atomic_load_n(done, __ATOMIC_ACQUIRE))
		took = now_ms() - t0;
	else
		pthread_kill(thread, SIGUSR1);
	pthread_join(thread, NULL);
	return took;
}

#endif /* TASK_STATE_H */
