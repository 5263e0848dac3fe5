"""Drives pyloxone-api (PyPI), the client library the PyLoxone Home Assistant integration
grew from, against a running Miniserver: the simulator in CI (tests/thirdparty/run.sh), or a
real one.

    python pyloxone_check.py HOST:PORT USER PASSWORD

It uses the parts of the protocol the other drivers do not: HTTP Basic auth for
/jdev/cfg/apiKey, /data/LoxAPP3.json and getPublicKey; every command inside jdev/sys/enc with
a NUL terminator and PKCS#7 padding (the padding that once got no answer from the simulator);
jdev/sys/getkey (encrypted) to hash a saved token for authwithtoken.
Steps, each checked:
 1. getJson: apiKey, the structure file and the public key over HTTP with Basic auth; pick the
    first Switch that is not secured;
 2. async_init: keyexchange, getkey2 and getjwt (enc), enablebinstatusupdate (enc);
 3. the initial value table (the library's message callback) holds the switch's "active";
 4. read the switch through the dev/ (XML) flavour over HTTP with Basic auth, as the library
    does its HTTP requests: value = the events';
 5. switch it on, off and on with send_websocket_command (off first when it is on): a value
    event with the commanded value follows each;
 6. connect again: the library loads its saved token and sends getkey + authwithtoken (enc).
Exits 0 when all pass; otherwise prints what failed and exits 1. Never runs longer than
DEADLINE_S.

Library quirks worked around here (pyloxone-api 0.2.4, 2021): it pins websockets < 10, which
passes `loop=` to asyncio and fails on Python 3.10+, so run.sh installs websockets 10.4 in its
own venv; its start() hands bare coroutines to asyncio.wait (a TypeError since Python 3.11), so
the driver runs its listener (_ws_listen) itself; its socket parser reads every text answer as
JSON (an XML answer would end the listener), so the dev/ read goes over HTTP; command answers
reach no caller, so the driver checks the value events.
"""

import asyncio
import re
import sys
import tempfile

DEADLINE_S = 60
EVENT_WAIT_S = 5


class Failure(Exception):
    """A check failed; the message says which and why."""


def step(what):
    print(f"pyloxone-api: {what}", flush=True)


class Check:
    def __init__(self, host, user, password):
        self.host, self.port = host.rsplit(":", 1)
        self.user = user
        self.password = password
        self.values = {}  # state UUID -> value, from the library's callback
        self.events = []  # (uuid, value) in order
        self.changed = asyncio.Event()
        self.token_dir = tempfile.mkdtemp(prefix="pyloxone-check-")

    async def on_message(self, data):
        for uuid, value in data.items():
            if isinstance(value, float):
                self.values[uuid] = value
                self.events.append((uuid, value))
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

    def api(self):
        from pyloxone_api.api import LoxAPI

        # The port as a string: the library compares it with "80".
        api = LoxAPI(host=self.host, port=self.port, user=self.user, password=self.password)
        api.config_dir = self.token_dir
        api.message_call_back = self.on_message
        return api

    async def connect(self, api, what):
        try:
            await api.getJson()
            ok = await api.async_init()
        except Exception as e:
            raise Failure(f"{what}: {type(e).__name__}: {e}") from None
        if ok is not True or api._state != "CONNECTED":
            raise Failure(f"{what}: state {api._state}")
        return asyncio.create_task(api._ws_listen())

    async def run(self):
        api = self.api()
        listener = await self.connect(api, "login (getkey2, getjwt)")
        try:
            await self.checks(api)
        finally:
            await api.stop()
            listener.cancel()
            await asyncio.gather(listener, return_exceptions=True)
        again = self.api()
        listener = await self.connect(again, "login with the saved token (getkey, authwithtoken)")
        try:
            step(f"logged in again with the saved token (valid until {again._token.valid_until})")
        finally:
            await again.stop()
            listener.cancel()
            await asyncio.gather(listener, return_exceptions=True)

    async def checks(self, api):
        step(f"logged in: firmware {api.version}, token valid until {api._token.valid_until}")
        found = [(u, c) for u, c in api.json.get("controls", {}).items()
                 if c.get("type") == "Switch" and not c.get("isSecured")
                 and (c.get("states") or {}).get("active")]
        if not found:
            raise Failure("structure file: no unsecured Switch with an active state")
        uuid, sw = found[0]
        active = sw["states"]["active"]
        step(f"structure file over HTTP (Basic auth): {len(api.json['controls'])} controls; "
             f"using Switch \"{sw['name']}\" ({uuid})")

        await self.wait_for(lambda: active in self.values, f"initial value table with {active}")
        step(f"initial tables: {len(self.values)} values; {sw['name']} active = "
             f"{self.values[active]:g}")

        import httpx

        async with httpx.AsyncClient(auth=(self.user, self.password), timeout=10) as http:
            resp = await http.get(f"http://{self.host}:{self.port}/dev/sps/io/{uuid}/state")
        xml = resp.text
        code = re.search(r'\bCode="(\d+)"', xml)
        value = re.search(r'\bvalue="([^"]*)"', xml)
        if (resp.status_code != 200 or not xml.startswith("<?xml") or not code
                or code.group(1) != "200" or not value
                or float(value.group(1)) != self.values[active]):
            raise Failure(f"dev/ read: HTTP {resp.status_code} {xml!r} "
                          f"(expected value {self.values[active]:g})")
        step(f"dev/ read over HTTP: {xml.splitlines()[-1]}")

        words = ["on", "off", "on"]
        if self.values[active] == 1.0:
            words.insert(0, "off")
        for word in words:
            want = 1.0 if word == "on" else 0.0
            mark = len(self.events)
            await api.send_websocket_command(uuid, word)
            await self.wait_for(
                lambda: any(u == active and v == want for u, v in self.events[mark:]),
                f"value event {active} = {want:g} after {word}")
            step(f"{word}: event active = {want:g}")


def main():
    if len(sys.argv) != 4:
        print("usage: python pyloxone_check.py HOST:PORT USER PASSWORD", file=sys.stderr)
        return 2

    async def bounded():
        await asyncio.wait_for(Check(*sys.argv[1:]).run(), DEADLINE_S)

    try:
        asyncio.run(bounded())
    except Failure as e:
        print(f"pyloxone-api: FAIL: {e}", file=sys.stderr, flush=True)
        return 1
    except asyncio.TimeoutError:
        print(f"pyloxone-api: FAIL: no verdict within {DEADLINE_S} s", file=sys.stderr, flush=True)
        return 1
    print("pyloxone-api: PASS", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
