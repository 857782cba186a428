// SPDX-License-Identifier: GPL-2.0
/*
 * rb_lap: have the writer lap a CPU buffer while its reader is between
 * loading the overrun and swapping the head page out, so that the head is
 * back on the same page when the swap's cmpxchg() runs. Loaded by
 * tests/rb_swap_lap, which maps the instance's buffer of the CPU it runs
 * on (and stays there), and reads the results back from
 * /sys/module/rb_lap/parameters/.
 *
 * A reader that another CPU's writer laps in that window needs that CPU
 * to stall it (a hypervisor that preempts its vCPU, an SMI); an NMI on the
 * reader's own CPU that traces a lap does the same. The module is that
 * NMI: a hardware breakpoint on the cmpxchg() of the swap (x86: #DB, taken
 * like an NMI) writes the lap.
 *
 * On the CPU that loads it, into the buffer of the instance:
 *  1. @prelim events of 8 bytes (a sequence number): the buffer laps, and
 *     events are lost before the head page;
 *  2. an instruction breakpoint on every 64-bit "lock cmpxchg" of @func
 *     (__rb_get_reader_page(), @size bytes, from /proc/kallsyms), the
 *     replacing of the head page by the reader page;
 *  3. TRACE_MMAP_IOCTL_GET_READER on this CPU's trace_pipe_raw (opened
 *     non-blocking, mapped by the test): when it reaches the breakpoint,
 *     the handler writes events until the head moved @lap_pages times,
 *     once round the ring, back onto the page being swapped out.
 * The init returns 0 when it got that far; the test unloads it.
 */
#include <linux/module.h>
#include <linux/ring_buffer.h>
#include <uapi/linux/trace_mmap.h>

#include "rb_bp.h"
#include "rb_instance.h"

#define LAP_MAX		100000	/* bound on the events of the handler */

RB_INSTANCE_PARAM("rb_swap_lap");

static uint prelim = 1024;
module_param(prelim, uint, 0444);
MODULE_PARM_DESC(prelim, "events written before the reader swaps");

static uint lap_pages;
module_param(lap_pages, uint, 0444);
MODULE_PARM_DESC(lap_pages, "pages of the ring, not counting the reader page");

RB_BP_FUNC_PARAMS(func, size, "__rb_get_reader_page()");

/* Results */
static ulong written;		/* events the buffer took, all steps */
module_param(written, ulong, 0444);
static ulong lapped;		/* of which from the handler */
module_param(lapped, ulong, 0444);
static uint moves;		/* head moves the handler saw */
module_param(moves, uint, 0444);
static uint breakpoints;	/* instructions the breakpoints are on */
module_param(breakpoints, uint, 0444);
static uint hits;		/* handler runs that wrote the lap */
module_param(hits, uint, 0444);
static int cpu = -1;		/* the CPU buffer written and read */
module_param(cpu, int, 0444);
static int get_reader = 1;	/* what the ioctl of step 3 returned */
module_param(get_reader, int, 0444);

static struct trace_buffer *buffer;
static struct task_struct *reader;
static bool armed;

static void rb_lap_hit(struct perf_event *bp, struct perf_sample_data *data,
		       struct pt_regs *regs)
{
	/* Only in our own GET_READER: other buffers use the function too */
	if (!READ_ONCE(armed) || current != reader)
		return;
	WRITE_ONCE(armed, false);
	hits++;

	/* The pages overwritten are full: every move adds to the overrun */
	while (moves < lap_pages && lapped < LAP_MAX) {
		if (rb_write_seq_lost(buffer, cpu, &written, &moves))
			return;
		lapped++;
	}
}

/* lock cmpxchg r64, m64: F0, a REX prefix with W set, 0F B1 */
static bool is_cmpxchg64(const u8 *p)
{
	return p[0] == 0xf0 && (p[1] & 0xf8) == 0x48 && p[2] == 0x0f &&
	       p[3] == 0xb1;
}

static int __init rb_lap_init(void)
{
	struct perf_event *bp[RB_BP_MAX] = {};
	struct trace_array *tr;
	struct file *pipe;
	unsigned int first;
	int ret;

	if (!func || !size || !lap_pages)
		return -EINVAL;

	/* The test keeps the task on this CPU */
	cpu = raw_smp_processor_id();
	reader = current;

	ret = rb_instance_open(instance, cpu, &tr, &pipe);
	if (ret)
		return ret;
	buffer = tr->array_buffer.buffer;

	ret = rb_write_seq(buffer, prelim, &written);
	if (ret)
		goto out;

	ret = rb_bp_arm(func, size, cpu, is_cmpxchg64, RB_BP_MAX, rb_lap_hit, bp, &first);
	if (ret < 0)
		goto disarm;
	breakpoints = ret;
	ret = 0;

	WRITE_ONCE(armed, true);
	get_reader = pipe->f_op->unlocked_ioctl(pipe, TRACE_MMAP_IOCTL_GET_READER, 0);
	WRITE_ONCE(armed, false);
	if (smp_processor_id() != cpu)
		ret = -EAGAIN;	/* the test's affinity did not hold */
	else if (!hits)
		ret = -ENODATA;	/* the breakpoint never fired */
disarm:
	rb_bp_release(bp);
out:
	rb_instance_close(tr, pipe);
	return ret;
}

static void __exit rb_lap_exit(void)
{
}

module_init(rb_lap_init);
module_exit(rb_lap_exit);
MODULE_DESCRIPTION("A writer that laps the buffer inside the reader's page swap");
MODULE_LICENSE("GPL");
