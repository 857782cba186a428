#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rb_boot_map.sh - a trace instance in memory reserved at boot (the
# persistent ring buffer of 6.12: reserve_mem=SIZE:ALIGN:NAME and
# trace_instance=INSTANCE@NAME), TAP.
#
# Its CPU buffers count as mapped (the same restrictions as a user
# mapping) but have no meta-page: a reset must leave the meta-page alone.
# make check boots the 6.12 kernel with such an instance, boot_map; the
# other boots have none, and the tests report a skip.
T=/sys/kernel/tracing
I=$T/instances/boot_map

echo "TAP version 13"
echo "1..2"
if [ ! -d "$I" ]; then
	why="no boot-mapped instance (boot with trace_instance=boot_map@trace)"
	echo "ok 1 # SKIP $why"
	echo "ok 2 # SKIP $why"
	exit 0
fi

echo 1 > "$I/tracing_on"
echo rb_boot_map_before > "$I/trace_marker"
if ! grep -q rb_boot_map_before "$I/trace"; then
	echo "not ok 1 reset of a boot-mapped instance: no marker to reset"
else
	# A reset of every CPU buffer of the instance
	echo > "$I/trace"
	if grep -q rb_boot_map_before "$I/trace"; then
		echo "not ok 1 reset of a boot-mapped instance: the marker is still there"
	else
		echo "ok 1 reset of a boot-mapped instance"
	fi
fi

echo rb_boot_map_after > "$I/trace_marker"
if grep -q rb_boot_map_after "$I/trace"; then
	echo "ok 2 a marker written after the reset reads back"
else
	echo "not ok 2 a marker written after the reset reads back"
fi
echo 0 > "$I/tracing_on"
echo > "$I/trace"
