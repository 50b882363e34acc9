#!/usr/bin/env bash
# Runs the whole suite with meson (each test its own process, with a timeout) and ends with
# the plain line "N passed, N failed, N skipped" counted over every TAP case.
builddir=${1:-build}
# Sanitizer builds: fail on any error; ignore only leaks inside libtraceevent itself.
export LSAN_OPTIONS="suppressions=$(cd "$(dirname "$0")" && pwd)/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
# the library aborts where its format guard would fork while other threads run (formats.c)
export HGTRACE_STRICT_FORK=1
meson test -C "$builddir" --print-errorlogs --num-processes 2 "${@:2}"
rc=$?
python3 - "$builddir/meson-logs/testlog.json" <<'PY'
import json, re, sys
passed = failed = skipped = 0
bad = []
for line in open(sys.argv[1]):
    t = json.loads(line)
    out = t.get('stdout') or ''
    cases = [l for l in out.splitlines() if re.match(r'(not )?ok\b', l)]
    if cases:
        # a directive SKIP makes a case a skip whatever its status (TAP; cmocka prints
        # "not ok N # SKIP")
        skip = lambda l: re.search(r'#\s*SKIP', l, re.I)
        for l in cases:
            if skip(l):
                skipped += 1
            elif l.startswith('not ok'):
                failed += 1
                bad.append(f"{t['name']}: {l}")
            else:
                passed += 1
        if t['result'] in ('FAIL', 'TIMEOUT', 'ERROR') and not any(l.startswith('not ok') and not skip(l) for l in cases):
            failed += 1
            bad.append(f"{t['name']}: {t['result']} after {len(cases)} cases")
    elif t['result'] == 'SKIP':
        skipped += 1
    elif t['result'] in ('OK', 'EXPECTEDFAIL'):
        passed += 1
    else:
        failed += 1
        bad.append(f"{t['name']}: {t['result']}")
for b in bad:
    print("FAILED", b)
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
PY
prc=$?
[ $rc -eq 0 ] && [ $prc -eq 0 ]
