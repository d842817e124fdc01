#!/usr/bin/env python3
"""Checks that the engine's state stays private to src/peer.

Usage: scripts/opaque.py BUILD_DIR [ROOT]

Outside src/peer, struct yip_device and struct yip_peer are opaque: code
reads them through the functions of peer/peer.h, and their fields are
declared in peer/state.h alone. This compiles (syntax only) every file under
ROOT/src outside src/peer with the command CMake recorded for it in
BUILD_DIR/compile_commands.json, with YIP_PEER_OPAQUE defined, which makes
peer/state.h an #error. A file that includes it (or peer/internal.h, which
includes it) fails, and so does one that touches a field without it (an
incomplete type). Unit tests, fuzzers and benchmarks live outside src and
may include it. ROOT defaults to the checkout holding this script.
"""
import concurrent.futures
import json
import os
import shlex
import subprocess
import sys


def checked(root, entry):
    """True if the file of this compile command is one the check covers."""
    path = os.path.realpath(os.path.join(entry["directory"], entry["file"]))
    rel = os.path.relpath(path, os.path.join(root, "src"))
    return not rel.startswith("..") and not rel.startswith("peer" + os.sep)


def syntax_only(entry):
    """The compile command without its output, syntax only, opaque."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a == "-o":
            skip = True
        elif a != "-c":
            out.append(a)
    return out[:1] + ["-fsyntax-only", "-DYIP_PEER_OPAQUE"] + out[1:]


def compile_one(entry):
    r = subprocess.run(syntax_only(entry), cwd=entry["directory"], capture_output=True, text=True)
    return os.path.join(entry["directory"], entry["file"]), r.returncode, r.stderr


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    build = sys.argv[1]
    root = os.path.realpath(sys.argv[2] if len(sys.argv) == 3 else
                            os.path.join(os.path.dirname(__file__), ".."))
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = [e for e in json.load(f) if checked(root, e)]
    seen, todo = set(), []
    for e in entries:
        if e["file"] not in seen:
            seen.add(e["file"])
            todo.append(e)
    if not todo:
        sys.exit("opaque: no file to check in %s" % build)
    failed = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for name, rc, err in pool.map(compile_one, todo):
            if rc != 0:
                failed.append((name, err))
    for name, err in failed:
        print("opaque: %s reaches into the engine's state:\n%s" % (
            os.path.relpath(os.path.realpath(name), root), err),
              file=sys.stderr)
    if failed:
        sys.exit(1)
    print("opaque: %d files outside src/peer compile without peer/state.h" % len(todo))


if __name__ == "__main__":
    main()
