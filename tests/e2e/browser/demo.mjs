// A new user's first minutes (issue 22), in a real chromium: the demo started exactly as the
// README's set-up block says (the command is read from README.md, not copied here: `cargo run
// --release -- ARGS` runs the built binary with ARGS; its own server, not browser.sh's staging
// one; HOME_LISTEN only picks a free port, since other servers may hold 3001), then only what
// it prints: the dashboard URL opens the demo house without asking for a key, and the admin
// page URL with the printed admin key shows the key list, each within 5 s, with screenshots.
//
// Environment (set by browser.sh): HOME_MCP_BIN (the binary), CHROMIUM, E2E_SCREENSHOTS.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { expect, finish, freePort, launch, screenshot, step } from "./lib.mjs";

const BIN = process.env.HOME_MCP_BIN || "target/debug/home-mcp";
const WITHIN = 5_000;

/**
 * The arguments the README's set-up block gives the binary for the demo: its first fenced block
 * (```sh), the command with `--demo`, after `cargo run --release --` (tests/docs.rs reads it the
 * same way and checks `cargo run` runs home-mcp). Throws when the README says something else.
 */
function readmeDemoArgs() {
  const readme = readFileSync(new URL("../../../README.md", import.meta.url), "utf8");
  const block = /^```(\S*)\n([\s\S]*?)^```$/m.exec(readme);
  if (!block || block[1] !== "sh") throw new Error("the README does not start with a ```sh set-up block");
  const commands = block[2].split("\n").map((l) => l.replace(/\s#.*$/, "").trim().split(/\s+/).filter(Boolean));
  const demo = commands.find((w) => w.includes("--demo"));
  if (!demo) throw new Error("no --demo command in the README's set-up block:\n" + block[2]);
  const prefix = ["cargo", "run", "--release", "--"];
  if (prefix.some((w, i) => demo[i] !== w)) throw new Error("the README's demo command is not `cargo run --release -- ...`: " + demo.join(" "));
  return demo.slice(prefix.length);
}

/**
 * Starts `serve --demo` and resolves with what it prints: { mcp, dashboard, admin, key } (the
 * values after the labels "MCP", "dashboard", "admin page", "admin key"); rejects after 60 s.
 */
function startDemo(port) {
  const env = { ...process.env, HOME_LISTEN: "127.0.0.1:" + port };
  for (const k of ["SECURITY_LEVEL", "HOME_KEY_BACKEND", "HOME_API_KEYS", "HTTP_API_KEY"]) delete env[k];
  const args = readmeDemoArgs();
  console.log(`     the README's demo command: home-mcp ${args.join(" ")}`);
  const child = spawn(BIN, args, { env, stdio: ["ignore", "pipe", "ignore"] });
  const printed = new Promise((resolve, reject) => {
    const found = {};
    const labels = { "MCP": "mcp", "dashboard": "dashboard", "admin page": "admin", "admin key": "key" };
    let buffer = "";
    const timer = setTimeout(() => reject(new Error("serve --demo printed no pages within 60 s: " + buffer)), 60_000);
    child.stdout.on("data", (chunk) => {
      buffer += chunk;
      for (const line of buffer.split("\n")) {
        for (const [label, name] of Object.entries(labels)) {
          const t = line.trim();
          if (t.startsWith(label + " ")) found[name] = t.slice(label.length).trim();
        }
      }
      if (Object.keys(found).length === 4) { clearTimeout(timer); resolve(found); }
    });
    child.on("exit", (code) => { clearTimeout(timer); reject(new Error("serve --demo exited: " + code)); });
  });
  return { child, printed };
}

const port = await freePort();
const demo = startDemo(port);
// Awaited in the first step; a failure before then is reported there, not as a crash.
demo.printed.catch(() => {});
const { page, problems, close } = await launch();
let pages = null;

try {
  await step("serve --demo prints the MCP, dashboard and admin page URLs and an admin key", async () => {
    pages = await demo.printed;
    expect(pages.mcp.endsWith("/mcp"), "MCP: " + pages.mcp);
    expect(pages.dashboard.endsWith("/dashboard/"), "dashboard: " + pages.dashboard);
    expect(pages.admin.endsWith("/admin/keys"), "admin page: " + pages.admin);
    expect(pages.key.startsWith("homekey_admin_"), "admin key printed");
  });

  await step("the printed dashboard URL shows the demo house within 5 s, without asking for a key", async () => {
    const started = Date.now();
    const res = await page.goto(pages.dashboard);
    expect(res.status() === 200, "status " + res.status());
    await page.waitForSelector("#main:visible", { timeout: WITHIN });
    await page.waitForFunction(() => document.querySelectorAll("#rooms > .tile").length > 0, null, { timeout: WITHIN });
    console.log(`     demo house shown ${Date.now() - started} ms after opening the page`);
    expect(await page.locator("#key-form").isHidden(), "no key form");
    const names = await page.locator("#rooms > .tile > strong").allTextContents();
    expect(names.length === 14, "rooms: " + names.length);
    expect(names.includes("Küche") && names.includes("Wohnzimmer"), "room names " + names);
    await screenshot(page, "demo-01-dashboard");
  });

  await step("the printed admin page with the printed key lists the keys within 5 s", async () => {
    const started = Date.now();
    await page.goto(pages.admin);
    await page.fill("#api-key", pages.key);
    await page.click("#key-form button[type=submit]");
    await page.waitForSelector("#keys tbody tr[data-key-id]", { timeout: WITHIN });
    console.log(`     key list shown ${Date.now() - started} ms after opening the page`);
    const names = await page.locator("#keys tbody td.name").allTextContents();
    expect(names.some((n) => /demo admin/.test(n)), "key names: " + names);
    expect(!(await page.content()).includes(pages.key), "the full key is not in the page");
    await screenshot(page, "demo-02-admin-keys");
  });

  await step("no console errors", async () => {
    expect(problems.length === 0, problems.join("\n"));
  });
} finally {
  await close();
  demo.child.kill();
}
finish("demo");
