// OAuth sign-in end to end (issue 15), run by tests/e2e/oauth.sh: mcp-remote (npm) started
// against home-mcp's /mcp with no key prints the authorization URL; the consent page is driven
// in Debian's chromium (sign in with an admin key, grant operator for one room); then
// tools/call list_rooms through mcp-remote lists that room only, a control call outside it is
// refused and one inside goes through; deleting the grant's key on the /admin/keys page (in
// the same browser) ends mcp-remote's access: it asks for a new sign-in.
//
// Environment: HOME_MCP_URL, HOME_MCP_ADMIN_KEY, CHROMIUM, E2E_SCREENSHOTS, MCP_REMOTE_CONFIG_DIR
// (a fresh directory: mcp-remote keeps its tokens there).
import { chromium } from "playwright-core";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const BASE = process.env.HOME_MCP_URL;
const ADMIN_KEY = process.env.HOME_MCP_ADMIN_KEY;
const SHOTS = process.env.E2E_SCREENSHOTS || "target/e2e-screenshots";
const ROOM = "Küche";
const LIVING_LIGHT = "1d5c3a2e-0202-4f52-ffff504f94d0e5a1"; // Deckenlicht (Wohnzimmer)
const KITCHEN_LIGHT = "1d5c3a92-0209-520e-ffff504f94d0e5a1"; // Deckenlicht (Küche)
const HERE = dirname(fileURLToPath(import.meta.url));

let failures = 0;
const step = async (name, f) => {
  const t0 = Date.now();
  try {
    await f();
    console.log(`ok   ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    failures++;
    console.log(`FAIL ${name}: ${e.stack || e}`);
    throw e;
  }
};
const expect = (cond, what) => {
  if (!cond) throw new Error(what);
};

/** Resolves with the first value `probe` returns that is not undefined, polling every 100 ms. */
async function waitFor(what, probe, ms = 30_000) {
  const until = Date.now() + ms;
  let last;
  while (Date.now() < until) {
    last = await probe();
    if (last !== undefined && last !== false) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

// mcp-remote as Claude Desktop starts it: a stdio MCP server proxying to the URL.
const stderr = [];
const answers = new Map();
const proxy = spawn(process.execPath, [join(HERE, "node_modules/mcp-remote/dist/proxy.js"), BASE + "/mcp"], {
  stdio: ["pipe", "pipe", "pipe"],
  env: { ...process.env, BROWSER: "false" },
});
proxy.stderr.setEncoding("utf8");
proxy.stderr.on("data", (d) => stderr.push(...d.split("\n")));
let buffer = "";
proxy.stdout.setEncoding("utf8");
proxy.stdout.on("data", (d) => {
  buffer += d;
  let i;
  while ((i = buffer.indexOf("\n")) >= 0) {
    const line = buffer.slice(0, i).trim();
    buffer = buffer.slice(i + 1);
    if (!line) continue;
    try {
      const msg = JSON.parse(line);
      if (msg.id !== undefined) answers.set(msg.id, msg);
    } catch {
      stderr.push("stdout (not JSON): " + line);
    }
  }
});
let nextId = 1;
const send = (msg) => proxy.stdin.write(JSON.stringify(msg) + "\n");
/** A JSON-RPC request through mcp-remote; its answer (or undefined after `ms`). */
async function rpc(method, params, ms = 30_000) {
  const id = nextId++;
  send({ jsonrpc: "2.0", id, method, params });
  try {
    return await waitFor(`answer to ${method}`, () => answers.get(id), ms);
  } catch {
    return undefined;
  }
}
const callTool = (name, args, ms) => rpc("tools/call", { name, arguments: args }, ms);

const profile = mkdtempSync(join(tmpdir(), "home-mcp-oauth-chromium-"));
let context;
try {
  let authorizeUrl;
  await step("mcp-remote without a key is sent to sign in and prints the authorization URL", async () => {
    // mcp-remote connects when its client does: the first initialize starts the sign-in.
    send({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "oauth e2e", version: "1" } },
    });
    authorizeUrl = await waitFor("the authorization URL on mcp-remote's stderr", () => {
      const i = stderr.findIndex((l) => l.includes("Please authorize this client by visiting"));
      return i >= 0 && stderr[i + 1]?.startsWith("http") ? stderr[i + 1].trim() : undefined;
    });
    const u = new URL(authorizeUrl);
    expect(u.origin === BASE && u.pathname === "/authorize", "authorization endpoint: " + authorizeUrl);
    expect(u.searchParams.get("code_challenge_method") === "S256", "PKCE S256");
  });

  await step("the owner signs in on the consent page and grants operator for one room", async () => {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
      timeout: 60_000,
    });
    const page = context.pages()[0] || (await context.newPage());
    page.setDefaultTimeout(15_000);
    const problems = [];
    // Failed loads by URL (a browser asks every origin for /favicon.ico: not a problem).
    page.on("response", (r) => {
      if (r.status() >= 400 && !r.url().endsWith("/favicon.ico")) problems.push(`${r.status()} ${r.url()}`);
    });
    page.on("console", (m) => {
      if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) problems.push(m.text());
    });
    page.on("pageerror", (e) => problems.push("page error: " + e.message));
    const res = await page.goto(authorizeUrl);
    expect(res.status() === 200, "consent page status " + res.status());
    mkdirSync(SHOTS, { recursive: true });
    await page.fill("#admin_key", ADMIN_KEY);
    await page.selectOption("#role", "operator");
    await page.check(`input[name=room][value="${ROOM}"]`);
    await page.screenshot({ path: join(SHOTS, "oauth-01-consent.png"), fullPage: true });
    await Promise.all([page.waitForURL((u) => u.pathname === "/oauth/callback"), page.click("#approve")]);
    await page.screenshot({ path: join(SHOTS, "oauth-02-callback.png"), fullPage: true });
    expect(problems.length === 0, "browser problems: " + problems.join("; "));
  });

  await step("initialize through mcp-remote succeeds with the granted token", async () => {
    const init = await waitFor("the answer to initialize", () => answers.get(0), 60_000);
    expect(init.result?.serverInfo, "initialize result: " + JSON.stringify(init));
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
  });

  await step("tools/call list_rooms lists the granted room only", async () => {
    const r = await callTool("list_rooms", {});
    const data = r?.result?.structuredContent?.data;
    expect(data && data.total === 1 && data.rooms[0].name === ROOM, "list_rooms: " + JSON.stringify(r));
  });

  await step("a control call outside the room is refused; inside it works", async () => {
    const out = await callTool("control_device", { device: LIVING_LIGHT, action: "on" });
    const text = JSON.stringify(out);
    expect(out && (out.error || out.result?.isError) && text.includes("INSUFFICIENT_PERMISSIONS"), "outside: " + text);
    const inside = await callTool("control_device", { device: KITCHEN_LIGHT, action: "on" });
    expect(inside?.result && !inside.result.isError, "inside: " + JSON.stringify(inside));
  });

  await step("deleting the grant's key on /admin/keys ends mcp-remote's access", async () => {
    const headers = { "X-API-Key": ADMIN_KEY };
    const keys = await (await fetch(BASE + "/admin/api/keys", { headers })).json();
    const granted = keys.keys.filter((k) => k.name.endsWith(" (OAuth)"));
    expect(granted.length === 1 && granted[0].role === "operator", "the grant on /admin/keys: " + JSON.stringify(keys));
    expect(JSON.stringify(granted[0].rooms) === JSON.stringify([ROOM]), "its room: " + JSON.stringify(granted[0]));
    // In the admin page, as the owner does it: sign in, delete the row, confirm.
    const page = context.pages()[0];
    await page.goto(BASE + "/admin/keys");
    await page.fill("#api-key", ADMIN_KEY);
    await page.click("#key-form button[type=submit]");
    const row = page.locator("#keys tbody tr[data-key-id]").filter({
      has: page.locator("td.name", { hasText: granted[0].name }),
    });
    await row.locator("button[data-action=delete]").click();
    await row.locator("button[data-action=confirm-delete]").click();
    await row.waitFor({ state: "detached" });
    await page.screenshot({ path: join(SHOTS, "oauth-03-revoked.png"), fullPage: true });
    // The next call is refused (401); mcp-remote's refresh is refused too (invalid_grant), so
    // it asks for a new sign-in (a second authorization URL) or answers with an error.
    const prompts = () => stderr.filter((l) => l.includes("Please authorize this client")).length;
    const before = prompts();
    const id = nextId++;
    send({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "list_rooms", arguments: {} } });
    const outcome = await waitFor("a refusal or a new sign-in prompt", () =>
      answers.get(id) ? { answer: answers.get(id) } : prompts() > before ? { prompt: true } : undefined,
    );
    const a = outcome.answer;
    expect(outcome.prompt || a.error || a.result?.isError, "list_rooms after revoking: " + JSON.stringify(a));
    console.log("     after revoking: " + (outcome.prompt ? "mcp-remote asks to sign in again" : JSON.stringify(a).slice(0, 200)));
  });
} catch {
  // reported by step()
} finally {
  if (context) await context.close();
  rmSync(profile, { recursive: true, force: true });
  proxy.kill();
  if (failures) {
    console.log("-- mcp-remote stderr (last 40 lines)");
    console.log(stderr.slice(-40).join("\n"));
  }
}
process.exit(failures ? 1 : 0);
