#!/usr/bin/env bash
# Installs the Debian packages hgtrace needs to build, test and benchmark, when they are missing.
# Usage: scripts/deps.sh            (run as root, or with sudo available)
set -euo pipefail
pkgs=(gcc make meson ninja-build pkg-config libtraceevent-dev libtracefs-dev libzstd-dev zlib1g-dev
      libdeflate-dev libcmocka-dev trace-cmd clang clang-format python3 time bc
      qemu-system-x86 busybox-static cpio
      liblttng-ust-dev lttng-tools babeltrace2 systemtap-sdt-dev
      chromium fonts-dejavu-core protobuf-compiler python3-protobuf stress-ng strace)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
