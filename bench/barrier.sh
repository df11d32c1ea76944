#!/usr/bin/env bash
# The team's barrier against the central barrier it replaced: ns per
# crossing at 1, 2, 4, ... threads (each pinned to its own allowed CPU),
# the median of alternated rounds. See docs/guide/architecture.md, "The barrier".
#
#   bench/barrier.sh [CROSSINGS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --example barrier --quiet
exec target/release/examples/barrier "$@"
