"""Issue 20 in a real browser: the visualisation password is typed by a person on this server's
page, never through the model. A simulated Miniserver (`home-mcp sim`, its own visualisation
password) and `home-mcp serve` without a configured password; the official Python MCP SDK over
Streamable HTTP as the client, whose elicitation callback hands the URL of the URL-mode request
to headless chromium (tests/e2e/browser/visu-page.mjs types the password there). Asserted: the
secured command reached the simulator with the right hash (the simulator arms only then; its
state is read over its HTTP API), and the password is in no MCP message the client saw, no
line of the server's log and no byte of the audit database. Then the same with the SDK in its
MCP 2026-07-28 mode (`Client(mode="2026-07-28")`): the page comes as a URL-mode request inside
an `input_required` result, chromium types the password before the callback accepts, and the
SDK's retry disarms the alarm.

usage: python visu_page.py path/to/home-mcp   (a python with the `mcp` package, e.g. the venv
tests/e2e/python-sdk.sh prepares; node with tests/e2e/browser's packages, chromium). Prints
"N passed, M failed"; exits 1 on a failure.
"""

import base64
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

import anyio

from e2e_common import expect, failures, finish, free_port

BIN = os.path.abspath(sys.argv[1])
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PASSWORD = "pw-e2e-visu-73519"
ALARM = "1d5c3c5b-0225-5e8d-ffff504f94d0e5a1"


def answered(result, seen):
    """A tool result's text and its JSON envelope ({} when the text is not JSON), after adding
    the whole result to `seen` (every MCP message the client saw)."""
    seen.append(result.model_dump_json())
    text = result.content[0].text if result.content else ""
    return text, (json.loads(text) if text.startswith("{") else {})



def wait_http(url, deadline=30):
    end = time.time() + deadline
    while time.time() < end:
        try:
            urllib.request.urlopen(url, timeout=1)
            return True
        except urllib.error.HTTPError:
            return True
        except OSError:
            time.sleep(0.1)
    return False


def sim_armed(sim_port):
    """The alarm's `armed` state as the simulator reports it over its HTTP API."""
    auth = base64.b64encode(b"demo:demo").decode()
    req = urllib.request.Request(f"http://127.0.0.1:{sim_port}/jdev/sps/io/{ALARM}/all",
                                 headers={"Authorization": "Basic " + auth})
    ll = json.loads(urllib.request.urlopen(req, timeout=5).read())["LL"]
    for k, v in ll.items():
        if k.startswith("output") and isinstance(v, dict) and v.get("name") == "armed":
            return float(v["value"])
    return None


async def main(tmp):
    from mcp import types
    from mcp.client.client import Client
    from mcp.client.streamable_http import streamable_http_client

    sim_port, port = free_port(), free_port()
    sim = subprocess.Popen([BIN, "sim", "--structure", os.path.join(ROOT, "assets/demo-house.json"),
                            "--listen", f"127.0.0.1:{sim_port}", "--visu-password", PASSWORD],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sim_up = wait_http(f"http://127.0.0.1:{sim_port}/")
    log_path = os.path.join(tmp, "server.log")
    env = dict(os.environ, HOME_HOST=f"127.0.0.1:{sim_port}", HOME_USER="demo", HOME_PASS="demo",
               HOME_DATA_DIR=tmp, HOME_LOG_LEVEL="debug")
    env.pop("HOME_VISU_PASS", None)
    with open(log_path, "w") as log:
        server = subprocess.Popen([BIN, "serve", "--listen", f"127.0.0.1:{port}"], env=env,
                                  stdout=log, stderr=log)
    browsers = []
    seen = []  # every MCP message the client saw (requests, notifications, results)
    try:
        up = sim_up and wait_http(f"http://127.0.0.1:{port}/health")
        expect(up, "simulator and server up")
        if not up:
            print(open(log_path, encoding="utf-8", errors="replace").read()[-3000:])
            return
        expect(sim_armed(sim_port) == 0.0, "the alarm is not armed at first")

        async def elicit(_context, params):
            seen.append(params.model_dump_json())
            if getattr(params, "mode", None) != "url":
                return types.ElicitResult(action="decline")
            browsers.append(subprocess.Popen(
                ["node", os.path.join(ROOT, "tests/e2e/browser/visu-page.mjs"), params.url, PASSWORD,
                 "Arm at once the alarm Alarmanlage (Zentral)"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
            return types.ElicitResult(action="accept")

        async def on_message(message):
            seen.append(repr(message))

        async with Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp"), mode="legacy",
                          elicitation_callback=elicit, message_handler=on_message) as session:
            tools = await session.list_tools()
            seen.append(tools.model_dump_json())
            for t in tools.tools:
                if t.name in ("arm_alarm", "disarm_alarm", "acknowledge_alarm"):
                    props = (t.input_schema if hasattr(t, "input_schema") else t.inputSchema).get("properties", {})
                    expect("code" not in props, f"{t.name} takes no password argument")
            result = await session.call_tool("arm_alarm", {"alarm": ALARM, "delayed": False})
            text, env_ = answered(result, seen)
            expect(env_.get("status") == "success", f"arm_alarm succeeds: {text[:300]}")
            expect(env_.get("data", {}).get("confirmed_by") == "user (password page)",
                   "confirmed by the user on the page")
        expect(len(browsers) == 1, "one URL-mode request, opened in chromium")
        for b in browsers:
            out, _ = b.communicate(timeout=120)
            print("    " + out.strip().replace("\n", "\n    "))
            expect(b.returncode == 0 and "page done: 2 passed" in out, "chromium typed the password")
        expect(sim_armed(sim_port) == 1.0, "the simulator armed the alarm (right hash)")
        url_requests = [json.loads(m) for m in seen if m.startswith("{") and '"mode":"url"' in m]
        eid = url_requests[0].get("elicitation_id") if url_requests else None
        expect(eid and any("notifications/elicitation/complete" in m and eid in m for m in seen),
               "the client was told the page's work is complete (notifications/elicitation/complete)")
        expect(seen and not any(PASSWORD in m for m in seen), f"the password is in no MCP message ({len(seen)} seen)")

        # MCP 2026-07-28 (`Client(mode="2026-07-28")`, no session): the page comes as a URL-mode
        # request inside an input_required result; the person types the password in chromium
        # before the callback answers "accept", and the SDK's retry disarms the alarm.
        modern_pages = []

        async def elicit_modern(_context, params):
            seen.append(params.model_dump_json())
            if getattr(params, "mode", None) != "url":
                return types.ElicitResult(action="decline")
            b = subprocess.Popen(
                ["node", os.path.join(ROOT, "tests/e2e/browser/visu-page.mjs"), params.url, PASSWORD,
                 "Disarm the alarm Alarmanlage (Zentral)"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            browsers.append(b)
            out, _ = await anyio.to_thread.run_sync(lambda: b.communicate(timeout=120))
            modern_pages.append((b.returncode, out))
            return types.ElicitResult(action="accept")

        async with Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp"), mode="2026-07-28",
                          elicitation_callback=elicit_modern, message_handler=on_message) as session:
            result = await session.call_tool("disarm_alarm", {"alarm": ALARM})
            text, env_ = answered(result, seen)
            expect(env_.get("status") == "success", f"2026-07-28: disarm_alarm succeeds: {text[:300]}")
            expect(env_.get("data", {}).get("confirmed_by") == "user (password page)",
                   "2026-07-28: confirmed by the user on the page")
        expect(len(modern_pages) == 1, f"2026-07-28: one URL-mode input request ({len(modern_pages)})")
        for code, out in modern_pages:
            print("    " + out.strip().replace("\n", "\n    "))
            expect(code == 0 and "page done: 2 passed" in out, "2026-07-28: chromium typed the password")
        expect(sim_armed(sim_port) == 0.0, "2026-07-28: the simulator disarmed the alarm (right hash)")
        expect(not any(PASSWORD in m for m in seen), f"the password is in no MCP message ({len(seen)} seen)")
    finally:
        for b in browsers:
            if b.poll() is None:
                b.kill()
        server.terminate()
        server.wait(timeout=10)
        sim.terminate()
        sim.wait(timeout=10)
    log_text = open(log_path, encoding="utf-8", errors="replace").read()
    if failures:
        print("\n".join(l for l in log_text.splitlines() if "confirm" in l or "WARN" in l or "ERROR" in l))
    expect("password page" in log_text, "the server logged the page's answer")
    expect(PASSWORD not in log_text, "the password is in no log line")
    audit = [os.path.join(tmp, f) for f in os.listdir(tmp) if f.startswith("audit.db")]
    expect(audit, f"audit database written ({audit})")
    blob = b"".join(open(p, "rb").read() for p in audit)
    expect(b"arm_alarm" in blob and b"user (password page)" in blob, "the audit row names who confirmed")
    expect(b"disarm_alarm" in blob, "the 2026-07-28 command has its audit row")
    expect(PASSWORD.encode() not in blob, "the password is in no audit row")


with tempfile.TemporaryDirectory() as tmp:
    anyio.run(main, tmp)
finish()
