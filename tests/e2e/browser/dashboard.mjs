// The dashboard (/dashboard/) as a household member uses it, in a real chromium, against
// `serve --demo` at SECURITY_LEVEL=staging: keys made through the admin API (a monitor key for
// the page, an operator key for an AI client over MCP from node), a wrong key refused with a
// visible message, the demo house (14 rooms, Miniserver link over the WebSocket, climate
// actual vs target, alarms), a light switched through MCP appearing live in "Last changes"
// (latency printed) and the call in the AI activity feed, no console errors or CSP violations,
// and the page on a phone without horizontal scrolling.
import { ADMIN_KEY, BASE, SHOTS, expect, finish, launch, mcpCall, screenshot, step } from "./lib.mjs";

// Deckenlicht (Küche), a Switch of the demo house.
const LIGHT = "1d5c3a92-0209-520e-ffff504f94d0e5a1";
const LIGHT_NAME = "Deckenlicht";

/** POST /admin/api/keys with the admin key; returns the new key's secret. */
async function newKey(role, name) {
  const res = await fetch(BASE + "/admin/api/keys", {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-API-Key": ADMIN_KEY },
    body: JSON.stringify({ role, name }),
  });
  const body = await res.json();
  if (res.status !== 201) throw new Error("create " + role + " key: " + res.status + " " + JSON.stringify(body));
  return body.key;
}

async function dataStatus(key) {
  const headers = key ? { "X-API-Key": key } : {};
  return (await fetch(BASE + "/dashboard/api/data", { headers })).status;
}

/** Signs in on the dashboard's key form. */
async function signIn(page, key) {
  await page.fill("#key-input", key);
  await page.click("#key-form button[type=submit]");
}

/** Collects CSP violations reported to the page (securitypolicyviolation events). */
async function watchCsp(context) {
  await context.addInitScript(() => {
    window.__csp = [];
    document.addEventListener("securitypolicyviolation", (e) =>
      window.__csp.push(e.violatedDirective + " " + e.blockedURI));
  });
}

const monitor = await newKey("monitor", "e2e dashboard monitor");
const operator = await newKey("operator", "e2e dashboard AI");
const desk = await launch();
await watchCsp(desk.context);
const page = desk.page;
let phone = null;

try {
  await step("the API takes monitor and operator keys and refuses none or a wrong one", async () => {
    expect((await dataStatus(monitor)) === 200, "monitor");
    expect((await dataStatus(operator)) === 200, "operator");
    expect((await dataStatus("")) === 401, "no key");
    expect((await dataStatus("homekey_monitor_9_00000000000000000000000000000000")) === 401, "wrong key");
  });

  await step("the page loads without a key and asks for one (no failed request)", async () => {
    const res = await page.goto(BASE + "/dashboard/");
    expect(res.status() === 200, "status " + res.status());
    expect((res.headers()["content-security-policy"] || "").includes("script-src 'self'"), "CSP header");
    await page.waitForSelector("#key-form:visible");
    expect(await page.locator("#main").isHidden(), "main hidden before sign-in");
    expect(await page.locator("#key-error").isHidden(), "no error before a key was tried");
  });

  await step("a wrong key is refused with a visible message", async () => {
    await signIn(page, "homekey_monitor_9_00000000000000000000000000000000");
    await page.waitForSelector("#key-error:visible");
    const msg = await page.textContent("#key-error");
    expect(/refused/i.test(msg), "error text: " + msg);
    expect(await page.locator("#main").isHidden(), "main stays hidden");
  });

  await step("the monitor key opens the demo house: 14 rooms, link websocket, live connected", async () => {
    await signIn(page, monitor);
    await page.waitForSelector("#main:visible");
    expect(await page.locator("#key-form").isHidden(), "key form hidden");
    const rooms = await page.locator("#rooms > .tile").count();
    expect(rooms === 14, "rooms: " + rooms);
    const names = await page.locator("#rooms > .tile > strong").allTextContents();
    expect(names.includes("Küche") && names.includes("Wohnzimmer"), "room names " + names);
    expect((await page.locator("#dev-" + LIGHT).count()) === 1, "the light is listed");
    await page.waitForFunction(() => document.getElementById("link-status").dataset.mode === "websocket",
      null, { timeout: 10_000 });
    expect(/websocket/.test(await page.textContent("#link-status")), "link text");
    await page.waitForFunction(() => /connected/.test(document.getElementById("live-status").textContent));
    expect(!page.url().includes(monitor.slice(10)), "the key is not in the URL");
    expect(!(await page.content()).includes(monitor), "the key is not in the page");
  });

  await step("climate shows actual vs target temperatures; alarm shows its state", async () => {
    const tiles = page.locator("#climate > .tile");
    const n = await tiles.count();
    expect(n >= 3, "climate tiles: " + n);
    const texts = await tiles.allTextContents();
    expect(texts.some((t) => /\d+(\.\d+)? °C/.test(t) && /target \d+(\.\d+)? °C/.test(t)),
      "actual and target: " + texts.slice(0, 3));
    const alarm = await page.textContent("#alarm");
    expect(/Alarmanlage: (armed|disarmed)/.test(alarm), "alarm: " + alarm);
    expect(/Rauchmelder: (quiet|ALARM)/.test(alarm), "smoke alarm: " + alarm);
    const changes = await page.locator("#changes li").allTextContents();
    expect(!changes.some((t) => / = –?$/.test(t)), "no empty values in Last changes: " + changes);
    await screenshot(page, "dashboard-01-loaded");
  });

  await step("a light switched through MCP appears in Last changes within 1 s, and in AI activity", async () => {
    const before = await page.textContent("#dev-" + LIGHT);
    const action = /: on/.test(before) ? "off" : "on";
    const started = Date.now();
    const r = await mcpCall(operator, "control_device", { device: LIGHT, action });
    const answered = Date.now();
    expect(r.status === 200 && r.result && !r.result.isError, JSON.stringify(r).slice(0, 400));
    // data-updated is the page's Date.now() when it applied the event (same clock as node's).
    const handle = await page.waitForFunction(([name, since]) => {
      const ch = document.getElementById("changes");
      const at = Number(ch.getAttribute("data-updated") || 0);
      return at >= since && ch.textContent.includes(name) ? at : false;
    }, [LIGHT_NAME, started], { timeout: 5_000, polling: 10 });
    const shown = await handle.jsonValue();
    const afterAnswer = Math.max(0, shown - answered);
    console.log(`     live update: tools/call took ${answered - started} ms; shown ${shown - started} ms after the ` +
      `call started, ${afterAnswer} ms after its answer`);
    expect(afterAnswer <= 1000, "shown " + afterAnswer + " ms after the answer");
    const first = await page.textContent("#changes li:first-child");
    expect(first.includes(LIGHT_NAME) && first.includes(action), "first change: " + first);
    const device = await page.textContent("#dev-" + LIGHT);
    expect(device.includes(": " + action), "room tile: " + device);
    // The activity feed refreshes (debounced: 0.5 s, at most every 2 s) after a
    // device_state_change, not on a slow timer.
    await page.waitForFunction(() => /control_device/.test(document.getElementById("activity").textContent),
      null, { timeout: 3_000 });
    const activity = await page.textContent("#activity li:first-child");
    expect(activity.includes("e2e dashboard AI") && activity.includes("control_device"), "activity: " + activity);
    console.log(`     activity feed shows the call ${Date.now() - answered} ms after its answer`);
    await screenshot(page, "dashboard-02-live-change");
  });

  await step("no console errors or CSP violations", async () => {
    // The wrong-key step logs its 401 fetch.
    const real = desk.problems.filter((p) => !/status of 401/.test(p));
    expect(real.length === 0, real.join("\n"));
    const csp = await page.evaluate(() => window.__csp);
    expect(csp.length === 0, "CSP: " + csp.join("; "));
  });

  await step("on a phone (390x844) the page has no horizontal scroll", async () => {
    phone = await launch({ width: 390, height: 844, mobile: true });
    await watchCsp(phone.context);
    await phone.page.goto(BASE + "/dashboard/");
    await signIn(phone.page, monitor);
    await phone.page.waitForSelector("#rooms > .tile");
    await phone.page.waitForFunction(() => /connected/.test(document.getElementById("live-status").textContent));
    // A fresh load after the command still knows the light's state (not "–").
    const light = await phone.page.textContent("#dev-" + LIGHT);
    expect(/: (on|off)$/.test(light), "room tile after reload: " + light);
    const { scroll, client, wide } = await phone.page.evaluate(() => {
      const doc = document.documentElement;
      const wide = [...document.querySelectorAll("body *")]
        .filter((e) => e.getBoundingClientRect().right > doc.clientWidth + 1)
        .slice(0, 5).map((e) => e.tagName + (e.id ? "#" + e.id : "") + "." + e.className);
      return { scroll: doc.scrollWidth, client: doc.clientWidth, wide };
    });
    expect(scroll <= client, `scrollWidth ${scroll} > ${client}: ${wide.join(", ")}`);
    await screenshot(phone.page, "dashboard-03-phone");
    // What the phone shows first (the full page is too tall to read at a glance).
    await phone.page.screenshot({ path: SHOTS + "/dashboard-04-phone-first-screen.png" });
    expect(phone.problems.length === 0, phone.problems.join("\n"));
    const csp = await phone.page.evaluate(() => window.__csp);
    expect(csp.length === 0, "CSP: " + csp.join("; "));
  });
} finally {
  await desk.close();
  if (phone) await phone.close();
}
finish("dashboard");
