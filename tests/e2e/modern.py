"""The official Python MCP SDK 2.x in its modern mode: `Client(mode="2026-07-28")` (a pinned
2026-07-28 connection: the SDK adopts the version without `initialize`, sends `_meta` on every
request, no session) against home-mcp over Streamable HTTP (a running `serve --demo`) and stdio
(`stdio --demo`, spawned here). Per transport: tools, resources and prompts listed, a prompt
and a resource read; a tool call whose effect is read at the simulator (its HTTP API, as the
Loxone app would) and over MCP; `subscriptions/listen` on home://lighting receiving
`notifications/resources/updated` after a wall button switches a light at the simulator; and
a confirmation (arm_alarm, the elicitation callback accepting; disarm_alarm declined, then
accepted): a 2026-07-28 client is asked through an `input_required` result (the SDK's driver
calls the elicitation callback and retries with the answer and the sealed `requestState`).
The alarm tools take no password: the demo's configured visualisation password is used.

usage: python modern.py BIN MCP_URL SIM_URL   (a python with mcp 2.x, e.g. the venv
tests/e2e/python-sdk.sh prepares; SIM_URL: the simulator `serve --demo` names in its log).
Prints "N passed, M failed"; exits 1 on a failure. Every wait is bounded.
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
MODERN = "2026-07-28"
LIGHTING = "home://lighting"


def brief(v):
    return json.dumps(v, ensure_ascii=False, default=str)[:300]


# ------------------------------------------------------------------ the simulator's HTTP API
def control(base, name, room):
    """The uuid of the control `name` in `room`, from the structure file the simulator serves."""
    s = sim_get(base, "/data/LoxAPP3.json")
    found = [u for u, c in s["controls"].items()
             if c["name"] == name and s["rooms"].get(c.get("room"), {}).get("name") == room]
    assert len(found) == 1, f"{len(found)} controls named {name} in {room}"
    return found[0]


def sim_state(base, uuid, name):
    ll = sim_get(base, f"/jdev/sps/io/{uuid}/all")["LL"]
    for k, v in ll.items():
        if k.startswith("output") and v.get("name") == name:
            return float(v["value"])
    raise AssertionError(f"{uuid} has no state {name}: {ll}")


def sim_command(base, uuid, cmd):
    ll = sim_get(base, f"/jdev/sps/io/{uuid}/{cmd}")["LL"]
    assert str(ll.get("Code", ll.get("code"))) == "200", f"{uuid}/{cmd}: {ll}"


def envelope(result):
    text = next((c.text for c in result.content if getattr(c, "text", None)), "")
    try:
        return json.loads(text)
    except ValueError:
        return {"raw": text}


# ------------------------------------------------------------------ one transport
async def run(transport):
    from mcp import types
    from mcp.client.client import Client

    name = f"python-sdk modern {transport}"
    ask = {"answer": "accept", "asked": [], "during": []}
    where = {}

    async def elicit(_context, params):
        ask["asked"].append(params.message)
        ask["during"].append(sim_state(where["sim"], where["alarm"], "armed"))
        if ask["answer"] == "accept":
            return types.ElicitResult(action="accept", content={"confirm": True})
        return types.ElicitResult(action=ask["answer"])

    async with AsyncExitStack() as st:
        if transport == "http":
            from mcp.client.streamable_http import streamable_http_client

            t = streamable_http_client(URL)
            where["sim"] = SIM
        else:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            log = st.enter_context(tempfile.NamedTemporaryFile("w+", suffix=".log"))
            params = StdioServerParameters(command=BIN, args=["stdio", "--demo"],
                                           env=dict(os.environ, HOME_VISU_PASS="1234"))
            t = stdio_client(params, errlog=log)
        # Bounded by main's deadline (a cancel scope here would end before the client's tasks).
        c = await st.enter_async_context(Client(t, mode=MODERN, elicitation_callback=elicit, read_timeout_seconds=WAIT))
        if transport == "stdio":
            with anyio.fail_after(WAIT):
                while "sim" not in where:
                    m = re.search(r"demo: simulated Miniserver at (http://[0-9.:]+)", open(log.name).read())
                    if m:
                        where["sim"] = m.group(1)
                    else:
                        await anyio.sleep(0.05)
        sim = where["sim"]
        expect(c.protocol_version == MODERN, f"{name}: connected at {c.protocol_version}")

        with anyio.fail_after(WAIT):
            tools = [t.name for t in (await c.list_tools()).tools]
            resources = [str(r.uri) for r in (await c.list_resources()).resources]
            prompts = [p.name for p in (await c.list_prompts()).prompts]
            prompt = await c.get_prompt("house_status_report")
        expect({"control_device", "arm_alarm", "disarm_alarm"} <= set(tools),
               f"{name}: tools/list ({len(tools)} tools)", brief(tools))
        expect(LIGHTING in resources, f"{name}: resources/list ({len(resources)} resources)", brief(resources))
        expect("house_status_report" in prompts, f"{name}: prompts/list ({len(prompts)} prompts)", brief(prompts))
        expect(len(prompt.messages) > 0, f"{name}: prompts/get house_status_report")

        light = control(sim, "Deckenlicht", "Küche")
        where["alarm"] = alarm = control(sim, "Alarmanlage", "Zentral")

        async def light_on():
            with anyio.fail_after(WAIT):
                r = await c.read_resource(LIGHTING, cache_mode="bypass")
            lights = json.loads(r.contents[0].text)["lights"]
            return next((x["on"] for x in lights if x["uuid"] == light), None)

        # A tool call whose effect the simulator shows.
        want = sim_state(sim, light, "active") != 1
        with anyio.fail_after(WAIT):
            r = await c.call_tool("control_device", {"device": "Deckenlicht Küche", "action": "on" if want else "off"})
        env = envelope(r)
        expect(not r.is_error and env.get("status") == "success", f"{name}: tools/call control_device", brief(env))
        expect((sim_state(sim, light, "active") == 1) == want, f"{name}: the simulator shows the kitchen light {'on' if want else 'off'}")
        expect(await light_on() is want, f"{name}: resources/read {LIGHTING} agrees")

        # subscriptions/listen, then a wall button at the simulator.
        with anyio.fail_after(WAIT):
            async with c.listen(resource_subscriptions=[LIGHTING]) as sub:
                honored = list(sub.honored.resource_subscriptions or [])
                expect(LIGHTING in honored, f"{name}: subscriptions/listen acknowledged {LIGHTING}", brief(honored))
                sim_command(sim, light, "off" if want else "on")
                # An update still in flight from the tool call may come first: wait for an
                # update after which the resource shows what the simulator has.
                seen, shown = [], None
                async for event in sub:
                    seen.append(getattr(event, "uri", type(event).__name__))
                    if getattr(event, "uri", None) == LIGHTING:
                        shown = await light_on()
                        if shown is (not want):
                            break
        expect(LIGHTING in seen, f"{name}: notifications/resources/updated {LIGHTING} after a wall button", brief(seen))
        expect(shown is (not want), f"{name}: read after the update matches the simulator", f"on={shown}")

        # A confirmation: the server asks through an input_required result, the SDK retries.
        if sim_state(sim, alarm, "armed") != 0:
            expect(False, f"{name}: the alarm starts disarmed at the simulator")
            return
        with anyio.fail_after(WAIT):
            r = await c.call_tool("arm_alarm", {"alarm": alarm, "delayed": False})
        env = envelope(r)
        armed = sim_state(sim, alarm, "armed") == 1
        expect(len(ask["asked"]) == 1 and ask["asked"][0].startswith("Arm at once the alarm Alarmanlage"),
               f"{name}: arm_alarm asks the user once, naming the alarm",
               f"asked={brief(ask['asked'])} answer={brief(env)}")
        expect(ask["during"][:1] == [0.0], f"{name}: nothing armed at the simulator while the question is open",
               brief(ask["during"]))
        expect(armed and env.get("status") == "success", f"{name}: accepted, the simulator shows the alarm armed")
        if not armed:
            return
        ask["answer"], ask["asked"] = "decline", []
        with anyio.fail_after(WAIT):
            d = envelope(await c.call_tool("disarm_alarm", {"alarm": alarm, "confirm": True}))
        expect(len(ask["asked"]) == 1 and (d.get("data") or {}).get("cancelled") is True
               and sim_state(sim, alarm, "armed") == 1,
               f"{name}: declined disarm_alarm sends nothing", brief(d))
        ask["answer"] = "accept"
        with anyio.fail_after(WAIT):
            a = envelope(await c.call_tool("disarm_alarm", {"alarm": alarm}))
        expect(sim_state(sim, alarm, "armed") == 0 and a.get("status") == "success",
               f"{name}: accepted disarm_alarm, the simulator shows it disarmed", brief(a))


anyio.run(on_both_transports, run, "python-sdk modern", 10 * WAIT)
