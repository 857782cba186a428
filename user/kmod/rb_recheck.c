// SPDX-License-Identifier: GPL-2.0
/*
 * rb_recheck: have a writer fill a CPU buffer past a full waiter's
 * watermark while that waiter is between measuring the buffer and setting
 * its flag. Loaded by tests/rb_watermark, which keeps the task @pid on CPU
 * @cpu, leaves a full waiter's flag set with shortest_full at 100 (a poll
 * that timed out), lowers buffer_percent, waits (poll() or a blocking
 * TRACE_MMAP_IOCTL_GET_READER), and reads the results back from
 * /sys/module/rb_recheck/parameters/.
 *
 * A writer on another CPU can touch a page in that window, or an NMI on the
 * waiter's (rb_watermark_hit() measures under the reader lock, interrupts
 * off). The module is such a writer, in a kretprobe on
 * ring_buffer_nr_dirty_pages(), which full_hit() calls when
 * rb_watermark_hit() measures the buffer for a waiter: in the task @pid,
 * at its @nth call, once the function has returned, the handler writes
 * 8-byte events into the instance's buffer of @cpu until it holds @bytes
 * bytes. Their rb_wakeups() test the buffer against the watermark of the
 * waiter gone before (100) and wake no one; the waiter goes on with what
 * it measured before.
 *
 * The kretprobe stays until the module is unloaded. Without kretprobes
 * (CONFIG_KRETPROBES off), the init fails with -EOPNOTSUPP.
 */
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/ring_buffer.h>
#include <linux/sched.h>

#include "rb_instance.h"

#define WRITE_MAX	100000	/* bound on the events of the handler */

RB_INSTANCE_PARAM("rb_watermark");

static int pid;
module_param(pid, int, 0444);
MODULE_PARM_DESC(pid, "the waiting task");

static int cpu = -1;
module_param(cpu, int, 0444);
MODULE_PARM_DESC(cpu, "the CPU buffer it waits on, and runs on");

static uint nth = 1;
module_param(nth, uint, 0444);
MODULE_PARM_DESC(nth, "the call of the waiting task to act after");

static ulong bytes;
module_param(bytes, ulong, 0444);
MODULE_PARM_DESC(bytes, "what the buffer holds after the handler's events");

/* Results */
static uint calls;		/* calls of the task on that CPU */
module_param(calls, uint, 0444);
static ulong measured;		/* what the @nth call returned */
module_param(measured, ulong, 0444);
static ulong held;		/* bytes held after the handler's events */
module_param(held, ulong, 0444);
static ulong written;		/* events the handler wrote */
module_param(written, ulong, 0444);
static int write_err;		/* 0, or -EIO if the buffer refused one */
module_param(write_err, int, 0444);

static struct trace_array *tr;
static struct trace_buffer *buffer;

static int rb_recheck_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	u64 seq;

	if (current->pid != pid || raw_smp_processor_id() != cpu)
		return 0;
	/* Once; the handler's own calls come after this */
	if (++calls != nth)
		return 0;
	measured = regs_return_value(regs);

	while ((held = ring_buffer_bytes_cpu(buffer, cpu)) < bytes &&
	       written < WRITE_MAX) {
		seq = written;
		if (ring_buffer_write(buffer, sizeof(seq), &seq)) {
			write_err = -EIO;
			break;
		}
		written++;
	}
	return 0;
}

static struct kretprobe rb_recheck_probe = {
	.kp.symbol_name	= "ring_buffer_nr_dirty_pages",
	.handler	= rb_recheck_ret,
	.maxactive	= 4,
};
/* Returns missed for want of an instance: the test wants none */
module_param_named(missed, rb_recheck_probe.nmissed, int, 0444);

static int __init rb_recheck_init(void)
{
	int ret;

	if (!pid || cpu < 0 || cpu >= nr_cpu_ids || !cpu_online(cpu) ||
	    !nth || !bytes)
		return -EINVAL;

	tr = get_instance(instance);
	if (!tr)
		return -ENOENT;
	buffer = tr->array_buffer.buffer;

	ret = register_kretprobe(&rb_recheck_probe);
	if (ret)
		trace_array_put(tr);
	return ret;
}

static void __exit rb_recheck_exit(void)
{
	unregister_kretprobe(&rb_recheck_probe);
	trace_array_put(tr);
}

module_init(rb_recheck_init);
module_exit(rb_recheck_exit);
MODULE_DESCRIPTION("A writer that fills a buffer while a full waiter measures it");
MODULE_LICENSE("GPL");
