"""Who is at the door (issue 30) through the official Python MCP SDK (mcp 2.x `Client(mode=
"legacy")` or mcp 1.x `ClientSession`), over Streamable HTTP (a running `serve --demo`) and
stdio (`stdio --demo`, spawned here): subscribed to home://doorbells, a ring at the simulator
(its switch `GET /sim/door/{uuid}/ring`, as a doorbell button would) arrives as
`notifications/resources/updated`, the resource lists the ring, and `get_camera_image` for that
ring answers an `image` block whose decoded pixels show the ring's time (the code strip the
simulator draws, src/sim/frame.rs) at most 640 px on its long side; for the IntercomV2 and the
custom MJPEG camera, the first frame of their streams (frame 0). Pixels are decoded with Pillow.

usage: python door.py BIN MCP_URL SIM_URL   (a python with `mcp` and `Pillow`, e.g. the venvs
tests/e2e/python-sdk.sh prepares). Prints "N passed, M failed"; exits 1 on a failure. Every
wait is bounded.
"""

import base64
import io
import json
import os
import re
import sys
import tempfile
from contextlib import AsyncExitStack

import anyio

from e2e_common import WAIT, expect, on_both_transports, sim_get

BIN, URL, SIM = sys.argv[1:4]
DOORBELLS = "home://doorbells"


def intercom_named(base, name):
    """The uuid of the intercom called `name` (the demo house also has a door contact of that name)."""
    s = sim_get(base, "/data/LoxAPP3.json")
    found = [u for u, c in s["controls"].items() if c["name"] == name and c["type"].startswith("Intercom")]
    assert len(found) == 1, found
    return found[0]


def shown(jpeg):
    """(stamp, camera, frame, width, height) read from the code strip: 72 cells across the
    width in the band 80-96 % of the height (src/sim/frame.rs), sampled at their centres."""
    from PIL import Image

    img = Image.open(io.BytesIO(jpeg)).convert("L")
    w, h = img.size
    y = int((0.80 + 0.96) / 2 * h)
    bits = [1 if img.getpixel((int((i + 0.5) * w / 72), y)) > 127 else 0 for i in range(72)]
    if bits[:4] != [1, 0, 1, 0] or bits[68:] != [0, 1, 0, 1]:
        return None, None, None, w, h
    nib = lambda i: int("".join(map(str, bits[4 + 4 * i:8 + 4 * i])), 2)
    return "".join(str(nib(i)) for i in range(14)), nib(14), nib(15), w, h


def image_of(result):
    """The decoded `image` block of a tool result and the envelope's data."""
    blocks = [b for b in result.content if getattr(b, "type", "") == "image"]
    structured = getattr(result, "structuredContent", None) or getattr(result, "structured_content", None)
    data = (structured or {}).get("data", {})
    if len(blocks) != 1:
        return None, data
    return base64.b64decode(blocks[0].data), data


async def run(transport):
    from importlib.metadata import version

    name = f"python-sdk {version('mcp')} door {transport}"
    updates = []
    box = {"arrived": anyio.Event()}

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

            streams = await st.enter_async_context(t)
            c = await st.enter_async_context(ClientSession(streams[0], streams[1], message_handler=on_message))
            await c.initialize()
        else:
            c = await st.enter_async_context(Client(t, mode="legacy", message_handler=on_message))
        if log is not None:
            with anyio.fail_after(WAIT):
                while not (m := re.search(r"demo: simulated Miniserver at (http://[0-9.:]+)", open(log.name).read())):
                    await anyio.sleep(0.05)
            sim = m.group(1)
        door = intercom_named(sim, "Haustür")

        async def doorbells():
            with anyio.fail_after(WAIT):
                r = await (c.read_resource(DOORBELLS, cache_mode="bypass") if v2 else c.read_resource(DOORBELLS))
            return json.loads(r.contents[0].text)["doorbells"]

        async def call(args):
            with anyio.fail_after(WAIT):
                return await c.call_tool("get_camera_image", args)

        with anyio.fail_after(WAIT):
            await c.subscribe_resource(DOORBELLS)
        updates.clear()
        stamp = sim_get(sim, f"/sim/door/{door}/ring")["LL"]["value"]
        listed = []
        with anyio.move_on_after(WAIT):
            while True:
                await box["arrived"].wait()
                box["arrived"] = anyio.Event()
                bells = await doorbells()
                listed = [e["bell_event"] for d in bells if d["uuid"] == door for e in d["events"]]
                if stamp in listed:
                    break
        expect(DOORBELLS in updates, f"{name}: notifications/resources/updated {DOORBELLS} after a ring", json.dumps(updates))
        expect(stamp in listed, f"{name}: {DOORBELLS} lists the ring {stamp}", json.dumps(listed))

        jpeg, data = image_of(await call({"device": "Haustür", "bell_event": stamp}))
        expect(jpeg is not None, f"{name}: get_camera_image answers one image block", json.dumps(data)[:300])
        if jpeg is not None:
            s, _, frame, w, h = shown(jpeg)
            expect(s == stamp and frame == 0, f"{name}: the ring's picture shows its time {stamp}", f"{s} frame {frame}")
            expect(max(w, h) <= 640, f"{name}: at most 640 px on the long side", f"{w}x{h}")
            expect(data.get("bell_event") == stamp and "base64" not in json.dumps(data),
                   f"{name}: structuredContent names the ring, without the bytes")
        for device in ("Gartentür", "Kamera Einfahrt"):
            jpeg, data = image_of(await call({"device": device}))
            s, cam, frame, w, h = shown(jpeg) if jpeg else (None, None, None, 0, 0)
            expect(jpeg is not None and frame == 0 and s is not None and max(w, h) <= 640
                   and data.get("obtained") == "stream_frame",
                   f"{name}: {device}: the first frame of its stream", f"{s} camera {cam} frame {frame} {w}x{h}")
        with anyio.fail_after(WAIT):
            await c.unsubscribe_resource(DOORBELLS)


anyio.run(on_both_transports, run, "python-sdk door", 6 * WAIT)
