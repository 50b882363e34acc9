#!/usr/bin/env bash
# Another project using hgtrace's probes as hgtrace-gen(1) documents it: hgtrace installed
# (meson install into a scratch DESTDIR), then a small program built with the man page's own
# make and meson snippets (taken from docs/hgtrace-gen.1), run with an event enabled.
# Usage: consumer.sh HGTRACE BUILDDIR
build=$(realpath "$2")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
. "$here/lib/build.sh"
command -v cc > /dev/null || tap_skip_all "no C compiler"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

meson install -C "$build" --destdir "$t/root" --no-rebuild > "$t/install.log" 2>&1 ||
	{ tap_fail "meson install: $(tail -3 "$t/install.log")"; tap_done; }
mkdir -p "$t/pc"
for f in $(find "$t/root" -name '*.pc'); do
	prefix=$(sed -n 's/^prefix=//p' "$f")
	sed "s|^prefix=.*|prefix=$t/root$prefix|" "$f" > "$t/pc/$(basename "$f")"
done
export PKG_CONFIG_PATH=$t/pc
libdir=$(pkg-config --variable=libdir hgtrace-probes)
export PATH=$(dirname "$(find "$t/root" -path '*/bin/hgtrace')"):$PATH
export LD_LIBRARY_PATH=$libdir
SAN=$(sanitize_flags "$build")

# snippet NAME: the .EX block after ".SS NAME" in the man page, roff escapes undone
snippet() {
	awk -v s="$1" '$0 == ".SS " s { f = 1; next } f && /^\.EX/ { on = 1; next }
		on && /^\.EE/ { exit } on' "$here/../docs/hgtrace-gen.1" | sed 's/\\-/-/g; s/\\\\/\\/g'
}

mkproject() { # DIR
	mkdir -p "$1"
	cat > "$1/trace-events" << 'EOT'
# a consumer's events
req_start(int id, const char *path) "id=%d path=%s"
req_done(int id, long status) "id=%d status=%ld"
EOT
	cat > "$1/prog.c" << 'EOT'
#include "trace.h"
int main(void)
{
	for (int i = 0; i < 3; i++) {
		trace_req_start(i, "/index.html");
		trace_req_done(i, 200 + i);
	}
	return 0;
}
EOT
}

check_run() { # DIR WHAT
	(cd "$1" && HGTRACE_EVENTS='req_*' HGTRACE_FILE=$1/prog.trace ./prog 2> log.txt)
	n_log=$(grep -c ':req_done id=[0-9] status=20[0-2]$' "$1/log.txt")
	n_simple=$(hgtrace simpletrace "$1/prog.trace" 2> /dev/null | grep -c '^req_start .* path=/index.html$')
	[ "$n_log" = 3 ] && [ "$n_simple" = 3 ] &&
		tap_ok "$2: the program's events reach the log and simple backends" ||
		tap_fail "$2: log $n_log, simple $n_simple of 3 ($(head -2 "$1/log.txt"))"
}

# make, with the Makefile from the man page
mkproject "$t/make"
snippet make > "$t/make/Makefile"
if [ -s "$t/make/Makefile" ] && (cd "$t/make" && CFLAGS="$SAN" LDFLAGS="$SAN" make prog > build.log 2>&1); then
	tap_ok "make: the man page's Makefile builds the program"
	check_run "$t/make" make
else
	tap_fail "make: $(tail -3 "$t/make/build.log" 2> /dev/null)"
fi

# meson, with the meson.build from the man page
if command -v meson > /dev/null; then
	mkproject "$t/meson"
	{ echo "project('consumer', 'c')"; snippet meson; } > "$t/meson/meson.build"
	sanopt=()
	[ -n "$SAN" ] && sanopt=(-Db_sanitize="${SAN#-fsanitize=}" -Db_lundef=false)
	if (cd "$t/meson" && meson setup b "${sanopt[@]}" > build.log 2>&1 && ninja -C b >> build.log 2>&1); then
		tap_ok "meson: the man page's meson.build builds the program"
		cp "$t/meson/b/prog" "$t/meson/prog"
		check_run "$t/meson" meson
	else
		tap_fail "meson: $(tail -3 "$t/meson/build.log")"
	fi
else
	tap_skip "meson consumer" "meson is missing"
fi
tap_done
