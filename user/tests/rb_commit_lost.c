// SPDX-License-Identifier: GPL-2.0
/*
 * A loss before the commit page of a writer a lap ahead goes into the
 * header of that sub-buffer, where libtraceevent's kbuffer reads it.
 *
 * An interrupt that fills the whole buffer inside the reservation of
 * another event leaves the commit a lap behind: the head it pushes while
 * overwriting lands on the commit page. A mapped consumer that asks for
 * the next sub-buffer right then must not be handed that page with the
 * loss in the meta-page alone: the writer still owns its header, and a
 * consumer that reads losses where libtraceevent does (the missed-events
 * flag and the count after the data) would never see it.
 *
 * user/kmod/rb_nest.ko makes that state on the CPU that loads it, and a
 * work item on another CPU calls TRACE_MMAP_IOCTL_GET_READER in it; this
 * test maps the buffer first, loads the module on one CPU, and drains the
 * buffer with
 * TRACE_MMAP_IOCTL_GET_READER. Then, with sub-buffers walked by kbuffer:
 * every event the module wrote is either seen or counted in a header, the
 * headers' counts add up to the kernel's overrun, and the first event after
 * the loss comes right after the lost ones.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "kselftest_harness.h"
#include "kmod_common.h"
#include "rb_seq.h"

#define INSTANCE	"rb_commit_lost"
#define MODULE_NAME	"rb_nest"
#define MODULE_PATH	"/lib/modules/ftmmap/rb_nest.ko"
#define BUFFER_KB	"12"	/* a few sub-buffers: a short lap */
#define CPU		0

FIXTURE(rb) {
	struct rb_seq	b;
};

/*
 * Where the commit is when the interrupt comes: half-way into the page
 * after the head (the consumer is handed that much of it), or at the start
 * of the page after that (nothing of it).
 */
FIXTURE_VARIANT(rb) {
	unsigned int	prelim_halves;	/* sub-buffers filled first, in halves */
};

FIXTURE_VARIANT_ADD(rb, commit_page_with_data) {
	.prelim_halves = 3,
};

FIXTURE_VARIANT_ADD(rb, commit_page_empty) {
	.prelim_halves = 4,
};

FIXTURE_SETUP(rb)
{
	int err;

	rb_seq_init(&self->b, MODULE_PATH, MODULE_NAME);
	if (self->b.mod_fd < 0)
		SKIP(return, "no %s (a kernel without loadable modules)", MODULE_PATH);
	err = rb_seq_open(&self->b, INSTANCE, BUFFER_KB, CPU);
	ASSERT_EQ(0, err) TH_LOG("instance and mapping: %s", strerror(-err));
}

FIXTURE_TEARDOWN(rb)
{
	rb_seq_close(&self->b);
}

TEST_F(rb, loss_before_late_commit_page_in_header)
{
	struct trace_buffer_meta *meta = self->b.meta;
	struct rb_seq_seen s = RB_SEQ_SEEN_INIT;
	long long written, overrun, commit_overrun;
	unsigned int id, from;
	char params[96];
	int err;

	snprintf(params, sizeof(params), "instance=%s prelim=%u", INSTANCE,
		 rb_seq_per_subbuf(&self->b) * variant->prelim_halves / 2);

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "one CPU online: no reader beside the writer");
	id = meta->reader.id;
	from = meta->reader.read;
	err = rb_seq_load(&self->b, params);
	ASSERT_EQ(0, err) TH_LOG("loading rb_nest: %s (see the kernel log)", strerror(-err));
	ASSERT_EQ(CPU, kmod_param(MODULE_NAME, "cpu"));
	ASSERT_EQ(0, kmod_param(MODULE_NAME, "get_reader"));
	written = kmod_param(MODULE_NAME, "written");
	overrun = rb_seq_stat(&self->b, "overrun: ");
	commit_overrun = rb_seq_stat(&self->b, "commit overrun: ");
	TH_LOG("wrote %lld events (%lld from the interrupt), overrun %lld, commit overrun %lld",
	       written, kmod_param(MODULE_NAME, "nested"), overrun, commit_overrun);
	ASSERT_LT(0, overrun) TH_LOG("the interrupt did not lap the buffer");
	ASSERT_LT(0, commit_overrun);

	/* The module's GET_READER, as seen by the consumer */
	rb_seq_step(&self->b, id, from, &s);

	err = rb_seq_drain(&self->b, &s);
	ASSERT_EQ(0, err) TH_LOG("GET_READER: %s", strerror(-err));

	TH_LOG("seen %lld, lost in headers %lld, in the meta-page %lld, first after the loss %lld",
	       s.events, s.header_lost, s.meta_lost, s.first_after_loss);
	EXPECT_EQ(0, s.flag_only);
	EXPECT_EQ(0, s.bad_seq);
	EXPECT_EQ(overrun, s.header_lost);
	EXPECT_EQ(overrun, s.meta_lost);
	EXPECT_EQ(written, s.events + s.header_lost);
	EXPECT_EQ(s.header_lost, s.first_after_loss);
}

TEST_HARNESS_MAIN
