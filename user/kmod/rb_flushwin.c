// SPDX-License-Identifier: GPL-2.0
/*
 * rb_flushwin: hold a task in ->flush() of trace_pipe_raw at the
 * instruction that stores the file's new wait_index, until the test sets
 * @release or @wait_ms passed (then @timed_out is set). Loaded by
 * tests/rb_flush_window.
 *
 * ->flush() runs at every close of a descriptor of the file, under no
 * lock, and increments wait_index to end the waits of splice() and
 * GET_READER. Where the increment is a load, an add and a store (6.1's
 * plain increment), the task is held with the old value loaded: an
 * ioctl(0) in between increments the index, and the store then writes
 * that same value again. Where it is one instruction (atomic_inc(),
 * atomic_fetch_inc_release()), the task is held before it.
 *
 * An x86-64 instruction breakpoint (rb_bp.h) on CPU @cpu, where the test
 * keeps the task @pid, on the first instruction of @func (@size bytes,
 * from /proc/kallsyms) that writes wait_index: a store, an inc, an add
 * of 1 or an xadd, locked or not, to a register plus
 * offsetof(struct trace_iterator, wait_index) (the iterator is the first
 * member of the file's private data). @held is 1 while the task is held,
 * 2 once let go; @offset is where the breakpoint is in @func, @form what
 * it found there (an unlocked read-modify-write, as clang may make of a
 * plain increment, has no window to hold: the test skips). None found
 * (a compiler that keeps the field's address in a register): -ENOENT.
 */
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/stddef.h>
#include <linux/trace_events.h>

#include "rb_bp.h"
#include "rb_instance.h"

static int pid;
module_param(pid, int, 0444);
MODULE_PARM_DESC(pid, "the task to hold in ->flush()");

static int cpu = -1;
module_param(cpu, int, 0444);
MODULE_PARM_DESC(cpu, "the CPU that task runs on");

RB_BP_FUNC_PARAMS(func, size, "tracing_buffers_flush()");

static uint wait_ms = 5000;
module_param(wait_ms, uint, 0444);
MODULE_PARM_DESC(wait_ms, "how long to hold it at most");

static bool release;
module_param(release, bool, 0644);
MODULE_PARM_DESC(release, "set by the test to let the task go");

/* Results */
static int held;
module_param(held, int, 0444);
static bool timed_out;
module_param(timed_out, bool, 0444);
static uint offset;
module_param(offset, uint, 0444);
static int form;		/* 1 store, 2 locked RMW, 3 unlocked RMW */
module_param(form, int, 0444);

static struct perf_event *bp[RB_BP_MAX];

#define WAIT_INDEX	offsetof(struct trace_iterator, wait_index)

/* What the instruction found is: see writes_wait_index() */
enum { FORM_STORE = 1, FORM_LOCKED, FORM_UNLOCKED_RMW };

/*
 * [lock] [REX] 89 (mov r, m), FF /0 (inc m), 83 /0 ib 1 (add $1, m) or
 * 0F C1 (xadd r, m), with the memory operand a register plus WAIT_INDEX
 * as an 8- or 32-bit displacement (no SIB byte). It reads up to 9 bytes,
 * past RB_BP_SCAN: kernel text goes on after the function. Sets @form
 * at the first match (a lock prefix's instruction matches again without
 * it at the next byte, where rb_bp_arm() stops).
 */
static bool writes_wait_index(const u8 *p)
{
	bool lock = false;
	const u8 *modrm;
	u32 disp;
	int rmw;

	if (*p == 0xf0) {
		lock = true;
		p++;
	}
	if ((*p & 0xf0) == 0x40)
		p++;
	switch (p[0]) {
	case 0x89:
		rmw = 0;
		modrm = p + 1;
		break;
	case 0xff:
	case 0x83:
		rmw = 1;
		modrm = p + 1;
		if (*modrm & 0x38)
			return false;
		/* add's immediate follows the displacement */
		if (p[0] == 0x83 && modrm[(*modrm >> 6) == 1 ? 2 : 5] != 1)
			return false;
		break;
	case 0x0f:
		if (p[1] != 0xc1)
			return false;
		rmw = 1;
		modrm = p + 2;
		break;
	default:
		return false;
	}
	if ((*modrm & 7) == 4)
		return false;
	switch (*modrm >> 6) {
	case 1:
		disp = (u32)(s8)modrm[1];
		break;
	case 2:
		disp = modrm[1] | modrm[2] << 8 | modrm[3] << 16 |
		       (u32)modrm[4] << 24;
		break;
	default:
		return false;
	}
	if (disp != WAIT_INDEX)
		return false;
	/* The first match only: the scan goes on to the next byte once */
	if (!form)
		form = !rmw ? FORM_STORE : lock ? FORM_LOCKED : FORM_UNLOCKED_RMW;
	return true;
}

static void rb_flushwin_hit(struct perf_event *event,
			    struct perf_sample_data *data, struct pt_regs *regs)
{
	if (current->pid != pid || READ_ONCE(held))
		return;

	WRITE_ONCE(held, 1);
	if (!rb_spin_until(&release, NULL, (u64)wait_ms * NSEC_PER_MSEC))
		WRITE_ONCE(timed_out, true);
	/* Pairs with the test's reading of @held through sysfs */
	smp_store_release(&held, 2);
}

static int __init rb_flushwin_init(void)
{
	int ret;

	if (!pid || cpu < 0 || !func || !size)
		return -EINVAL;

	ret = rb_bp_arm(func, size, cpu, writes_wait_index, 1, rb_flushwin_hit,
			bp, &offset);
	if (ret < 0) {
		rb_bp_release(bp);
		return ret;
	}
	return 0;
}

static void __exit rb_flushwin_exit(void)
{
	rb_bp_release(bp);
}

module_init(rb_flushwin_init);
module_exit(rb_flushwin_exit);
MODULE_DESCRIPTION("Hold a task in ->flush() of trace_pipe_raw at its wait_index store");
MODULE_LICENSE("GPL");
