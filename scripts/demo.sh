#!/usr/bin/env bash
# make demo: the main job on built-in data. Simulate a KVM host + 4-vCPU guest session,
# attach the guest to the host, and print the merged timeline with the sync check.
set -eu  # no pipefail: head closes the pipes on purpose
builddir=${1:-build}
hg=$builddir/tools/hgtrace/hgtrace
out=$builddir/demo
mkdir -p "$out"
rm -f "$out"/session-*.dat

echo "== hgtrace simulate: host with 4 vCPU threads on 4 CPUs, guest recorded with x86-tsc"
"$hg" simulate -o "$out/session" --vcpus 4 --host-cpus 4 --duration-ms 200 --write-tsc-offset \
	--inject preempt:500
echo
echo "== hgtrace attach: map vCPUs to host threads, guest TSC -> host TSC"
"$hg" attach "$out/session-host.dat" "$out/session-guest.dat" 5001 5002 5003 5004
echo
echo "== hgtrace report (first 25 merged lines; guest events sit between their vCPU's kvm_entry and kvm_exit)"
"$hg" report --no-sync-check "$out/session-host.dat" "$out/session-guest.dat" | head -26
echo
echo "== per-guest summary (the sync check over all $(
	"$hg" report --no-sync-check "$out/session-guest.dat" | grep -vc '^cpus=') guest events)"
"$hg" report "$out/session-host.dat" "$out/session-guest.dat" 2>&1 > /dev/null | sed 's/^hgtrace: //'
echo
echo "== hgtrace why --host-only --top 1: the worst guest delay the host caused (500 us planted)"
"$hg" why --host-only --top 1 "$out/session-host.dat" "$out/session-guest.dat"
echo
echo "== hgtrace view: the session as one HTML timeline"
"$hg" view -o "$out/session.html" "$out/session-host.dat" "$out/session-guest.dat"
echo
echo "Files: $out/session-host.dat and $out/session-guest.dat (both readable by trace-cmd)."
echo "Report them: $hg report $out/session-host.dat $out/session-guest.dat | less"
echo "        or:  trace-cmd report -i $out/session-host.dat -i $out/session-guest.dat"
echo "Open the timeline: chromium $out/session.html"
echo "A real recording of this machine: $hg report tests/data/tsc.dat | less"
