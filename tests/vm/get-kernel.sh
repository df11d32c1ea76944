#!/usr/bin/env bash
# Fetches a kernel new enough for weighted interleave (Linux 6.9+) for the
# QEMU guests that need one (tests/vm/shapes/tiers.sh): bookworm-backports'
# linux-image-amd64 (6.12), downloaded with apt-get and unpacked under
# target/vm-kernel, never installed on the host. Needs the backports source
# (.ci/run adds it). Prints the vmlinuz path; does nothing when it is there.
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=${MEMBW_VM_NEW_KERNEL_DIR:-target/vm-kernel}
found=$(ls -1 "$dest"/boot/vmlinuz-* 2>/dev/null | sort -V | tail -n 1 || true)
if [ -n "$found" ]; then echo "$found"; exit 0; fi
image=$(apt-cache depends -t bookworm-backports linux-image-amd64 2>/dev/null |
    sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n 1)
[ -n "$image" ] || { echo "no linux-image-amd64 in bookworm-backports: add the backports source and apt-get update (see .ci/run)" >&2; exit 1; }
mkdir -p "$dest/deb"
(cd "$dest/deb" && apt-get download -q -t bookworm-backports "$image" >&2 2>/dev/null)
# Only the kernel image is needed (no modules: the guests boot without an
# initramfs of modules); dpkg-deb unpacks what dpkg -x would, ./boot only.
dpkg-deb --fsys-tarfile "$dest"/deb/"$image"_*.deb | tar -x -C "$dest" ./boot
rm -rf "$dest/deb"
ls -1 "$dest"/boot/vmlinuz-* | sort -V | tail -n 1
