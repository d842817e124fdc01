#!/usr/bin/env python3
"""The man pages against the code: every key of the config parser's key
table (src/config/config.c keys[]) must appear in yipd.conf(5), every option
(--x, -x) and subcommand in each program's --help in its page, and
`mandoc -Tlint -W warning` must print nothing for any page.

usage: scripts/mancheck.py BUILD_DIR [MAN_DIR]   (exit 0 ok, 1 findings)"""
import os
import re
import subprocess
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build")
mandir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "doc", "man")
pages = {"yipd": "yipd.8", "yipctl": "yipctl.8", "yip-rendezvous": "yip-rendezvous.8",
         "yip-ca": "yip-ca.1"}
bad = []


def render(page):
    out = subprocess.run(["mandoc", "-Tascii", os.path.join(mandir, page)], check=True,
                         capture_output=True, text=True).stdout
    return re.sub(r".\x08", "", out)


def has(text, word):
    return re.search(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", text) is not None


for page in list(pages.values()) + ["yipd.conf.5"]:
    r = subprocess.run(["mandoc", "-Tlint", "-W", "warning", os.path.join(mandir, page)],
                       capture_output=True, text=True)
    if r.stdout or r.stderr:
        bad.append("%s: mandoc -Tlint:\n%s%s" % (page, r.stdout, r.stderr))

src = open(os.path.join(root, "src", "config", "config.c")).read()
table = re.search(r"keys\[KEY_COUNT\]\s*=\s*\{(.*?)\n\};", src, re.S)
keys = sorted(set(re.findall(r"\[KEY_\w+\]\s*=\s*\{\"([a-z_]+)\"", table.group(1)))) if table else []
if len(keys) < 10:
    bad.append("src/config/config.c: could not read the key table (%d keys)" % len(keys))
conf = render("yipd.conf.5")
for k in keys:
    if not has(conf, k):
        bad.append("yipd.conf.5: config key %s missing" % k)

for prog, page in pages.items():
    r = subprocess.run([os.path.join(build, prog), "--help"], capture_output=True, text=True)
    usage = r.stdout + r.stderr
    if r.returncode != 0 or "usage:" not in usage:
        bad.append("%s --help: exit %d, no usage text" % (prog, r.returncode))
        continue
    text = render(page)
    words = set(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", usage))
    for line in usage.splitlines():
        m = re.match(r"^(?:usage:)?\s+" + re.escape(prog) + r"\s+\[?([a-z][a-z0-9-]*)\]?", line)
        if m and m.group(1) != "options":
            words.add(m.group(1))
    for w in sorted(words):
        if not has(text, w):
            bad.append("%s: %s's %s missing" % (page, prog, w))
    print("mancheck: %s: %d options and subcommands" % (page, len(words)))
print("mancheck: yipd.conf.5: %d config keys" % len(keys))
for b in bad:
    print("mancheck: " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
