// SPDX-License-Identifier: GPL-2.0
/*
 * rb_pipewin: have TRACE_MMAP_IOCTL_GET_READER run while trace_pipe is
 * between looking at an event and consuming it. Loaded by
 * tests/rb_pipe_window, which keeps the task @pid on the CPU it loads the
 * module from, maps the instance's buffer of that CPU, writes markers
 * there and reads the CPU's trace_pipe.
 *
 * trace_pipe takes the trace_access_lock() of the CPU, looks at the
 * next event, prints it (print_trace_line()) and consumes it, then goes
 * on to the next. A kretprobe on print_trace_line(), in the task @pid
 * for the instance, the first time, once the event is printed, has a
 * work item on another CPU call GET_READER on the CPU's trace_pipe_raw
 * (which the module opens) and waits up to @wait_ms for it, counting
 * the events read meanwhile. A GET_READER that does not take that lock
 * hands the event being printed over to the mapping too, and the
 * consume that follows takes the next event, which nobody then gets.
 *
 * Without kretprobes (CONFIG_KRETPROBES off), the init fails with
 * -EOPNOTSUPP.
 */
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/sched.h>

#include "rb_instance.h"

RB_INSTANCE_PARAM("rb_pipe_window");

static int pid;
module_param(pid, int, 0444);
MODULE_PARM_DESC(pid, "the task that reads trace_pipe");

static uint wait_ms = 300;
module_param(wait_ms, uint, 0444);
MODULE_PARM_DESC(wait_ms, "how long the printing task waits for GET_READER");

/* Results */
static uint hits;		/* its print_trace_line() calls; the first is acted on */
module_param(hits, uint, 0444);
static int get_reader = 1;	/* what GET_READER returned (1: not called) */
module_param(get_reader, int, 0444);
static int in_window;		/* 1: GET_READER returned within the wait */
module_param(in_window, int, 0444);
static ulong consumed_in_print;	/* events read by others while it printed */
module_param(consumed_in_print, ulong, 0444);
static int cpu = -1;		/* the loading task's: its trace_pipe */
module_param(cpu, int, 0444);
static int reader_cpu = -1;	/* where GET_READER runs */
module_param(reader_cpu, int, 0444);

static struct trace_array *tr;
static struct file *pipe;
static struct work_struct reader_work;
static bool reader_done;

static void rb_pipewin_get_reader(struct work_struct *work)
{
	get_reader = pipe->f_op->unlocked_ioctl(pipe, TRACE_MMAP_IOCTL_GET_READER, 0);
	/* Pairs with rb_spin_until()'s smp_load_acquire() */
	smp_store_release(&reader_done, true);
}

/* Whether the call is the test task's, for the instance */
static int rb_pipewin_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct trace_iterator *iter = (void *)regs_get_kernel_argument(regs, 0);

	*(bool *)ri->data = current->pid == pid && iter->tr == tr;
	return 0;
}

/*
 * Once the event is printed, before trace_pipe consumes it. Not from the
 * entry handler: that runs in the breakpoint's exception, where queueing
 * work is not allowed.
 */
static int rb_pipewin_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	unsigned long before;

	if (!*(bool *)ri->data || hits++)
		return 0;
	before = ring_buffer_read_events_cpu(tr->array_buffer.buffer, cpu);
	in_window = rb_run_on(reader_cpu, &reader_work, &reader_done,
			      wait_ms * NSEC_PER_MSEC);
	consumed_in_print = ring_buffer_read_events_cpu(tr->array_buffer.buffer, cpu) - before;
	return 0;
}

static struct kretprobe rb_pipewin_probe = {
	.kp.symbol_name	= "print_trace_line",
	.entry_handler	= rb_pipewin_entry,
	.handler	= rb_pipewin_ret,
	.data_size	= sizeof(bool),
	.maxactive	= 4,
};
/* Returns missed for want of an instance: the test wants none */
module_param_named(missed, rb_pipewin_probe.nmissed, int, 0444);

static int __init rb_pipewin_init(void)
{
	int ret;

	if (!pid)
		return -EINVAL;

	ret = rb_instance_open_pair(instance, &cpu, &reader_cpu, &tr, &pipe);
	if (ret)
		return ret;
	INIT_WORK(&reader_work, rb_pipewin_get_reader);

	ret = register_kretprobe(&rb_pipewin_probe);
	if (ret)
		rb_instance_close(tr, pipe);
	return ret;
}

static void __exit rb_pipewin_exit(void)
{
	unregister_kretprobe(&rb_pipewin_probe);
	flush_work(&reader_work);
	rb_instance_close(tr, pipe);
}

module_init(rb_pipewin_init);
module_exit(rb_pipewin_exit);
MODULE_DESCRIPTION("A GET_READER while trace_pipe prints an event");
MODULE_LICENSE("GPL");
