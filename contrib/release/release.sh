#!/usr/bin/env bash
# Makes a membw release from HEAD into target/dist (MEMBW_DIST to change it):
#
#   membw-V.tar.gz                     the source (git archive of HEAD, reproducible)
#   membw-V-vendor.tar.gz              every crate of Cargo.lock, and .cargo/config.toml
#                                      pointing cargo at them: unpack over the source,
#                                      then cargo build --release --offline --locked
#   membw-V-x86_64-linux-portable      the binary for any node, GPU nodes included: dynamic,
#   membw-V-aarch64-linux-portable     linked by zig against glibc 2.17 (RHEL/Rocky 7 on),
#                                      every default feature; checked: no glibc symbol
#                                      above 2.17 and no library beyond glibc's, --version,
#                                      topo, run (natively also baseline and check;
#                                      aarch64 under qemu-user). Needs cargo-zigbuild and
#                                      ziglang (PyPI): skipped with a note where they are
#                                      missing, an error in CI
#   membw-V-x86_64-linux-static        the lean static binary for CPU nodes (and aarch64
#   membw-V-aarch64-linux-static       where its cross toolchain is installed), checked:
#                                      no NEEDED library, ldd, topo, run (natively also
#                                      baseline and check)
#   SHA256SUMS                         sha256 of each of the above
#   easybuild-sources/                 an EasyBuild source path: the tarball and every
#                                      crate as the Cargo easyblock names them
#
#   contrib/release/release.sh [--update | --check] [--no-static] [--no-portable] [--offline-build]
#
# --update   rewrite contrib/easybuild/membw-V{,-mpi}.eb and the Spack package's
#            checksums from these tarballs and Cargo.lock (commit the result)
# --check    fail when those files differ from what --update would write (CI)
# --no-static      skip the static binaries
# --no-portable    skip the portable binaries
# --offline-build  unpack both tarballs and build them with an empty CARGO_HOME,
#                  --offline, and (as root) no network at all: the native
#                  static binary is built there (a plain release build with
#                  --no-static)
#
# Exit status: 0 done, 1 a check failed, 2 a bad argument.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=contrib/release

mode= static=1 portable=1 offline_build=0
for arg in "$@"; do
    case $arg in
        --update | --check) mode=$arg ;;
        --no-static) static=0 ;;
        --no-portable) portable=0 ;;
        --offline-build) offline_build=1 ;;
        *) echo "release.sh: unknown argument '$arg' (see the top of $0)" >&2; exit 2 ;;
    esac
done

version=$(python3 "$here/packaging.py" version)
name=membw-$version
dist=${MEMBW_DIST:-target/dist}
# Emptied first, so only when it is one of ours (or empty, or new).
if [ -d "$dist" ] && [ -n "$(ls -A "$dist")" ] && [ ! -e "$dist/.membw-release" ]; then
    echo "release: $dist is not empty and not a membw release directory: not emptying it" >&2
    exit 2
fi
rm -rf "$dist" && mkdir -p "$dist" && touch "$dist/.membw-release"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say() { echo "release: $*" >&2; }
fail() { echo "release: $*" >&2; exit 1; }

if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    say "note: uncommitted changes are not in the tarball (it is HEAD)"
fi

say "$name.tar.gz from HEAD"
python3 "$here/packaging.py" git-tarball "$name" "$dist/$name.tar.gz"

say "$name-vendor.tar.gz: every crate of Cargo.lock"
mkdir -p "$work/vendor-tree/.cargo"
cargo vendor --locked --versioned-dirs "$work/vendor-tree/vendor" >"$work/vendor.toml" 2>"$work/vendor.log" ||
    fail "cargo vendor failed: $(tail -n 3 "$work/vendor.log")"
{
    cat .cargo/config.toml
    echo
    echo "# The crates of Cargo.lock, from $name-vendor.tar.gz (no registry needed)."
    sed "s|directory = \".*\"|directory = \"vendor\"|" "$work/vendor.toml"
} >"$work/vendor-tree/.cargo/config.toml"
grep -q '^directory = "vendor"$' "$work/vendor-tree/.cargo/config.toml" ||
    fail "cargo vendor printed no source directory to point at"
python3 "$here/packaging.py" tarball "$work/vendor-tree" "$name" "$dist/$name-vendor.tar.gz"

# EasyBuild fetches each crate as NAME-VERSION.tar.gz from crates.io, or
# finds it in <sourcepath>/c/crates.io/: the .crate files cargo just cached,
# whose sha256 Cargo.lock (and so the easyconfig) holds.
say "easybuild-sources/: the tarball and $(python3 "$here/packaging.py" crates | wc -l) crates"
sources="$dist/easybuild-sources"
mkdir -p "$sources/m/membw" "$sources/c/crates.io"
cp "$dist/$name.tar.gz" "$sources/m/membw/"
cargo_home=${CARGO_HOME:-$HOME/.cargo}
while read -r crate crate_version; do
    found=$(ls "$cargo_home"/registry/cache/*/"$crate-$crate_version.crate" 2>/dev/null | head -n 1)
    [ -n "$found" ] || fail "$crate $crate_version is not in $cargo_home/registry/cache after cargo vendor"
    cp "$found" "$sources/c/crates.io/$crate-$crate_version.tar.gz"
done < <(python3 "$here/packaging.py" crates)

# The commands that check a release binary: --version, topo, a small run;
# the native portable binary (the one sites copy to their nodes) also a
# baseline and a check against it at the default size (memory, not cache:
# a few GB, about 30 s), with a wide tolerance and --allow-busy: what is
# checked is that it runs and judges, not this machine. The static binary
# runs the same code, and under qemu-user it would take minutes.
smoke_test() {
    local binary=$1 arch=$2 run
    # A dynamic (portable) binary of another architecture finds its loader
    # and glibc in the cross toolchain's root, as .cargo/config.toml's runner.
    if [ "$arch" = "$(uname -m)" ]; then run=("$binary"); else run=(qemu-"$arch"-static -L "/usr/$arch-linux-gnu" "$binary"); fi
    local smoke=("--version" "topo" "run --size 4MiB --ntimes 3 --format json")
    if [ "${run[0]}" = "$binary" ] && [[ $binary == *-portable ]]; then
        # One baseline per binary: baseline never replaces a file.
        local base; base="$work/baseline-$(basename "$binary").json"
        smoke+=("baseline --ntimes 3 --allow-busy -o $base"
                "check --baseline $base --ntimes 3 --tolerance 90% --budget 120s")
    fi
    for args in "${smoke[@]}"; do
        # shellcheck disable=SC2086 # the words of args
        "${run[@]}" $args >/dev/null 2>"$work/smoke.log" ||
            fail "$binary $args failed: $(tail -n 3 "$work/smoke.log")"
    done
}

# A portable binary's glibc baseline: no versioned symbol above it, and
# no library beyond glibc's own (readelf reads either architecture).
glibc_baseline=2.17
check_baseline() {
    local binary=$1 highest needed
    highest=$(readelf -W --dyn-syms "$binary" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1)
    [ -n "$highest" ] || fail "$binary has no versioned glibc symbol: is it dynamic?"
    if [ "$(printf '%s\n%s\n' "$highest" "$glibc_baseline" | sort -V | tail -n 1)" != "$glibc_baseline" ]; then
        fail "$binary needs GLIBC_$highest, above its baseline $glibc_baseline: $(readelf -W --dyn-syms "$binary" | grep -o "[a-z_0-9]*@GLIBC_$highest" | sort -u | head -n 5 | tr '\n' ' ')"
    fi
    needed=$(readelf -d "$binary" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' |
        grep -vE '^(libc|libm|libdl|libpthread|librt|libgcc_s)\.so\.[0-9]+$|^ld-linux-(x86-64|aarch64)\.so\.[0-9]+$' || true)
    [ -z "$needed" ] || fail "$binary needs libraries beyond glibc's: $needed"
    say "$(basename "$binary"): highest glibc symbol GLIBC_$highest (baseline $glibc_baseline)"
}

if [ "$portable" = 1 ]; then
    if ! cargo zigbuild --help >/dev/null 2>&1; then
        [ "${CI:-}" != "true" ] || fail "no cargo zigbuild: pip install ziglang cargo-zigbuild (see .ci/run)"
        say "no portable binaries: pip install ziglang cargo-zigbuild (or --no-portable)"
    else
        for target in x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu; do
            arch=${target%%-*}
            if [ "$arch" != "$(uname -m)" ] && ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
                say "no $arch portable binary: rustup target add $target"
                continue
            fi
            say "$name-$arch-linux-portable (glibc $glibc_baseline)"
            cargo zigbuild --quiet --release --locked --target "$target.$glibc_baseline" \
                --target-dir target/dist-portable
            binary="$dist/$name-$arch-linux-portable"
            cp "target/dist-portable/$target/release/membw" "$binary"
            check_baseline "$binary"
            if [ "$arch" != "$(uname -m)" ] && ! command -v "qemu-$arch-static" >/dev/null; then
                say "$binary not run: no qemu-$arch-static"
                continue
            fi
            smoke_test "$binary" "$arch"
        done
    fi
fi

# --offline-build: the two tarballs unpacked over each other, built with an
# empty CARGO_HOME, --offline, and (as root) in a network namespace of its
# own (no interface but lo). The native static binary is built there, so
# one build checks both; without static binaries, a plain release build.
offline_tree=
offline_note="the two tarballs built with an empty CARGO_HOME, --offline"
if [ "$offline_build" = 1 ]; then
    mkdir -p "$work/offline/cargo-home"
    tar -xzf "$dist/$name.tar.gz" -C "$work/offline"
    tar -xzf "$dist/$name-vendor.tar.gz" -C "$work/offline"
    offline_tree="$work/offline/$name"
    offline=(env CARGO_HOME="$work/offline/cargo-home")
    if [ "$(id -u)" = 0 ] && unshare -n true 2>/dev/null; then
        offline=(unshare -n "${offline[@]}")
        offline_note+=", in a network namespace without a network"
    fi
fi

if [ "$static" = 1 ]; then
    for target in x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu; do
        arch=${target%%-*}
        if [ "$arch" != "$(uname -m)" ] && ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
            say "no $arch static binary: rustup target add $target (and gcc-$arch-linux-gnu)"
            continue
        fi
        # RUSTFLAGS replaces .cargo/config.toml's: its function alignment again.
        build=(env RUSTFLAGS='-C target-feature=+crt-static -C llvm-args=-align-all-functions=6' cargo build --quiet --release --locked
               --no-default-features --target "$target" --target-dir target/dist-build)
        if [ -n "$offline_tree" ] && [ "$arch" = "$(uname -m)" ]; then
            say "$name-$arch-linux-static, from $offline_note"
            (cd "$offline_tree" && "${offline[@]}" "${build[@]}" --offline) || fail "the offline build failed"
            built="$offline_tree/target/dist-build/$target/release/membw"
            offline_tree=
        else
            say "$name-$arch-linux-static"
            "${build[@]}"
            built="target/dist-build/$target/release/membw"
        fi
        binary="$dist/$name-$arch-linux-static"
        cp "$built" "$binary"
        if readelf -d "$binary" | grep -q NEEDED; then
            fail "$binary needs shared libraries: $(readelf -d "$binary" | grep NEEDED | tr -s ' ')"
        fi
        if [ "$arch" = "$(uname -m)" ]; then
            ldd "$binary" 2>&1 | grep -Eq "not a dynamic executable|statically linked" ||
                fail "ldd finds dynamic dependencies in $binary: $(ldd "$binary" 2>&1)"
        fi
        smoke_test "$binary" "$arch"
    done
fi
if [ -n "$offline_tree" ]; then
    say "release build from $offline_note"
    (cd "$offline_tree" && "${offline[@]}" cargo build --quiet --release --offline --locked) ||
        fail "the offline build failed"
    "$offline_tree/target/release/membw" --version >/dev/null
fi
[ "$offline_build" = 0 ] || say "the offline build works"

(cd "$dist" && shopt -s nullglob && sha256sum -- *.tar.gz membw-*-static membw-*-portable >SHA256SUMS)
cat "$dist/SHA256SUMS" >&2
source_sha=$(sha256sum "$dist/$name.tar.gz" | cut -d' ' -f1)
vendor_sha=$(sha256sum "$dist/$name-vendor.tar.gz" | cut -d' ' -f1)

# The packaging files as they should be now.
mkdir -p "$work/packaging"
python3 "$here/packaging.py" easyconfig "$source_sha" >"$work/packaging/$name.eb"
python3 "$here/packaging.py" easyconfig "$source_sha" --mpi >"$work/packaging/$name-mpi.eb"
python3 "$here/packaging.py" spack "$source_sha" "$vendor_sha" >"$work/packaging/package.py"
pairs=("$name.eb contrib/easybuild/$name.eb" "$name-mpi.eb contrib/easybuild/$name-mpi.eb"
       "package.py contrib/spack/packages/membw/package.py")
case $mode in
    --update)
        for pair in "${pairs[@]}"; do
            read -r fresh committed <<<"$pair"
            cp "$work/packaging/$fresh" "$committed"
            say "wrote $committed"
        done
        ;;
    --check)
        drift=0
        for pair in "${pairs[@]}"; do
            read -r fresh committed <<<"$pair"
            if ! diff -u "$committed" "$work/packaging/$fresh" >&2; then drift=1; fi
        done
        [ "$drift" = 0 ] || fail "the packaging files differ from HEAD's tarballs and Cargo.lock: contrib/release/release.sh --update, then commit"
        say "contrib/easybuild and contrib/spack match the tarballs and Cargo.lock"
        ;;
esac

say "done: $dist"
