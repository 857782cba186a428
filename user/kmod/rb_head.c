// SPDX-License-Identifier: GPL-2.0
/*
 * rb_head: have a reader swap out the new head while the writer that set
 * it has not yet taken the UPDATE flag off the pointer into the page it
 * moved the head off, and have a writer interrupt it right then. Loaded
 * by tests/rb_head_flag, which maps the instance's buffer of the CPU it
 * runs on (and stays there), and reads the results back from
 * /sys/module/rb_head/parameters/.
 *
 * A writer moves the head off a full page in three cmpxchg()s: the
 * pointer into that page from HEAD to UPDATE, the pointer into the next
 * page to HEAD, the first pointer back to NORMAL. An interrupting writer
 * that finds the UPDATE flag sets the head itself, on the page after the
 * one the head moved off: if a reader swapped the new head out between,
 * that is the reader's old page, which no writer entered.
 *
 * The module is the interrupt, an NMI: hardware breakpoints on the 64-bit
 * "lock cmpxchg"s of rb_move_tail() (@func, @size bytes, from
 * /proc/kallsyms) whose memory operand is a register's address; the one
 * that finds the UPDATE flag there is the third step. Its handler has a
 * work item on another CPU call TRACE_MMAP_IOCTL_GET_READER, waits for it
 * a while, and writes an event.
 *
 * The reader finds the head from where its last swap left it. So that it
 * starts at the new head, the breakpoint acts at the @ring_pages-th head
 * move after one GET_READER: the move off the page the reader put where
 * the head was.
 *
 * On the CPU that loads it, into the buffer of the instance:
 *  1. @prelim events of 8 bytes (a sequence number): the ring laps;
 *  2. one GET_READER;
 *  3. the breakpoints armed, and with interrupts off (no other buffer's
 *     writer on this CPU meets them), events until the handler acted;
 *  4. events until the writer has overwritten @ring_pages + 1 pages of
 *     events more: once round the ring.
 * The test then polls the buffer, full. The init returns 0 when it got
 * that far; the test unloads it.
 */
#include <linux/module.h>
#include <linux/ring_buffer.h>
#include <linux/workqueue.h>
#include <uapi/linux/trace_mmap.h>

#include "rb_bp.h"
#include "rb_instance.h"

#define READER_WAIT_NS	(200 * NSEC_PER_MSEC)	/* the handler's wait */
#define WORK_WAIT_NS	(10 * NSEC_PER_SEC)	/* the work item's */
#define WRITE_MAX	100000			/* bound on the events of 3, 4 */
#define PAGE_UPDATE	2UL	/* RB_PAGE_UPDATE, in the low bits of a pointer */

RB_INSTANCE_PARAM("rb_head_flag");

static uint prelim = 1024;
module_param(prelim, uint, 0444);
MODULE_PARM_DESC(prelim, "events written before the first GET_READER");

static uint ring_pages;
module_param(ring_pages, uint, 0444);
MODULE_PARM_DESC(ring_pages, "pages of the ring, not counting the reader page");

RB_BP_FUNC_PARAMS(func, size, "rb_move_tail()");

/* Results */
static ulong written;		/* events the buffer took */
module_param(written, ulong, 0444);
static uint breakpoints;	/* instructions the breakpoints are on */
module_param(breakpoints, uint, 0444);
static uint moves;		/* third steps the breakpoints saw */
module_param(moves, uint, 0444);
static uint hits;		/* handler runs that acted */
module_param(hits, uint, 0444);
static int swapped = -1;	/* the work item's GET_READER, if done in the wait */
module_param(swapped, int, 0444);
static int nested = -1;		/* what the handler's write returned */
module_param(nested, int, 0444);
static int cpu = -1;		/* the CPU buffer written */
module_param(cpu, int, 0444);
static int reader_cpu = -1;	/* the CPU of the work item */
module_param(reader_cpu, int, 0444);

static struct trace_buffer *buffer;
static struct file *pipe;
static struct task_struct *writer;
static bool armed, go, stop, done;
static int reader_ret;

static void rb_head_reader(struct work_struct *work)
{
	/* The handler sets go */
	if (!rb_spin_until(&go, &stop, WORK_WAIT_NS))
		return;
	reader_ret = pipe->f_op->unlocked_ioctl(pipe, TRACE_MMAP_IOCTL_GET_READER, 0);
	/* Pairs with the acquire of the handler's rb_spin_until() */
	smp_store_release(&done, true);
}

static DECLARE_WORK(reader_work, rb_head_reader);

#if defined(CONFIG_X86_64) && defined(CONFIG_HAVE_HW_BREAKPOINT)
/* The flags in the pointer that the cmpxchg() at regs->ip is about to change */
static unsigned long pointer_flags(struct pt_regs *regs)
{
	unsigned long *ptr = rb_bp_cmpxchg64_ptr(regs, (const u8 *)regs->ip);

	return ptr ? READ_ONCE(*ptr) & 3 : 0;
}
#else
static unsigned long pointer_flags(struct pt_regs *regs)
{
	return 0;
}
#endif

static void rb_head_hit(struct perf_event *bp, struct perf_sample_data *data,
			struct pt_regs *regs)
{
	u64 seq;

	if (!READ_ONCE(armed) || current != writer ||
	    pointer_flags(regs) != PAGE_UPDATE || ++moves < ring_pages)
		return;
	WRITE_ONCE(armed, false);
	hits++;

	/* The new head is set: let the reader try to swap it out */
	/* Pairs with the acquire of the work item's rb_spin_until() */
	smp_store_release(&go, true);
	/* Not done: it waits for the head move to end */
	swapped = rb_spin_until(&done, NULL, READER_WAIT_NS) ? reader_ret : -ETIMEDOUT;

	/* The interrupting writer: the page it writes on is full too */
	seq = written;
	nested = ring_buffer_write(buffer, sizeof(seq), &seq);
	if (!nested)
		written++;
}

static int __init rb_head_init(void)
{
	struct perf_event *bp[RB_BP_MAX] = {};
	struct trace_array *tr;
	uint first, lost = 0;
	ulong bound;
	int ret;

	if (!func || !size || !ring_pages)
		return -EINVAL;

	/* The test keeps the task on this CPU */
	ret = rb_instance_open_pair(instance, &cpu, &reader_cpu, &tr, &pipe);
	if (ret)
		return ret;
	buffer = tr->array_buffer.buffer;
	writer = current;

	ret = rb_write_then_swap(buffer, pipe, prelim, &written);
	if (ret)
		goto out;

	ret = rb_bp_arm(func, size, cpu, rb_bp_is_cmpxchg64_at_reg, RB_BP_MAX, rb_head_hit, bp, &first);
	if (ret < 0)
		goto disarm;
	breakpoints = ret;
	ret = 0;

	ret = rb_write_armed(buffer, cpu, &written, &lost, WRITE_MAX, &armed,
			     &hits, &stop, &reader_work, reader_cpu);
	if (ret)
		goto disarm;

	lost = 0;
	for (bound = written + WRITE_MAX; lost <= ring_pages && written < bound;) {
		ret = rb_write_seq_lost(buffer, cpu, &written, &lost);
		if (ret)
			goto disarm;
	}

	if (smp_processor_id() != cpu)
		ret = -EAGAIN;	/* the test's affinity did not hold */
	else if (!hits)
		ret = -ENODATA;	/* the breakpoints never acted */
	else if (lost <= ring_pages)
		ret = -ERANGE;	/* the buffer took WRITE_MAX: never lapped */
disarm:
	rb_bp_release(bp);
out:
	rb_instance_close(tr, pipe);
	return ret;
}

static void __exit rb_head_exit(void)
{
}

module_init(rb_head_init);
module_exit(rb_head_exit);
MODULE_DESCRIPTION("A reader that swaps out the new head while the head still moves");
MODULE_LICENSE("GPL");
