// Who is at the door (issue 30) on the dashboard, in a real chromium against `serve --demo` at
// SECURITY_LEVEL=staging: a monitor key made with the `cameras` setting through the admin API
// sees each doorbell's picture (the last ring's); a ring at the simulated Miniserver (its switch
// GET /sim/door/{uuid}/ring, the doorbell button) shows the new ring's picture within the
// wait, with no console errors or CSP violations (screenshot); a monitor key without the setting
// sees no picture and says why.
import { ADMIN_KEY, BASE, expect, finish, launch, screenshot, step } from "./lib.mjs";

// Haustür, the demo house's Loxone Intercom; its rings are in lastBellEvents.
const DOOR = "1d5c3ca0-022a-60b0-ffff504f94d0e5a1";
const SIM = process.env.HOME_MCP_SIM || "";

async function newKey(role, name, extra = {}) {
  const res = await fetch(BASE + "/admin/api/keys", {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-API-Key": ADMIN_KEY },
    body: JSON.stringify({ role, name, ...extra }),
  });
  const body = await res.json();
  if (res.status !== 201) throw new Error("create key: " + res.status + " " + JSON.stringify(body));
  return body.key;
}

async function signIn(page, key) {
  await page.goto(BASE + "/dashboard/");
  await page.waitForSelector("#key-form:visible");
  await page.fill("#key-input", key);
  await page.click("#key-form button[type=submit]");
  await page.waitForSelector("#main:visible");
}

const withCameras = await newKey("monitor", "e2e hall screen", { cameras: true });
const without = await newKey("monitor", "e2e kitchen screen");
const desk = await launch();
const page = desk.page;
const errors = [];
page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
await desk.context.addInitScript(() => {
  window.__csp = [];
  document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(e.violatedDirective));
});

try {
  await step("a key with the cameras setting sees the last ring's picture of each doorbell", async () => {
    await signIn(page, withCameras);
    await page.waitForFunction((id) => {
      const img = document.querySelector("#bell-" + id + " img");
      return img && img.naturalWidth > 0 && img.getAttribute("data-ring");
    }, DOOR, { timeout: 20_000 });
    const ring = await page.getAttribute("#bell-" + DOOR + " img", "data-ring");
    expect(/^\d{14}$/.test(ring), "the picture of a ring: " + ring);
    const w = await page.evaluate((id) => document.querySelector("#bell-" + id + " img").naturalWidth, DOOR);
    expect(w > 0 && w <= 640, "picture width " + w);
    await screenshot(page, "doorbell-01-loaded");
  });

  await step("a ring at the simulator shows the new ring's picture", async () => {
    expect(SIM !== "", "HOME_MCP_SIM names the simulated Miniserver");
    const auth = "Basic " + Buffer.from("demo:demo").toString("base64");
    const res = await fetch(SIM + "/sim/door/" + DOOR + "/ring", { headers: { Authorization: auth } });
    const stamp = (await res.json()).LL.value;
    expect(/^\d{14}$/.test(stamp), "the ring's time " + stamp);
    await page.waitForFunction(([id, s]) => {
      const img = document.querySelector("#bell-" + id + " img");
      return img && img.getAttribute("data-ring") === s && img.naturalWidth > 0;
    }, [DOOR, stamp], { timeout: 20_000 });
    const text = await page.textContent("#bell-" + DOOR);
    expect(/last ring/.test(text), "the tile says when: " + text);
    await screenshot(page, "doorbell-02-rang");
    const csp = await page.evaluate(() => window.__csp);
    expect(csp.length === 0, "CSP violations: " + csp);
    expect(errors.length === 0, "console errors: " + errors);
  });

  await step("a key without the setting sees no picture, and the page says why", async () => {
    const other = await launch();
    const p2 = other.page;
    await signIn(p2, without);
    await p2.waitForFunction((id) => {
      const img = document.querySelector("#bell-" + id + " img");
      return img && /may not see/.test(img.alt);
    }, DOOR, { timeout: 20_000 });
    const src = await p2.getAttribute("#bell-" + DOOR + " img", "src");
    expect(!src, "no picture: " + (src || "").slice(0, 40));
    await other.close();
  });
} finally {
  await desk.close();
}
finish("doorbell");
