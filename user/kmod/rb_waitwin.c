// SPDX-License-Identifier: GPL-2.0
/*
 * rb_waitwin: hold a task that is about to wait on trace_pipe_raw, after
 * it loaded what its wait is for and before it is on the wait queue,
 * while the test wakes the file's waiters. Loaded by tests/rb_wait_window.
 *
 * splice() and GET_READER of trace_pipe_raw load the file's wait_index
 * and then wait in the ring buffer; ioctl(0) and ->flush() increment it
 * and wake the waiters. A kprobe on the ring buffer's wait function,
 * ring_buffer_wait_cond() where the kernel has it (6.1 with the series'
 * fix), ring_buffer_wait() otherwise (@fallback), the first time in the
 * task @pid, sets @held to 1 and spins until the test sets @release (2)
 * or @wait_ms passed (3). A wake-up meanwhile finds no one to wake, and
 * the wait must end anyway. The function is called from trace.c, so no
 * compiler inlines it away from the probe (ring_buffer_empty_cpu(), which
 * the wait calls first, is inlined into it with Debian's config).
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

static uint wait_ms = 2000;
module_param(wait_ms, uint, 0444);
MODULE_PARM_DESC(wait_ms, "how long to hold it at most");

static bool release;
module_param(release, bool, 0644);
MODULE_PARM_DESC(release, "set by the test once it woke the waiters");

/* Result: 0 not held yet, 1 held, 2 let go by the test, 3 by the bound */
static int held;
module_param(held, int, 0444);
static bool fallback;		/* the probe is on ring_buffer_wait() */
module_param(fallback, bool, 0444);

static int rb_waitwin_pre(struct kprobe *p, struct pt_regs *regs)
{
	if (current->pid != pid || READ_ONCE(held))
		return 0;

	WRITE_ONCE(held, 1);
	if (rb_spin_until(&release, NULL, (u64)wait_ms * NSEC_PER_MSEC))
		WRITE_ONCE(held, 2);
	else
		WRITE_ONCE(held, 3);
	return 0;
}

static struct kprobe rb_waitwin_kp = {
	.symbol_name	= "ring_buffer_wait_cond",
	.pre_handler	= rb_waitwin_pre,
};

static int __init rb_waitwin_init(void)
{
	int ret;

	if (!pid)
		return -EINVAL;
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
}

module_init(rb_waitwin_init);
module_exit(rb_waitwin_exit);
MODULE_DESCRIPTION("Hold a waiter of trace_pipe_raw before it is queued");
MODULE_LICENSE("GPL");
