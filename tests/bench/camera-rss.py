#!/usr/bin/env python3
"""RSS of `home-mcp serve --demo` while it hands out camera pictures (issue 30): starts the given
binary (default target/release/home-mcp), waits until it is idle, reads VmRSS, then asks
get_camera_image ROUNDS times for each of the demo's three cameras (a 1280x720 still JPEG, two
MJPEG streams) and a bell picture, sampling VmRSS after each, and prints idle, peak (VmHWM) and
the RSS 5 s after. Loopback only; every wait is bounded.

usage: tests/bench/camera-rss.py [BIN] [ROUNDS]      (python3, stdlib only)
"""

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release/home-mcp"
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 10


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def status(pid, field):
    text = open(f"/proc/{pid}/status").read()
    return int(re.search(rf"{field}:\s+(\d+) kB", text).group(1))


port = free_port()
env = dict(os.environ, GLIBC_TUNABLES="glibc.malloc.tcache_count=0")
proc = subprocess.Popen([BIN, "serve", "--demo", "--listen", f"127.0.0.1:{port}"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
url = f"http://127.0.0.1:{port}/mcp"
headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2025-06-18"}


def post(body, session=None):
    h = dict(headers)
    if session:
        h["Mcp-Session-Id"] = session
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=h)
    with urllib.request.urlopen(req, timeout=30) as r:
        text = r.read().decode()
        if text.startswith("event:") or text.startswith("data:"):
            text = [l[5:] for l in text.splitlines() if l.startswith("data:")][-1]
        return r.headers.get("mcp-session-id"), (json.loads(text) if text.strip() else None)


try:
    deadline = time.time() + 30
    while True:
        try:
            sid, _ = post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "camera-rss", "version": "1"}}})
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.2)
    post({"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    time.sleep(5)
    idle = status(proc.pid, "VmRSS")
    n = 0
    calls = [{"device": "Haustür"}, {"device": "Gartentür"}, {"device": "Kamera Einfahrt"},
             {"device": "Haustür", "bell_event": "latest"}]
    sizes = []
    for _ in range(ROUNDS):
        for args in calls:
            n += 1
            _, r = post({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                         "params": {"name": "get_camera_image", "arguments": args}}, sid)
            res = r["result"]
            assert not res.get("isError"), json.dumps(res)[:300]
            sizes.append(res["structuredContent"]["data"]["picture"]["bytes"])
    peak = status(proc.pid, "VmHWM")
    time.sleep(5)
    after = status(proc.pid, "VmRSS")
    print(f"{BIN}: {n} pictures ({min(sizes)}-{max(sizes)} bytes each); "
          f"RSS idle {idle} kB, peak {peak} kB (+{peak - idle} kB), 5 s after {after} kB (+{after - idle} kB)")
finally:
    proc.terminate()
    proc.wait(timeout=10)
