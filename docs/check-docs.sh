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
# man(7) order: NAME first, SEE ALSO last, RETURN VALUE and EXIT STATUS after DESCRIPTION
for p in "$root"/docs/*.[0-9]; do
	n=$((n + 1))
	secs=$(sed -n 's/^\.SH "*\([^"]*\)"*$/\1/p' "$p" | tr '\n' '|')
	if printf '%s' "$secs" | grep -q '^NAME|' && printf '%s' "$secs" | grep -q '|SEE ALSO|$' &&
		! printf '%s' "$secs" | grep -qE '(RETURN VALUE|EXIT STATUS)\|.*DESCRIPTION\|'; then
		echo "ok $n - $(basename "$p"): sections in man(7) order"
	else
		echo "not ok $n - $(basename "$p"): sections in man(7) order ($secs)"
		bad=1
	fi
done
echo "1..$n"
exit $bad
