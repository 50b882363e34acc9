#!/usr/bin/env bash
# Fails (TAP) for every public hgt_ function of include/hgtrace/*.h missing from docs/*.[0-9].
root=$1
n=0 bad=0
for f in $(grep -hoE '\bhgt_[a-z0-9_]+\(' "$root"/include/hgtrace/*.h | tr -d '(' | sort -u); do
	n=$((n + 1))
	if grep -q "$f" "$root"/docs/*.[0-9]; then
		echo "ok $n - $f is documented"
	else
		echo "not ok $n - $f is documented"
		bad=1
	fi
done
echo "1..$n"
exit $bad
