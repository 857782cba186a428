# Build-and-boot harness for the ftrace ring-buffer mmap series on Linux 6.1.
# A thin front: each target runs one script of scripts/.  `make help` lists them.

BUILD       ?= build
PATCHES     ?= patches
KERNEL_SRC  ?=
SMP         ?= 4
TIMEOUT     ?=
QEMU_EXTRA  ?=
KERNEL      ?=
FLAVOUR     ?= normal
MODE        ?= shell
ARGS        ?=
JOBS        ?=
MATRIX      ?=
export BUILD PATCHES KERNEL_SRC SMP TIMEOUT QEMU_EXTRA KERNEL ARGS JOBS

S := scripts

.PHONY: help deps source tree export kernel tests initramfs \
	boot check demo trace bench series-check lint matrix kcsan kcsan-base rt clean

help:
	@echo 'Build the patched 6.1 kernel, boot it in QEMU, run the tests.'
	@echo
	@echo '  make check          series checks, the normal, GKI-style arm64 and debug kernels,'
	@echo '                      the 6.12 PREEMPT_RT kernel, their boots, the accounting stress,'
	@echo '                      verdict (what CI runs; not KCSAN: make kcsan)'
	@echo '  make demo           build and boot the patched kernel: ftmmap stream and ftmmap stats'
	@echo '                      on a live workload on every CPU'
	@echo "  make trace CMD='cmd' OUT=trace.dat [EVENTS='sched ftrace:print']"
	@echo '                      run cmd in the patched guest under ftmmap record (all CPUs),'
	@echo '                      leave the trace.dat file on the host (trace-cmd report, KernelShark)'
	@echo
	@echo '  make deps           install the Debian packages the build needs'
	@echo '  make source         show which kernel source would be used'
	@echo '  make tree           (re)create $(BUILD)/linux: base commit + git am of patches/6.1/'
	@echo '  make export         write $(BUILD)/linux commits back to patches/6.1/'
	@echo '  make kernel         build the normal kernel   ($(BUILD)/obj/normal)'
	@echo '  make kernel-debug   build the debug kernel    ($(BUILD)/obj/debug)'
	@echo '  make kernel-arm64   build the arm64 kernel    ($(BUILD)/obj/arm64, gcc)'
	@echo '  make kernel-arm64-debug  the arm64 kernel with KASAN, lockdep, UBSAN, KFENCE'
	@echo '                      ($(BUILD)/obj/arm64-debug; boot with FLAVOUR=arm64-debug)'
	@echo '  make kernel-gki     build the GKI-style arm64 kernel ($(BUILD)/obj/gki: clang, CFI,'
	@echo '                      shadow call stacks, ThinLTO, PREEMPT; boot with FLAVOUR=gki)'
	@echo '  make kernel-debian  the series with Debian 12'"'"'s own amd64 config ($(BUILD)/obj/debian;'
	@echo '                      boot with FLAVOUR=debian); kernel-debian-arm64: its arm64 config'
	@echo '  make tests          headers, ring-buffer kselftests, user/ programs (FLAVOUR=arm64:'
	@echo '                      cross-compiled into $(BUILD)/arm64)'
	@echo '  make initramfs      pack the guest ($(BUILD)/initramfs-guest.cpio.gz; FLAVOUR=arm64:'
	@echo '                      $(BUILD)/initramfs-arm64.cpio.gz)'
	@echo '  make boot           boot FLAVOUR=normal|debug|arm64|arm64-debug|gki|debian|debian-arm64 in MODE=check|demo|bench|shell'
	@echo '  make series-check   the series applies, checkpatch --strict, every prefix builds'
	@echo '  make lint           W=1 + sparse on kernel/trace/: no new warnings vs the base'
	@echo '  make matrix         kernel/trace/ with W=1 in Debian amd64, ftrace-minimal, i386, arm64,'
	@echo '                      gki-clang'
	@echo '  make kcsan          KCSAN kernel (function tracer off) booted with the mapping tests and'
	@echo '                      the load; fails on a race not in config/kcsan-known-races'
	@echo '  make kcsan-base     the same on the unpatched base: rewrites config/kcsan-known-races'
	@echo '  make rt             the 6.12 series with PREEMPT_RT + lockdep, booted with its tests'
	@echo '  make bench          drain cost read() vs mapping, ours and mainline 6.12 (icount)'
	@echo '  make clean          remove $(BUILD)/obj, logs and guest files (keeps the tree)'
	@echo
	@echo 'Variables: KERNEL_SRC=/path (own 6.1 tree), BUILD=dir, SMP=4, TIMEOUT=secs,'
	@echo '  QEMU_EXTRA="qemu args", KERNEL=bzImage (boot another kernel), ARGS=a,b (bench),'
	@echo '  FORCE=1 (tree: drop unexported work), ALLOW_NO_TESTS=1, EXTRA_TESTS=dir, V=1,'
	@echo '  MATRIX="i386 arm64" (matrix: only these configs), SERIES=6.12 (tree, series-check,'
	@echo '  kernel, tests, initramfs, boot: the mainline series patches/6.12/ on linux-source-6.12)'

deps:
	@$(S)/deps.sh

source:
	@$(S)/source.sh --fetch

tree: deps
	@$(S)/tree.sh

export:
	@$(S)/export.sh

kernel: deps
	@$(S)/tree.sh --if-missing
	@$(S)/kernel.sh normal

# kernel-FLAVOUR: scripts/kernel.sh FLAVOUR (a static pattern rule: make
# looks for no implicit rule for a .PHONY target)
KERNEL_FLAVOURS := debug gki arm64 arm64-debug debian debian-arm64
.PHONY: $(addprefix kernel-,$(KERNEL_FLAVOURS))
$(addprefix kernel-,$(KERNEL_FLAVOURS)): kernel-%: deps
	@$(S)/tree.sh --if-missing
	@$(S)/kernel.sh $*

tests: deps
	@$(S)/tree.sh --if-missing
	@$(S)/tests.sh $(FLAVOUR)

initramfs: tests
	@$(S)/initramfs.sh $(FLAVOUR)

boot:
	@$(S)/boot.sh $(FLAVOUR) $(MODE)

series-check: deps
	@$(S)/tree.sh --sync
	@$(S)/series-apply.sh
	@$(S)/checkpatch.sh
	@$(S)/kernel.sh normal
	@$(S)/bisect.sh --skip-head

lint: deps
	@$(S)/tree.sh --if-missing
	@$(S)/lint.sh

matrix: deps
	@$(S)/tree.sh --if-missing
	@$(S)/matrix.sh $(MATRIX)

check:
	@$(S)/check.sh

kcsan: deps
	@$(S)/tree.sh --if-missing
	@$(S)/tests.sh
	@$(S)/initramfs.sh
	@$(S)/kcsan.sh

kcsan-base: deps
	@$(S)/tree.sh --if-missing
	@$(S)/tests.sh
	@$(S)/initramfs.sh
	@$(S)/kcsan.sh --base

rt: deps
	@SERIES=6.12 $(S)/tree.sh --if-missing
	@SERIES=6.12 $(S)/kernel.sh rt
	@SERIES=6.12 $(S)/tests.sh && $(S)/tests-6.1-on-6.12.sh && SERIES=6.12 $(S)/initramfs.sh
	@SERIES=6.12 $(S)/boot.sh rt check

demo: deps
	@$(S)/tree.sh --keep-work
	@$(S)/kernel.sh normal
	@$(S)/tests.sh
	@$(S)/initramfs.sh
	@$(S)/boot.sh normal demo

# make trace CMD='...': the command as typed, not expanded by make ($i stays $i)
ifdef CMD
override CMD := $(value CMD)
export CMD
endif
trace: deps
	@$(S)/trace.sh

bench: deps
	@$(S)/tree.sh --keep-work
	@$(S)/bench.sh

clean:
	rm -rf $(BUILD)/obj $(BUILD)/logs $(BUILD)/headers $(BUILD)/kselftest $(BUILD)/user \
		$(BUILD)/arm64 \
		$(BUILD)/initramfs $(BUILD)/initramfs-*.cpio.gz $(BUILD)/initramfs.list \
		$(BUILD)/tests.list $(BUILD)/tools
