#!/usr/bin/env python3
"""Checks yip's layering from the symbols of the built objects.

Usage: scripts/layering.py BUILD_DIR [MODULES_FILE]

The modules and their order are read from src/MODULES (or MODULES_FILE),
the file CMakeLists.txt builds the libraries from: one layer a line, bottom
first; cmd, the programs, is the top. For every object file of the two
libraries and the binaries (CMake puts them in
BUILD_DIR/CMakeFiles/<target>.dir/src/<module>/<file>.c.o) it
reads the symbols the object defines and the ones it uses (nm), and so which
file calls which. It fails when

  * a module calls a module that is not on a line below its own (engine
    modules never call the OS side, which is above them all), or one it
    shares its line with;
  * a module is not in the file;
  * the files of one module call each other in a cycle;
  * a file of a module with a declared file order (ORDERED: the map at the
    top of the named header, one "name.c" per line, bottom first) calls a
    file listed above it.

Each failure names the caller, the callee and the symbols between them.
"""
import collections
import glob
import os
import re
import subprocess
import sys


def read_layers(path):
    """{module: layer} from a modules file: "kind: name [name...]" lines, bottom first."""
    layer, n, os_seen = {}, 0, False
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            kind, _, names = line.partition(":")
            if kind not in ("engine", "os") or not names.split():
                raise SystemExit("layering: %s: not a module line: %r" % (path, line))
            if kind == "engine" and os_seen:
                raise SystemExit("layering: %s: an engine module above the OS side: %r"
                                 % (path, line))
            os_seen = os_seen or kind == "os"
            for name in names.split():
                layer[name] = n
            n += 1
    layer["cmd"] = n
    return layer


# Modules whose files are stacked in a declared order, read from a header.
ORDERED = {"peer": "src/peer/internal.h", "membership": "src/membership/internal.h",
           "gossip": "src/gossip/internal.h"}


def symbols(obj):
    """(defined, used) global symbol names of one object file."""
    out = subprocess.run(["nm", "-P", obj], check=True, capture_output=True,
                         text=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            used.add(name)
        elif kind.isupper():
            defined.add(name)
    return defined, used


def declared_order(root, header):
    """File names listed in the map comment at the top of header, bottom first."""
    order = []
    with open(os.path.join(root, header)) as f:
        for line in f:
            if line.startswith("#"):
                break
            m = re.match(r"\s*\*\s+([a-z_]+\.c)\s", line)
            if m:
                order.append(m.group(1))
    return order


def find_cycle(nodes, edges):
    """A list of nodes forming a cycle in the graph, or None."""
    state = {}

    def visit(n, path):
        state[n] = 1
        path.append(n)
        for m in sorted(edges.get(n, ())):
            if state.get(m) == 1:
                return path[path.index(m):] + [m]
            if m not in state:
                c = visit(m, path)
                if c:
                    return c
        path.pop()
        state[n] = 2
        return None

    for n in sorted(nodes):
        if n not in state:
            c = visit(n, [])
            if c:
                return c
    return None


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    build = sys.argv[1]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    layer = read_layers(sys.argv[2] if len(sys.argv) == 3 else os.path.join(root, "src", "MODULES"))
    objs = []
    for pattern in ("yip-engine.dir/src/*/*.c.o", "yip-os.dir/src/*/*.c.o", "*/src/cmd/*.c.o"):
        objs += glob.glob(os.path.join(build, "CMakeFiles", pattern))
    objs.sort()
    # Objects of sources since removed may linger in a build directory.
    objs = [o for o in objs if os.path.exists(os.path.join(
        root, "src", os.path.basename(os.path.dirname(o)), os.path.basename(o)[:-2]))]
    if not objs:
        print("layering: no objects under %s (build first)" % build, file=sys.stderr)
        return 2

    owner = {}  # symbol -> (module, file)
    uses = {}   # (module, file) -> used symbols
    for o in objs:
        module = os.path.basename(os.path.dirname(o))
        name = os.path.basename(o)[:-2]  # foo.c
        key = (module, name)
        defined, used = symbols(o)
        uses.setdefault(key, set()).update(used)
        if module != "cmd":  # each binary defines main; nothing calls into cmd
            for s in defined:
                owner[s] = key

    errors = []
    calls = collections.defaultdict(set)  # (caller, callee) -> symbols
    for caller, used in uses.items():
        for s in used:
            callee = owner.get(s)
            if callee is not None and callee != caller:
                calls[(caller, callee)].add(s)

    def show(pair):
        (a, b), syms = pair, sorted(calls[pair])
        more = " ..." if len(syms) > 4 else ""
        return "%s/%s -> %s/%s (%s%s)" % (a[0], a[1], b[0], b[1], ", ".join(syms[:4]), more)

    for pair in sorted(calls):
        (cm, _), (dm, _) = pair
        if cm == dm:
            continue
        if cm not in layer or dm not in layer:
            errors.append("module not in the declared order: %s" % show(pair))
        elif layer[dm] == layer[cm]:
            errors.append("%s calls %s, which shares its layer: %s" % (cm, dm, show(pair)))
        elif layer[dm] > layer[cm]:
            errors.append("%s calls up into %s: %s" % (cm, dm, show(pair)))

    for module in sorted({m for m, _ in uses}):
        files = {f for m, f in uses if m == module}
        edges = collections.defaultdict(set)
        for (a, b) in calls:
            if a[0] == module and b[0] == module:
                edges[a[1]].add(b[1])
        cycle = find_cycle(files, edges)
        if cycle:
            errors.append("cycle in %s: %s" % (module, " -> ".join(cycle)))
        if module in ORDERED:
            order = declared_order(root, ORDERED[module])
            for f in sorted(files - set(order)):
                errors.append("%s/%s is not in the map in %s" % (module, f, ORDERED[module]))
            for (a, b) in sorted(calls):
                if a[0] == module and b[0] == module and a[1] in order and b[1] in order \
                        and order.index(b[1]) > order.index(a[1]):
                    errors.append("%s calls a file above it: %s" % (module, show((a, b))))

    for e in errors:
        print("layering: " + e, file=sys.stderr)
    if errors:
        return 1
    print("layering: ok (%d objects, %d modules, %d file-to-file call edges)"
          % (len(objs), len({m for m, _ in uses}), len(calls)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
