#!/usr/bin/env bash
# Fails (TAP) for every folder of the tree (top level, lib/, tools/, tests/) and every public
# header that the README's layout table does not name, and for every path the table names
# that does not exist. The tree is what git tracks.
# Usage: check-layout.sh ROOT
root=$1
cd "$root" || exit 1
n=0 bad=0
# the table: the rows after "## Layout" up to the first line that is not a row
table=$(awk '/^## Layout/ { on = 1; next } on && /^\|/ { print; seen = 1; next } on && seen { exit }' README.md)
# paths: the first cell of each row; within a row, `x/` and `x.h` words name its parts
paths=$(printf '%s\n' "$table" | sed -n 's/^| `\([^`]*\)` |.*/\1/p')
row() { printf '%s\n' "$table" | grep -F "| \`$1\` |"; }
check() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; bad=1; fi
}
files=$(git ls-files 2> /dev/null)
[ -n "$files" ] || files=$(find . -type f -not -path './build*' | sed 's|^\./||')
[ -n "$table" ] || { echo "not ok 1 - README.md has a layout table"; echo "1..1"; exit 1; }
for d in $(printf '%s\n' "$files" | awk -F/ 'NF > 1 && $1 !~ /^\./ { print $1 }' | sort -u); do
	printf '%s\n' "$paths" | grep -q "^$d/"
	check $? "top-level folder $d/ has a row (or its folders have)"
done
for top in lib tools; do
	for d in $(printf '%s\n' "$files" | awk -F/ -v t=$top '$1 == t && NF > 2 { print $2 }' | sort -u); do
		printf '%s\n' "$paths" | grep -qx "$top/$d/"
		check $? "$top/$d/ has a row"
	done
done
for d in $(printf '%s\n' "$files" | awk -F/ '$1 == "tests" && NF > 2 { print $2 }' | sort -u); do
	row tests/ | grep -q "\`$d/\`"
	check $? "tests/$d/ is named in the tests/ row"
done
for h in $(printf '%s\n' "$files" | sed -n 's|^include/hgtrace/\([^/]*\.h\)$|\1|p'); do
	row include/hgtrace/ | grep -q "\`$h\`"
	check $? "include/hgtrace/$h is named in the include/hgtrace/ row"
done
for p in $paths; do
	[ -e "$p" ]
	check $? "the table's $p exists"
done
echo "1..$n"
exit $bad
