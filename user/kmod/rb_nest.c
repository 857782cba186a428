// SPDX-License-Identifier: GPL-2.0
/*
 * rb_nest: leave the commit of a CPU buffer a lap behind its writer, as an
 * interrupt that fills the buffer inside the reservation of another event
 * does, and have a consumer on another CPU ask for the next sub-buffer of
 * the mapping right then. Loaded by tests/rb_commit_lost, which maps the
 * instance's buffer of the CPU it runs on (and stays there), and reads the
 * results back from /sys/module/rb_nest/parameters/.
 *
 * On the CPU that loads it, into the buffer of the instance:
 *  1. @prelim events of 8 bytes (a sequence number), committed: enough to
 *     fill the head page and start the next one, where the commit then is;
 *  2. one event reserved there and left uncommitted;
 *  3. from an interrupt (irq_work), events until the buffer refuses one:
 *     the writer laps the buffer, overwrites the head page (the loss) and
 *     pushes the head onto the commit page, then finds the commit page
 *     next (a commit overrun, the event is dropped);
 *  4. with the event of 2 still reserved, a work item on another CPU calls
 *     TRACE_MMAP_IOCTL_GET_READER on this CPU's trace_pipe_raw (opened
 *     non-blocking before 1), and this CPU waits for it;
 *  5. the event of 2 committed.
 * The init returns 0 when it got that far; the test unloads it.
 */
#include <linux/irq_work.h>
#include <linux/module.h>
#include <linux/ring_buffer.h>
#include <linux/workqueue.h>
#include <uapi/linux/trace_mmap.h>

#include "rb_instance.h"

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#define unlock_commit(buffer, event)	ring_buffer_unlock_commit(buffer)
#else
#define unlock_commit(buffer, event)	ring_buffer_unlock_commit(buffer, event)
#endif

#define NESTED_MAX	100000		/* bound on the events of step 3 */
#define READER_WAIT_NS	(5 * NSEC_PER_SEC)	/* bound on step 4 */

RB_INSTANCE_PARAM("rb_commit_lost");

static uint prelim = 512;
module_param(prelim, uint, 0444);
MODULE_PARM_DESC(prelim, "events written before the reserved one");

/* Results */
static ulong written;		/* events the buffer took, all steps */
module_param(written, ulong, 0444);
static ulong nested;		/* of which from the interrupt */
module_param(nested, ulong, 0444);
static int cpu = -1;		/* the CPU buffer written */
module_param(cpu, int, 0444);
static int reader_cpu = -1;	/* the CPU of step 4 */
module_param(reader_cpu, int, 0444);
static int get_reader = 1;	/* what the ioctl of step 4 returned */
module_param(get_reader, int, 0444);

static struct trace_buffer *buffer;
static struct file *pipe;
static bool refused;
static bool reader_done;

static void rb_nest_irq(struct irq_work *work)
{
	u64 seq;

	while (nested < NESTED_MAX) {
		seq = written;
		if (ring_buffer_write(buffer, sizeof(seq), &seq)) {
			refused = true;
			return;
		}
		written++;
		nested++;
	}
}

static void rb_nest_reader(struct work_struct *work)
{
	get_reader = pipe->f_op->unlocked_ioctl(pipe, TRACE_MMAP_IOCTL_GET_READER, 0);
	/* Pairs with the acquire of the writer's rb_spin_until() */
	smp_store_release(&reader_done, true);
}

static DECLARE_WORK(reader_work, rb_nest_reader);

static int __init rb_nest_init(void)
{
	/* In hard interrupt context, on PREEMPT_RT too */
	struct irq_work work = IRQ_WORK_INIT_HARD(rb_nest_irq);
	struct ring_buffer_event *event;
	struct trace_array *tr;
	int ret;
	bool late;
	u64 seq;

	/* The test keeps the task on this CPU */
	ret = rb_instance_open_pair(instance, &cpu, &reader_cpu, &tr, &pipe);
	if (ret)
		return ret;
	buffer = tr->array_buffer.buffer;

	ret = rb_write_seq(buffer, prelim, &written);
	if (ret)
		goto out;

	/* Preemption stays disabled until the commit: all on one CPU */
	event = ring_buffer_lock_reserve(buffer, sizeof(seq));
	if (!event) {
		ret = -EIO;
		goto out;
	}
	seq = written++;
	memcpy(ring_buffer_event_data(event), &seq, sizeof(seq));
	if (smp_processor_id() != cpu) {
		unlock_commit(buffer, event);
		ret = -EAGAIN;
		goto out;
	}

	/* irq_work_sync() may sleep: wait for the interrupt here */
	irq_work_queue(&work);
	while (irq_work_is_busy(&work))
		cpu_relax();

	late = !rb_run_on(reader_cpu, &reader_work, &reader_done, READER_WAIT_NS);
	unlock_commit(buffer, event);
	flush_work(&reader_work);

	/* After flush_work(), reader_done is always set: the wait tells */
	if (late)
		ret = -ETIMEDOUT;
	else if (!refused)
		ret = -ERANGE;	/* the buffer took NESTED_MAX: never lapped */
out:
	rb_instance_close(tr, pipe);
	return ret;
}

static void __exit rb_nest_exit(void)
{
}

module_init(rb_nest_init);
module_exit(rb_nest_exit);
MODULE_DESCRIPTION("Nested writes that leave the commit a lap behind");
MODULE_LICENSE("GPL");
