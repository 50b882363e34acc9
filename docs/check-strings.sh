#!/usr/bin/env bash
# Fails (TAP) for every C string literal cut in two across lines (scripts/check-strings.py):
# a user who pastes a message must find it whole in the source.
# Usage: check-strings.sh ROOT
cd "$1" || exit 1
files=$(git ls-files '*.c' '*.h' 2> /dev/null)
[ -n "$files" ] || files=$(find lib tools include compat fuzz tests -name '*.[ch]')
# shellcheck disable=SC2086
exec python3 scripts/check-strings.py $files
