"""Drives loxwebsocket (PyPI), the WebSocket client adapted from PyLoxone (the Home Assistant
integration), against a running Miniserver: the simulator in CI (tests/thirdparty/run.sh), or a
real one.

    python loxwebsocket_check.py HOST:PORT USER PASSWORD

Steps, each checked:
 1. connect: getPublicKey over HTTP, keyexchange, then getkey2, getjwt and
    enablebinstatusupdate, all sent encrypted ("jdev/sys/enc/..."); a token must result;
 2. download data/LoxAPP3.json over HTTP (Basic auth with UTF-8 credentials, as PyLoxone does)
    and pick the first Switch that is not secured;
 3. receive the initial value and text tables, which must hold the switch's "active" state;
 4. read the switch through the dev/ (XML) flavour with the library's request/response helper
    (send_command, encrypted): code 200 and the value the events gave;
 5. switch it on, off and on with encrypted commands (the library's send_websocket_command;
    off first when it is on): each answer must reach the library's text callback with code 200
    and a control the library decrypted back to the command sent, and a value event with the
    commanded value must follow;
 6. read the switch with send_command (jdev/) and check the answer's code and value;
 7. stop, then connect again with the token from step 1 (getkey + authwithtoken instead of
    getkey2 + getjwt).
Exits 0 when all pass; otherwise prints what failed and exits 1. Never runs longer than
DEADLINE_S.
"""

import asyncio
import base64
import json
import re
import sys

DEADLINE_S = 60
EVENT_WAIT_S = 5


class Failure(Exception):
    """A check failed; the message says which and why."""


def step(what):
    print(f"loxwebsocket: {what}", flush=True)


def as_str(key):
    return key.decode() if isinstance(key, bytes) else str(key)


def code_of(ll):
    return str(ll.get("Code", ll.get("code")))


async def shutdown(ws):
    """Stops `ws` for good: its listener would otherwise take the closed socket for a lost
    connection and start reconnecting (and forget the token)."""
    tasks = list(ws.background_tasks)
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await ws.stop()


class Check:
    def __init__(self, host, user, password):
        self.url = f"http://{host}"
        self.user = user
        self.password = password
        self.values = {}  # state UUID -> float, from value tables (type 2)
        self.texts = {}  # state UUID -> bytes, from text tables (type 3)
        self.answers = []  # (uuid, LL) the library handed to its text callback (type 0)
        self.changed = asyncio.Event()

    async def on_tables(self, data, message_type):
        target = self.values if message_type == 2 else self.texts
        for k, v in data.items():
            target[as_str(k)] = v
        self.changed.set()

    async def on_text(self, data, message_type):
        if isinstance(data, dict):
            for k, ll in data.items():
                if isinstance(ll, dict):
                    self.answers.append((as_str(k), ll))
        self.changed.set()

    async def wait_for(self, pred, what):
        async def until():
            while not pred():
                self.changed.clear()
                await self.changed.wait()

        try:
            await asyncio.wait_for(until(), EVENT_WAIT_S)
        except asyncio.TimeoutError:
            raise Failure(f"{what}: nothing within {EVENT_WAIT_S} s") from None

    async def structure(self):
        import aiohttp

        basic = base64.b64encode(f"{self.user}:{self.password}".encode("utf-8")).decode("ascii")
        async with aiohttp.ClientSession(headers={"Authorization": f"Basic {basic}"}) as http:
            async with http.get(f"{self.url}/data/LoxAPP3.json") as resp:
                if resp.status != 200:
                    raise Failure(f"structure file: HTTP {resp.status}")
                return json.loads(await resp.text())

    async def run(self):
        from loxwebsocket import LoxWs

        ws = LoxWs()
        ws.add_message_callback(self.on_tables, message_types=[2, 3])
        ws.add_message_callback(self.on_text, message_types=[0])
        try:
            token = await self.checks(ws)
        finally:
            await shutdown(ws)
        # Second connection with the token acquired above: the library then sends getkey and
        # authwithtoken instead of getkey2 and getjwt. It has no public way to hand it a token
        # (its own reconnect forgets the token), so it is set the way the library stores it.
        again = LoxWs()
        again._token = token
        try:
            await self.connect(again, "login with the token (authwithtoken)", False)
            if again._token.token != token.token:
                raise Failure("the second login did not use the token")
            step(f"logged in again with the token; valid until {again._token.valid_until}")
        finally:
            await shutdown(again)

    async def connect(self, ws, what, updates):
        try:
            await ws.connect(user=self.user, password=self.password, loxone_url=self.url,
                             receive_updates=updates, max_reconnect_attempts=1)
        except Exception as e:
            raise Failure(f"{what} failed: {type(e).__name__}: {e}") from None
        if ws.state != "CONNECTED":
            raise Failure(f"{what}: state {ws.state}")

    async def checks(self, ws):
        await self.connect(ws, "connect (token acquisition)", True)
        tok = ws._token  # the library keeps no public accessor for its token
        if not tok.token or not tok.valid_until:
            raise Failure("connected but no token was acquired")
        step(f"logged in; token valid until {tok.valid_until} (s since 2009), hash {tok.hash_alg}")

        structure = await self.structure()
        found = [(u, c) for u, c in structure.get("controls", {}).items()
                 if c.get("type") == "Switch" and not c.get("isSecured")
                 and (c.get("states") or {}).get("active")]
        if not found:
            raise Failure("structure file: no unsecured Switch with an active state")
        uuid, sw = found[0]
        active = sw["states"]["active"]
        step(f"structure file: {len(structure['controls'])} controls; "
             f"using Switch \"{sw['name']}\" ({uuid})")

        await self.wait_for(lambda: active in self.values, f"initial value table with {active}")
        step(f"initial tables: {len(self.values)} values, {len(self.texts)} texts; "
             f"{sw['name']} active = {self.values[active]:g}")

        # dev/ (XML) read through the library's request/response helper.
        xml = await ws.send_command(f"dev/sps/io/{uuid}/state")
        xml = xml.decode() if isinstance(xml, bytes) else str(xml)
        code = re.search(r'\bCode="(\d+)"', xml)
        value = re.search(r'\bvalue="([^"]*)"', xml)
        if (not xml.startswith("<?xml") or not code or code.group(1) != "200" or not value
                or float(value.group(1)) != self.values[active]):
            raise Failure(f"dev/ read: {xml!r} (expected value {self.values[active]:g})")
        step(f"dev/ read: {xml.splitlines()[-1]}")

        # On, off, on (off first when it is on, so every command changes something).
        words = ["on", "off", "on"]
        if self.values[active] == 1.0:
            words.insert(0, "off")
        for word in words:
            want = 1.0 if word == "on" else 0.0
            before = len(self.answers)
            await ws.send_websocket_command(uuid, word)
            await self.wait_for(lambda: len(self.answers) > before, f"answer to encrypted {word}")
            key, ll = self.answers[before]
            if code_of(ll) != "200":
                raise Failure(f"encrypted {word}: code {code_of(ll)} in {ll}")
            control = ll.get("control", "")
            if key != uuid or not control.endswith(f"/jdev/sps/io/{uuid}/{word}"):
                raise Failure(f"encrypted {word}: the decrypted control {control!r} "
                              "is not the command sent")
            await self.wait_for(lambda: self.values.get(active) == want,
                                f"value event {active} = {want:g}")
            step(f"encrypted command {word}: code 200, control decrypted to {control!r}, "
                 f"event active = {want:g}")

        raw = await ws.send_command(f"jdev/sps/io/{uuid}/state")
        ll = json.loads(raw)["LL"]
        if code_of(ll) != "200" or float(ll.get("value")) != self.values[active]:
            raise Failure(f"read via send_command: {ll} (expected value {self.values[active]:g})")
        step(f"send_command read: code 200, value {ll['value']!r}")
        return tok


def main():
    if len(sys.argv) != 4:
        print("usage: python loxwebsocket_check.py HOST:PORT USER PASSWORD", file=sys.stderr)
        return 2
    try:
        asyncio.run(asyncio.wait_for(Check(*sys.argv[1:]).run(), DEADLINE_S))
    except Failure as e:
        print(f"loxwebsocket: FAIL: {e}", file=sys.stderr, flush=True)
        return 1
    except asyncio.TimeoutError:
        print(f"loxwebsocket: FAIL: no verdict within {DEADLINE_S} s", file=sys.stderr, flush=True)
        return 1
    print("loxwebsocket: PASS", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
