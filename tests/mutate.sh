#!/usr/bin/env bash
# Mutation testing: plants each bug of a list (tests/mutate/mutants.txt) one at a time in a
# scratch copy of the tree, rebuilds, runs the tests named for it, and counts it killed when
# one of them fails. Prints a line per mutant and the kill rate. The working tree is never
# touched. Not in CI (hours); `make mutate`, and its result in the note of a change to
# tested code.
#
# Usage: tests/mutate.sh [--check] [--list FILE] [--only REGEX] [--dir DIR]
#   --check        only verify that every pattern occurs exactly once (no build): TAP
#   --list FILE    the mutants (default tests/mutate/mutants.txt)
#   --only REGEX   the mutants whose line matches REGEX (grep -E)
#   --dir DIR      the scratch copy and its build (default build-mutate)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
list=$top/tests/mutate/mutants.txt
only=
dir=$top/build-mutate
check=
while [ $# -gt 0 ]; do
	case $1 in
	--check) check=1 ;;
	--list) list=$2; shift ;;
	--only) only=$2; shift ;;
	--dir) dir=$2; shift ;;
	*) echo "usage: tests/mutate.sh [--check] [--list FILE] [--only REGEX] [--dir DIR]" >&2; exit 2 ;;
	esac
	shift
done

# the mutants, one per line as "FILE\tPATTERN\tREPLACEMENT\tTESTS" (a (27) mark dropped)
parse() {
	python3 - "$list" "$only" << 'PY'
import re, sys
only = re.compile(sys.argv[2]) if sys.argv[2] else None
for n, line in enumerate(open(sys.argv[1]), 1):
    line = line.rstrip("\n")
    if not line.strip() or line.lstrip().startswith("#"):
        continue
    if only and not only.search(line):
        continue
    try:
        f, rest = line.split(" :: ", 1)
        pr, tests = rest.rsplit(" :: ", 1)
        pat, rep = pr.split(" => ", 1)
    except ValueError:
        print("BAD\t%d\t%s\t" % (n, line)); continue
    tests = re.sub(r"\(27\)\s*$", "", tests).split()
    print("%s\t%s\t%s\t%s" % (f.strip(), pat, rep, " ".join(tests)))
PY
}

# count FILE PATTERN: how many times PATTERN occurs in FILE
count() {
	python3 -c 'import sys; print(open(sys.argv[1]).read().count(sys.argv[2]))' "$1" "$2"
}

if [ -n "$check" ]; then
	# one process for the whole list (a process per mutant took a minute on a busy machine)
	tmp=$(mktemp -d)
	meson introspect --tests "${BUILDDIR:-$top/build}" 2> /dev/null > "$tmp/tests"
	parse > "$tmp/list"
	python3 - "$top" "$tmp/tests" "$tmp/list" << 'PY'
import json, sys
top, tests_json, listed = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    tests = {t["name"] for t in json.load(open(tests_json))}
except (OSError, ValueError):
    tests = set()  # no build: the names are not checked
n = bad = 0
for line in open(listed):
    f, pat, rep, names = (line.rstrip("\n").split("\t") + ["", "", ""])[:4]
    n += 1
    if f == "BAD":
        print("not ok %d - line %s: not FILE :: PATTERN => REPLACEMENT :: TESTS" % (n, pat))
        bad += 1
        continue
    try:
        c = open("%s/%s" % (top, f)).read().count(pat)
    except OSError:
        c = 0
    missing = [t for t in names.split() if tests and t not in tests]
    if c == 1 and not missing and names:
        print("ok %d - %s: '%s' once; tests: %s" % (n, f, pat, names))
    else:
        print("not ok %d - %s: '%s' found %d times (must be once); tests '%s'%s"
              % (n, f, pat, c, names, ", unknown: " + " ".join(missing) if missing else ""))
        bad += 1
print("1..%d" % n)
if n < 60:
    print("# only %d mutants: the list keeps at least 60" % n)
    sys.exit(1)
sys.exit(1 if bad else 0)
PY
	rc=$?
	rm -rf "$tmp"
	exit $rc
fi

# the scratch copy: the files git tracks or would (not ignored), as in the working tree
mkdir -p "$dir"
src=$dir/src
rm -rf "$src"
mkdir -p "$src"
(cd "$top" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$src") || exit 1
if [ ! -f "$dir/build/build.ninja" ]; then
	meson setup "$dir/build" "$src" > "$dir/setup.log" 2>&1 || { cat "$dir/setup.log"; exit 1; }
else
	meson setup --reconfigure "$dir/build" "$src" > "$dir/setup.log" 2>&1 || exit 1
fi
ninja -C "$dir/build" > "$dir/build.log" 2>&1 || { echo "the unmutated tree does not build"; exit 1; }
export LSAN_OPTIONS="suppressions=$top/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export HGTRACE_STRICT_FORK=1

killed=0 survived=0 stillborn=0 notfound=0 n=0
t0=$SECONDS
while IFS=$'\t' read -r f pat rep names; do
	n=$((n + 1))
	what="$f: '$pat' => '$rep'"
	if [ "$f" = BAD ] || [ "$(count "$src/$f" "$pat" 2> /dev/null)" != 1 ]; then
		echo "NOT FOUND  $what"
		notfound=$((notfound + 1))
		continue
	fi
	cp "$src/$f" "$dir/orig"
	python3 -c 'import sys
p, a, b = sys.argv[1:4]
s = open(p).read(); open(p, "w").write(s.replace(a, b, 1))' "$src/$f" "$pat" "$rep"
	if ! ninja -C "$dir/build" > "$dir/build.log" 2>&1; then
		echo "NO BUILD   $what"
		stillborn=$((stillborn + 1))
	else
		s=$SECONDS
		# shellcheck disable=SC2086
		if meson test -C "$dir/build" --no-rebuild --num-processes 2 $names > "$dir/test.log" 2>&1; then
			echo "SURVIVED   $what ($names, $((SECONDS - s)) s)"
			survived=$((survived + 1))
		else
			# meson's result lines ("N/M project:suite / name  FAIL"), not a test's own
			# output that says FAIL or ERROR (protobuf's decoder does)
			echo "killed     $what (by $(grep -oE '^ *[0-9]+/[0-9]+ [^ ]+ / [a-z0-9-]+ +(FAIL|TIMEOUT|ERROR)' "$dir/test.log" | awk '{ print $4 }' | sort -u | paste -sd, -), $((SECONDS - s)) s)"
			killed=$((killed + 1))
		fi
	fi
	cp "$dir/orig" "$src/$f"
	touch "$src/$f"
done < <(parse)
ninja -C "$dir/build" > "$dir/build.log" 2>&1
run=$((killed + survived))
echo "mutants: $n listed, $killed killed, $survived survived, $stillborn did not build, $notfound not found ($((SECONDS - t0)) s)"
if [ $run -gt 0 ]; then
	echo "kill rate: $killed of $run = $((100 * killed / run))%"
fi
[ $run -gt 0 ] && [ $((100 * killed / run)) -ge 90 ]
