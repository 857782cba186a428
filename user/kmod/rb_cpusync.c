// SPDX-License-Identifier: GPL-2.0
/*
 * rb_cpusync: count the calls of rb_cpu_sync_readers(), the handler of the
 * IPI that trace_rb_cpu_prepare() sends to every online CPU before a new
 * CPU buffer becomes visible in its buffer's cpumask. Loaded by
 * tests/hotadd_cpu, which reads the count from
 * /sys/module/rb_cpusync/parameters/hits around an instance's creation
 * (no IPI: nothing reads a buffer being allocated) and around the first
 * and the second online of a CPU (one IPI per buffer, then none). The
 * module does not load on a kernel without the handler.
 */
#include <linux/atomic.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/sysfs.h>

static atomic_long_t hits = ATOMIC_LONG_INIT(0);

static int rb_cpusync_hits_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%ld\n", atomic_long_read(&hits));
}

static const struct kernel_param_ops rb_cpusync_hits_ops = {
	.get	= rb_cpusync_hits_get,
};
module_param_cb(hits, &rb_cpusync_hits_ops, NULL, 0444);
MODULE_PARM_DESC(hits, "calls of rb_cpu_sync_readers(), on every CPU");

static int rb_cpusync_hit(struct kprobe *p, struct pt_regs *regs)
{
	atomic_long_inc(&hits);
	return 0;
}

static struct kprobe rb_cpusync_kp = {
	.symbol_name	= "rb_cpu_sync_readers",
	.pre_handler	= rb_cpusync_hit,
};

static int __init rb_cpusync_init(void)
{
	return register_kprobe(&rb_cpusync_kp);
}

static void __exit rb_cpusync_exit(void)
{
	unregister_kprobe(&rb_cpusync_kp);
}

module_init(rb_cpusync_init);
module_exit(rb_cpusync_exit);
MODULE_DESCRIPTION("Count the IPIs that publish a new CPU buffer");
MODULE_LICENSE("GPL");
