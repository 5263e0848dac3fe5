"""Drives loxws (PyPI), the client of the "Loxone" Home Assistant integration by the same
author, against a running Miniserver: the simulator in CI (tests/thirdparty/run.sh), or a real
one.

    python loxws_check.py HOST:PORT USER PASSWORD

It uses the parts of the protocol the other drivers do not: a 16-byte (AES-128) session key in
the key exchange, every command inside jdev/sys/fenc (answers encrypted as a whole, matched by
the control inside them) with salts rotated by nextSalt, zero padding after a NUL.
Steps, each checked:
 1. getPublicKey over HTTP, keyexchange, getkey2 and getjwt (fenc): the library's
    wait_until_ready returns;
 2. data/LoxAPP3.json over the socket: pick the first Switch that is not secured, as the
    library's own Switch object;
 3. enablebinstatusupdate (fenc): the initial value table sets the switch's "active" state;
 4. read the switch through the dev/ (XML) flavour, sent with the library's send_command:
    code 200 and the value the events gave;
 5. switch it on, off and on with send_command (off first when it is on): each answer code
    200 for that command, each followed by a value event the library applies to its Switch
    object.
Exits 0 when all pass; otherwise prints what failed and exits 1. Never runs longer than
DEADLINE_S.

Library quirks worked around here: it hands answers to no caller (it parses them for its own
login only) and drops what is not JSON, so the driver reads the answers it decrypts by wrapping
its decrypt_message; value events reach only its device objects, so the driver records the
calls of LoxSwitch.set_value; its keep-alive task runs until shutdown, which the driver calls.
Its own bug: a value event for a UUID it has no device for makes it read the structure file's
`caller`, `autopilot` and `messageCenter` sections, which are optional ("when configured"; the
demo house has none of them): the KeyError drops the rest of that event table, so the driver
gives the parsed structure empty ones before the library reads it.
"""

import asyncio
import json
import re
import sys

DEADLINE_S = 60
EVENT_WAIT_S = 5


class Failure(Exception):
    """A check failed; the message says which and why."""


def step(what):
    print(f"loxws: {what}", flush=True)


class Check:
    def __init__(self, host, user, password):
        self.host, port = host.rsplit(":", 1)
        self.port = int(port)
        self.user = user
        self.password = password
        self.values = []  # (device id, state name, value) as the library applied them
        self.answers = []  # answer texts the library decrypted
        self.changed = asyncio.Event()

    async def wait_for(self, pred, what):
        async def until():
            while True:
                hit = pred()
                if hit is not None:
                    return hit
                self.changed.clear()
                await self.changed.wait()

        try:
            return await asyncio.wait_for(until(), EVENT_WAIT_S)
        except asyncio.TimeoutError:
            raise Failure(f"{what}: nothing within {EVENT_WAIT_S} s") from None

    def hook(self, ms):
        """Records the library's value updates and the answers it decrypts; works around its
        missing-section bug (see the module docs)."""
        from loxws import configdata, loxswitch

        original_init = configdata.ConfigData.__init__

        def init(config, rawdata):
            if isinstance(rawdata, dict):
                for section in ("caller", "autopilot", "messageCenter"):
                    rawdata.setdefault(section, {})
            original_init(config, rawdata)

        configdata.ConfigData.__init__ = init

        original_set = loxswitch.LoxSwitch.set_value
        check = self

        def set_value(device, state_name, value):
            check.values.append((device.id, state_name, value))
            check.changed.set()
            return original_set(device, state_name, value)

        loxswitch.LoxSwitch.set_value = set_value
        original_decrypt = ms.decrypt_message

        def decrypt_message(message):
            text = original_decrypt(message)
            if text is not None:
                self.answers.append(text)
                self.changed.set()
            return text

        ms.decrypt_message = decrypt_message

    def last_value(self, uuid, mark=0):
        for dev, name, value in reversed(self.values[mark:]):
            if dev == uuid and name == "active":
                return value
        return None

    async def run(self):
        from loxws.miniserver import Miniserver

        ms = Miniserver(host=self.host, port=self.port, username=self.user,
                        password=self.password, use_tls=False)
        self.hook(ms)
        loop = asyncio.get_running_loop()
        ms.connect(loop, lambda connected: None)
        try:
            await self.checks(ms)
        finally:
            ms.shutdown()
            await asyncio.sleep(0.1)

    def answer(self, mark, control):
        for text in self.answers[mark:]:
            if text.startswith("<?xml"):
                if f'control="{control}"' in text:
                    return text
                continue
            try:
                ll = json.loads(text).get("LL", {})
            except ValueError:
                continue
            if ll.get("control") == control:
                return ll
        return None

    async def checks(self, ms):
        try:
            await ms.wait_until_ready(timeout=30)
        except Exception as e:
            raise Failure(f"login: {type(e).__name__}: {e}") from None
        if not ms._token:  # the library keeps no public accessor for its token
            raise Failure("ready but no token was acquired")
        step(f"logged in (AES-{len(ms._aes_key_hex) * 4} session key, fenc): token acquired")

        config = ms.config_data
        found = [(u, c) for u, c in config.data.get("controls", {}).items()
                 if c.get("type") == "Switch" and not c.get("isSecured")
                 and (c.get("states") or {}).get("active") and u in config.switches]
        if not found:
            raise Failure("structure file: no unsecured Switch the library knows")
        uuid, sw = found[0]
        device = config.switches[uuid]
        step(f"structure file over the socket: {len(config.data['controls'])} controls; "
             f"using Switch \"{sw['name']}\" ({uuid})")

        current = await self.wait_for(lambda: self.last_value(uuid),
                                      f"initial value of {sw['name']}")
        step(f"initial tables: {sw['name']} active = {current:g}, library state {device.state}")

        mark = len(self.answers)
        control = f"dev/sps/io/{uuid}/state"
        ms.send_command(control)
        xml = await self.wait_for(lambda: self.answer(mark, control), "XML answer to the dev/ read")
        code = re.search(r'\bCode="(\d+)"', xml)
        value = re.search(r'\bvalue="([^"]*)"', xml)
        if not code or code.group(1) != "200" or not value or float(value.group(1)) != current:
            raise Failure(f"dev/ read: {xml} (expected value {current:g})")
        step(f"dev/ read (fenc): {xml.splitlines()[-1]}")

        # On, off, on (off first when it is on, so every command changes something).
        words = ["on", "off", "on"]
        if current == 1.0:
            words.insert(0, "off")
        for word in words:
            want = 1.0 if word == "on" else 0.0
            mark, vmark = len(self.answers), len(self.values)
            control = f"jdev/sps/io/{uuid}/{word}"
            ms.send_command(control)
            ll = await self.wait_for(lambda: self.answer(mark, control), f"answer to {word}")
            code = str(ll.get("Code", ll.get("code")))
            if code != "200":
                raise Failure(f"{word}: code {code} in {ll}")
            await self.wait_for(lambda: True if self.last_value(uuid, vmark) == want else None,
                                f"value event active = {want:g}")
            if device.state != (want == 1.0):
                raise Failure(f"{word}: the library's Switch state is {device.state}")
            step(f"fenc {word}: code 200, event active = {want:g}, library state {device.state}")


def main():
    if len(sys.argv) != 4:
        print("usage: python loxws_check.py HOST:PORT USER PASSWORD", file=sys.stderr)
        return 2

    async def bounded():
        await asyncio.wait_for(Check(*sys.argv[1:]).run(), DEADLINE_S)

    try:
        asyncio.run(bounded())
    except Failure as e:
        print(f"loxws: FAIL: {e}", file=sys.stderr, flush=True)
        return 1
    except asyncio.TimeoutError:
        print(f"loxws: FAIL: no verdict within {DEADLINE_S} s", file=sys.stderr, flush=True)
        return 1
    print("loxws: PASS", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
