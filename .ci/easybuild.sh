#!/usr/bin/env bash
# The EasyBuild leg of CI: builds the release tarball with `eb` as a site
# would, as a normal user on a node without network, from a source path
# that holds the tarball and every crate (target/dist/easybuild-sources,
# made by contrib/release/release.sh). Then `module load membw`, `membw
# topo` and a small run.
#
# The leg builds a copy of the easyconfig with `enable_tests = False`: with
# tests on, the Cargo easyblock builds the whole test suite in its build
# step (`cargo build --tests`, release), runs it in its test step, and
# `cargo install` then builds membw once more (the dev-dependencies had
# changed its dependencies' features). The suite's own test binaries run as
# a normal user with no network in .ci/as-user.sh, which proves what that
# step did; a site's `eb` of the committed easyconfig still runs it.
#
# Needs root (to make the user and a network namespace), EasyBuild in
# /opt/easybuild (pip install easybuild toml), Lmod (Debian package lmod).
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(python3 contrib/release/packaging.py version)
easyconfig=contrib/easybuild/membw-$version.eb
sources=target/dist/easybuild-sources
[ -d "$sources" ] || { echo "no $sources: run contrib/release/release.sh first" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "the EasyBuild leg makes a user and a network namespace: run it as root" >&2; exit 1; }

# The crate list as EasyBuild's own generator reads Cargo.lock (it needs
# the toml module), against the one the easyconfig was written from.
if ! diff <(/opt/easybuild/bin/python -m easybuild.easyblocks.generic.cargo . |
                sed -n "s/^    ('\([^']*\)', '\([^']*\)'),$/\1 \2/p") \
          <(python3 contrib/release/packaging.py crates) >&2; then
    echo "EasyBuild's crate list from Cargo.lock differs from contrib/release/packaging.py's" >&2
    exit 1
fi

user=membw-build
id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
home=$(getent passwd "$user" | cut -d: -f6)
rm -rf "$home/eb" && mkdir -p "$home/eb"
cp -r "$sources" "$home/eb/sources"
{
    cat "$easyconfig"
    printf '\n# CI only (.ci/easybuild.sh): the suite runs as a normal user in .ci/as-user.sh.\nenable_tests = False\n'
} >"$home/eb/$(basename "$easyconfig")"
chown -R "$user:" "$home/eb"

# The site's Rust is this machine's (rustup's, under /root): the user may
# traverse /root to reach it, as it would a shared install, and eb is told
# that Rust comes from the environment (--filter-deps=Rust).
rust_bin=$(dirname "$(rustup which cargo)")
case $rust_bin in /root/*) chmod o+x /root ;; esac

# No interface but lo in the namespace: nothing can be fetched (lo is up:
# Open MPI's mpirun, which the tests start, needs an interface).
unshare -n bash -c 'ip link set lo up && exec "$@"' - \
    runuser -u "$user" -- env -u CI -u CARGO_HOME -u RUSTUP_HOME \
    PATH="/opt/easybuild/bin:$rust_bin:/usr/local/bin:/usr/bin:/bin" \
    bash -c '
set -euo pipefail
cd "$HOME/eb"
source /usr/share/lmod/lmod/init/bash
if python3 -c "import socket; socket.create_connection((\"crates.io\", 443), 5)" 2>/dev/null; then
    echo "the network is reachable from the EasyBuild leg" >&2; exit 1
fi
eb "membw-'"$version"'.eb" --prefix="$HOME/eb/prefix" --sourcepath="$HOME/eb/sources" \
    --buildpath="$HOME/eb/build" --tmpdir="$HOME/eb/tmp" --filter-deps=Rust --trace
module use "$HOME/eb/prefix/modules/all"
module load "membw/'"$version"'"
echo "module load membw/'"$version"': $(command -v membw)"
membw --version
membw topo
membw run --size 4MiB --ntimes 3 >/dev/null && echo "membw run: ok"
'
