"""A short home-owner session through the official Python MCP SDK over stdio, printed as a
transcript and checked step by step: the home summary, a room action, a dry run of a
house-wide action, and a secured arm and disarm, each confirmed by the user through the
client's elicitation callback (declined: nothing happens; a PIN passed as an argument is
refused without echoing it; the PIN configured on the server (HOME_VISU_PASS) is used).

usage: python session.py path/to/home-mcp   (run with a python that has the `mcp` package,
e.g. the venv tests/e2e/python-sdk.sh prepares). Exits 1 when a step does not behave.
"""

import json
import sys
from contextlib import AsyncExitStack

import anyio

BIN = sys.argv[1]
failures = []


def is_error(result):
    """`isError` in mcp 1.x, `is_error` in 2.x."""
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


def show(step, args, result):
    """Prints one exchange: the call and the essential part of its envelope."""
    text = result.content[0].text if result.content else ""
    env = json.loads(text) if text.startswith("{") else {"raw": text}
    print(f"\n>>> {step} {json.dumps(args, ensure_ascii=False)}")
    body = env.get("data") if env.get("status") == "success" else env.get("error")
    out = json.dumps(body, ensure_ascii=False)
    print(f"<<< isError={is_error(result)} {out[:700]}{' ...' if len(out) > 700 else ''}")
    return env


def expect(cond, what):
    if not cond:
        failures.append(what)
        print(f"!!! FAILED: {what}")


# What the user answers the server's next question (elicitation/create).
answer = {"action": "accept"}


async def elicit(_context, params):
    from mcp import types

    print(f"??? the server asks the user: {params.message} -> {answer['action']}")
    if answer["action"] == "accept":
        return types.ElicitResult(action="accept", content={"confirm": True})
    return types.ElicitResult(action=answer["action"])


async def main():
    from mcp.client.stdio import StdioServerParameters, stdio_client

    import os

    params = StdioServerParameters(command=BIN, args=["stdio", "--demo"],
                                   env=dict(os.environ, HOME_VISU_PASS="1234"))
    async with AsyncExitStack() as st:
        try:
            from mcp.client.client import Client

            session = await st.enter_async_context(
                Client(stdio_client(params), mode="legacy", elicitation_callback=elicit))
            call = session.call_tool
        except ImportError:
            from mcp import ClientSession

            r, w = await st.enter_async_context(stdio_client(params))
            session = await st.enter_async_context(
                ClientSession(r, w, elicitation_callback=elicit))
            await session.initialize()
            call = session.call_tool

        tools = await session.list_tools()
        names = [t.name for t in tools.tools]
        print(f"tools/list: {len(names)} tools")

        args = {}
        env = show("get_home_summary", args, await call("get_home_summary", args))
        expect(env.get("status") == "success", "summary succeeds")

        args = {"room": "Küche", "action": "on"}
        env = show("control_room_lights", args, await call("control_room_lights", args))
        expect(env.get("status") == "success" and env["data"]["summary"]["failed"] == 0,
               "kitchen lights on")

        args = {"action": "down", "dry_run": True}
        env = show("control_all_rolladen", args, await call("control_all_rolladen", args))
        results = env.get("data", {}).get("results", [])
        expect(results and all(r["status"] == "planned" and r["commands"] for r in results),
               "dry run lists commands and sends nothing")

        args = {}
        env = show("arm_alarm", args, await call("arm_alarm", args))
        expect(env.get("status") == "success", "arm with the configured visualisation password")

        # The user declines: nothing is disarmed, whatever the model passed.
        answer["action"] = "decline"
        args = {"confirm": True}
        env = show("disarm_alarm", args, await call("disarm_alarm", args))
        data = env.get("data", {})
        expect(env.get("status") == "success" and data.get("dry_run") is True
               and data.get("cancelled"), "a declined disarm does nothing and says why")

        answer["action"] = "accept"
        args = {"code": "0000", "confirm": True}
        try:
            result = await call("disarm_alarm", args)
            env = show("disarm_alarm", args, result)
            refused = is_error(result) and "0000" not in json.dumps(env)
        except Exception as e:  # a JSON-RPC -32602 at protocol versions before 2025-11-25
            print(f"<<< refused: {e}")
            refused = "0000" not in str(e)
        expect(refused, "a PIN passed as an argument is refused without echoing it")

        args = {"confirm": True}
        env = show("disarm_alarm", args, await call("disarm_alarm", args))
        expect(env.get("status") == "success", "disarm with the right PIN")

        args = {}
        env = show("get_security_status", args, await call("get_security_status", args))
        expect(env.get("status") == "success" and not env["data"].get("any_armed"),
               "security status shows nothing armed")

    print(f"\n{8 - len(failures)} passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)


anyio.run(main)
