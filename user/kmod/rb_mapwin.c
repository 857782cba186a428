// SPDX-License-Identifier: GPL-2.0
/*
 * rb_mapwin: have a reader take the reader page's data page out of the
 * ring, as read() and splice() of trace_pipe_raw do when they may swap
 * a whole sub-buffer out, while the first mmap() of the CPU buffer has
 * put the sub-buffers' pages into the VMA but has not counted the
 * mapping yet. Loaded by tests/rb_map_window, which keeps the task @pid
 * on the CPU it loads the module from (@cpu), maps the instance's
 * buffer of @cpu afterwards, drains it, has the module write more
 * (parameter "write"), and drains it again.
 *
 * At load, the module writes @prelim 8-byte sequence numbers into the
 * instance's buffer of @cpu, so that the
 * head sub-buffer is full, and puts a kretprobe on vm_insert_pages().
 * In the task @pid on @cpu, once that function has returned (the
 * mapping's pages are in the VMA, the window) with more than the
 * meta-page, the handler queues a work item on another CPU, which calls
 * ring_buffer_read_page() with a whole page of room, and waits up to a
 * second for it. A reader that may swap takes the full sub-buffer's
 * data page and leaves a new one in the ring, which the VMA does not
 * map: events written there later are handed over through the mapping
 * where it shows the old page.
 *
 * With @get_reader set, the work item calls TRACE_MMAP_IOCTL_GET_READER
 * instead, on the module's own descriptor of the CPU's trace_pipe_raw
 * (non-blocking, never mapped), and @fail, if not 0, is what
 * vm_insert_pages() then returns (an error such as -ENOMEM): the first
 * mapping fails after the pages were inserted, and must not have handed
 * out a sub-buffer that no mapping shows (@get_reader_ret: what the call
 * returned, 1 before it; @entered: the call began before the insert
 * returned, which then waits HOLD_NS more for it).
 *
 * Writing N to the parameter "write" writes N more sequence numbers, on
 * the CPU of the writing task (the test's). Without kretprobes
 * (CONFIG_KRETPROBES off), the init fails with -EOPNOTSUPP.
 */
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/ring_buffer.h>
#include <linux/sched.h>
#include <uapi/linux/trace_mmap.h>

#include "rb_instance.h"

#define WAIT_NS		(1000 * NSEC_PER_MSEC)
#define HOLD_NS		(500 * NSEC_PER_MSEC)	/* a GET_READER held back */

RB_INSTANCE_PARAM("rb_map_window");

static int pid;
module_param(pid, int, 0444);
MODULE_PARM_DESC(pid, "the mapping task");

static ulong prelim;
module_param(prelim, ulong, 0444);
MODULE_PARM_DESC(prelim, "events written at load");

static bool get_reader;
module_param(get_reader, bool, 0444);
MODULE_PARM_DESC(get_reader, "call GET_READER in the window instead of reading");

static int fail;
module_param(fail, int, 0444);
MODULE_PARM_DESC(fail, "the error vm_insert_pages() returns, or 0");

/* Results */
static uint hits;		/* vm_insert_pages() returns acted on */
module_param(hits, uint, 0444);
static int cpu = -1;		/* the loading task's: the buffer it maps */
module_param(cpu, int, 0444);
static int reader_cpu = -1;	/* where the work item reads */
module_param(reader_cpu, int, 0444);
static int read_ret = -1;	/* ring_buffer_read_page(): < 0 if nothing */
module_param(read_ret, int, 0444);
static int read_done;		/* 1: the work item returned within the wait */
module_param(read_done, int, 0444);
static ulong written;		/* sequence numbers written */
module_param(written, ulong, 0444);
static int write_err;		/* 0, or -EIO if the buffer refused one */
module_param(write_err, int, 0444);
static int get_reader_ret = 1;	/* what GET_READER returned, once it has */
module_param(get_reader_ret, int, 0444);
static int entered;		/* 1: the work item began GET_READER in the window */
module_param(entered, int, 0444);

static struct trace_array *tr;
static struct file *pipe;	/* the instance's trace_pipe_raw of @cpu */
static struct trace_buffer *buffer;
static struct work_struct read_work;
static bool read_finished, get_reader_begun;

static void rb_mapwin_read_page(void)
{
	/* The read page API of 6.12.117, and that of 6.1 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
	struct buffer_data_read_page *page;

	if (!ring_buffer_alloc_read_page(buffer, cpu, &page)) {
		read_ret = ring_buffer_read_page(buffer, page, PAGE_SIZE, cpu, 0);
		ring_buffer_free_read_page(buffer, cpu, page);
	}
#else
	void *page = ring_buffer_alloc_read_page(buffer, cpu);

	if (!IS_ERR(page)) {
		read_ret = ring_buffer_read_page(buffer, &page, PAGE_SIZE, cpu, 0);
		ring_buffer_free_read_page(buffer, cpu, page);
	}
#endif
}

static void rb_mapwin_read(struct work_struct *work)
{
	if (get_reader) {
		/* Pairs with the smp_load_acquire() of rb_spin_until() */
		smp_store_release(&get_reader_begun, true);
		WRITE_ONCE(get_reader_ret,
			   pipe->f_op->unlocked_ioctl(pipe, TRACE_MMAP_IOCTL_GET_READER, 0));
	} else {
		rb_mapwin_read_page();
	}
	/* Pairs with rb_spin_until()'s smp_load_acquire() */
	smp_store_release(&read_finished, true);
}

/*
 * Whether the call inserts more than one page: the mapping of the whole
 * buffer, not of the meta-page alone (the test maps that first, to read
 * the buffer's size, and unmaps it).
 */
static int rb_mapwin_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	unsigned long *num = (unsigned long *)regs_get_kernel_argument(regs, 3);

	*(bool *)ri->data = current->pid == pid && *num > 1;
	return 0;
}

static int rb_mapwin_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	if (!*(bool *)ri->data || raw_smp_processor_id() != cpu || hits++)
		return 0;
	if (get_reader) {
		/*
		 * The call began in the window, and then has HOLD_NS to
		 * return: it would have consumed by then, or it waits
		 */
		queue_work_on(reader_cpu, system_highpri_wq, &read_work);
		entered = rb_spin_until(&get_reader_begun, NULL, WAIT_NS);
		read_done = rb_spin_until(&read_finished, NULL, HOLD_NS);
	} else {
		read_done = rb_run_on(reader_cpu, &read_work, &read_finished, WAIT_NS);
	}
	if (fail)
		regs_set_return_value(regs, fail);
	return 0;
}

static struct kretprobe rb_mapwin_probe = {
	.kp.symbol_name	= "vm_insert_pages",
	.entry_handler	= rb_mapwin_entry,
	.handler	= rb_mapwin_ret,
	.data_size	= sizeof(bool),
	.maxactive	= 4,
};
/* Returns missed for want of an instance: the test wants none */
module_param_named(missed, rb_mapwin_probe.nmissed, int, 0444);

/* @n sequence numbers, on this CPU: the writer must not move off it */
static int rb_mapwin_write_here(ulong n)
{
	int ret;

	preempt_disable();
	ret = rb_write_seq(buffer, n, &written);
	preempt_enable();
	if (ret)
		write_err = ret;
	return ret;
}

static int rb_mapwin_write(const char *val, const struct kernel_param *kp)
{
	ulong n;
	int ret;

	ret = kstrtoul(val, 0, &n);
	return ret ? ret : rb_mapwin_write_here(n);
}

static const struct kernel_param_ops rb_mapwin_write_ops = {
	.set	= rb_mapwin_write,
};
module_param_cb(write, &rb_mapwin_write_ops, NULL, 0200);
MODULE_PARM_DESC(write, "write this many more sequence numbers");

static int __init rb_mapwin_init(void)
{
	int ret;

	if (!pid)
		return -EINVAL;
	ret = rb_instance_open_pair(instance, &cpu, &reader_cpu, &tr, &pipe);
	if (ret)
		return ret;
	buffer = tr->array_buffer.buffer;
	INIT_WORK(&read_work, rb_mapwin_read);

	ret = rb_mapwin_write_here(prelim);
	if (!ret)
		ret = register_kretprobe(&rb_mapwin_probe);
	if (ret)
		rb_instance_close(tr, pipe);
	return ret;
}

static void __exit rb_mapwin_exit(void)
{
	unregister_kretprobe(&rb_mapwin_probe);
	flush_work(&read_work);
	rb_instance_close(tr, pipe);
}

module_init(rb_mapwin_init);
module_exit(rb_mapwin_exit);
MODULE_DESCRIPTION("A reader that swaps a sub-buffer out while mmap() fills its VMA");
MODULE_LICENSE("GPL");
