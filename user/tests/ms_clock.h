/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Milliseconds of CLOCK_MONOTONIC: the tests' deadlines and the time a
 * call took, which a change of the wall clock must not move.
 */
#ifndef MS_CLOCK_H
#define MS_CLOCK_H

#include <time.h>

static inline long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

#endif /* MS_CLOCK_H */
