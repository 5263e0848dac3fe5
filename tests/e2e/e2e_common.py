"""What the Python e2e scripts (tests/e2e/*.py) share: the tally of checks and its verdict, the
simulated Miniserver's HTTP API, and running a scenario over both transports. A script imports
it by name (`import e2e_common`): Python puts the script's own folder first on its path, so
each script stays runnable as `python tests/e2e/NAME.py ...`.
"""

import base64
import json
import socket
import sys
import urllib.request

WAIT = 20  # seconds, every wait for the server or the simulator
counts = {"passed": 0, "failed": 0}
failures = []  # the `what` of each failed check, in order


def expect(cond, what, seen=""):
    """One check: prints `ok   WHAT` or `FAIL WHAT` (with what was seen, when given) and counts it."""
    counts["passed" if cond else "failed"] += 1
    if not cond:
        failures.append(what)
    print(f"{'ok  ' if cond else 'FAIL'} {what}" + ("" if cond or not seen else f"\n    seen: {seen}"))


def finish():
    """Prints the verdict, "N passed, M failed" (the last line, which tests/e2e/python-sdk.sh
    reports), and exits 1 when a check failed."""
    print(f"\n{counts['passed']} passed, {counts['failed']} failed")
    sys.exit(1 if counts["failed"] else 0)


def describe(e):
    """An exception as text, with the leaves of an ExceptionGroup."""
    subs = getattr(e, "exceptions", None)
    if subs:
        return "; ".join(describe(x) for x in subs)
    return f"{type(e).__name__}: {e}"


def free_port():
    """A loopback port nothing listens on now."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ------------------------------------------------------------------ the simulator's HTTP API
AUTH = "Basic " + base64.b64encode(b"demo:demo").decode()


def sim_get(base, path):
    """GET `path` at the simulated Miniserver `base` (http://host:port, user and password demo);
    its JSON answer."""
    req = urllib.request.Request(base + path, headers={"Authorization": AUTH})
    with urllib.request.urlopen(req, timeout=WAIT) as r:
        return json.loads(r.read())


async def on_both_transports(run, label, budget):
    """Awaits `run("http")` then `run("stdio")`, each within `budget` seconds; a failure or a
    timeout of either counts as the failed check `LABEL TRANSPORT: ran to the end`. Then
    [`finish`]."""
    import warnings

    import anyio

    warnings.filterwarnings("ignore", message=".*removed as of 2026-07-28.*")
    for transport in ("http", "stdio"):
        try:
            with anyio.fail_after(budget):
                await run(transport)
        except BaseException as e:  # noqa: BLE001 - report anything, incl. ExceptionGroup / timeouts
            if isinstance(e, KeyboardInterrupt):
                raise
            expect(False, f"{label} {transport}: ran to the end", describe(e))
    finish()
