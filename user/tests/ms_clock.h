/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Milliseconds of CLOCK_MONOTONIC: the tests' deadlines and the time a
 * call took, which a change of the wall clock must not move.
 */
#ifndef MS_CLOCK_H
#define MS_CLOCK_H

#include <sched.h>
#include <time.h>

static inline long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/*
 * Let @ms milliseconds pass without sleeping: for a test that must go on
 * while a CPU spins, preemption off, for one that a test module holds
 * with interrupts off (see rb_seq_keep_off()). A sleep's wake-up may be a
 * timer of that CPU, which PREEMPT_RT runs in a thread there.
 */
static inline void spin_ms(long long ms)
{
	long long t0 = now_ms();

	while (now_ms() - t0 < ms)
		sched_yield();
}

#endif /* MS_CLOCK_H */
