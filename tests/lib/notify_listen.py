#!/usr/bin/env python3
"""A stand-in for the service manager's notification socket (sd_notify).

notify_listen.py ADDRESS OUT [CMD...]: binds an AF_UNIX datagram socket at
ADDRESS (a path, or @name for the abstract namespace) and appends one line
per datagram to OUT: "<unix time> <message, its newlines as '|'>". The first
time a datagram holds READY=1, runs CMD (if given) at once and appends
"<time> CMD-RC=<exit status>" before reading on, so the caller can tell
whether CMD worked at the moment READY arrived. Runs until killed.
"""
import socket
import subprocess
import sys
import time

addr, out, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + addr[1:] if addr.startswith("@") else addr)
ready_seen = False
with open(out, "a", buffering=1) as f:
    f.write("%.6f LISTENING\n" % time.time())
    while True:
        msg = s.recv(4096).decode("utf-8", "replace")
        f.write("%.6f %s\n" % (time.time(), msg.replace("\n", "|")))
        if cmd and not ready_seen and "READY=1" in msg.split("\n"):
            ready_seen = True
            rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
            f.write("%.6f CMD-RC=%d\n" % (time.time(), rc))
