#!/usr/bin/env bash
# Writing never destroys: an output that is the input under another name (./name, the
# absolute path, a hard link, a symbolic link), a device node, a full disk, or attach given
# one file twice. Each must fail with one error line and leave every file byte-identical;
# a good write replaces its target only when complete.
# Usage: no-destroy.sh HGTRACE
HGTRACE=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
tap_workdir

cp "$here/data/tsc.dat" a.dat
ln a.dat hard.dat
ln -s a.dat sym.dat
sum0=$(md5sum < a.dat)

for out in ./a.dat "$t/a.dat" hard.dat sym.dat; do
	TAP_WANT="the same file as the input" tap_refuses "convert -i a.dat -o $out (the same file)" "a.dat" \
		"$HGTRACE" convert -i a.dat -o "$out" --compression none
done
[ "$(md5sum < a.dat)" = "$sum0" ] && [ "$(stat -c %h a.dat)" = 2 ] && [ -L sym.dat ] &&
	tap_ok "a.dat unchanged after four refusals ($(stat -c %s a.dat) bytes, 2 links, symlink kept)" ||
	tap_fail "a.dat changed: $(ls -l a.dat hard.dat sym.dat)"

# A device node that fails every write (a copy of /dev/full): refused, never unlinked.
if mknod full c 1 7 2> /dev/null; then
	tap_refuses "convert -o a character device" "" "$HGTRACE" convert -i a.dat -o full
	[ -c full ] && grep -q "full: a character device" tap-err.txt &&
		tap_ok "the device node is still there: $(cat tap-err.txt)" ||
		tap_fail "device node: $(ls -l full 2>&1): $(cat tap-err.txt)"
else
	tap_skip "convert -o a device node" "mknod is not allowed here"
fi
# gen writes text: a device node is written in place, and stays a device node.
if mknod null c 1 3 2> /dev/null; then
	if "$HGTRACE" gen --format h -o null "$here/probes/sample.trace-events" 2> err.txt && [ -c null ]; then
		tap_ok "gen -o a device node: written in place, the node kept"
	else
		tap_fail "gen -o a device node: $(ls -l null) $(cat err.txt)"
	fi
else
	tap_skip "gen -o a device node" "mknod is not allowed here"
fi
mkdir adir
TAP_WANT="adir: a directory" tap_refuses "convert -o a directory" "" "$HGTRACE" convert -i a.dat -o adir

# A full disk: the previous output stays as it was, and nothing is left beside it.
if mkdir small && mount -t tmpfs -o size=40k tmpfs small 2> /dev/null; then
	echo "the previous output" > small/out.dat
	cp small/out.dat prev.txt
	tap_refuses "convert to a full disk" "a.dat" "$HGTRACE" convert -i a.dat -o small/out.dat \
		--compression none
	if cmp -s small/out.dat prev.txt && [ "$(ls -A small)" = out.dat ] &&
		grep -q "No space left on device" tap-err.txt; then
		tap_ok "full disk: the previous output intact, no temporary left: $(cat tap-err.txt)"
	else
		tap_fail "full disk: $(ls -A small): $(cat tap-err.txt)"
	fi
	# export's writes are made by its writer thread: its failure is the error line too
	for fmt in chrome-json perfetto; do
		TAP_WANT="No space left on device" tap_refuses "export --format $fmt to a full disk" \
			"a.dat" "$HGTRACE" export --format $fmt -o small/out.dat a.dat
		cmp -s small/out.dat prev.txt && [ "$(ls -A small)" = out.dat ] &&
			tap_ok "export --format $fmt to a full disk: the previous output intact, no temporary left" ||
			tap_fail "export --format $fmt to a full disk: $(ls -A small)"
	done
	umount small
else
	tap_skip "convert to a full disk" "cannot mount a tmpfs here (not root?)"
fi

# A good write replaces the target when complete, keeping its mode; through a symbolic
# link, the link stays and its target is replaced.
echo old > out.dat
chmod 0640 out.dat
ln -s out.dat outlink.dat
if "$HGTRACE" convert -i a.dat -o outlink.dat --compression none 2> err.txt && [ -L outlink.dat ] &&
	[ "$(stat -c %a out.dat)" = 640 ] && trace-cmd report out.dat > got.txt 2> /dev/null &&
	trace-cmd report a.dat > want.txt 2> /dev/null && [ "$(wc -l < want.txt)" -gt 100 ] &&
	cmp -s got.txt want.txt; then
	tap_ok "convert through a symbolic link: out.dat replaced (trace-cmd reports its $(wc -l < got.txt) lines as a.dat's), mode 640 kept, link kept"
else
	tap_fail "convert through a link: $(cat err.txt) $(ls -l out.dat outlink.dat)"
fi
leftover=$(find . -maxdepth 1 -name '.*hgtrace*' | wc -l)
[ "$leftover" = 0 ] && tap_ok "no temporary file left in the directory" ||
	tap_fail "temporary files left: $(find . -maxdepth 1 -name '.*hgtrace*')"

# attach: one file as host and guest (by name, by hard link), and a guest that is a copy of
# the host (the same trace id).
"$HGTRACE" simulate -o s --vcpus 2 --duration-ms 50 > /dev/null || tap_fail "simulate"
ln s-host.dat s-link.dat
TAP_WANT="the same file as the host file" tap_refuses "attach s-host.dat s-host.dat" "s-host.dat" "$HGTRACE" attach s-host.dat s-host.dat
TAP_WANT="the same file as the host file" tap_refuses "attach s-host.dat s-link.dat (a hard link)" "s-host.dat" "$HGTRACE" attach s-host.dat s-link.dat
# through a symbolic link: refused for being the same file (not only, later, for its trace id)
ln -s s-host.dat s-sym.dat
tap_refuses "attach s-host.dat s-sym.dat (a symbolic link)" "s-host.dat" "$HGTRACE" attach s-host.dat s-sym.dat
if grep -q "s-sym.dat: the same file as the host file s-host.dat" tap-err.txt; then
	tap_ok "attach h symlink: the reason is the same file: $(cat tap-err.txt)"
else
	tap_fail "attach h symlink: reason: $(cat tap-err.txt)"
fi
# and the symbolic link as the host (each side's link is followed)
TAP_WANT="s-host.dat: the same file as the host file s-sym.dat" tap_refuses "attach s-sym.dat s-host.dat (the host a symbolic link)" \
	"s-host.dat" "$HGTRACE" attach s-sym.dat s-host.dat
"$HGTRACE" attach s-host.dat s-guest.dat > /dev/null 2>&1 || tap_fail "attach of the real pair"
cp s-host.dat s-copy.dat
TAP_WANT="the host's trace id" tap_refuses "attach a guest that is a copy of the host (its trace id)" "s-host.dat s-copy.dat" \
	"$HGTRACE" attach s-host.dat s-copy.dat

# attach cut by a file size limit (ulimit -f, in KiB) halfway through its writes: first the
# guest's append fails (the guest file is over the limit), then the host's (the guest file
# under it, an uncompressed host over it, so the guest's finished append is undone).
"$HGTRACE" simulate -o u --vcpus 1 --host-cpus 4 > u.out || tap_fail "simulate"
"$HGTRACE" convert -i u-host.dat -o u-hostbig.dat --compression none 2> /dev/null ||
	tap_fail "convert u-host.dat"
off=$(sed -n 's/.*attach with -s \(.*\))/\1/p' u.out)
gk=$(($(stat -c %s u-guest.dat) / 1024)) hk=$(($(stat -c %s u-hostbig.dat) / 1024))
limit_attach() { # KIB HOST
	local k=$1 h=$2
	bash -c 'ulimit -f "$1"; shift; exec "$@"' sh "$k" "$HGTRACE" attach -s "$off" "$h" u-guest.dat 5001
}
TAP_WANT="u-guest.dat: append failed (File too large); file left unchanged" tap_refuses "attach with a file size limit below the guest file ($((gk / 2)) KiB)" \
	"u-host.dat u-guest.dat" limit_attach $((gk / 2)) u-host.dat
if [ $((gk + 2)) -lt "$hk" ]; then
	TAP_WANT="u-hostbig.dat: append failed (File too large); file left unchanged" tap_refuses "attach with a file size limit between the guest ($gk KiB) and the host ($hk KiB)" \
		"u-hostbig.dat u-guest.dat" limit_attach $((gk + 2)) u-hostbig.dat
else
	tap_fail "the uncompressed host ($hk KiB) is not larger than the guest ($gk KiB)"
fi
"$HGTRACE" attach -s "$off" u-hostbig.dat u-guest.dat 5001 > /dev/null 2> err.txt &&
	"$HGTRACE" report u-hostbig.dat u-guest.dat > /dev/null 2> sync.txt &&
	grep -q " 0 outside" sync.txt && tap_ok "after both refusals the same attach succeeds: $(cat sync.txt)" ||
	tap_fail "attach after the refusals: $(cat err.txt sync.txt)"

# A link another user planted in a sticky world-writable directory is never followed (the
# kernel's protected_symlinks rule, whatever the sysctl says): record, convert and view -o
# refuse in one line, the link's target untouched; root's own link there is followed.
if command -v setpriv > /dev/null && id nobody > /dev/null 2>&1; then
	chmod 755 . # nobody reaches ww
	mkdir -m 1777 ww
	echo precious > victim
	setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups ln -s ../victim ww/r.dat
	TAP_WANT="ww/r.dat: a symbolic link of uid $(id -u nobody) in ww, a sticky world-writable directory: not followed" tap_refuses "convert -o through nobody's link in a sticky directory" "victim" \
		"$HGTRACE" convert -i u-host.dat -o ww/r.dat
	tap_refuses "view -o through nobody's link in a sticky directory" "victim" \
		"$HGTRACE" view -o ww/r.dat u-host.dat
	if [ -e /sys/kernel/tracing/trace_clock ] || mount -t tracefs nodev /sys/kernel/tracing 2> /dev/null; then
		tap_refuses "record -o through nobody's link in a sticky directory" "victim" \
			"$HGTRACE" record -e sched:sched_switch -o ww/r.dat -- true
	fi
	: > mine
	ln -s ../mine ww/own.dat
	"$HGTRACE" convert -i u-host.dat -o ww/own.dat 2> own.err && [ -L ww/own.dat ] &&
		trace-cmd report mine > /dev/null 2>&1 &&
		tap_ok "root's own link in the sticky directory is followed: its target holds the file" ||
		tap_fail "root's own link: $(cat own.err)"
else
	tap_skip "links in sticky directories" "no setpriv or no user nobody"
fi

# Two files with the same inode number on two file systems (two fresh ext2 images: the first
# file of each is inode 12) are not the same file: attach of a host file on one and its
# guest's on the other works.
if [ "$(id -u)" = 0 ] && command -v mkfs.ext2 > /dev/null && truncate -s 4M fa.img fb.img &&
	mkfs.ext2 -q -F fa.img && mkfs.ext2 -q -F fb.img && mkdir fsa fsb &&
	mount -o loop fa.img fsa 2> /dev/null && mount -o loop fb.img fsb 2> /dev/null; then
	cp s-host.dat fsa/h.dat
	cp s-guest.dat fsb/g.dat
	ino="$(stat -c %i fsa/h.dat) $(stat -c %i fsb/g.dat)"
	if [ "${ino% *}" = "${ino#* }" ] && "$HGTRACE" attach fsa/h.dat fsb/g.dat > /dev/null 2> dev.err; then
		tap_ok "same inode ($ino) on two devices: not the same file, attach took the pair"
	else
		tap_fail "same inode on two devices: inodes $ino: $(cat dev.err)"
	fi
	umount fsa fsb
else
	tap_skip "same inode on two devices" "cannot make and mount two ext2 images here"
fi
tap_done
