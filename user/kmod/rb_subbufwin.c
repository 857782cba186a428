// SPDX-License-Identifier: GPL-2.0
/*
 * rb_subbufwin: have a change of buffer_subbuf_size_kb replace the pages
 * of a buffer while trace_pipe is between looking at an event and
 * printing it. Loaded by tests/rb_subbuf_pipe, whose task @pid reads the
 * trace_pipe of a CPU of the instance and whose thread @changer writes the
 * instance's buffer_subbuf_size_kb from another CPU.
 *
 * trace_pipe looks at the next event with the reader lock, drops it, and
 * prints the event from its page with only trace_access_lock() held. A
 * size change frees every page of the buffer.
 *
 * The size change is held, a spin of up to @wait_ms, right before it
 * replaces the pages of the instance's buffer, once the RCU grace period
 * it waits for is over: on return from synchronize_rcu() inside
 * ring_buffer_subbuf_order_set() of that buffer (6.1 with the series and
 * 6.12 both wait for one there, with the writers stopped).
 * The test then reads trace_pipe. When trace_pipe is about to print an
 * event (a kprobe on print_trace_line(), in the task @pid), the size
 * change is let go, and trace_pipe waits up to @wait_ms for it to end.
 *
 * A size change that takes trace_access_lock() before it changes anything
 * holds it while it is held here, so trace_pipe prints nothing until it
 * ended: @in_window stays 0. One that does not frees the page of the
 * event that trace_pipe is about to print: @in_window is 1, and the print
 * reads freed memory (which KASAN reports).
 *
 * With @window "read", the size change is let go instead when a read() of
 * trace_pipe_raw by the task @pid has read the sub-buffer size, before it
 * allocates its spare page (on return from ring_buffer_subbuf_size_get()),
 * and once it ended, @nr_events events are written into the buffer of that
 * CPU, for the read() to copy. The spare page then has the new size:
 * read() must copy that much, not the size it read before.
 *
 * Without kretprobes (CONFIG_KRETPROBES off), the init fails with
 * -EOPNOTSUPP.
 */
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/string.h>

#include "rb_instance.h"

RB_INSTANCE_PARAM("rb_subbuf_pipe");

static int pid;
module_param(pid, int, 0444);
MODULE_PARM_DESC(pid, "the task that reads trace_pipe");

static int changer;
module_param(changer, int, 0444);
MODULE_PARM_DESC(changer, "the task that changes the sub-buffer size");

static char *window = "print";
module_param(window, charp, 0444);
MODULE_PARM_DESC(window, "print: in trace_pipe's print; read: in read() of trace_pipe_raw");

static uint nr_events = 8;
module_param(nr_events, uint, 0444);
MODULE_PARM_DESC(nr_events, "the events written for read() after the size change");

static uint wait_ms = 2000;
module_param(wait_ms, uint, 0444);
MODULE_PARM_DESC(wait_ms, "how long each side waits for the other");

/* Results */
static bool parked;		/* the size change was held */
module_param(parked, bool, 0444);
static bool released;		/* the reader let it go, in its window */
module_param(released, bool, 0444);
static bool changed;		/* the size change of the buffer ended */
module_param(changed, bool, 0444);
static bool in_window;		/* ... while the reader waited in its window */
module_param(in_window, bool, 0444);
static ulong written;		/* events written for read() */
module_param(written, ulong, 0444);

static struct trace_array *tr;
static bool in_set;		/* the changer is in the buffer's order set */

static bool is_changer(void)
{
	return current->pid == changer;
}

/* Hold the size change until the reader is in its window, once */
static void rb_subbufwin_park(void)
{
	if (parked)
		return;
	/* Pairs with the test's read of the parameter, through sysfs */
	smp_store_release(&parked, true);
	rb_spin_until(&released, NULL, (u64)wait_ms * NSEC_PER_MSEC);
}

static int rb_subbufwin_set_entry(struct kretprobe_instance *ri,
				  struct pt_regs *regs)
{
	struct trace_buffer *buffer = (void *)regs_get_kernel_argument(regs, 0);

	if (is_changer() && buffer == tr->array_buffer.buffer)
		WRITE_ONCE(in_set, true);
	return 0;
}

static int rb_subbufwin_set_ret(struct kretprobe_instance *ri,
				struct pt_regs *regs)
{
	/* The order set of the snapshot buffer is not nested in it */
	if (!is_changer() || !READ_ONCE(in_set))
		return 0;
	WRITE_ONCE(in_set, false);
	/* Pairs with rb_spin_until()'s smp_load_acquire() */
	smp_store_release(&changed, true);
	return 0;
}

static struct kretprobe rb_subbufwin_set = {
	.kp.symbol_name	= "ring_buffer_subbuf_order_set",
	.entry_handler	= rb_subbufwin_set_entry,
	.handler	= rb_subbufwin_set_ret,
	.maxactive	= 4,
};

/* The grace period is over: only the page replacement is left */
static int rb_subbufwin_gp_ret(struct kretprobe_instance *ri,
			       struct pt_regs *regs)
{
	if (is_changer() && READ_ONCE(in_set))
		rb_subbufwin_park();
	return 0;
}

static struct kretprobe rb_subbufwin_gp = {
	.kp.symbol_name	= "synchronize_rcu",
	.handler	= rb_subbufwin_gp_ret,
	.maxactive	= 16,
};

/*
 * In the reader's window, the first time: let the held size change go and
 * wait for its end. Whether it ended meanwhile.
 */
static bool rb_subbufwin_let_go(void)
{
	if (!smp_load_acquire(&parked) || released)
		return false;
	/* Pairs with rb_spin_until()'s smp_load_acquire() */
	smp_store_release(&released, true);
	in_window = rb_spin_until(&changed, NULL, (u64)wait_ms * NSEC_PER_MSEC);
	return in_window;
}

/* trace_pipe has the event and is about to print it */
static int rb_subbufwin_print(struct kprobe *p, struct pt_regs *regs)
{
	struct trace_iterator *iter = (void *)regs_get_kernel_argument(regs, 0);

	if (current->pid == pid && iter->tr == tr)
		rb_subbufwin_let_go();
	return 0;
}

static struct kprobe rb_subbufwin_printk = {
	.symbol_name	= "print_trace_line",
	.pre_handler	= rb_subbufwin_print,
};

/* read() of trace_pipe_raw has the size and is about to allocate */
static int rb_subbufwin_read(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	if (current->pid == pid && rb_subbufwin_let_go())
		rb_write_seq(tr->array_buffer.buffer, nr_events, &written);
	return 0;
}

static struct kretprobe rb_subbufwin_readk = {
	.kp.symbol_name	= "ring_buffer_subbuf_size_get",
	.handler	= rb_subbufwin_read,
	.maxactive	= 16,
};

static bool window_read;

static int __init rb_subbufwin_init(void)
{
	int ret;

	if (!pid || !changer)
		return -EINVAL;

	if (!strcmp(window, "read"))
		window_read = true;
	else if (strcmp(window, "print"))
		return -EINVAL;

	tr = get_instance(instance);
	if (!tr)
		return -ENOENT;

	if (window_read)
		ret = register_kretprobe(&rb_subbufwin_readk);
	else
		ret = register_kprobe(&rb_subbufwin_printk);
	if (ret)
		goto put;
	ret = register_kretprobe(&rb_subbufwin_gp);
	if (ret)
		goto print;
	ret = register_kretprobe(&rb_subbufwin_set);
	if (ret)
		goto gp;
	return 0;

gp:
	unregister_kretprobe(&rb_subbufwin_gp);
print:
	if (window_read)
		unregister_kretprobe(&rb_subbufwin_readk);
	else
		unregister_kprobe(&rb_subbufwin_printk);
put:
	trace_array_put(tr);
	return ret;
}

static void __exit rb_subbufwin_exit(void)
{
	unregister_kretprobe(&rb_subbufwin_set);
	unregister_kretprobe(&rb_subbufwin_gp);
	if (window_read)
		unregister_kretprobe(&rb_subbufwin_readk);
	else
		unregister_kprobe(&rb_subbufwin_printk);
	trace_array_put(tr);
}

module_init(rb_subbufwin_init);
module_exit(rb_subbufwin_exit);
MODULE_DESCRIPTION("A sub-buffer size change while trace_pipe prints an event or read() sizes its page");
MODULE_LICENSE("GPL");
