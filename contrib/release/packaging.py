#!/usr/bin/env python3
"""The parts of a membw release that release.sh cannot do in shell.

    packaging.py tarball TREE PREFIX OUT      a reproducible .tar.gz of TREE
    packaging.py git-tarball PREFIX OUT       the same of `git archive HEAD`
    packaging.py easyconfig SHA256 [--mpi]    contrib/easybuild/membw-VERSION[-mpi].eb
    packaging.py spack SHA256 VENDOR_SHA256   contrib/spack/packages/membw/package.py
    packaging.py crates                       Cargo.lock's crates, one per line

Reproducible: members sorted, owner root, one fixed time (SOURCE_EPOCH, or
SOURCE_DATE_EPOCH when set), gzip without a name or time, so
the same tree gives the same bytes and the same sha256 on every machine.
Only Python's standard library: it runs before anything is installed.
"""

import gzip
import io
import os
import re
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# crates.io's registry as Cargo.lock names it; anything else (git, path) is
# not on crates.io and the Cargo easyblock would need a (repo, rev) for it.
CRATES_IO = "registry+https://github.com/rust-lang/crates.io-index"
# No public home yet: .invalid is reserved for names that must not resolve
# (RFC 2606). A site fetches nothing from it; the tarball goes in its source
# path. Replace it (here only) once membw is published.
HOMEPAGE = "https://membw.invalid/"
# The oldest Rust that builds membw (edition 2024), as EasyBuild names a
# Rust it built; CI and sites with a rustup Rust use --filter-deps=Rust.
EASYBUILD_RUST = ("Rust", "1.85.1", "", ("GCCcore", "14.2.0"))
DESCRIPTION = (
    "Sustainable memory bandwidth and latency of a compute node or cluster,\n"
    "measured the way STREAM does it (pinned, validated, with explicit SIMD and\n"
    "non-temporal stores) and explained: placement, page placement, peak, noise."
)


def version():
    return tomllib.loads((ROOT / "Cargo.toml").read_text())["package"]["version"]


def locked_crates():
    """(name, version, sha256) of every crate in Cargo.lock but membw itself."""
    lock = tomllib.loads((ROOT / "Cargo.lock").read_text())
    crates = []
    for package in lock["package"]:
        if package["name"] == "membw" and "source" not in package:
            continue
        if package.get("source") != CRATES_IO:
            sys.exit(f"packaging.py: {package['name']} {package['version']} is not from crates.io")
        crates.append((package["name"], package["version"], package["checksum"]))
    return sorted(crates)


# Every member's time. A constant: the time of a commit would differ between
# a full and a shallow clone of the same HEAD, and so would the checksum.
SOURCE_EPOCH = 1767225600  # 2026-01-01T00:00:00Z


def source_epoch():
    return int(os.environ.get("SOURCE_DATE_EPOCH", SOURCE_EPOCH))


def normalized(info, mtime):
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mtime = mtime
    info.pax_headers = {}
    if info.isdir():
        info.mode = 0o755
    elif info.isfile():
        info.mode = 0o755 if info.mode & 0o100 else 0o644
    return info


def write_tar_gz(members, out):
    """members: (TarInfo, bytes or None), written sorted by name."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in sorted(members, key=lambda m: m[0].name):
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    with open(out, "wb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0) as gz:
        gz.write(raw.getvalue())


def tarball(tree, prefix, out):
    mtime = source_epoch()
    tree = Path(tree)
    members = []
    for path in [tree, *tree.rglob("*")]:
        rel = path.relative_to(tree)
        name = prefix if str(rel) == "." else f"{prefix}/{rel}"
        info = tarfile.TarInfo(name)
        st = path.lstat()
        info.mode = st.st_mode & 0o777
        if path.is_symlink():
            info.type, info.linkname = tarfile.SYMTYPE, os.readlink(path)
            members.append((normalized(info, mtime), None))
        elif path.is_dir():
            info.type = tarfile.DIRTYPE
            members.append((normalized(info, mtime), None))
        else:
            data = path.read_bytes()
            info.size = len(data)
            members.append((normalized(info, mtime), data))
    write_tar_gz(members, out)


def git_tarball(prefix, out):
    """HEAD's files as `git archive` gives them (export-ignore honoured),
    renamed under PREFIX and normalized."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", "HEAD"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    mtime = source_epoch()
    top = tarfile.TarInfo(prefix)
    top.type = tarfile.DIRTYPE
    members = [(normalized(top, mtime), None)]
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for info in tar.getmembers():
            if info.type in (tarfile.XGLTYPE, tarfile.XHDTYPE):
                continue
            data = tar.extractfile(info).read() if info.isfile() else None
            info.name = f"{prefix}/{info.name.rstrip('/')}"
            members.append((normalized(info, mtime), data))
    write_tar_gz(members, out)


def py_tuple(values):
    return "(" + ", ".join(repr(v) for v in values) + ")"


def easyconfig(source_sha256, mpi):
    """The easyconfig text: the source tarball, then every crate of
    Cargo.lock with the checksum Cargo.lock gives it (the sha256 of the
    .crate file, which the easyblock fetches as NAME-VERSION.tar.gz)."""
    ver = version()
    crates = locked_crates()
    suffix = "-mpi" if mpi else ""
    lines = [
        f"# membw {ver}{suffix}: generated by contrib/release/release.sh --update from",
        "# Cargo.lock (the crates and their checksums) and the release tarball (its",
        "# checksum). Do not edit: CI fails when this file and a fresh one differ.",
        "easyblock = 'Cargo'",
        "",
        "name = 'membw'",
        f"version = '{ver}'",
    ]
    if mpi:
        lines.append("versionsuffix = '-mpi'")
    lines += [
        "",
        f"homepage = '{HOMEPAGE}'",
        f'description = """{DESCRIPTION}"""',
        "",
    ]
    if mpi:
        lines += [
            "# MPI from the toolchain (mpicc on PATH), libclang (LLVM) for the bindings.",
            "toolchain = {'name': 'gompi', 'version': '2025a'}",
            "",
            "builddependencies = [",
            "    ('Rust', '1.85.1'),",
            "    ('LLVM', '20.1.7'),",
            "]",
        ]
    else:
        lines += [
            "# One self-contained binary: no toolchain module needed at run time.",
            "toolchain = SYSTEM",
            "",
            "builddependencies = [",
            f"    {py_tuple(EASYBUILD_RUST)},",
            "]",
        ]
    lines += [
        "",
        "sources = [SOURCE_TAR_GZ]",
        "crates = [",
        *[f"    ('{name}', '{v}')," for name, v, _ in crates],
        "]",
        "checksums = [",
        f"    {{'%(name)s-%(version)s.tar.gz': '{source_sha256}'}},",
        *[f"    {{'{name}-{v}.tar.gz': '{sha}'}}," for name, v, sha in crates],
        "]",
        "",
    ]
    # Every test binary runs, so that the log names every failure and every
    # skip (a test that needs root or a tool says SKIPPED and why).
    # `cargo install` ignores Cargo.lock unless --locked: without it, it would
    # resolve again against the vendored crates.
    features = "--features mpi " if mpi else ""
    if mpi:
        lines.append(f"buildopts = '{features.strip()}'")
    lines += [
        f"testopts = '{features}--no-fail-fast'",
        f"installopts = '{features}--locked'",
        "",
    ]
    lines += [
        "sanity_check_paths = {",
        "    'files': ['bin/membw'],",
        "    'dirs': [],",
        "}",
        "",
        "sanity_check_commands = [",
        "    'membw --version',",
        "    'membw topo',",
        "]",
        "",
        "moduleclass = 'perf'",
    ]
    return "\n".join(lines) + "\n"


def spack(source_sha256, vendor_sha256):
    """package.py with this release's version line and vendor resource."""
    path = ROOT / "contrib/spack/packages/membw/package.py"
    text = path.read_text()
    ver = version()
    text, n = re.subn(r'version\("[^"]+", sha256="[0-9a-f]{64}"\)',
                      f'version("{ver}", sha256="{source_sha256}")', text)
    text, m = re.subn(r'(\n\s+when="@)[^"]+(",\s*\n\s+url=VENDOR_URL\.format\(version="[^"]*"\),\s*\n\s+sha256=")[0-9a-f]{64}"',
                      lambda g: f'{g.group(1)}{ver}{g.group(2)}{vendor_sha256}"', text)
    if n != 1 or m != 1:
        sys.exit(f"packaging.py: {path} has no single version() and vendor resource to update")
    text = re.sub(r'url=VENDOR_URL\.format\(version="[^"]*"\)',
                  f'url=VENDOR_URL.format(version="{ver}")', text)
    return text


def main(argv):
    if len(argv) >= 1 and argv[0] == "version":
        print(version())
    elif len(argv) == 4 and argv[0] == "tarball":
        tarball(argv[1], argv[2], argv[3])
    elif len(argv) == 3 and argv[0] == "git-tarball":
        git_tarball(argv[1], argv[2])
    elif len(argv) in (2, 3) and argv[0] == "easyconfig":
        sys.stdout.write(easyconfig(argv[1], argv[2:] == ["--mpi"]))
    elif len(argv) == 3 and argv[0] == "spack":
        sys.stdout.write(spack(argv[1], argv[2]))
    elif argv == ["crates"]:
        for name, v, _ in locked_crates():
            print(name, v)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
