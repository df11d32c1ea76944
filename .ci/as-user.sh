#!/usr/bin/env bash
# The suite as a normal user with no network: the test binaries that the
# suite leg built (`cargo test --no-run` lists them; nothing is rebuilt),
# run by a user made for it, in a network namespace whose only interface
# is lo. Tests that need root (huge page reservations, mknod, UTS
# namespaces, the system's interleave weights) say SKIPPED and why; the
# rest must pass as they do as root. The environment is a fresh user's
# (CI unset): the slow suites skip (they ran as root).
#
# Before issue 62 this was the EasyBuild leg's test step, which built the
# whole suite a second time (release profile) to run it once more; the
# EasyBuild leg now proves the build, install and module (.ci/easybuild.sh).
#
# Needs root (to make the user and the namespace); run after the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "as-user.sh makes a user and a network namespace: run it as root" >&2; exit 1; }

mapfile -t binaries < <(cargo test --no-run --message-format=json 2>/dev/null |
    python3 -c '
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("reason") == "compiler-artifact" and msg.get("executable") and msg["profile"]["test"]:
        print(msg["executable"])')
[ "${#binaries[@]}" -gt 0 ] || { echo "as-user.sh: cargo listed no test binary: run the suite first" >&2; exit 1; }

user=membw-test
id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
home=$(getent passwd "$user" | cut -d: -f6)

# The user reads the checkout (the tests read sources, docs and fixtures)
# and writes only the tests' scratch directory (CARGO_TARGET_TMPDIR, where
# shared fixture trees and the fake GPU libraries are cached).
dir=$PWD
while [ "$dir" != / ]; do chmod o+x "$dir"; dir=$(dirname "$dir"); done
chmod -R o+rX .
mkdir -p target/tmp && chmod -R a+rwX target/tmp

# A user's environment, not root's: a PATH without root's directories (a
# tool that is not installed must be "not found", not "permission
# denied"), and this machine's Rust, read-only, for the tests that ask
# cargo (`cargo tree --offline`): as a site's shared install would be.
rust_bin=$(dirname "$(rustup which cargo)")
case $rust_bin in /root/*) chmod o+x /root ;; esac
user_env=(env -i HOME="$home" USER="$user" LANG=C.UTF-8
          PATH="$rust_bin:/usr/local/bin:/usr/bin:/bin" CARGO="$rust_bin/cargo"
          CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}")

log=$(mktemp) one=$(mktemp)
trap 'rm -f "$log" "$one"' EXIT
status=0
for binary in "${binaries[@]}"; do
    echo "as $user, no network: ${binary#"$PWD"/}"
    # Rust's test harness, run from the package's root as cargo runs it.
    rc=0
    unshare -n bash -c 'ip link set lo up && exec "$@"' - \
        runuser -u "$user" -- "${user_env[@]}" "$binary" >"$one" 2>&1 || rc=$?
    cat "$one" >>"$log"
    grep -E "^(test result:|SKIPPED |test .* FAILED$)" "$one" | sed 's/^/  /' || true
    [ "$rc" = 0 ] || status=1
done
echo "the suite as $user, no network:"
grep -E "^test result:" "$log" | awk '{p+=$4; f+=$6; i+=$8} END {print "  " p " passed, " f " failed, " i " ignored"}'
if [ "$status" != 0 ]; then
    grep -E "^---- |panicked at" "$log" | head -n 40 >&2
    echo "as-user.sh: a test failed as a normal user" >&2
fi
exit "$status"
