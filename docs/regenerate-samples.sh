#!/usr/bin/env bash
# Rewrites every sample output in the README and the guide from the real
# binary: a ```text block right after a `<!-- sample: COMMAND -->` line gets
# COMMAND's output (stdout and stderr). Run it after a change to any output,
# on the machine the samples describe:  docs/regenerate-samples.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
bin=$(mktemp -d)
# Each sample runs in a scratch directory that shows the repository's
# docs, tests and bench (as tests/cli/readme.rs runs it), so that what a sample
# writes (plots, results files) lands there, not in the repository or /tmp.
export SAMPLE_DIR=$(mktemp -d)
trap 'rm -rf "$bin" "$SAMPLE_DIR"' EXIT
for d in docs tests bench; do ln -s "$PWD/$d" "$SAMPLE_DIR/$d"; done
ln -s "$PWD/target/release/membw" "$bin/membw"
export PATH="$bin:$PATH"
for page in README.md docs/guide/*.md; do
  python3 - "$page" <<'PY'
import os, re, subprocess, sys
path = sys.argv[1]
text = open(path).read()
pattern = re.compile(r'(<!-- sample: (.+?) -->\n```text\n)(.*?)(```)', re.S)
def run(m):
    out = subprocess.run(['bash', '-c', m.group(2)], capture_output=True, text=True,
                         cwd=os.environ['SAMPLE_DIR'],
                         env=dict(os.environ, TMPDIR=os.environ['SAMPLE_DIR']))
    if out.returncode != 0:
        sys.exit(f"{path}: '{m.group(2)}' failed: {out.stderr}")
    body = out.stdout + out.stderr
    return m.group(1) + body.rstrip('\n') + '\n' + m.group(4)
new = pattern.sub(run, text)
if new != text:
    open(path, 'w').write(new)
    print(f"{path}: samples rewritten")
PY
done

# The guide's plots, drawn from the study files in docs/study (each report
# into a folder of its own, then the figures the guide shows copied out).
plots=$(mktemp -d)
trap 'rm -rf "$bin" "$SAMPLE_DIR" "$plots"' EXIT
for study in threads sizes numa stores; do
  membw report "docs/study/$study.jsonl" --plots "$plots/$study" >/dev/null 2>&1
done
cp "$plots/threads/triad-threads.svg" "$plots/threads/kernels.svg" docs/plots/
cp "$plots/sizes/triad-sizes.svg" docs/plots/
cp "$plots/numa/triad-numa-a.svg" "$plots/numa/triad-numa-b.svg" docs/plots/
cp "$plots/stores/kernels-bars.svg" docs/plots/
# The HTML report of the threads study as a browser shows it (headless
# Chromium, where installed).
if command -v chromium >/dev/null; then
  membw report docs/study/threads.jsonl --plots "$plots/threads" --html "$plots/report.html" >/dev/null 2>&1
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,1900 \
    --screenshot="$PWD/docs/plots/report-html.png" "file://$plots/report.html" >/dev/null 2>&1
  echo "docs/plots/report-html.png: redrawn"
fi
echo "docs/plots: redrawn from docs/study"
