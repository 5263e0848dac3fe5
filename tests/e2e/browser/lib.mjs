// Shared helpers of the browser tests (run by tests/e2e/browser.sh): start Debian's chromium
// through playwright-core, sign in to a home-mcp page, take screenshots, talk MCP from node,
// and a tiny check runner. A dashboard test imports the same helpers.
//
// Environment (set by browser.sh): HOME_MCP_URL (http://127.0.0.1:PORT), HOME_MCP_ADMIN_KEY,
// CHROMIUM (default /usr/bin/chromium), E2E_SCREENSHOTS (default target/e2e-screenshots).
import { chromium } from "playwright-core";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const BASE = process.env.HOME_MCP_URL || "http://127.0.0.1:3001";
export const ADMIN_KEY = process.env.HOME_MCP_ADMIN_KEY || "";
export const SHOTS = process.env.E2E_SCREENSHOTS || "target/e2e-screenshots";

/** Chromium flags for a closed network and a root user (see the machine notes). */
export const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/**
 * Starts chromium with a fresh profile (--user-data-dir in a new temporary folder).
 * Returns { context, page, problems, close }; `problems` collects console errors, page errors
 * (CSP violations among them) and dialogs (alert() must never run).
 */
export async function launch({ width = 1280, height = 900, mobile = false } = {}) {
  const profile = mkdtempSync(join(tmpdir(), "home-mcp-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: FLAGS,
    viewport: { width, height },
    deviceScaleFactor: mobile ? 2 : 1,
    isMobile: mobile,
    hasTouch: mobile,
    timeout: 60_000,
  });
  const page = context.pages()[0] || (await context.newPage());
  page.setDefaultTimeout(15_000);
  const problems = [];
  page.on("console", (m) => { if (m.type() === "error") problems.push("console: " + m.text()); });
  page.on("pageerror", (e) => problems.push("page error: " + e.message));
  page.on("dialog", async (d) => { problems.push("dialog: " + d.message()); await d.dismiss(); });
  return {
    context,
    page,
    problems,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** A free loopback port. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    }).on("error", reject);
  });
}

/** Opens `path` (of the server at `base`) and signs in on the admin key form (#key-form, #api-key). */
export async function login(page, key = ADMIN_KEY, path = "/admin/keys", base = BASE) {
  await page.goto(base + path);
  await page.fill("#api-key", key);
  await page.click("#key-form button[type=submit]");
}

/** Saves a full-page screenshot as SHOTS/<name>.png and returns its path. */
export async function screenshot(page, name) {
  mkdirSync(SHOTS, { recursive: true });
  const path = join(SHOTS, name + ".png");
  await page.screenshot({ path, fullPage: true });
  console.log("     screenshot " + path);
  return path;
}

async function rpc(key, body, session, base = BASE) {
  const headers = {
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
  };
  if (key) headers["X-API-Key"] = key;
  if (session) headers["Mcp-Session-Id"] = session;
  const res = await fetch(base + "/mcp", { method: "POST", headers, body: JSON.stringify(body) });
  const text = await res.text();
  let json = null;
  if ((res.headers.get("content-type") || "").includes("text/event-stream")) {
    const data = text.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5)).pop();
    json = data ? JSON.parse(data) : null;
  } else if (text) {
    try { json = JSON.parse(text); } catch { json = null; }
  }
  return { status: res.status, session: res.headers.get("mcp-session-id"), json };
}

/**
 * From node, not the browser: MCP initialize + tools/call `tool` with `key` over
 * Streamable HTTP (of the server at `base`, default HOME_MCP_URL). Returns { status, result }
 * (status of the first refused step, else 200).
 */
export async function mcpCall(key, tool, args = {}, base = BASE) {
  const init = await rpc(key, {
    jsonrpc: "2.0", id: 1, method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "e2e-browser", version: "1" } },
  }, null, base);
  if (init.status !== 200) return { status: init.status, result: init.json };
  await rpc(key, { jsonrpc: "2.0", method: "notifications/initialized" }, init.session, base);
  const call = await rpc(key, {
    jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: tool, arguments: args },
  }, init.session, base);
  return { status: call.status, result: call.json && call.json.result };
}

let passed = 0;
let failed = 0;

/** Runs one named step; a thrown error fails it (and is printed) without stopping the rest. */
export async function step(name, fn) {
  try {
    await fn();
    passed++;
    console.log("ok   " + name);
    return true;
  } catch (e) {
    failed++;
    console.log("FAIL " + name + "\n     " + String((e && e.stack) || e).split("\n").slice(0, 4).join("\n     "));
    return false;
  }
}

/** Throws `message` unless `cond`. */
export function expect(cond, message) {
  if (!cond) throw new Error(message);
}

/** Prints "N passed, M failed" and sets the exit code. */
export function finish(label) {
  console.log(`${label}: ${passed} passed, ${failed} failed`);
  process.exitCode = failed === 0 && passed > 0 ? 0 : 1;
}
