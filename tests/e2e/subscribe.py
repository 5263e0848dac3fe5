"""A resource subscription through the official Python MCP SDK in the legacy era (mcp 2.x
`Client(mode="legacy")` or mcp 1.x `ClientSession`), over Streamable HTTP (a running
`serve --demo`) and stdio (`stdio --demo`, spawned here): `resources/subscribe` on
home://lighting, then a wall button switches the kitchen light at the simulator (its HTTP API,
as the Loxone app would), `notifications/resources/updated` arrives through the SDK's
message handler, and reading the resource again shows the light as the simulator has it.
(mcp 2.x in the 2026-07-28 era subscribes with `subscriptions/listen`: tests/e2e/modern.py.)

usage: python subscribe.py BIN MCP_URL SIM_URL   (a python with the `mcp` package, 2.x or 1.x,
e.g. the venvs tests/e2e/python-sdk.sh prepares; SIM_URL: the simulator `serve --demo` names
in its log). Prints "N passed, M failed"; exits 1 on a failure. Every wait is bounded.
"""

import json
import os
import re
import sys
import tempfile
from contextlib import AsyncExitStack

import anyio

from e2e_common import WAIT, expect, on_both_transports, sim_get

BIN, URL, SIM = sys.argv[1:4]
LIGHTING = "home://lighting"


def kitchen_light(base):
    """The uuid of Deckenlicht in Küche, from the structure file the simulator serves."""
    s = sim_get(base, "/data/LoxAPP3.json")
    found = [u for u, c in s["controls"].items()
             if c["name"] == "Deckenlicht" and s["rooms"].get(c.get("room"), {}).get("name") == "Küche"]
    assert len(found) == 1, found
    return found[0]


def sim_active(base, uuid):
    ll = sim_get(base, f"/jdev/sps/io/{uuid}/all")["LL"]
    return next(float(v["value"]) for k, v in ll.items()
                if k.startswith("output") and v.get("name") == "active") == 1


async def run(transport):
    from importlib.metadata import version

    name = f"python-sdk {version('mcp')} legacy {transport}"
    updates = []
    arrived = anyio.Event()
    box = {"arrived": arrived}

    async def on_message(message):
        note = getattr(message, "root", message)
        if getattr(note, "method", None) == "notifications/resources/updated":
            updates.append(str(note.params.uri))
            box["arrived"].set()

    async with AsyncExitStack() as st:
        sim = SIM
        log = None
        if transport == "http":
            from mcp.client.streamable_http import streamable_http_client

            t = streamable_http_client(URL)
        else:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            log = st.enter_context(tempfile.NamedTemporaryFile("w+", suffix=".log"))
            t = stdio_client(StdioServerParameters(command=BIN, args=["stdio", "--demo"],
                                                   env=dict(os.environ)), errlog=log)
        try:
            from mcp.client.client import Client

            v2 = True
        except ImportError:  # mcp 1.x
            v2 = False
            from mcp import ClientSession

            streams = await st.enter_async_context(t)  # HTTP adds a session-id getter
            c = await st.enter_async_context(ClientSession(streams[0], streams[1], message_handler=on_message))
            await c.initialize()
        else:
            c = await st.enter_async_context(Client(t, mode="legacy", message_handler=on_message))
        if log is not None:
            with anyio.fail_after(WAIT):
                while not (m := re.search(r"demo: simulated Miniserver at (http://[0-9.:]+)", open(log.name).read())):
                    await anyio.sleep(0.05)
            sim = m.group(1)
        light = kitchen_light(sim)

        async def light_on():
            with anyio.fail_after(WAIT):
                # mcp 2.x caches reads by the server's ttlMs: bypass it; 1.x has no cache.
                r = await (c.read_resource(LIGHTING, cache_mode="bypass") if v2 else c.read_resource(LIGHTING))
            lights = json.loads(r.contents[0].text)["lights"]
            return next((x["on"] for x in lights if x["uuid"] == light), None)

        with anyio.fail_after(WAIT):
            await c.subscribe_resource(LIGHTING)
        want = not sim_active(sim, light)
        updates.clear()
        sim_get(sim, f"/jdev/sps/io/{light}/{'on' if want else 'off'}")
        expect(sim_active(sim, light) is want, f"{name}: the simulator switched the kitchen light {'on' if want else 'off'}")
        # Wait (bounded) for an update after which the resource shows what the simulator has;
        # one still in flight from an earlier change may come first.
        shown = None
        with anyio.move_on_after(WAIT):
            while True:
                await box["arrived"].wait()
                box["arrived"] = anyio.Event()
                shown = await light_on()
                if shown is want:
                    break
        expect(LIGHTING in updates, f"{name}: notifications/resources/updated {LIGHTING} after a wall button",
               json.dumps(updates))
        expect(shown is want, f"{name}: read after the update matches the simulator", f"on={shown}")
        with anyio.fail_after(WAIT):
            await c.unsubscribe_resource(LIGHTING)


anyio.run(on_both_transports, run, "python-sdk legacy", 6 * WAIT)
