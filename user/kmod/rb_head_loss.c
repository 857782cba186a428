// SPDX-License-Identifier: GPL-2.0
/*
 * rb_head_loss: have a writer that interrupts another one moving the head
 * flag the new head before the first one counted the overrun of the page
 * it pushes out, and a reader on another CPU read the overrun then and
 * swap that new head out once the move ended. Loaded by
 * tests/rb_head_loss, which maps the instance's buffer of the CPU it runs
 * on (and stays there), and reads the results back from
 * /sys/module/rb_head_loss/parameters/.
 *
 * A writer moves the head off a full page in three cmpxchg()s: the
 * pointer into that page from HEAD to UPDATE, the pointer into the next
 * page to HEAD, the first pointer back to NORMAL. Right after the first,
 * it adds the events of the page it pushes out to the overrun. A writer
 * that interrupts it in between finds the UPDATE flag and flags the next
 * page HEAD itself, before that count. A reader whose search for the head
 * starts at that page finds it there: the loss it reports with the page
 * lacks the page pushed out unless it reads the overrun after the move
 * ended.
 *
 * The module is both interrupts, as NMIs: hardware breakpoints
 *  - on the CPU that loads it, right after each 64-bit "lock cmpxchg" of
 *    rb_move_tail() (@func, @size bytes, from /proc/kallsyms) whose memory
 *    operand is a register's address; the one that changed HEAD to UPDATE
 *    there is the first step. Its handler writes an event (the
 *    interrupting writer), lets a work item on another CPU call
 *    TRACE_MMAP_IOCTL_GET_READER, and waits a while for that reader to
 *    reach the second breakpoint;
 *  - on that other CPU, right after the load of the overrun that follows
 *    the full barrier of __rb_get_reader_page() (@rfunc, @rsize), found
 *    by the displacement ring_buffer_overrun_cpu() loads the overrun at.
 *    Its handler waits for the first writer to end the move.
 * A reader that looks at the move before it reads the overrun gets there
 * only once the move ended: the first handler's wait times out. One that
 * looks after read the overrun without the page's count.
 *
 * The reader finds the head from where its last swap left it. So that it
 * starts at the new head, the breakpoint acts at the @ring_pages-th head
 * move after one GET_READER: the move off the page the reader put where
 * the head was.
 *
 * On the CPU that loads it, into the buffer of the instance: @prelim
 * events of 8 bytes (a sequence number), so that the ring laps; one
 * GET_READER; the breakpoints armed, and with interrupts off, events until
 * the handler acted. The test compares the overruns after the two
 * GET_READERs with the loss the second one reported in the meta-page.
 */
#include <linux/module.h>
#include <linux/ring_buffer.h>
#include <linux/workqueue.h>
#include <uapi/linux/trace_mmap.h>

#include "rb_bp.h"
#include "rb_instance.h"

#define HANDLER_WAIT_NS	(100 * NSEC_PER_MSEC)	/* for the reader */
#define READER_WAIT_NS	(NSEC_PER_SEC)		/* for the end of the move */
#define WORK_WAIT_NS	(10 * NSEC_PER_SEC)	/* the work item's */
#define WRITE_MAX	100000			/* bound on the events written */
#define PAGE_HEAD	1UL	/* RB_PAGE_HEAD, in the low bits of a pointer */
#define PAGE_UPDATE	2UL	/* RB_PAGE_UPDATE */
#define FLAGS		3UL

RB_INSTANCE_PARAM("rb_head_loss");

static uint prelim = 1024;
module_param(prelim, uint, 0444);
MODULE_PARM_DESC(prelim, "events written before the first GET_READER");

static uint ring_pages;
module_param(ring_pages, uint, 0444);
MODULE_PARM_DESC(ring_pages, "pages of the ring, not counting the reader page");

RB_BP_FUNC_PARAMS(func, size, "rb_move_tail()");

RB_BP_FUNC_PARAMS(rfunc, rsize, "__rb_get_reader_page()");

/* Results */
static ulong written;		/* events the buffer took */
module_param(written, ulong, 0444);
static uint breakpoints;	/* the writer's breakpoints */
module_param(breakpoints, uint, 0444);
static uint moves;		/* first steps the breakpoints saw */
module_param(moves, uint, 0444);
static uint hits;		/* writer handler runs that acted */
module_param(hits, uint, 0444);
static uint rhits;		/* reader handler runs that acted */
module_param(rhits, uint, 0444);
static int in_move = -1;	/* the reader had the overrun before the move ended */
module_param(in_move, int, 0444);
static int nested = -1;		/* what the handler's write returned */
module_param(nested, int, 0444);
static int swapped = -1;	/* the work item's GET_READER */
module_param(swapped, int, 0444);
static ulong overrun_before;	/* overrun after the first GET_READER */
module_param(overrun_before, ulong, 0444);
static ulong overrun_after;	/* and after the second */
module_param(overrun_after, ulong, 0444);
static int cpu = -1;		/* the CPU buffer written */
module_param(cpu, int, 0444);
static int reader_cpu = -1;	/* the CPU of the work item */
module_param(reader_cpu, int, 0444);

static struct trace_buffer *buffer;
static struct file *pipe;
static struct task_struct *writer, *reader;
static bool armed, go, stop;

static void rb_head_loss_reader(struct work_struct *work)
{
	WRITE_ONCE(reader, current);
	/* The writer's handler sets go */
	if (!rb_spin_until(&go, &stop, WORK_WAIT_NS))
		return;
	swapped = pipe->f_op->unlocked_ioctl(pipe, TRACE_MMAP_IOCTL_GET_READER, 0);
}

static DECLARE_WORK(reader_work, rb_head_loss_reader);

/*
 * mov disp(%reg), %reg64 (REX.W, 8B, ModRM) with an 8 or 32-bit
 * displacement and no SIB byte: its length, and *@disp; 0 if it is not.
 */
static unsigned int load_disp(const u8 *p, long *disp)
{
	u8 mod = p[2] >> 6;

	if ((p[0] & 0xf8) != 0x48 || p[1] != 0x8b || (p[2] & 7) == 4)
		return 0;
	if (mod == 1) {
		*disp = (s8)p[3];
		return 4;
	}
	if (mod == 2) {
		s32 d;

		memcpy(&d, p + 3, sizeof(d));	/* x86: little-endian */
		*disp = d;
		return 7;
	}
	return 0;
}

/* The 64-bit "lock cmpxchg" at a register's address that ends at @p, or NULL */
static const u8 *cmpxchg_before(const u8 *p)
{
	if (rb_bp_is_cmpxchg64_at_reg(p - 5) && rb_bp_cmpxchg64_len(p - 5) == 5)
		return p - 5;
	if (rb_bp_is_cmpxchg64_at_reg(p - 6) && rb_bp_cmpxchg64_len(p - 6) == 6)
		return p - 6;
	return NULL;
}

static bool after_cmpxchg(const u8 *p)
{
	return cmpxchg_before(p);
}

/*
 * The displacement of the overrun in the CPU buffer: the load of
 * ring_buffer_overrun_cpu() right before its return (pops between; KASAN
 * checks come before it), or -1.
 */
static long overrun_disp(void)
{
	const u8 *f = (const u8 *)ring_buffer_overrun_cpu;
	unsigned int off, len;
	long disp;

	for (off = 0; off < 256; off++) {
		const u8 *q;

		len = load_disp(f + off, &disp);
		if (!len)
			continue;
		for (q = f + off + len;; q++) {		/* pop, pop r8-r15 */
			if (*q == 0x41 && q[1] >= 0x58 && q[1] <= 0x5f)
				q++;
			else if (*q < 0x58 || *q > 0x5f)
				break;
		}
		if (*q == 0xc3 || *q == 0xe9)		/* ret, jmp to a thunk */
			return disp;
	}
	return -1;
}

/*
 * Right after the load of the overrun that follows the one full barrier
 * (lock addl $0,-4(%rsp)) of __rb_get_reader_page(), or NULL.
 */
static const u8 *reader_target;

static const u8 *find_reader_target(void)
{
	static const u8 mb[] = { 0xf0, 0x83, 0x44, 0x24, 0xfc, 0x00 };
	const u8 *f = (const u8 *)rfunc, *at = NULL, *p;
	unsigned int off, len;
	long want, disp;

	want = overrun_disp();
	if (want < 0)
		return NULL;
	for (off = 0; off + sizeof(mb) <= rsize; off++) {
		if (memcmp(f + off, mb, sizeof(mb)))
			continue;
		if (at)
			return NULL;		/* more than one */
		at = f + off;
	}
	if (!at)
		return NULL;
	for (p = at + sizeof(mb); p < at + 80 && p + 7 <= f + rsize; p++) {
		len = load_disp(p, &disp);
		if (len && disp == want)
			return p + len;
	}
	return NULL;
}

static bool is_reader_target(const u8 *p)
{
	return p == reader_target;
}

#if defined(CONFIG_X86_64) && defined(CONFIG_HAVE_HW_BREAKPOINT)
static unsigned long *move_ptr;	/* the pointer into the page the head moves off */
static bool held;		/* the reader is at its breakpoint */

static void rb_head_loss_writer_hit(struct perf_event *bp,
				    struct perf_sample_data *data,
				    struct pt_regs *regs)
{
	const u8 *insn = cmpxchg_before((const u8 *)regs->ip);
	unsigned long *ptr, val;
	u64 seq;

	if (!READ_ONCE(armed) || current != writer || !insn)
		return;
	/* The first step: HEAD was there (the old value in rax), UPDATE is */
	ptr = rb_bp_cmpxchg64_ptr(regs, insn);
	if (!ptr || (regs->ax & FLAGS) != PAGE_HEAD)
		return;
	val = READ_ONCE(*ptr);
	if ((val & FLAGS) != PAGE_UPDATE || (val & ~FLAGS) != (regs->ax & ~FLAGS) ||
	    ++moves < ring_pages)
		return;
	WRITE_ONCE(armed, false);
	hits++;
	WRITE_ONCE(move_ptr, ptr);

	/* The interrupting writer: the page it writes on is full too */
	seq = written;
	nested = ring_buffer_write(buffer, sizeof(seq), &seq);
	if (!nested)
		written++;

	/* Pairs with the acquire of the work item's rb_spin_until() */
	smp_store_release(&go, true);
	/* Only a reader that read the overrun first gets there now */
	rb_spin_until(&held, NULL, HANDLER_WAIT_NS);
}

static void rb_head_loss_reader_hit(struct perf_event *bp,
				    struct perf_sample_data *data,
				    struct pt_regs *regs)
{
	u64 deadline = ktime_get_mono_fast_ns() + READER_WAIT_NS;
	unsigned long *ptr;

	if (!smp_load_acquire(&go) || current != READ_ONCE(reader) || rhits)
		return;
	rhits++;
	ptr = READ_ONCE(move_ptr);
	in_move = (READ_ONCE(*ptr) & FLAGS) == PAGE_UPDATE;
	/* Pairs with the acquire of the writer's handler */
	smp_store_release(&held, true);
	/* The overrun is read: let the writer end its move */
	while ((READ_ONCE(*ptr) & FLAGS) == PAGE_UPDATE &&
	       ktime_get_mono_fast_ns() < deadline)
		cpu_relax();
}
#else
#define rb_head_loss_writer_hit	NULL
#define rb_head_loss_reader_hit	NULL
#endif

static int __init rb_head_loss_init(void)
{
	struct perf_event *bp[RB_BP_MAX] = {}, *rbp[RB_BP_MAX] = {};
	struct trace_array *tr;
	uint first, lost = 0;
	int ret;

	if (!func || !size || !rfunc || !rsize || !ring_pages)
		return -EINVAL;
	if (!IS_ENABLED(CONFIG_X86_64) || !IS_ENABLED(CONFIG_HAVE_HW_BREAKPOINT))
		return -EOPNOTSUPP;	/* the instruction scans are x86-64's */
	reader_target = find_reader_target();
	if (!reader_target)
		return -ENOEXEC;	/* the reader's code is not as expected */

	/* The test keeps the task on this CPU */
	ret = rb_instance_open_pair(instance, &cpu, &reader_cpu, &tr, &pipe);
	if (ret)
		return ret;
	buffer = tr->array_buffer.buffer;
	writer = current;

	ret = rb_write_then_swap(buffer, pipe, prelim, &written);
	if (ret)
		goto out;
	overrun_before = ring_buffer_overrun_cpu(buffer, cpu);

	ret = rb_bp_arm(rfunc, rsize, reader_cpu, is_reader_target, 1,
			rb_head_loss_reader_hit, rbp, &first);
	if (ret < 0)
		goto disarm;
	ret = rb_bp_arm(func, size, cpu, after_cmpxchg, RB_BP_MAX,
			rb_head_loss_writer_hit, bp, &first);
	if (ret < 0)
		goto disarm;
	breakpoints = ret;
	ret = 0;

	ret = rb_write_armed(buffer, cpu, &written, &lost, WRITE_MAX, &armed,
			     &hits, &stop, &reader_work, reader_cpu);
	overrun_after = ring_buffer_overrun_cpu(buffer, cpu);
	if (ret)
		goto disarm;

	if (smp_processor_id() != cpu)
		ret = -EAGAIN;	/* the test's affinity did not hold */
	else if (!hits)
		ret = -ENODATA;	/* the breakpoints never acted */
disarm:
	rb_bp_release(rbp);
	rb_bp_release(bp);
out:
	rb_instance_close(tr, pipe);
	return ret;
}

static void __exit rb_head_loss_exit(void)
{
}

module_init(rb_head_loss_init);
module_exit(rb_head_loss_exit);
MODULE_DESCRIPTION("A reader that takes the loss before a new head while the head still moves");
MODULE_LICENSE("GPL");
