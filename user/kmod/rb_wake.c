// SPDX-License-Identifier: GPL-2.0
/*
 * rb_wake: have the waiters' irq_work run in the interrupt of a writer
 * that overfilled its page, while a reader that swapped that page in
 * waits for the writer under the reader lock. Loaded by
 * tests/rb_wake_stall, which maps the instance's buffer of the CPU it runs
 * on (and stays there), polls it once at buffer_percent 100 so that a
 * full waiter is pending, and reads the results back from
 * /sys/module/rb_wake/parameters/.
 *
 * __rb_get_reader_page() waits, with the reader lock held, while the write
 * index of the page it returns is past the end of the page: a writer that
 * overfilled it is still in rb_move_tail(). rb_wake_up_waiters() takes
 * the same lock when a full waiter is pending, and it runs in the
 * interrupt of the CPU that queued it, which can be that writer's. The
 * writer does not go on until the irq_work returns.
 *
 * A writer stalled there needs an interrupt whose own event queues the
 * irq_work. The module is that: a hardware breakpoint on the first
 * instruction of rb_move_tail() (@func, @size bytes, from /proc/kallsyms;
 * x86: #DB, taken like an NMI), which acts where the writer of this module
 * leaves its second page (the one it entered from the reader page, the
 * head), and there:
 *  1. lets a work item on another CPU call TRACE_MMAP_IOCTL_GET_READER
 *     twice: the first takes the rest of the reader page, the second
 *     swaps the writer's page in and waits for the writer;
 *  2. after HOLD_NS, queues the irq_work with ring_buffer_wake_waiters()
 *     (@wake, from /proc/kallsyms; an event's rb_wakeups() queues the
 *     same work), which runs once the handler returns to the writer.
 * The work item times its second GET_READER (@waited_us), and the writer writes
 * one event more (@write_after: 0, or -EIO if recording was disabled).
 *
 * Without @wake, the handler only holds the writer: the reader takes a
 * page whose writer is still in its move, which the test then drains.
 * Each event's first word is its sequence number, from 0; @words sets
 * the event's size (see rb_wake_write()).
 */
#include <linux/module.h>
#include <linux/ring_buffer.h>
#include <linux/workqueue.h>
#include <uapi/linux/trace_mmap.h>

#include "rb_bp.h"
#include "rb_instance.h"

#define WAIT_NS		(10 * NSEC_PER_SEC)	/* bound on each wait */
#define HOLD_NS		(50 * NSEC_PER_MSEC)	/* the reader waits this long first */
#define WRITE_MAX	10000			/* bound on the events written */

RB_INSTANCE_PARAM("rb_wake_stall");

RB_BP_FUNC_PARAMS(func, size, "rb_move_tail()");

static ulong wake;
module_param(wake, ulong, 0444);
MODULE_PARM_DESC(wake, "address of ring_buffer_wake_waiters(), 0 for none");

static uint words = 3;
module_param(words, uint, 0444);
MODULE_PARM_DESC(words, "8-byte words of each event's payload (1 to 3)");

/* Results */
static ulong written;		/* events the buffer took */
module_param(written, ulong, 0444);
static uint hits;		/* moves of the writer that met the breakpoint */
module_param(hits, uint, 0444);
static int get_reader = 1;	/* what the work item's GET_READER returned */
module_param(get_reader, int, 0444);
static ulong waited_us;		/* how long it took */
module_param(waited_us, ulong, 0444);
static int write_after = 1;	/* the event written after the move */
module_param(write_after, int, 0444);
static ulong tail;		/* where the stalled event starts in its page */
module_param(tail, ulong, 0444);
static int cpu = -1;		/* the CPU buffer written */
module_param(cpu, int, 0444);
static int reader_cpu = -1;	/* the CPU of the work item */
module_param(reader_cpu, int, 0444);

static void (*wake_waiters)(struct trace_buffer *buffer, int cpu);
static struct trace_buffer *buffer;
static struct file *pipe;
static struct task_struct *writer;
static bool armed, go, stop, entered, late;
static unsigned int moves;

/*
 * With 3 words, events of 28 bytes with their header: the one that does
 * not fit in the room of a page (4072 of 4080 bytes with 4 KiB pages)
 * starts at 4060 and reserves up to 4088, past the end, where the reader
 * waits for it. With 1 word, 16 bytes: it ends at 4080 exactly, inside
 * the page, and the reader does not wait.
 */
static int rb_wake_write(void)
{
	u64 ev[3] = { written };

	if (ring_buffer_write(buffer, words * sizeof(u64), ev))
		return -EIO;
	written++;
	return 0;
}

static void rb_wake_reader(struct work_struct *work)
{
	u64 start;

	/* The handler sets go */
	if (!rb_spin_until(&go, &stop, WAIT_NS))
		return;
	/* The rest of the reader page first: then the swap */
	get_reader = pipe->f_op->unlocked_ioctl(pipe, TRACE_MMAP_IOCTL_GET_READER, 0);
	/* Pairs with the acquire of the handler's rb_spin_until() */
	smp_store_release(&entered, true);
	if (get_reader)
		return;
	start = ktime_get_mono_fast_ns();
	get_reader = pipe->f_op->unlocked_ioctl(pipe, TRACE_MMAP_IOCTL_GET_READER, 0);
	waited_us = (ktime_get_mono_fast_ns() - start) / NSEC_PER_USEC;
}

static DECLARE_WORK(reader_work, rb_wake_reader);

static void rb_wake_hit(struct perf_event *bp, struct perf_sample_data *data,
			struct pt_regs *regs)
{
	u64 hold;

	/* The writer itself, not an interrupt that writes elsewhere */
	if (!READ_ONCE(armed) || current != writer ||
	    hardirq_count() != HARDIRQ_OFFSET || in_serving_softirq())
		return;
	/* The first move leaves the reader page for the head */
	if (++moves < 2)
		return;
	WRITE_ONCE(armed, false);
	hits = moves;
#ifdef CONFIG_X86_64
	tail = regs->si;	/* rb_move_tail()'s second argument */
#endif

	/* Pairs with the acquire of the work item's rb_spin_until() */
	smp_store_release(&go, true);
	if (!rb_spin_until(&entered, NULL, WAIT_NS)) {
		late = true;
		return;
	}
	/* Let the reader swap the page in and wait for this writer */
	hold = ktime_get_mono_fast_ns() + HOLD_NS;
	while (ktime_get_mono_fast_ns() < hold)
		cpu_relax();
	/* Runs once interrupts are on again: in the writer's move */
	if (wake_waiters)
		wake_waiters(buffer, cpu);
}

/* The first instruction of the function */
static bool is_entry(const u8 *p)
{
	return (unsigned long)p == func;
}

static int __init rb_wake_init(void)
{
	struct perf_event *bp[RB_BP_MAX] = {};
	struct trace_array *tr;
	unsigned int offset;
	int ret;

	if (!func || !size || !words || words > 3)
		return -EINVAL;
	wake_waiters = (void *)wake;

	/* The test keeps the task on this CPU */
	ret = rb_instance_open_pair(instance, &cpu, &reader_cpu, &tr, &pipe);
	if (ret)
		return ret;
	buffer = tr->array_buffer.buffer;
	writer = current;

	/* An event, and the reader takes its page: the writer's page now */
	ret = rb_wake_write();
	if (ret)
		goto out;
	ret = pipe->f_op->unlocked_ioctl(pipe, TRACE_MMAP_IOCTL_GET_READER, 0);
	if (ret)
		goto out;

	ret = rb_bp_arm(func, size, cpu, is_entry, 1, rb_wake_hit, bp, &offset);
	if (ret < 0)
		goto disarm;

	queue_work_on(reader_cpu, system_highpri_wq, &reader_work);
	WRITE_ONCE(armed, true);
	/* Interrupts on: the irq_work runs in the writer's move */
	while (!hits && written < WRITE_MAX) {
		ret = rb_wake_write();
		if (ret)
			break;
	}
	WRITE_ONCE(armed, false);
	WRITE_ONCE(stop, true);		/* the work item ends if it still waits */
	flush_work(&reader_work);
	if (ret)
		goto disarm;

	write_after = rb_wake_write();

	if (smp_processor_id() != cpu)
		ret = -EAGAIN;	/* the test's affinity did not hold */
	else if (!hits)
		ret = -ENODATA;	/* the breakpoint never fired */
	else if (late)
		ret = -ETIMEDOUT;	/* the work item never ran */
disarm:
	rb_bp_release(bp);
out:
	rb_instance_close(tr, pipe);
	return ret;
}

static void __exit rb_wake_exit(void)
{
}

module_init(rb_wake_init);
module_exit(rb_wake_exit);
MODULE_DESCRIPTION("The waiters' irq_work in a writer's page move, a reader waiting for it");
MODULE_LICENSE("GPL");
