// SPDX-License-Identifier: GPL-2.0
/*
 * rb_tail: have readers take every page of a full ring out, the writer's
 * own page last, while that writer is in rb_move_tail() between loading
 * the page after its tail page and looking whether its tail page has
 * become the reader page. Loaded by tests/rb_tail_skip, which maps the
 * instance's buffer of the CPU it runs on (and stays there), and reads the
 * results back from /sys/module/rb_tail/parameters/.
 *
 * The page the writer loaded was the head, and the first swap put the
 * reader's old page in its place: the writer must move to that page (the
 * head now), not to the one it loaded, which lies one page further.
 *
 * A writer stalled that long needs its vCPU preempted by the host, an SMI,
 * or an NMI that runs long. The module is that: a hardware breakpoint on
 * the instruction of rb_move_tail() (@func, @size bytes, from
 * /proc/kallsyms) that masks the flags off the page pointer it just loaded
 * (x86: #DB, taken like an NMI) waits there while a work item on another
 * CPU calls TRACE_MMAP_IOCTL_GET_READER @ring_pages times.
 *
 * On the CPU that loads it, into the buffer of the instance:
 *  1. @prelim events of 8 bytes (a sequence number): the ring laps and is
 *     full, the head right after the writer's page;
 *  2. the work item queued on another CPU, waiting for the handler;
 *  3. the breakpoint armed, and with interrupts off (no other buffer's
 *     writer on this CPU meets it), events until one moves to the next
 *     page and hits it;
 *  4. events until the writer has overwritten @ring_pages + 1 pages of
 *     events more: once round the ring, over the page the readers left.
 * It counts the pages overwritten (@moves): those after which the overrun
 * grew. The test then polls the buffer, full. The init returns 0 when it
 * got that far; the test unloads it.
 */
#include <linux/module.h>
#include <linux/ring_buffer.h>
#include <linux/workqueue.h>
#include <uapi/linux/trace_mmap.h>

#include "rb_bp.h"
#include "rb_instance.h"

#define WAIT_NS		(10 * NSEC_PER_SEC)	/* bound on each wait */
#define WRITE_MAX	100000			/* bound on the events of 4 */

RB_INSTANCE_PARAM("rb_tail_skip");

static uint prelim = 1024;
module_param(prelim, uint, 0444);
MODULE_PARM_DESC(prelim, "events written before the breakpoint is armed");

static uint ring_pages;
module_param(ring_pages, uint, 0444);
MODULE_PARM_DESC(ring_pages, "pages of the ring, not counting the reader page");

RB_BP_FUNC_PARAMS(func, size, "rb_move_tail()");

/* Results */
static ulong written;		/* events the buffer took */
module_param(written, ulong, 0444);
static uint moves;		/* pages overwritten with events on them */
module_param(moves, uint, 0444);
static uint offset;		/* of the breakpoint in rb_move_tail() */
module_param(offset, uint, 0444);
static uint hits;		/* handler runs that waited for the readers */
module_param(hits, uint, 0444);
static uint swaps;		/* GET_READER calls that returned 0 */
module_param(swaps, uint, 0444);
static int get_reader = 1;	/* what the last of them returned */
module_param(get_reader, int, 0444);
static int cpu = -1;		/* the CPU buffer written */
module_param(cpu, int, 0444);
static int reader_cpu = -1;	/* the CPU of the work item */
module_param(reader_cpu, int, 0444);

static struct trace_buffer *buffer;
static struct file *pipe;
static struct task_struct *writer;
static bool armed, go, stop, done, late;

static void rb_tail_reader(struct work_struct *work)
{
	uint i;

	/* The handler sets go */
	if (!rb_spin_until(&go, &stop, WAIT_NS))
		goto out;
	for (i = 0; i < ring_pages; i++) {
		get_reader = pipe->f_op->unlocked_ioctl(pipe, TRACE_MMAP_IOCTL_GET_READER, 0);
		if (get_reader)
			break;
		swaps++;
	}
out:
	/* Pairs with the acquire of the handler's rb_spin_until() */
	smp_store_release(&done, true);
}

static DECLARE_WORK(reader_work, rb_tail_reader);

static void rb_tail_hit(struct perf_event *bp, struct perf_sample_data *data,
			struct pt_regs *regs)
{
	if (!READ_ONCE(armed) || current != writer)
		return;
	WRITE_ONCE(armed, false);
	hits++;

	/* Pairs with the acquire of the work item's rb_spin_until() */
	smp_store_release(&go, true);
	late = !rb_spin_until(&done, NULL, WAIT_NS);
}

/*
 * and $-4, r64 (REX.W 83 /4 ib, a register operand): the first one of
 * rb_move_tail() masks the flags off tail_page->list.next, the next page.
 */
static bool is_and_minus4(const u8 *p)
{
	return (p[0] & 0xfe) == 0x48 && p[1] == 0x83 && (p[2] & 0xf8) == 0xe0 &&
	       p[3] == 0xfc;
}

static int __init rb_tail_init(void)
{
	struct perf_event *bp[RB_BP_MAX] = {};
	struct trace_array *tr;
	uint before;
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

	while (written < prelim) {
		ret = rb_write_seq_lost(buffer, cpu, &written, &moves);
		if (ret)
			goto out;
	}

	ret = rb_bp_arm(func, size, cpu, is_and_minus4, 1, rb_tail_hit, bp, &offset);
	if (ret < 0)
		goto disarm;

	/* A page holds fewer than @prelim events: a move comes before that */
	ret = rb_write_armed(buffer, cpu, &written, &moves, prelim, &armed,
			     &hits, &stop, &reader_work, reader_cpu);
	if (ret)
		goto disarm;

	before = moves;
	for (bound = written + WRITE_MAX; moves - before <= ring_pages && written < bound;) {
		ret = rb_write_seq_lost(buffer, cpu, &written, &moves);
		if (ret)
			goto disarm;
	}

	if (smp_processor_id() != cpu)
		ret = -EAGAIN;	/* the test's affinity did not hold */
	else if (!hits)
		ret = -ENODATA;	/* the breakpoint never fired */
	else if (late)
		ret = -ETIMEDOUT;	/* the writer went on before the readers were done */
	else if (moves - before <= ring_pages)
		ret = -ERANGE;		/* the buffer took WRITE_MAX: never lapped */
disarm:
	rb_bp_release(bp);
out:
	rb_instance_close(tr, pipe);
	return ret;
}

static void __exit rb_tail_exit(void)
{
}

module_init(rb_tail_init);
module_exit(rb_tail_exit);
MODULE_DESCRIPTION("Readers that take the ring out under a writer changing pages");
MODULE_LICENSE("GPL");
