"""The house speaks first, and can say stop (issue 31), through the official Python MCP SDK in
the legacy era (mcp 2.x `Client(mode="legacy")` or mcp 1.x `ClientSession`), over Streamable
HTTP (`serve`) and stdio (`stdio`), both against one `home-mcp sim` process serving the demo
house (started here, so it can be taken away and brought back), with `[safety] stop_switch =
"KI-Assistent"` (the demo house's Virtual Status; `home-mcp sim` starts every state at 0, so
the house starts stopped):

1. the stop switch switched on at the simulator (its test drive, as the Miniserver's logic
   would) lets commands through;
2. an entry raised at the simulator reaches home://alerts, a subscriber's
   `notifications/resources/updated` and a `notifications/message` at level `critical`
   within a few seconds; confirming it through `confirm_alert` reaches the simulator (its own
   `getEntries` shows it confirmed and historic) and it leaves the active list;
3. with the switch off, every actuating tool of the catalogue (`readOnlyHint` false; asserted
   not empty) is refused with ASSISTANT_STOPPED and the simulator receives no command (its
   request log), while reads answer; switched on again, a command flows;
4. with the link down (the simulator process gone) the same refusal; the simulator back (a
   fresh one, its switch off) and switched on, commands flow again.

usage: python alerts.py BIN   (a python with the `mcp` package, 2.x or 1.x, e.g. the venvs
tests/e2e/python-sdk.sh prepares). Prints "N passed, M failed"; exits 1 on a failure. Every
wait is bounded.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from contextlib import AsyncExitStack

import anyio

from e2e_common import WAIT, expect, free_port, on_both_transports, sim_get

BIN = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
STRUCTURE = os.path.join(HERE, "..", "..", "assets", "demo-house.json")
SWITCH = "1d5c3cf0-0230-6000-ffff504f94d0e5a1"  # the demo house's Virtual Status KI-Assistent
MC = "1d5c3cf2-0230-600e-ffff504f94d0e5a1"  # its Message Center
ALERTS = "home://alerts"
STATUS = "home://system/status"



class Sim:
    """`home-mcp sim` on a fixed port (kept across restarts)."""

    def __init__(self):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = None
        self.start()

    def start(self):
        self.proc = subprocess.Popen([BIN, "sim", "--structure", STRUCTURE, "--listen", f"127.0.0.1:{self.port}"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + WAIT
        while True:
            try:
                sim_get(self.base, "/jdev/cfg/api")
                return
            except OSError:
                if time.time() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("home-mcp sim did not come up")
                time.sleep(0.05)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=WAIT)

    def drive(self, path):
        return sim_get(self.base, "/sim/drive/" + path)["LL"]["value"]

    def entry(self, entry_id):
        text = sim_get(self.base, f"/jdev/sps/io/{MC}/getEntries/2")["LL"]["value"]
        return next((e for e in json.loads(text)["entries"] if e["entryUuid"] == entry_id), None)

    def mark(self):
        return json.loads(self.drive("requests/0"))["count"]

    def commands_since(self, mark):
        """Command lines (not reads, not the test drive) the simulator received after `mark`."""
        lines = json.loads(self.drive(f"requests/{mark}"))["lines"]
        out = []
        for line in lines:
            path = line.split(" ")[1].split("?")[0] if " " in line else line
            if path.startswith("/jdev/sps/ios/"):
                out.append(line)
            elif path.startswith("/jdev/sps/io/"):
                rest = path[len("/jdev/sps/io/"):].split("/", 1)
                command = rest[1] if len(rest) > 1 else ""
                if command not in ("", "all", "state") and not command.lower().startswith("getentries/"):
                    out.append(line)
        return out

    def switch(self, on):
        self.drive(f"state/{SWITCH}/active/{1 if on else 0}")


SIM = Sim()
TMP = tempfile.TemporaryDirectory()
CONFIG = os.path.join(TMP.name, "config.toml")
with open(CONFIG, "w") as f:
    f.write(f'[server]\ndata_dir = "{TMP.name}"\n[miniserver]\nhost = "127.0.0.1:{SIM.port}"\n'
            f'user = "demo"\npassword = "demo"\n[safety]\nstop_switch = "KI-Assistent"\n')
ENV = {k: v for k, v in os.environ.items() if k not in ("HOME_HOST", "HOME_USER", "HOME_PASS", "HOME_LISTEN")}
HTTP_PORT = free_port()
SERVE = subprocess.Popen([BIN, "serve", "--config", CONFIG, "--listen", f"127.0.0.1:{HTTP_PORT}"], env=ENV,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
URL = f"http://127.0.0.1:{HTTP_PORT}/mcp"


def wait_http():
    deadline = time.time() + WAIT
    while time.time() < deadline:
        try:
            sim_get(f"http://127.0.0.1:{HTTP_PORT}", "/health")
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("serve did not answer /health")


def error_of(result):
    """The spec's error object of a tool result that failed, else None."""
    if not getattr(result, "isError", False) and not getattr(result, "is_error", False):
        return None
    for c in result.content:
        text = getattr(c, "text", None)
        if text:
            try:
                return json.loads(text).get("error")
            except ValueError:
                return {"message": text}
    return {}


def read_only(tool):
    a = tool.annotations
    return bool(a and (getattr(a, "readOnlyHint", None) or getattr(a, "read_only_hint", None)))


async def run(transport):
    from importlib.metadata import version

    name = f"python-sdk {version('mcp')} {transport}"
    updates, logs = [], []
    box = {"arrived": anyio.Event()}

    async def on_message(message):
        note = getattr(message, "root", message)
        method = getattr(note, "method", None)
        if method == "notifications/resources/updated":
            updates.append(str(note.params.uri))
            box["arrived"].set()

    async def on_log(params):
        logs.append(params)
        box["arrived"].set()

    async with AsyncExitStack() as st:
        if transport == "http":
            from mcp.client.streamable_http import streamable_http_client

            t = streamable_http_client(URL)
        else:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            log = st.enter_context(tempfile.NamedTemporaryFile("w+", suffix=".log"))
            t = stdio_client(StdioServerParameters(command=BIN, args=["stdio", "--config", CONFIG], env=ENV),
                             errlog=log)
        try:
            from mcp.client.client import Client

            v2 = True
        except ImportError:  # mcp 1.x
            v2 = False
            from mcp import ClientSession

            streams = await st.enter_async_context(t)
            c = await st.enter_async_context(ClientSession(streams[0], streams[1], message_handler=on_message,
                                                           logging_callback=on_log))
            await c.initialize()
        else:
            c = await st.enter_async_context(Client(t, mode="legacy", message_handler=on_message,
                                                    logging_callback=on_log))

        async def read(uri):
            with anyio.fail_after(WAIT):
                r = await (c.read_resource(uri, cache_mode="bypass") if v2 else c.read_resource(uri))
            return json.loads(r.contents[0].text)

        async def stop_state(want):
            """Waits (bounded) until home://system/status says the house is stopped (or not)."""
            seen = None
            with anyio.move_on_after(WAIT):
                while True:
                    seen = (await read(STATUS))["stop"]
                    if seen["stopped"] is want:
                        return seen
                    await anyio.sleep(0.1)
            return seen

        async def call(tool, args):
            with anyio.fail_after(WAIT):
                return await c.call_tool(tool, args)

        # 1. The switch on at the simulator: commands flow.
        SIM.switch(True)
        s = await stop_state(False)
        expect(s and s["stopped"] is False, f"{name}: running once the stop switch reads on", json.dumps(s))

        # 2. An entry raised at the simulator: resource update, log message, then confirmed.
        with anyio.fail_after(WAIT):
            await c.set_logging_level("info")
            await c.subscribe_resource(ALERTS)
        updates.clear()
        logs.clear()
        title = f"Extension offline ({transport})"
        entry = SIM.drive("messagecenter/raise?" + urllib.parse.urlencode({"title": title, "severity": 4, "room": "Keller"}))
        raised_at = time.time()
        with anyio.move_on_after(WAIT):
            while not (ALERTS in updates and any(
                    (getattr(l, "data", {}) or {}).get("alert", {}).get("id") == entry for l in logs)):
                await box["arrived"].wait()
                box["arrived"] = anyio.Event()
        took = time.time() - raised_at
        expect(ALERTS in updates, f"{name}: notifications/resources/updated {ALERTS} after an entry raised at the simulator",
               json.dumps(updates))
        mine = [l for l in logs if (getattr(l, "data", {}) or {}).get("alert", {}).get("id") == entry]
        expect(bool(mine) and str(mine[0].level) in ("critical", "LoggingLevel.critical"),
               f"{name}: notifications/message at level critical for the critical entry",
               repr(mine[:1] or logs[:3]))
        expect(took < 10, f"{name}: update and log message within a few seconds", f"{took:.1f} s")
        data = await read(ALERTS)
        active = {a["id"]: a for a in data["active"]}
        expect(entry in active and active[entry]["severity"] == "critical" and active[entry]["title"] == title
               and active[entry]["room"] == "Keller",
               f"{name}: home://alerts lists the entry active, critical, in Keller", json.dumps(data)[:400])
        r = await call("confirm_alert", {"alert": entry})
        expect(error_of(r) is None, f"{name}: confirm_alert answers", repr(r)[:300])
        at_sim = SIM.entry(entry)
        expect(bool(at_sim) and at_sim["confirmedAt"] and at_sim["isHistoric"] is True,
               f"{name}: the simulator has the entry confirmed and historic", json.dumps(at_sim))
        data = await read(ALERTS)
        expect(entry not in {a["id"] for a in data["active"]}, f"{name}: the confirmed entry left the active list")
        with anyio.fail_after(WAIT):
            await c.unsubscribe_resource(ALERTS)

        # 3. The switch off: every actuating tool refused, nothing sent; reads answer.
        with anyio.fail_after(WAIT):
            tools = (await c.list_tools()).tools
        acting = [t.name for t in tools if not read_only(t)]
        expect(len(acting) > 0, f"{name}: the catalogue has actuating tools", str(len(tools)))

        async def all_refused(why):
            mark = SIM.mark() if why != "link down" else None
            refused = []
            for tool in acting:
                e = error_of(await call(tool, {}))
                if not (e and e.get("code") == "ASSISTANT_STOPPED"):
                    refused.append(f"{tool}: {e}")
            expect(not refused, f"{name}: with the {why} every actuating tool ({len(acting)}) is refused with ASSISTANT_STOPPED",
                   "; ".join(refused)[:600])
            if mark is not None:
                sent = SIM.commands_since(mark)
                expect(not sent, f"{name}: with the {why} the simulator received no command", json.dumps(sent[:5]))
            r = await call("list_devices", {"room": "Küche"})
            expect(error_of(r) is None, f"{name}: with the {why} reads answer", repr(r)[:200])

        SIM.switch(False)
        s = await stop_state(True)
        expect(s and s["stop_switch"]["state"] == "off", f"{name}: stopped once the switch reads off", json.dumps(s))
        await all_refused("stop switch off")
        SIM.switch(True)
        await stop_state(False)
        r = await call("control_device", {"device": "Deckenlicht", "room": "Küche", "action": "on"})
        expect(error_of(r) is None, f"{name}: switched on again, a command flows", repr(r)[:200])

        # 4. The link down: the same; back and switched on, commands flow.
        SIM.stop()
        s = await stop_state(True)
        expect(s and s["stop_switch"]["state"] == "unknown", f"{name}: the link down makes the switch unknown (stopped)",
               json.dumps(s))
        await all_refused("link down")
        SIM.start()
        SIM.switch(True)
        s = await stop_state(False)
        expect(s and s["stopped"] is False, f"{name}: the simulator back and the switch on: running", json.dumps(s))
        mark = SIM.mark()
        r = await call("control_device", {"device": "Deckenlicht", "room": "Küche", "action": "on"})
        expect(error_of(r) is None and SIM.commands_since(mark),
               f"{name}: after the link came back a command reaches the simulator", repr(r)[:200])


try:
    wait_http()
    anyio.run(on_both_transports, run, "python-sdk alerts and stop", 8 * WAIT)
finally:
    SERVE.send_signal(signal.SIGTERM)
    try:
        SERVE.wait(timeout=WAIT)
    except subprocess.TimeoutExpired:
        SERVE.kill()
    SIM.stop()
    TMP.cleanup()
