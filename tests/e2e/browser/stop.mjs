// The admin page's stop (issue 31) in a real chromium, on a server of its own (it restarts
// it): an admin clicks "Stop the assistant now"; an operator's command over MCP is refused with
// ASSISTANT_STOPPED and the simulated Miniserver receives nothing (its light stays as it was),
// while reads answer; after a restart of the server the stop still holds; "Lift the admin stop"
// lets the same command through to the simulator.
//
// Environment (set by browser.sh): HOME_MCP_BIN (the binary), CHROMIUM, E2E_SCREENSHOTS.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, finish, freePort, launch, login, mcpCall, screenshot, step } from "./lib.mjs";

const BIN = process.env.HOME_MCP_BIN || "target/debug/home-mcp";
const DIR = mkdtempSync(join(tmpdir(), "home-mcp-stop-"));
const STORE = join(DIR, "keys.toml");
/** The demo house's Switch "Deckenlicht" (Küche). */
const LIGHT = "1d5c3a92-0209-520e-ffff504f94d0e5a1";
const COMMAND = { device: "Deckenlicht", room: "Küche" };

function newKey(role, name) {
  const out = execFileSync(BIN, ["keys", "generate", "--role", role, "--name", name, "--json", "--key-store", STORE]);
  return JSON.parse(String(out)).id;
}

/**
 * `serve --demo --key-store STORE` at staging level on a free port; resolves, once /health
 * answers, with { child, base, sim } (sim: its simulated Miniserver's URL from the log);
 * rejects after 60 s.
 */
async function startServer() {
  const port = await freePort();
  const env = { ...process.env, SECURITY_LEVEL: "staging" };
  for (const k of ["HOME_KEY_BACKEND", "HOME_API_KEYS", "HTTP_API_KEY", "HOME_LISTEN"]) delete env[k];
  const child = spawn(BIN, ["serve", "--demo", "--listen", "127.0.0.1:" + port, "--key-store", STORE], {
    env, stdio: ["ignore", "ignore", "pipe"],
  });
  let log = "";
  child.stderr.on("data", (c) => { log += c; });
  const base = "http://127.0.0.1:" + port;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error("serve exited: " + log);
    const sim = /demo: simulated Miniserver at (\S+)/.exec(log);
    try {
      const r = await fetch(base + "/health");
      if (r.ok && sim) return { child, base, sim: sim[1] };
    } catch { /* not up yet */ }
    if (Date.now() > deadline) throw new Error("no /health within 60 s: " + log);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The light's value at the simulated Miniserver, read over its own HTTP API (demo/demo). */
async function lightAt(sim) {
  const r = await fetch(sim + "/jdev/sps/io/" + LIGHT, {
    headers: { Authorization: "Basic " + Buffer.from("demo:demo").toString("base64") },
  });
  const j = await r.json();
  return Number(j.LL.value);
}

function errorOf(result) {
  const text = result && result.content && result.content[0] && result.content[0].text;
  return text ? JSON.parse(text).error : null;
}

const admin = newKey("admin", "owner");
const operator = newKey("operator", "e2e stop operator");
let server = await startServer();
const { page, problems, close } = await launch();

try {
  await step("the admin page shows the assistant running and stops it with its button", async () => {
    await login(page, admin, "/admin/keys", server.base);
    await page.waitForSelector("#stop:visible");
    await page.waitForSelector("#stop-state[data-stopped=false]");
    expect(/Running/.test(await page.textContent("#stop-state")), "running text");
    await page.click("#stop-now");
    await page.waitForSelector("#stop-state[data-stopped=true]");
    const text = await page.textContent("#stop-state");
    expect(/STOPPED/.test(text) && /owner/.test(text), "stopped by owner: " + text);
    expect(await page.locator("#stop-now").isDisabled(), "stop button disabled while stopped");
    await screenshot(page, "stop-01-stopped");
  });

  await step("while stopped an operator's command is refused and the Miniserver receives nothing; reads answer", async () => {
    const before = await lightAt(server.sim);
    const action = before ? "off" : "on";
    const { status, result } = await mcpCall(operator, "control_device", { ...COMMAND, action }, server.base);
    expect(status === 200 && result.isError === true, "refused as a tool error: " + JSON.stringify(result));
    const e = errorOf(result);
    expect(e && e.code === "ASSISTANT_STOPPED", "code: " + JSON.stringify(e));
    expect(/admin page/.test(e.message), "says where to lift it: " + e.message);
    expect((await lightAt(server.sim)) === before, "the light is as it was");
    const read = await mcpCall(operator, "list_devices", { room: "Küche" }, server.base);
    expect(read.result && read.result.isError !== true, "a read answers: " + JSON.stringify(read.result));
  });

  await step("the stop survives a restart of the server", async () => {
    server.child.kill();
    await new Promise((r) => server.child.once("exit", r));
    server = await startServer();
    await login(page, admin, "/admin/keys", server.base);
    await page.waitForSelector("#stop-state[data-stopped=true]");
    const before = await lightAt(server.sim);
    const { result } = await mcpCall(operator, "control_device", { ...COMMAND, action: before ? "off" : "on" }, server.base);
    const e = errorOf(result);
    expect(e && e.code === "ASSISTANT_STOPPED", "still refused: " + JSON.stringify(result));
    expect((await lightAt(server.sim)) === before, "the light is as it was");
    await screenshot(page, "stop-02-after-restart");
  });

  await step("lifting the stop on the page lets the command through to the Miniserver", async () => {
    await page.click("#stop-lift");
    await page.waitForSelector("#stop-state[data-stopped=false]");
    const before = await lightAt(server.sim);
    const { result } = await mcpCall(operator, "control_device", { ...COMMAND, action: before ? "off" : "on" }, server.base);
    expect(result && result.isError !== true, "accepted: " + JSON.stringify(result));
    expect((await lightAt(server.sim)) === (before ? 0 : 1), "the light switched at the Miniserver");
    await screenshot(page, "stop-03-lifted");
  });

  await step("no console errors", async () => {
    expect(problems.length === 0, problems.join("\n"));
  });
} finally {
  await close();
  server.child.kill();
  rmSync(DIR, { recursive: true, force: true });
}
finish("stop");
