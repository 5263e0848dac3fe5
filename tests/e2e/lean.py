"""The lean tool profile (issue 33) through the official Python MCP SDK over Streamable HTTP:
`serve --demo` at security level staging with two keys made by `home-mcp keys generate` (one
with `--profile lean`, one without); and `stdio --demo --profile lean`.

1. the lean key's tools/list has at most 10 tools, none of the full key's, within 16,000 bytes;
   the full key (same server) sees the full catalogue;
2. the lean key is refused a full tool by name (a JSON-RPC error naming the tool and the lean
   profile); the simulator receives nothing;
3. the lean `control` switches a light: the simulated Miniserver's own state says so (read
   over its HTTP API, not through the server);
4. `stdio --profile lean` lists the same lean tools.

usage: python lean.py BIN   (a python with the `mcp` package, 2.x or 1.x, e.g. the venvs
tests/e2e/python-sdk.sh prepares). Prints "N passed, M failed"; exits 1 on a failure. Every
wait is bounded.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import AsyncExitStack

import anyio

from e2e_common import WAIT, describe, expect, finish, free_port, sim_get

BIN = sys.argv[1]
LIGHT = "1d5c3a92-0209-520e-ffff504f94d0e5a1"  # the demo house's Deckenlicht (Küche), a Switch
TMP = tempfile.TemporaryDirectory()
STORE = os.path.join(TMP.name, "keys.toml")


def generate(*extra):
    out = subprocess.run([BIN, "keys", "generate", "--role", "operator", "--json", "--key-store", STORE, *extra],
                         capture_output=True, text=True, timeout=WAIT, check=True)
    return json.loads(out.stdout)


LEAN = generate("--name", "local model", "--profile", "lean")
FULL = generate("--name", "laptop")
expect(LEAN.get("profile") == "lean" and "profile" not in FULL,
       "keys generate --profile lean stores the key's profile", json.dumps([LEAN.get("profile"), FULL.get("profile")]))

PORT = free_port()
LOG = open(os.path.join(TMP.name, "serve.log"), "w+")
ENV = dict(os.environ, SECURITY_LEVEL="staging")
SERVE = subprocess.Popen([BIN, "serve", "--demo", "--listen", f"127.0.0.1:{PORT}", "--key-store", STORE],
                         env=ENV, stdout=subprocess.DEVNULL, stderr=LOG)
URL = f"http://127.0.0.1:{PORT}/mcp"


def demo_sim():
    """The simulated Miniserver's base URL, from the server's log, once /health answers."""
    deadline = time.time() + WAIT
    while time.time() < deadline:
        LOG.seek(0)
        m = re.search(r"demo: simulated Miniserver at (http://[0-9.:]+)", LOG.read())
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{PORT}/health", timeout=WAIT).read()
            if m:
                return m.group(1)
        except OSError:
            pass
        if SERVE.poll() is not None:
            break
        time.sleep(0.1)
    raise RuntimeError("serve --demo did not come up")


def light_active(sim):
    ll = sim_get(sim, f"/jdev/sps/io/{LIGHT}/all")["LL"]
    return next(float(v["value"]) for k, v in ll.items() if k.startswith("output") and v["name"] == "active")


def request_count(sim):
    return json.loads(sim_get(sim, "/sim/drive/requests/0")["LL"]["value"])["count"]


def commands_since(sim, mark):
    lines = json.loads(sim_get(sim, f"/sim/drive/requests/{mark}")["LL"]["value"])["lines"]
    return [l for l in lines if re.search(r"/jdev/sps/ios?/.*/(on|off|pulse)\b", l)]


def http_client(key):
    """An httpx client that sends the key (mcp 2.x brings httpx2, 1.x httpx)."""
    try:
        import httpx2 as httpx
    except ImportError:
        import httpx
    return httpx.AsyncClient(headers={"X-API-Key": key}, timeout=WAIT)


async def connect(st, transport):
    """A connected client over `transport` (an async context of the SDK's streams): mcp 2.x
    `Client` (legacy era), else mcp 1.x `ClientSession`."""
    try:
        from mcp.client.client import Client
    except ImportError:
        from mcp import ClientSession

        streams = await st.enter_async_context(transport)
        c = await st.enter_async_context(ClientSession(streams[0], streams[1]))
        await c.initialize()
        return c
    return await st.enter_async_context(Client(transport, mode="legacy"))


def size_of(tools):
    """Bytes of the tools as JSON (what the list costs, about; the server's own figure is in
    tests/tool_list.rs)."""
    return len(json.dumps([t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools],
                          separators=(",", ":"), ensure_ascii=False).encode())


async def main():
    from importlib.metadata import version
    from mcp.client.streamable_http import streamable_http_client

    name = f"python-sdk {version('mcp')}"
    sim = demo_sim()
    async with AsyncExitStack() as st:
        lean = await connect(st, streamable_http_client(URL, http_client=await st.enter_async_context(http_client(LEAN["id"]))))
        full = await connect(st, streamable_http_client(URL, http_client=await st.enter_async_context(http_client(FULL["id"]))))
        with anyio.fail_after(WAIT):
            lean_tools = (await lean.list_tools()).tools
            full_tools = (await full.list_tools()).tools
        lean_names = [t.name for t in lean_tools]
        full_names = [t.name for t in full_tools]
        expect(0 < len(lean_names) <= 10 and "control" in lean_names,
               f"{name} http: a lean key lists at most 10 tools", json.dumps(lean_names))
        expect(not set(lean_names) & set(full_names) and len(full_names) > 30,
               f"{name} http: none of them is a full tool; the full key lists the full catalogue",
               json.dumps([lean_names, len(full_names)]))
        expect(size_of(lean_tools) <= 16000, f"{name} http: the lean list is at most 16,000 bytes",
               str(size_of(lean_tools)))

        # 2. A full tool, by name: refused, nothing sent.
        mark = request_count(sim)
        refused = None
        try:
            with anyio.fail_after(WAIT):
                r = await lean.call_tool("control_device", {"device": "Deckenlicht", "room": "Küche", "action": "off"})
            refused = "isError" if (getattr(r, "isError", False) or getattr(r, "is_error", False)) else None
            text = r.content[0].text if r.content else ""
        except Exception as e:  # noqa: BLE001 - the SDK raises the JSON-RPC error
            refused, text = "error", describe(e)
        expect(refused is not None and "control_device" in text and "lean" in text,
               f"{name} http: a lean key is refused control_device by name, with the profile", text)
        expect(commands_since(sim, mark) == [], f"{name} http: the simulator received no command for it",
               json.dumps(commands_since(sim, mark)))

        # 3. The lean control switches the light, as the simulator says.
        for action, want in (("off", 0.0), ("on", 1.0)):
            mark = request_count(sim)
            with anyio.fail_after(WAIT):
                r = await lean.call_tool("control", {"target": "Deckenlicht", "room": "Küche", "action": action})
            failed = getattr(r, "isError", False) or getattr(r, "is_error", False)
            seen = None
            deadline = time.time() + WAIT
            while time.time() < deadline:
                seen = light_active(sim)
                if seen == want:
                    break
                await anyio.sleep(0.05)
            sent = commands_since(sim, mark)
            expect(not failed and seen == want and any(LIGHT in l for l in sent),
                   f"{name} http: lean control {action} reaches the simulator (its command and state)",
                   json.dumps([failed, seen, sent]))

    # 4. stdio --profile lean lists the same tools.
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async with AsyncExitStack() as st:
        errlog = st.enter_context(tempfile.NamedTemporaryFile("w+", suffix=".log"))
        params = StdioServerParameters(command=BIN, args=["stdio", "--demo", "--profile", "lean"], env=dict(os.environ))
        c = await connect(st, stdio_client(params, errlog=errlog))
        with anyio.fail_after(WAIT):
            names = [t.name for t in (await c.list_tools()).tools]
        expect(names == lean_names, f"{name} stdio --profile lean: the same lean tools", json.dumps(names))


try:
    anyio.run(main)
except BaseException as e:  # noqa: BLE001 - report anything, incl. ExceptionGroup / timeouts
    if isinstance(e, KeyboardInterrupt):
        raise
    expect(False, "lean: ran to the end", describe(e))
finally:
    SERVE.terminate()
    try:
        SERVE.wait(timeout=WAIT)
    except subprocess.TimeoutExpired:
        SERVE.kill()
finish()
