#!/usr/bin/env bash
# The ABI is explicit: libhgtrace.map lists each exported function by name (no glob), every
# one declared in include/hgtrace/, and the built library exports exactly those hgt_
# names: no internal hgt__ symbol, nothing the map does not list (TAP).
# Usage: check-map.sh ROOT LIBHGTRACE.so
root=$1 so=$2
n=0 bad=0
check() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; bad=1; fi
}
map=$root/lib/libhgtrace.map
! grep -q '^[[:space:]]*hgt_[a-z0-9_]*\*' "$map"
check $? "libhgtrace.map names its symbols (no hgt_ glob)"
listed=$(sed -n 's/^[[:space:]]*\(hgt_[a-z0-9_]*\);$/\1/p' "$map" | sort)
declared=$(grep -hoE '\bhgt_[a-z0-9_]+\(' "$root"/include/hgtrace/*.h | tr -d '(' | sort -u)
exported=$(nm -D --defined-only "$so" | awk '{ print $3 }' | sed 's/@.*//' | grep '^hgt_' | sort -u)
for f in $listed; do
	printf '%s\n' "$declared" | grep -qx "$f"
	check $? "$f (listed) is declared in include/hgtrace/"
done
extra=$(comm -13 <(printf '%s\n' "$listed") <(printf '%s\n' "$exported") | tr '\n' ' ')
[ -z "$extra" ]
check $? "the library exports no hgt_ symbol the map does not list${extra:+: $extra}"
missing=$(comm -23 <(printf '%s\n' "$listed") <(printf '%s\n' "$exported") | tr '\n' ' ')
[ -z "$missing" ]
check $? "every listed symbol is exported${missing:+ (missing: $missing)}"
echo "1..$n"
exit $bad
