/* SPDX-License-Identifier: GPL-2.0 */
/*
 * For the test modules that stop a ring-buffer function at chosen
 * instructions: x86-64 instruction breakpoints (perf events; the handler
 * runs in #DB, as an NMI would) on the instructions of a function that a
 * byte scan picks. x86 takes kernel instruction breakpoints only where a
 * kprobe could go (CONFIG_KPROBES); elsewhere rb_bp_arm() refuses with
 * -EOPNOTSUPP.
 */
#ifndef RB_BP_H
#define RB_BP_H

#include <linux/err.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>

#define RB_BP_MAX	4	/* x86 has four breakpoint registers */
#define RB_BP_SCAN	6	/* bytes a match function may look at */

/*
 * On @cpu, a breakpoint calling @handler on each of the first @max
 * instructions of [@func, @func + @size) that @match accepts, into @bp:
 * the number armed, or -errno (-ENOENT: none matched; -E2BIG: more than
 * RB_BP_MAX when @max is RB_BP_MAX). *@first: the offset of the first.
 * rb_bp_release() puts what was armed, whatever the result.
 */
#if defined(CONFIG_X86_64) && defined(CONFIG_HAVE_HW_BREAKPOINT)
static inline int rb_bp_arm(unsigned long func, unsigned int size, int cpu,
			    bool (*match)(const u8 *p), unsigned int max,
			    perf_overflow_handler_t handler,
			    struct perf_event **bp, unsigned int *first)
{
	struct perf_event_attr attr;
	unsigned int off, n = 0;

	for (off = 0; off + RB_BP_SCAN <= size; off++) {
		if (!match((const u8 *)func + off))
			continue;
		if (n == max)
			return max < RB_BP_MAX ? n : -E2BIG;
		if (!n)
			*first = off;
		hw_breakpoint_init(&attr);
		attr.bp_addr = func + off;
		attr.bp_len = sizeof(long);	/* what x86 takes for X */
		attr.bp_type = HW_BREAKPOINT_X;
		bp[n] = perf_event_create_kernel_counter(&attr, cpu, NULL, handler, NULL);
		if (IS_ERR(bp[n]))
			return PTR_ERR(bp[n]);
		n++;
	}
	return n ? n : -ENOENT;
}
#else
static inline int rb_bp_arm(unsigned long func, unsigned int size, int cpu,
			    bool (*match)(const u8 *p), unsigned int max,
			    perf_overflow_handler_t handler,
			    struct perf_event **bp, unsigned int *first)
{
	return -EOPNOTSUPP;	/* the instruction scans are x86-64's */
}
#endif

/* Put the breakpoints of @bp (RB_BP_MAX entries, NULL or -errno if unset) */
static inline void rb_bp_release(struct perf_event **bp)
{
	unsigned int i;

	for (i = 0; i < RB_BP_MAX; i++)
		if (!IS_ERR_OR_NULL(bp[i]))
			perf_event_release_kernel(bp[i]);
}

#endif /* RB_BP_H */
