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

/*
 * The module parameters @addr and @len: where function @name (a string)
 * is and its size, from /proc/kallsyms, for rb_bp_arm()
 */
#define RB_BP_FUNC_PARAMS(addr, len, name)				\
	static ulong addr;						\
	module_param(addr, ulong, 0444);				\
	MODULE_PARM_DESC(addr, "address of " name);			\
	static uint len;						\
	module_param(len, uint, 0444);					\
	MODULE_PARM_DESC(len, "its size in bytes")
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

/*
 * lock cmpxchg r64, m64 (F0, REX.W, 0F B1, ModRM) whose memory operand is
 * a register's address: no index, no displacement (or a zero one).
 */
static inline bool rb_bp_is_cmpxchg64_at_reg(const u8 *p)
{
	u8 mod = p[4] >> 6, rm = p[4] & 7;

	if (p[0] != 0xf0 || (p[1] & 0xf8) != 0x48 || p[2] != 0x0f || p[3] != 0xb1)
		return false;
	if (rm == 4)			/* a SIB byte follows */
		return false;
	return (mod == 0 && rm != 5) || (mod == 1 && p[5] == 0);
}

/* Its length: with the zero displacement or without */
static inline unsigned int rb_bp_cmpxchg64_len(const u8 *p)
{
	return p[4] >> 6 ? 6 : 5;
}

#if defined(CONFIG_X86_64) && defined(CONFIG_HAVE_HW_BREAKPOINT)
/* The value of general register @reg (0-15, as ModRM and REX number them) */
static inline unsigned long rb_bp_reg(struct pt_regs *regs, unsigned int reg)
{
	switch (reg) {
	case 0: return regs->ax;
	case 1: return regs->cx;
	case 2: return regs->dx;
	case 3: return regs->bx;
	case 5: return regs->bp;
	case 6: return regs->si;
	case 7: return regs->di;
	case 8: return regs->r8;
	case 9: return regs->r9;
	case 10: return regs->r10;
	case 11: return regs->r11;
	case 12: return regs->r12;
	case 13: return regs->r13;
	case 14: return regs->r14;
	case 15: return regs->r15;
	}
	return 0;
}

/* The address the cmpxchg at @p works on, from the registers @regs */
static inline unsigned long *rb_bp_cmpxchg64_ptr(struct pt_regs *regs, const u8 *p)
{
	return (unsigned long *)rb_bp_reg(regs, (p[4] & 7) | ((p[1] & 1) << 3));
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
