"""History, statistics and energy (issue 29) through the official Python MCP SDK (mcp 2.x
`Client(mode="legacy")` or mcp 1.x `ClientSession`), over Streamable HTTP (a running
`serve --demo`) and stdio (`stdio --demo`, spawned here), judged against the simulated
Miniserver's own series read over its HTTP API (`dev/sps/getStatistic/...` raw records and
the V1 month files, decoded here with `struct`, local days of Europe/Berlin from `zoneinfo`):
a year of daily energy of the grid meter, a month of hourly temperature, a week of on-time of
the kitchen light, two months of energy compared (get_energy), the 23-hour day, the month
without data, the counter reset, the resource template home://history/{device}{?...} and
home://energy's figures for today and this month, and the errors (unknown device, a range in
the future, from after to, a range too long).

usage: python history.py BIN MCP_URL SIM_URL   (a python with the `mcp` package, 2.x or 1.x,
e.g. the venvs tests/e2e/python-sdk.sh prepares; SIM_URL: the simulator `serve --demo` names
in its log; over stdio the spawned server's own simulator is read). Prints "N passed,
M failed"; exits 1 on a failure. Every wait is bounded.
"""

import json
import os
import re
import struct
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from contextlib import AsyncExitStack
from datetime import date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import anyio

from e2e_common import AUTH, WAIT, expect, on_both_transports, sim_get

BIN, URL, SIM = sys.argv[1:4]
TZ = ZoneInfo("Europe/Berlin")
GRID = "1d5c3c2e-0222-5d52-ffff504f94d0e5a1"
PV = "1d5c3c32-0223-5d6e-ffff504f94d0e5a1"
TEMPERATURE = "1d5c3a8c-0208-51e4-ffff504f94d0e5a1"
LIGHT = "1d5c3a92-0209-520e-ffff504f94d0e5a1"
CELLAR = "1d5c3c26-0222-5d1a-ffff504f94d0e5a1"


# ------------------------------------------------------------------ the simulator's series
def sim_bytes(base, path):
    """GET `path` at the simulator; (status, body bytes)."""
    req = urllib.request.Request(base + path, headers={"Authorization": AUTH})
    try:
        with urllib.request.urlopen(req, timeout=WAIT) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, b""


def raw(base, uuid, group, output, start, end):
    """The V2 raw records of `output` in [start, end] (Unix seconds): [(t, v)]."""
    status, body = sim_bytes(base, f"/dev/sps/getStatistic/{uuid}/raw/{start}/{end}/all/{group}/{output}")
    assert status == 200, status
    return [struct.unpack_from("<Id", body, i) for i in range(0, len(body), 12)]


def midnight(d):
    return int(datetime(d.year, d.month, d.day, tzinfo=TZ).timestamp())


def local_day(t):
    return datetime.fromtimestamp(t, TZ).date()


def days(start, end):
    """Local days [(b0, b1)] from the day containing `start` to the one containing end - 1."""
    out, d = [], local_day(start)
    while midnight(d) < end:
        out.append((midnight(d), midnight(d + timedelta(days=1))))
        d += timedelta(days=1)
    return out


def counted(readings, b0, b1):
    """What a counter counted in (b0, b1]: a reading below the one before is a reset."""
    total, any_ = 0.0, False
    for (_, a), (t, b) in zip(readings, readings[1:]):
        if b0 < t <= b1:
            any_ = True
            total += b if b < a else b - a
    return total if any_ else None


def on_seconds(changes, b0, b1):
    state = None
    for t, v in changes:
        if t <= b0:
            state = v
    at, on = b0, 0.0
    for t, v in changes:
        if b0 < t < b1:
            if state:
                on += t - at
            state, at = v, t
    if state:
        on += b1 - at
    return on


def month_start(d, back):
    n = d.year * 12 + d.month - 1 - back
    return date(n // 12, n % 12 + 1, 1)


# ------------------------------------------------------------------ one transport
async def run(transport):
    from importlib.metadata import version

    name = f"python-sdk {version('mcp')} {transport}"
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

            c = await st.enter_async_context(Client(t, mode="legacy"))
            v2 = True
        except ImportError:  # mcp 1.x
            from mcp import ClientSession

            streams = await st.enter_async_context(t)
            c = await st.enter_async_context(ClientSession(streams[0], streams[1]))
            await c.initialize()
            v2 = False
        if log is not None:
            with anyio.fail_after(WAIT):
                while not (m := re.search(r"demo: simulated Miniserver at (http://[0-9.:]+)", open(log.name).read())):
                    await anyio.sleep(0.05)
            sim = m.group(1)

        async def call(tool, args):
            with anyio.fail_after(3 * WAIT):
                r = await c.call_tool(tool, args)
            env = json.loads(r.content[0].text)
            # `isError` in mcp 1.x, `is_error` in 2.x.
            return bool(getattr(r, "is_error", getattr(r, "isError", False))), env

        async def data(tool, args, what):
            err, env = await call(tool, args)
            expect(not err, f"{name}: {what}: {tool} answers", json.dumps(env)[:400])
            return env.get("data", {})

        async def read(uri):
            with anyio.fail_after(3 * WAIT):
                r = await (c.read_resource(uri, cache_mode="bypass") if v2 else c.read_resource(uri))
            return json.loads(r.contents[0].text)

        now = int(datetime.now(timezone.utc).timestamp())
        today = midnight(local_day(now))

        # 1. A year of daily energy of the grid meter.
        year_from = midnight(local_day(today - 365 * 86400))
        d = await data("get_history", {"device": GRID, "state": "total", "from": datetime.fromtimestamp(year_from, TZ).isoformat(),
                                       "to": datetime.fromtimestamp(today, TZ).isoformat(), "resolution": "day",
                                       "max_points": 400}, "a year of daily energy")
        readings = raw(sim, GRID, 2, "total", year_from - 7200, today)
        got = {int(datetime.fromisoformat(p[0]).timestamp()): p[1] for p in d.get("points", [])}
        wrong, with_data, without = [], 0, 0
        for b0, b1 in days(year_from, today):
            want = counted(readings, b0, b1)
            if want is None:
                without += 1
                if b0 in got:
                    wrong.append((b0, got[b0], None))
            else:
                with_data += 1
                if abs(got.get(b0, -1) - round(want, 3)) > 0.0015:
                    wrong.append((b0, got.get(b0), want))
        expect(not wrong and with_data > 300 and 28 <= without <= 31,
               f"{name}: a year of daily energy matches the meter's readings ({with_data} days, {without} without data)",
               json.dumps(wrong[:5]))
        expect(d.get("source") == "statistics_v2" and d.get("unit") == "kWh", f"{name}: source and unit named",
               f"{d.get('source')} {d.get('unit')}")

        # 2. A month of hourly temperature.
        hour_to = now - now % 3600
        d = await data("get_history", {"device": TEMPERATURE, "period": f"-{30 * 24}h", "resolution": "hour",
                                       "max_points": 800}, "a month of hourly temperature")
        recs = raw(sim, TEMPERATURE, 1, "value", hour_to - 31 * 86400, now)
        cols = d.get("columns", [])
        bad = []
        for p in d.get("points", []):
            row = dict(zip(cols, p))
            b0 = int(datetime.fromisoformat(row["start"]).timestamp())
            vals = [v for t, v in recs if b0 <= t < b0 + 3600]
            if not vals:
                continue
            want = (min(vals), sum(vals) / len(vals), max(vals))
            have = (row["min"], row["mean"], row["max"])
            if any(abs(a - round(b, 3)) > 0.0015 for a, b in zip(have, want)):
                bad.append((row["start"], have, want))
        expect(len(d.get("points", [])) >= 719 and not bad,
               f"{name}: a month of hourly temperature matches the recorded values ({len(d.get('points', []))} hours)",
               json.dumps(bad[:3]))

        # 3. A week of on-time of the kitchen light.
        week_from = midnight(local_day(today - 7 * 86400 + 3600))
        d = await data("get_history", {"device": "Deckenlicht", "room": "Küche", "period": "last 7 days",
                                       "resolution": "day"}, "a week of on-time")
        changes = raw(sim, LIGHT, 1, "active", week_from - 14 * 86400, now)
        bad = []
        for p in d.get("points", []):
            row = dict(zip(d["columns"], p))
            b0 = int(datetime.fromisoformat(row["start"]).timestamp())
            b1 = midnight(local_day(b0) + timedelta(days=1))
            if b1 > now or b0 < now - 7 * 86400:
                continue  # today's bucket grows while we look; the first began before the range
            want = on_seconds(changes, b0, b1)
            if abs(row["on_seconds"] - want) > 1.5:
                bad.append((row["start"], row["on_seconds"], want))
        expect(d.get("measure") == "switch" and len(d.get("points", [])) >= 7 and not bad,
               f"{name}: a week of the light's on-time matches its switching", json.dumps(bad[:3]))

        # 4. Two months compared.
        t0 = local_day(now)
        a, b = month_start(t0, 2), month_start(t0, 1)
        d = await data("get_energy", {"period": f"{a.year}-{a.month:02}", "compare_with": f"{b.year}-{b.month:02}"},
                       "two months compared")
        ok = True
        for key, (uuid, out) in {"import": (GRID, "total"), "export": (GRID, "totalNeg"), "production": (PV, "total")}.items():
            for label, m0, m1 in (("period", a, b), ("compare", b, month_start(t0, 0))):
                s0, s1 = midnight(m0), midnight(m1)
                want = counted(raw(sim, uuid, 2, out, s0 - 7200, s1), s0, s1)
                have = (d["figures"] if label == "period" else d["compare"]["figures"]).get(key)
                ok &= have is not None and abs(have - round(want, 3)) < 0.002
        diff = d.get("compare", {}).get("difference", {}).get("consumption", {})
        # The difference is the period's figure minus the compared one's.
        want_diff = d["figures"]["consumption"] - d["compare"]["figures"]["consumption"]
        expect(ok and abs(diff.get("kwh", 1e9) - want_diff) < 0.002,
               f"{name}: two months of import, export, production and the difference match the meters", json.dumps(d)[:300])

        # 5. The 23-hour day.
        spring = next((b0, b1) for b0, b1 in days(year_from, today) if b1 - b0 == 23 * 3600)
        iso = datetime.fromtimestamp(spring[0], TZ).date().isoformat()
        d = await data("get_history", {"device": GRID, "state": "total", "period": iso, "resolution": "hour"}, "the DST day")
        expect(len(d.get("points", [])) == 23, f"{name}: the spring day {iso} has 23 hourly points",
               str(len(d.get("points", []))))

        # 6. The month without data (the V1 file of the cellar sensor is missing for it).
        gap = next(month_start(t0, k) for k in range(1, 13)
                   if sim_bytes(sim, f"/stats/{CELLAR}.{month_start(t0, k).year}{month_start(t0, k).month:02}.xml")[0] == 404)
        gap_end = month_start(gap, -1)
        d = await data("get_history", {"device": CELLAR, "period": f"{gap.isoformat()}/{gap_end.isoformat()}",
                                       "resolution": "day"}, "the month without data")
        expect(not d.get("points") and d.get("no_data"), f"{name}: {gap:%Y-%m} has no points and is named in no_data",
               json.dumps(d)[:300])

        # 7. The counter reset: the day its readings fall.
        drop = next(t for (_, x), (t, y) in zip(readings, readings[1:]) if y < x)
        day = local_day(drop)
        d = await data("get_history", {"device": GRID, "state": "total", "period": day.isoformat(), "resolution": "day"},
                       "the reset day")
        b0, b1 = midnight(day), midnight(day + timedelta(days=1))
        want = counted(readings, b0, b1)
        have = d["points"][0][1] if d.get("points") else None
        expect(have is not None and abs(have - round(want, 3)) < 0.0015 and 0 < have < 100,
               f"{name}: the reset day counts from zero ({have} kWh)", str(want))

        # 8. The resource template and home://energy.
        q = urllib.parse.urlencode({"period": "last 7 days", "resolution": "day", "state": "active"})
        r = await read(f"home://history/{LIGHT}?{q}")
        tool = await data("get_history", {"device": LIGHT, "state": "active", "period": "last 7 days", "resolution": "day"},
                          "the tool beside the resource")
        expect(r.get("points") == tool.get("points"), f"{name}: home://history/{{device}}{{?...}} answers as get_history",
               json.dumps(r)[:300])
        e = await read("home://energy")
        ll = sim_get(sim, f"/jdev/sps/io/{GRID}/all")["LL"]
        states = {}
        for k, v in ll.items():
            if k.startswith("output"):
                try:
                    states[v["name"]] = float(v["value"])
                except (TypeError, ValueError):
                    pass  # text states
        today_import = e.get("today", {}).get("figures", {}).get("import")
        month_import = e.get("this_month", {}).get("figures", {}).get("import")
        expect(today_import is not None and abs(today_import - states["totalDay"]) < 0.002
               and month_import is not None and abs(month_import - states["totalMonth"]) < 0.002,
               f"{name}: home://energy has today's and this month's import as the meter totals them",
               f"{today_import} {month_import} {states.get('totalDay')} {states.get('totalMonth')}")

        # 9. Errors.
        for args, code, what in [
            ({"device": "Kühlschrank im Mond"}, "DEVICE_NOT_FOUND", "an unknown device"),
            ({"device": GRID, "from": "2099-01-01", "to": "2099-02-01"}, "INVALID_PARAMETERS", "a range in the future"),
            ({"device": GRID, "from": "-1h", "to": "-2h"}, "INVALID_PARAMETERS", "from after to"),
            ({"device": GRID, "period": "last 3 months", "resolution": "raw"}, "INVALID_PARAMETERS", "a range too long"),
        ]:
            err, env = await call("get_history", args)
            expect(err and env.get("error", {}).get("code") == code, f"{name}: {what} is {code}", json.dumps(env)[:300])


anyio.run(on_both_transports, run, "python-sdk history", 8 * WAIT)
