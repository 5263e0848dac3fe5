"""Issue 20 through the official Python MCP SDK over stdio: a person, not the model, confirms
the alarm and house-wide actions. Each scenario starts `home-mcp stdio --demo` afresh (the
visualisation password configured through HOME_VISU_PASS, confirmations living 2 s) with an
elicitation callback that accepts, declines, cancels or answers "accept" only after the
confirmation expired (late), or with none (the
client then declares no elicitation). The house's state, read back through the tools, is the
oracle: nothing is armed or switched unless a person accepted.

usage: python human.py path/to/home-mcp   (a python with the `mcp` package, 2.x or 1.x, e.g.
the venvs tests/e2e/python-sdk.sh prepares). Prints "N passed, M failed"; exits 1 on a failure.
"""

import json
import os
import sys
import tempfile
from contextlib import AsyncExitStack

import anyio

from e2e_common import expect, finish

BIN = sys.argv[1]
LIFETIME_SECS = 2  # how long a confirmation lives (and the server waits for an answer)


def envelope(result):
    text = result.content[0].text if result.content else ""
    return json.loads(text) if text.startswith("{") else {"raw": text}


def callback(answer, asked):
    """An elicitation callback answering `answer` (accept, decline, cancel, late: accept after
    three confirmation lifetimes; mcp 1.x handles a server's requests one at a time in its
    receive loop, so a callback that never returned would also hold back the tool's result)."""
    from mcp import types

    async def cb(_context, params):
        asked.append(params.message)
        if answer == "late":
            await anyio.sleep(3 * LIFETIME_SECS)
        if answer in ("accept", "late"):
            return types.ElicitResult(action="accept", content={"confirm": True})
        return types.ElicitResult(action=answer)

    return cb


async def session(answer, asked, st, config):
    """A connected client: mcp 2.x `Client` (legacy era), else mcp 1.x `ClientSession`; both
    declare elicitation only when given a callback."""
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = dict(os.environ, HOME_VISU_PASS="1234")
    params = StdioServerParameters(
        command=BIN, args=["stdio", "--demo", "--config", config], env=env
    )
    kwargs = {}
    if answer is not None:
        kwargs["elicitation_callback"] = callback(answer, asked)
    try:
        from mcp.client.client import Client
    except ImportError:
        from mcp import ClientSession

        r, w = await st.enter_async_context(stdio_client(params))
        c = await st.enter_async_context(ClientSession(r, w, **kwargs))
        await c.initialize()
        return c
    return await st.enter_async_context(Client(stdio_client(params), mode="legacy", **kwargs))


async def armed(c):
    """The burglar alarms that report armed, by name."""
    r = await c.call_tool("get_security_status", {})
    return sorted(a["name"] for a in envelope(r)["data"]["alarms"] if a.get("armed") is True)


async def lights_on(c):
    r = await c.call_tool("list_devices", {"category": "lighting"})
    return sum(1 for d in envelope(r)["data"]["devices"] if (d.get("state") or {}).get("on"))


async def main():
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(f"[server]\nconfirmation_lifetime_secs = {LIFETIME_SECS}\n")
        config = f.name

    # No elicitation capability: refused, even with confirm: true; nothing armed.
    async with AsyncExitStack() as st:
        asked = []
        c = await session(None, asked, st, config)
        before = await armed(c)
        r = await c.call_tool("arm_alarm", {"confirm": True})
        env = envelope(r)
        expect(env.get("error", {}).get("code") == "HUMAN_CONFIRMATION_REQUIRED"
               and "confirm: true" not in json.dumps(env),
               "no elicitation: arm_alarm refused with HUMAN_CONFIRMATION_REQUIRED")
        expect(await armed(c) == before, "no elicitation: nothing armed")
        r = await c.call_tool("control_all_lights", {"action": "on", "confirm": True})
        expect(envelope(r).get("error", {}).get("code") == "HUMAN_CONFIRMATION_REQUIRED",
               "no elicitation: control_all_lights refused")

    # Declined, cancelled, accepted too late: nothing armed.
    for answer in ["decline", "cancel", "late"]:
        async with AsyncExitStack() as st:
            asked = []
            c = await session(answer, asked, st, config)
            before = await armed(c)
            r = await c.call_tool("arm_alarm", {"delayed": False, "confirm": True})
            data = envelope(r).get("data", {})
            expect(data.get("cancelled") is True and len(asked) == 1,
                   f"{answer}: asked once, cancelled")
            expect(await armed(c) == before, f"{answer}: nothing armed")

    # Accepted: armed, the question names the alarm; house-wide lights too.
    async with AsyncExitStack() as st:
        asked = []
        c = await session("accept", asked, st, config)
        before = await armed(c)
        r = await c.call_tool("arm_alarm", {"delayed": False})
        data = envelope(r).get("data", {})
        expect(data.get("confirmed_by") == "user (elicitation)",
               "accept: confirmed by the user")
        expect(asked and asked[0].startswith("Arm at once the alarm Alarm Zentral (Zentral)"),
               f"the question names the alarm, its room and the action: {asked}")
        after = await armed(c)
        expect(after != before and "Alarmanlage" in after, f"accept: armed {before} -> {after}")
        before = await lights_on(c)
        r = await c.call_tool("control_all_lights", {"action": "on"})
        expect(envelope(r).get("status") == "success", "accept: all lights on")
        expect(await lights_on(c) > before, "accept: lights are on")
        # Gates: stdio has no key whose owner allows opening.
        r = await c.call_tool("control_device", {"device": "Garagentor", "action": "on"})
        expect(envelope(r).get("error", {}).get("code") == "INSUFFICIENT_PERMISSIONS",
               "the garage gate is not opened without the owner's permission")

    os.unlink(config)
    finish()


anyio.run(main)
