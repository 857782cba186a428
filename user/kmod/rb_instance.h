/* SPDX-License-Identifier: GPL-2.0 */
/*
 * For the test modules that write into the buffer of a trace instance and
 * call the ioctls of one of its CPUs' trace_pipe_raw.
 */
#ifndef RB_INSTANCE_H
#define RB_INSTANCE_H

#include <linux/cpumask.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/ring_buffer.h>
#include <linux/timekeeping.h>
#include <linux/trace.h>
#include <linux/version.h>
#include <linux/workqueue.h>

#include <uapi/linux/trace_mmap.h>

#include "trace.h"

/* 6.1 and 6.12, the two kernels of the series */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 7, 0)
#define get_instance(name)		trace_array_get_by_name(name, NULL)
#else
#define get_instance(name)		trace_array_get_by_name(name)
#endif

/* The module parameter "instance": the trace instance, @def by default */
#define RB_INSTANCE_PARAM(def)						\
	static char *instance = def;					\
	module_param(instance, charp, 0444);				\
	MODULE_PARM_DESC(instance, "the trace instance to write into")

/*
 * Trace instance @name, and the trace_pipe_raw of its CPU @cpu opened
 * non-blocking (the test maps it first): 0 with a reference on both, put
 * with rb_instance_close(), or -errno.
 */
static inline int rb_instance_open(const char *name, int cpu,
				   struct trace_array **tr, struct file **pipe)
{
	char path[96];
	int ret;

	*tr = get_instance(name);
	if (!*tr)
		return -ENOENT;
	snprintf(path, sizeof(path),
		 "/sys/kernel/tracing/instances/%s/per_cpu/cpu%d/trace_pipe_raw",
		 name, cpu);
	*pipe = filp_open(path, O_RDONLY | O_NONBLOCK, 0);
	if (IS_ERR(*pipe)) {
		ret = PTR_ERR(*pipe);
		trace_array_put(*tr);
		return ret;
	}
	return 0;
}

/*
 * For the modules whose writer is the loading task, on the CPU the test
 * keeps it on, and whose reader is a work item on another CPU: *@cpu (this
 * one), *@reader_cpu, and rb_instance_open() of @name on *@cpu. 0,
 * -EOPNOTSUPP with one CPU online, or rb_instance_open()'s error.
 */
static inline int rb_instance_open_pair(const char *name, int *cpu,
					int *reader_cpu, struct trace_array **tr,
					struct file **pipe)
{
	*cpu = raw_smp_processor_id();
	*reader_cpu = cpumask_any_but(cpu_online_mask, *cpu);
	if (*reader_cpu >= nr_cpu_ids)
		return -EOPNOTSUPP;	/* one CPU: no reader beside the writer */
	return rb_instance_open(name, *cpu, tr, pipe);
}

/*
 * Write @n events into @buffer, on this CPU, each an 8-byte sequence
 * number: *@written, counted up. 0, or -EIO if the buffer refused one.
 */
static inline int rb_write_seq(struct trace_buffer *buffer, unsigned long n,
			       unsigned long *written)
{
	u64 seq;

	while (n--) {
		seq = *written;
		if (ring_buffer_write(buffer, sizeof(seq), &seq))
			return -EIO;
		(*written)++;
	}
	return 0;
}

/*
 * rb_write_seq() of @n events, then one TRACE_MMAP_IOCTL_GET_READER of
 * @pipe (the buffer is mapped): the reader's next search for the head
 * starts where that swap left it. 0, or -errno of the step that failed.
 */
static inline int rb_write_then_swap(struct trace_buffer *buffer,
				     struct file *pipe, unsigned long n,
				     unsigned long *written)
{
	int ret = rb_write_seq(buffer, n, written);

	if (ret)
		return ret;
	return pipe->f_op->unlocked_ioctl(pipe, TRACE_MMAP_IOCTL_GET_READER, 0);
}

/*
 * rb_write_seq() of one event, and *@pages counted up if the overrun of
 * CPU @cpu grew with it: a page of events overwritten.
 */
static inline int rb_write_seq_lost(struct trace_buffer *buffer, int cpu,
				    unsigned long *written, unsigned int *pages)
{
	unsigned long overrun = ring_buffer_overrun_cpu(buffer, cpu);
	int ret;

	ret = rb_write_seq(buffer, 1, written);
	if (!ret && ring_buffer_overrun_cpu(buffer, cpu) != overrun)
		(*pages)++;
	return ret;
}

/*
 * Spin until *@flag is set, *@stop is (@stop may be NULL) or @ns
 * nanoseconds have passed, by a clock that an NMI handler may read:
 * whether *@flag was set. Its load pairs with the smp_store_release()
 * that sets it.
 */
static inline bool rb_spin_until(bool *flag, bool *stop, u64 ns)
{
	u64 deadline = ktime_get_mono_fast_ns() + ns;

	while (!smp_load_acquire(flag)) {
		if ((stop && READ_ONCE(*stop)) || ktime_get_mono_fast_ns() > deadline)
			return false;
		cpu_relax();
	}
	return true;
}

/*
 * Queue @work on @cpu and spin, as rb_spin_until() does, until it sets
 * *@done with smp_store_release() or @ns nanoseconds have passed: whether
 * it did. For a handler that must not return before the reader ran.
 */
static inline bool rb_run_on(int cpu, struct work_struct *work, bool *done,
			     u64 ns)
{
	queue_work_on(cpu, system_highpri_wq, work);
	return rb_spin_until(done, NULL, ns);
}

/*
 * The armed phase of the modules whose breakpoint handler acts once in
 * the writer, this task, and lets @work, queued on @reader_cpu, read:
 * with *@armed set and interrupts off (no other buffer's writer on this
 * CPU meets the breakpoints), events until *@hits is set or @max more
 * were written (*@pages counts the pages overwritten); then *@armed
 * cleared, *@stop set (the work item ends if it still waits) and the work
 * item waited for. 0, or -EIO if the buffer refused an event.
 */
static inline int rb_write_armed(struct trace_buffer *buffer, int cpu,
				 unsigned long *written, unsigned int *pages,
				 unsigned long max, bool *armed, unsigned int *hits,
				 bool *stop, struct work_struct *work, int reader_cpu)
{
	unsigned long flags, bound = *written + max;
	int ret = 0;

	queue_work_on(reader_cpu, system_highpri_wq, work);
	WRITE_ONCE(*armed, true);
	local_irq_save(flags);
	while (!READ_ONCE(*hits) && *written < bound) {
		ret = rb_write_seq_lost(buffer, cpu, written, pages);
		if (ret)
			break;
	}
	local_irq_restore(flags);
	WRITE_ONCE(*armed, false);
	WRITE_ONCE(*stop, true);
	flush_work(work);
	return ret;
}

static inline void rb_instance_close(struct trace_array *tr, struct file *pipe)
{
	fput(pipe);
	trace_array_put(tr);
}

#endif /* RB_INSTANCE_H */
