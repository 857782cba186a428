# Where a hung guest is: every vCPU's registers and the kernel functions
# whose addresses are on its stack, and the kernel's log as far as printk
# stored it (also what no console printed).  The guest kernels are built
# without frame pointers, so gdb cannot unwind them; a scan of the stack
# is what there is, stale frames included.
#
#   SILENT=0 QEMU_EXTRA="-gdb tcp:127.0.0.1:1234" scripts/boot.sh debug check
#   (when it hangs)
#   gdb -batch -ex 'target remote 127.0.0.1:1234' -x scripts/gdb-stacks.py \
#       build/obj/debug/vmlinux
#
# Kernels without KASLR only (the guests' configs have none).
import os
import struct

import gdb

WORDS = 512
log_size = None
for t in gdb.selected_inferior().threads():
    t.switch()
    print(f"=== {t.name or ''} vCPU {t.num}: "
          + gdb.execute("x/i $pc", to_string=True).strip())
    regs = gdb.execute("info registers rdi rsi rdx rcx rbx rbp r12 r13 r14 r15 rsp",
                       to_string=True)
    for line in regs.splitlines():
        name, value = line.split()[:2]
        sym = gdb.execute(f"info symbol {value}", to_string=True).strip()
        print(f"  {name:4} {value}" + ("" if sym.startswith("No symbol") else f"  {sym}"))
    rsp = int(gdb.parse_and_eval("$rsp")) & (2**64 - 1)
    try:
        mem = bytes(gdb.selected_inferior().read_memory(rsp, 8 * WORDS))
    except gdb.MemoryError:
        print("  (stack not readable)")
        continue
    for i, w in enumerate(struct.unpack(f"<{WORDS}Q", mem)):
        if w >> 32 != 0xffffffff:
            continue
        sym = gdb.execute(f"info symbol {w}", to_string=True).strip()
        if " in section .text" in sym:
            print(f"  sp+{i * 8:#05x} {sym.replace(' in section .text', '')}")

# The printk ring buffer's text, in memory order (it wraps). Without
# debug info its size comes from the .config beside vmlinux.
config = os.path.join(os.path.dirname(gdb.current_progspace().filename), ".config")
shift = 17
try:
    for line in open(config):
        if line.startswith("CONFIG_LOG_BUF_SHIFT="):
            shift = int(line.split("=")[1])
except OSError:
    print(f"(no {config}: assuming CONFIG_LOG_BUF_SHIFT={shift})")
buf = int(gdb.parse_and_eval("(long)&__log_buf")) & (2**64 - 1)
size = 1 << shift
data = bytes(gdb.selected_inferior().read_memory(buf, size))
print("=== the kernel's log (printk's text ring, in memory order)")
for chunk in data.split(b"\0"):
    text = "".join(c if " " <= c <= "~" or c == "\n" else " "
                   for c in chunk.decode("ascii", "ignore")).strip()
    if len(text) >= 4:
        print(f"  {text}")
