// Who is at the door (issue 30) on the dashboard, in a real chromium against `serve --demo` at
// SECURITY_LEVEL=staging. The dashboard fetches no picture by itself: loading the page asks for
// none; a monitor key made with the `cameras` setting through the admin API sees the intercom's
// last ring's picture when it presses the tile's "Last ring" button (the Miniserver's picture,
// no camera asked); a ring at the simulated Miniserver (its switch GET /sim/door/{uuid}/ring,
// the doorbell button) marks the tile and fetches nothing until the button is pressed again,
// which shows the new ring's picture; "Picture now" asks the camera; no console errors or CSP
// violations (screenshots). A monitor key without the setting gets no buttons, fetches nothing
// and the tile says why.
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

// Every picture request the page makes.
const pictureRequests = [];
page.on("request", (r) => { if (/\/dashboard\/api\/doorbells\/.*\/picture/.test(r.url())) pictureRequests.push(r.url()); });
const live = () => pictureRequests.filter((u) => /of=now/.test(u));

try {
  await step("loading the page fetches no picture; the button shows the last ring's", async () => {
    await signIn(page, withCameras);
    await page.waitForFunction((id) => /last ring/.test(document.querySelector("#bell-" + id).textContent), DOOR, { timeout: 20_000 });
    // The page has loaded its data and rendered every tile: still no picture asked for.
    await page.waitForLoadState("networkidle");
    expect(pictureRequests.length === 0, "pictures fetched on load: " + pictureRequests);
    await screenshot(page, "doorbell-01-loaded");
    await page.click("#bell-" + DOOR + " button.ring");
    await page.waitForFunction((id) => {
      const img = document.querySelector("#bell-" + id + " img");
      return img && img.naturalWidth > 0 && img.getAttribute("data-ring");
    }, DOOR, { timeout: 20_000 });
    expect(pictureRequests.length === 1 && live().length === 0, "one picture per press, of the ring: " + pictureRequests);
    const ring = await page.getAttribute("#bell-" + DOOR + " img", "data-ring");
    expect(/^\d{14}$/.test(ring), "the picture of a ring: " + ring);
    const w = await page.evaluate((id) => document.querySelector("#bell-" + id + " img").naturalWidth, DOOR);
    expect(w > 0 && w <= 640, "picture width " + w);
    await screenshot(page, "doorbell-02-shown");
  });

  await step("a ring marks the tile; the button shows the new ring's picture", async () => {
    expect(SIM !== "", "HOME_MCP_SIM names the simulated Miniserver");
    const auth = "Basic " + Buffer.from("demo:demo").toString("base64");
    const res = await fetch(SIM + "/sim/door/" + DOOR + "/ring", { headers: { Authorization: auth } });
    const stamp = (await res.json()).LL.value;
    expect(/^\d{14}$/.test(stamp), "the ring's time " + stamp);
    await page.waitForFunction((id) => {
      const tile = document.querySelector("#bell-" + id);
      return /new ring/.test(tile.querySelector("button.ring").textContent) && tile.querySelector("img.old");
    }, DOOR, { timeout: 20_000 });
    expect(pictureRequests.length === 1, "a ring fetches nothing by itself: " + pictureRequests);
    await screenshot(page, "doorbell-03-rang");
    await page.click("#bell-" + DOOR + " button.ring");
    await page.waitForFunction(([id, s]) => {
      const img = document.querySelector("#bell-" + id + " img");
      return img && img.getAttribute("data-ring") === s && img.naturalWidth > 0 && !img.classList.contains("old");
    }, [DOOR, stamp], { timeout: 20_000 });
    const text = await page.textContent("#bell-" + DOOR);
    expect(/last ring/.test(text), "the tile says when: " + text);
    expect(pictureRequests.length === 2 && live().length === 0, "one more picture, of the ring: " + pictureRequests);
    await screenshot(page, "doorbell-04-new-ring");
  });

  await step("the camera's picture now comes only with its button", async () => {
    await page.click("#bell-" + DOOR + " button.now");
    await page.waitForFunction((id) => {
      const tile = document.querySelector("#bell-" + id);
      const img = tile.querySelector("img");
      return img.getAttribute("data-ring") === "" && img.naturalWidth > 0 && /now/.test(tile.querySelector(".note").textContent);
    }, DOOR, { timeout: 20_000 });
    expect(live().length === 1 && pictureRequests.length === 3, "one picture now: " + pictureRequests);
    await screenshot(page, "doorbell-05-now");
    const csp = await page.evaluate(() => window.__csp);
    expect(csp.length === 0, "CSP violations: " + csp);
    expect(errors.length === 0, "console errors: " + errors);
  });

  await step("a key without the setting fetches no picture, and the page says why", async () => {
    const other = await launch();
    const p2 = other.page;
    const asked = [];
    p2.on("request", (r) => { if (/\/picture/.test(r.url())) asked.push(r.url()); });
    await signIn(p2, without);
    await p2.waitForFunction((id) => {
      const tile = document.querySelector("#bell-" + id);
      return tile && /may not see/.test(tile.querySelector(".note").textContent);
    }, DOOR, { timeout: 20_000 });
    await p2.waitForLoadState("networkidle");
    const src = await p2.getAttribute("#bell-" + DOOR + " img", "src");
    expect(!src, "no picture: " + (src || "").slice(0, 40));
    expect(asked.length === 0, "nothing asked: " + asked);
    const shown = await p2.locator("#bell-" + DOOR + " button:visible").count();
    expect(shown === 0, "no buttons: " + shown);
    await other.close();
  });
} finally {
  await desk.close();
}
finish("doorbell");
