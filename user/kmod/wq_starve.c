// SPDX-License-Identifier: GPL-2.0
/*
 * wq_starve: leave one CPU's normal worker pool (the pool that system_wq
 * and every other per-CPU workqueue without WQ_HIGHPRI share there) with
 * one idle kworker and a work item that runs, so that a work item queued
 * on that CPU waits until the one that runs sleeps, and then needs the
 * last idle kworker, which must create another before it runs anything.
 *
 * At load, on CPU @cpu of system_wq:
 *  1. @nr sleepers, work items that sleep until the module goes. Each one
 *     that takes the last idle kworker makes that kworker create another
 *     first, so once they all run the pool has one idle kworker left
 *     (given fewer than @nr idle ones before).
 *  2. a spinner, which takes that kworker (and, the same way, leaves one
 *     idle) and keeps the CPU without sleeping, so that the pool wakes
 *     no kworker for what is queued after it, until @stop_spin is set;
 *     then it sleeps like the sleepers.
 * The init returns once all of them run. If kthreadd cannot fork when the
 * spinner sleeps, the pool's last idle kworker waits for it, and only
 * the rescuer of a WQ_MEM_RECLAIM workqueue runs what waits on the pool.
 * Loaded by tests/rb_resize_starved.
 *
 * Unloading wakes the work items, whose kworkers then run what else
 * waits on the pool.
 */
#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/workqueue.h>

#define MAX_SLEEPERS	64
#define START_WAIT	(10 * HZ)	/* bound on the init's wait */
#define HOLD		(300 * HZ)	/* bound on a spin or a sleep */

static int cpu = -1;
module_param(cpu, int, 0444);
MODULE_PARM_DESC(cpu, "the CPU whose pool is starved");

static uint nr = 32;
module_param(nr, uint, 0444);
MODULE_PARM_DESC(nr, "sleepers queued first");

static bool stop_spin;
module_param(stop_spin, bool, 0644);
MODULE_PARM_DESC(stop_spin, "set to make the spinner sleep");

/* Result: work items that ran */
static atomic_t started = ATOMIC_INIT(0);
module_param_named(started, started.counter, int, 0444);

static struct work_struct sleepers[MAX_SLEEPERS];
static struct work_struct spinner;
static DECLARE_COMPLETION(release);

static void wq_starve_sleep(struct work_struct *work)
{
	atomic_inc(&started);
	wait_for_completion_timeout(&release, HOLD);
}

static void wq_starve_spin(struct work_struct *work)
{
	unsigned long end = jiffies + HOLD;

	atomic_inc(&started);
	/* Preempted is not asleep: the pool still counts it as running */
	while (!READ_ONCE(stop_spin) && time_before(jiffies, end))
		cond_resched();
	wait_for_completion_timeout(&release, HOLD);
}

/* Until @n work items ran: false if that took too long */
static bool wait_started(int n)
{
	unsigned long deadline = jiffies + START_WAIT;

	while (atomic_read(&started) < n) {
		if (time_after(jiffies, deadline))
			return false;
		msleep(20);
	}
	return true;
}

static void wq_starve_end(void)
{
	uint i;

	WRITE_ONCE(stop_spin, true);
	complete_all(&release);
	cancel_work_sync(&spinner);
	for (i = 0; i < nr; i++)
		cancel_work_sync(&sleepers[i]);
}

static int __init wq_starve_init(void)
{
	uint i;

	if (cpu < 0 || cpu >= nr_cpu_ids || !cpu_online(cpu) ||
	    !nr || nr > MAX_SLEEPERS)
		return -EINVAL;

	for (i = 0; i < nr; i++) {
		INIT_WORK(&sleepers[i], wq_starve_sleep);
		queue_work_on(cpu, system_wq, &sleepers[i]);
	}
	INIT_WORK(&spinner, wq_starve_spin);
	if (!wait_started(nr))
		goto timeout;
	queue_work_on(cpu, system_wq, &spinner);
	if (!wait_started(nr + 1))
		goto timeout;
	return 0;

timeout:
	wq_starve_end();
	return -ETIMEDOUT;
}

static void __exit wq_starve_exit(void)
{
	wq_starve_end();
}

module_init(wq_starve_init);
module_exit(wq_starve_exit);
MODULE_DESCRIPTION("Leave a CPU's worker pool one idle kworker and a busy one");
MODULE_LICENSE("GPL");
