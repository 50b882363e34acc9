#!/usr/bin/env bash
# The libtracecmd peer API: tests/compat/prog.c, a libtracecmd program, must build unchanged
# with `cc prog.c $(pkg-config --cflags --libs hgtrace-tracecmd)` against an installed
# hgtrace (meson install into a scratch DESTDIR) and print the maps attach stored.
# Usage: compat.sh HGTRACE BUILDDIR
HGTRACE=$(realpath "$1")
build=$(realpath "$2")
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/lib/tap.sh"
command -v cc > /dev/null || tap_skip_all "no C compiler"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

if meson install -C "$build" --destdir "$t/root" --no-rebuild > "$t/install.log" 2>&1; then
	tap_ok "meson install into a scratch DESTDIR"
else
	tap_fail "meson install: $(tail -3 "$t/install.log")"
	tap_done
fi
# The .pc files as installed, with their prefix moved into the DESTDIR.
mkdir -p "$t/pc"
for f in $(find "$t/root" -name '*.pc'); do
	prefix=$(sed -n 's/^prefix=//p' "$f")
	sed "s|^prefix=.*|prefix=$t/root$prefix|" "$f" > "$t/pc/$(basename "$f")"
done
flags=$(PKG_CONFIG_PATH=$t/pc pkg-config --cflags --libs hgtrace-tracecmd)
libdir=$(PKG_CONFIG_PATH=$t/pc pkg-config --variable=libdir hgtrace-tracecmd)
# A sanitized build's libraries need the program linked with the same sanitizers.
. "$here/lib/build.sh"
flags="$flags $(sanitize_flags "$build")"
# -rpath-link only because the DESTDIR is not on the linker's search path, as an
# installed /usr/local/lib would be.
# shellcheck disable=SC2086
if cc -Wall -Werror -o "$t/prog" "$here/compat/prog.c" $flags -Wl,-rpath-link,"$libdir" \
	2> "$t/cc.log"; then
	tap_ok "prog.c builds with pkg-config hgtrace-tracecmd ($flags)"
else
	tap_fail "prog.c builds: $(head -5 "$t/cc.log")"
	tap_done
fi

cd "$t" || exit 1
"$HGTRACE" simulate -o a --vcpus 4 --seed 3 > a.out
"$HGTRACE" simulate -o b --vcpus 2 --seed 4 > b.out
off=$(sed -n 's/.*attach with -s \(.*\))/\1/p' a.out)
"$HGTRACE" attach -s "$off" a-host.dat a-guest.dat 5001 5002 > /dev/null
"$HGTRACE" attach -s "$off" a-host.dat b-guest.dat 5003 5004 > /dev/null
ida=$(sed -n 's/^guest: .*trace id \(0x[0-9a-f]*\))/\1/p' a.out)
idb=$(sed -n 's/^guest: .*trace id \(0x[0-9a-f]*\))/\1/p' b.out)
cat > want <<EOW
guest 0: trace id $ida
  name '', 2 vCPUs: 0=5001 1=5002
guest 1: trace id $idb
  name '', 4 vCPUs: 0=0 1=0 2=5003 3=5004
EOW
LD_LIBRARY_PATH=$libdir ./prog a-host.dat a-guest.dat b-guest.dat > got 2>&1
tap_cmp "the program prints each guest's trace id and vCPU -> host PID map" got want
tap_done
