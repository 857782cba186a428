// SPDX-License-Identifier: GPL-2.0
/*
 * rb_waitwin: hold a task that is about to wait on trace_pipe_raw, at a
 * point where a wake-up finds no one to wake, while the test wakes the
 * file's waiters. Loaded by tests/rb_wait_window.
 *
 * splice() and GET_READER of trace_pipe_raw load the file's wait_index
 * and then wait in the ring buffer; ioctl(0) and ->flush() increment it
 * and wake the waiters. The task @pid is held until the test sets
 * @release or @wait_ms passed (then @timed_out is set); @held is 2k - 1
 * while it is held the k-th time and 2k once that hold ended. Where:
 *
 * - by default, at the entry of the ring buffer's wait function,
 *   ring_buffer_wait_cond() where the kernel has it (6.1 with the series'
 *   fix), ring_buffer_wait() otherwise (@fallback): after the call loaded
 *   wait_index, before the task is queued. The function is called from
 *   trace.c, so no compiler inlines it away from the probe
 *   (ring_buffer_empty_cpu(), which the wait calls first, is inlined into
 *   it with Debian's config);
 * - @at, a function the call calls before it waits (ring_buffer_is_mapped()
 *   for GET_READER, ring_buffer_entries_cpu() for splice()): the call
 *   began, but may not have loaded wait_index yet;
 * - with @queued, @at is the wait's condition: held first at the entry of
 *   prepare_to_wait_event() (the condition was checked once and the full
 *   waiter flagged itself, the task is not queued yet), then at the return
 *   of the condition, checked again with the task queued, before the
 *   waiter flags itself again.
 *
 * Without kprobes (CONFIG_KPROBES off), the init fails with -EOPNOTSUPP.
 */
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/sched.h>

#include "rb_instance.h"

static int pid;
module_param(pid, int, 0444);
MODULE_PARM_DESC(pid, "the task to hold before it waits");

static char *at;
module_param(at, charp, 0444);
MODULE_PARM_DESC(at, "the function to hold it at (default: the wait function)");

static bool queued;
module_param(queued, bool, 0444);
MODULE_PARM_DESC(queued, "@at is the wait's condition: hold before and after queueing");

static uint wait_ms = 2000;
module_param(wait_ms, uint, 0444);
MODULE_PARM_DESC(wait_ms, "how long to hold it at most, each time");

static bool release;
module_param(release, bool, 0644);
MODULE_PARM_DESC(release, "set by the test once it woke the waiters");

/* Results */
static int held;
module_param(held, int, 0444);
static bool timed_out;
module_param(timed_out, bool, 0444);
static bool fallback;		/* the probe is on ring_buffer_wait() */
module_param(fallback, bool, 0444);

/* The @k-th hold (from 1), if the task is @pid and hold k - 1 ended */
static void rb_waitwin_hold(int k)
{
	if (current->pid != pid || READ_ONCE(held) != 2 * (k - 1))
		return;

	WRITE_ONCE(held, 2 * k - 1);
	if (!rb_spin_until(&release, NULL, (u64)wait_ms * NSEC_PER_MSEC))
		WRITE_ONCE(timed_out, true);
	/* Cleared before the test can see the hold end and set it again */
	WRITE_ONCE(release, false);
	smp_store_release(&held, 2 * k);
}

static int rb_waitwin_pre(struct kprobe *p, struct pt_regs *regs)
{
	rb_waitwin_hold(1);
	return 0;
}

static int rb_waitwin_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	rb_waitwin_hold(2);
	return 0;
}

static struct kprobe rb_waitwin_kp = {
	.pre_handler	= rb_waitwin_pre,
};

static struct kretprobe rb_waitwin_rp = {
	.handler	= rb_waitwin_ret,
	.maxactive	= 4,
};

static int __init rb_waitwin_init(void)
{
	int ret;

	if (!pid || (queued && !at))
		return -EINVAL;

	if (queued) {
		rb_waitwin_rp.kp.symbol_name = at;
		ret = register_kretprobe(&rb_waitwin_rp);
		if (ret)
			return ret;
		rb_waitwin_kp.symbol_name = "prepare_to_wait_event";
		ret = register_kprobe(&rb_waitwin_kp);
		if (ret)
			unregister_kretprobe(&rb_waitwin_rp);
		return ret;
	}

	if (at) {
		rb_waitwin_kp.symbol_name = at;
		return register_kprobe(&rb_waitwin_kp);
	}

	rb_waitwin_kp.symbol_name = "ring_buffer_wait_cond";
	ret = register_kprobe(&rb_waitwin_kp);
	if (ret != -ENOENT)
		return ret;

	/* A kprobe is cleared before it is registered again */
	memset(&rb_waitwin_kp, 0, sizeof(rb_waitwin_kp));
	rb_waitwin_kp.symbol_name = "ring_buffer_wait";
	rb_waitwin_kp.pre_handler = rb_waitwin_pre;
	fallback = true;
	return register_kprobe(&rb_waitwin_kp);
}

static void __exit rb_waitwin_exit(void)
{
	unregister_kprobe(&rb_waitwin_kp);
	if (queued)
		unregister_kretprobe(&rb_waitwin_rp);
}

module_init(rb_waitwin_init);
module_exit(rb_waitwin_exit);
MODULE_DESCRIPTION("Hold a waiter of trace_pipe_raw where a wake-up finds no one");
MODULE_LICENSE("GPL");
