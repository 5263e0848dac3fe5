// The dashboard's history charts (issue 29) in a real chromium, against `serve --demo` at
// SECURITY_LEVEL=staging: a monitor key opens the page; the chart of a device's last day and
// the chart of energy per day for the last 30 days are drawn from the same query as the MCP
// tools (the points and summaries compared with get_history and get_energy called from node
// with an operator key); another device picked from the list redraws; the page on a phone
// keeps both charts inside the screen without horizontal scrolling. Screenshots of the
// desktop and the phone.
import { ADMIN_KEY, BASE, expect, finish, launch, mcpCall, screenshot, step } from "./lib.mjs";

// Raumtemperatur (Wohnzimmer), InfoOnlyAnalog with Statistics V2; the grid meter.
const TEMPERATURE = "1d5c3a8c-0208-51e4-ffff504f94d0e5a1";
const GRID_METER = "1d5c3c2e-0222-5d52-ffff504f94d0e5a1";

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

/** The envelope's data of a tool result (structuredContent, else the text). */
function data(result) {
  if (!result) return null;
  const env = result.structuredContent || JSON.parse(result.content[0].text);
  return env.data;
}

/** Waits until the figure `sel` has been drawn (data-points set) and returns its dataset. */
async function drawn(page, sel) {
  await page.waitForFunction((s) => {
    const f = document.querySelector(s);
    return f && f.dataset.points && f.querySelector("svg");
  }, sel, { timeout: 20_000 });
  return page.evaluate((s) => ({ ...document.querySelector(s).dataset }), sel);
}

const monitor = await newKey("monitor", "e2e history monitor");
const operator = await newKey("operator", "e2e history AI");
const desk = await launch();
const page = desk.page;
let phone = null;

try {
  await step("the page draws the last day of the first device and 30 days of energy", async () => {
    await page.goto(BASE + "/dashboard/");
    await page.fill("#key-input", monitor);
    await page.click("#key-form button[type=submit]");
    await page.waitForSelector("#main:visible");
    const day = await drawn(page, "#chart-day");
    expect(Number(day.points) >= 24, "24 hours or more: " + JSON.stringify(day));
    expect(day.source.startsWith("statistics_v"), "the Miniserver's statistics: " + day.source);
    expect(day.measure === "level", "a temperature first: " + day.measure);
    expect(await page.locator("#chart-day polyline").count() === 1, "a mean line");
    expect(await page.locator("#chart-day polygon").count() === 1, "a min-max band");
    const energy = await drawn(page, "#chart-energy");
    expect(Number(energy.points) >= 30, "a bar pair per day: " + energy.points);
    expect(await page.locator("#chart-energy rect.bar.production").count() >= 30, "production bars");
    await screenshot(page, "history-desktop");
  });

  await step("the charts show what get_history and get_energy answer over MCP", async () => {
    const before = await page.getAttribute("#chart-day", "data-updated");
    await page.selectOption("#chart-device", TEMPERATURE);
    await page.waitForFunction((b) => document.querySelector("#chart-day").dataset.updated !== b, before);
    const device = TEMPERATURE;
    const h = await mcpCall(operator, "get_history", { device, period: "-24h", resolution: "hour" });
    expect(h.status === 200 && !h.result.isError, "get_history: " + JSON.stringify(h.result));
    const d = data(h.result);
    const points = Number(await page.getAttribute("#chart-day", "data-points"));
    expect(d.points.length === points, `points: tool ${d.points.length}, chart ${points}`);
    const caption = await page.textContent("#chart-day figcaption");
    expect(caption.includes("max " + d.summary.max), `caption "${caption}" has max ${d.summary.max}`);
    const e = await mcpCall(operator, "get_energy", { period: "last 30 days", breakdown: "day" });
    expect(e.status === 200 && !e.result.isError, "get_energy: " + JSON.stringify(e.result));
    const ed = data(e.result);
    const legend = await page.textContent("#chart-energy figcaption");
    expect(legend.includes("consumption " + ed.figures.consumption + " kWh"),
      `legend "${legend}" has ${ed.figures.consumption}`);
  });

  await step("another device picked from the list redraws its day", async () => {
    const before = await page.getAttribute("#chart-day", "data-updated");
    await page.selectOption("#chart-device", GRID_METER);
    await page.waitForFunction((b) => document.querySelector("#chart-day").dataset.updated !== b, before);
    const day = await drawn(page, "#chart-day");
    expect(day.measure === "counter", "the meter's consumption per hour: " + day.measure);
    expect(await page.locator("#chart-day rect.bar").count() >= 24, "an hourly bar");
    expect(desk.problems.length === 0, "no console errors: " + desk.problems.join("; "));
  });

  await step("on a phone both charts fit the screen, no horizontal scrolling", async () => {
    phone = await launch({ width: 390, height: 844, mobile: true });
    await phone.page.goto(BASE + "/dashboard/");
    await phone.page.fill("#key-input", monitor);
    await phone.page.click("#key-form button[type=submit]");
    await drawn(phone.page, "#chart-day");
    await drawn(phone.page, "#chart-energy");
    const fit = await phone.page.evaluate(() => {
      const w = document.documentElement.clientWidth;
      const boxes = ["#chart-day svg", "#chart-energy svg"].map((s) => document.querySelector(s).getBoundingClientRect());
      return { w, scroll: document.documentElement.scrollWidth, right: Math.max(...boxes.map((b) => b.right)), widths: boxes.map((b) => b.width) };
    });
    expect(fit.scroll <= fit.w, "no horizontal scrolling: " + JSON.stringify(fit));
    expect(fit.right <= fit.w, "charts inside the screen: " + JSON.stringify(fit));
    expect(fit.widths.every((x) => x > 200), "charts use the width: " + JSON.stringify(fit));
    await phone.page.locator("#history").scrollIntoViewIfNeeded();
    await screenshot(phone.page, "history-phone");
    expect(phone.problems.length === 0, "no console errors: " + phone.problems.join("; "));
  });
} finally {
  await desk.close();
  if (phone) await phone.close();
  finish("history charts");
}
