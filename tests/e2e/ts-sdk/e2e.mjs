// End-to-end: the official TypeScript MCP SDK clients against home-mcp --demo, run through
// tests/e2e/ts-sdk.sh. Clients (pinned in package-lock.json):
//   - `@modelcontextprotocol/client` (v2, the newest client line, speaks 2026-07-28):
//     `versionNegotiation: { mode: { pin: '2026-07-28' } }` (modern era: server/discover, no
//     session, subscriptions/listen, input_required) and the default legacy era (initialize);
//   - `@modelcontextprotocol/sdk` (v1, the newest 1.x: initialize only).
// Each over Streamable HTTP (the `serve --demo` the shell script started, URL in --url) and
// stdio (`stdio --demo`, spawned here). Per case: tools/resources/prompts listed and a prompt
// and a resource read; a tool call whose effect is read back at the simulator (its HTTP API, as
// the Loxone app would) and over MCP; a resource subscription (`resources/subscribe` in the
// legacy era, `subscriptions/listen` in the modern one) that receives
// `notifications/resources/updated` after a wall button changes a light at the simulator; and
// a confirmation: `arm_alarm` asks the user (elicitation), the alarm is armed at the simulator
// only after the handler accepted (read at the simulator while the question is open), and a
// declined `disarm_alarm` sends nothing.
//
// In the modern era the server asks through an `input_required` result (multi round-trip
// request): the client calls its elicitation handler and retries with the answer and the
// sealed `requestState`. The alarm tools take no password: the demo's configured
// visualisation password (HOME_VISU_PASS) is used.
//
// usage: node e2e.mjs --bin path/to/home-mcp --url http://127.0.0.1:PORT/mcp --sim http://127.0.0.1:SIMPORT
// The simulator's base URL is printed by `serve --demo` ("demo: simulated Miniserver at URL");
// for stdio it is read from the child's stderr the same way. Credentials: demo/demo.
// Prints "N passed, M failed"; exit 1 on any failure. Every wait is bounded.

import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';

import * as v2 from '@modelcontextprotocol/client';
import { StdioClientTransport as V2Stdio } from '@modelcontextprotocol/client/stdio';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1Stdio } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as V1Http } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const { values: opt } = parseArgs({
  options: { bin: { type: 'string' }, url: { type: 'string' }, sim: { type: 'string' }, only: { type: 'string' } },
});
if (!opt.bin || !opt.url || !opt.sim) {
  console.error('usage: node e2e.mjs --bin BIN --url MCP_URL --sim SIM_URL [--only SUBSTRING]');
  process.exit(2);
}
const MODERN = '2026-07-28';
const WAIT_MS = 20_000; // every wait for the server or the simulator
const LIGHTING = 'home://lighting';

let passed = 0;
let failed = 0;
function expect(cond, what, seen = '') {
  if (cond) {
    passed++;
    console.log(`ok   ${what}`);
  } else {
    failed++;
    console.log(`FAIL ${what}${seen ? `\n    seen: ${seen}` : ''}`);
  }
}

// ---------------------------------------------------------------- the simulator's HTTP API
const AUTH = 'Basic ' + Buffer.from('demo:demo').toString('base64');
async function simGet(base, path) {
  const r = await fetch(base + path, { headers: { Authorization: AUTH }, signal: AbortSignal.timeout(WAIT_MS) });
  if (!r.ok) throw new Error(`simulator GET ${path}: HTTP ${r.status}`);
  return r.json();
}
/** The control named `name` in room `room`, from the structure file the simulator serves. */
async function control(base, name, room) {
  const s = await simGet(base, '/data/LoxAPP3.json');
  const found = Object.entries(s.controls).filter(
    ([, c]) => c.name === name && s.rooms[c.room]?.name === room,
  );
  if (found.length !== 1) throw new Error(`${found.length} controls named ${name} in ${room}`);
  return found[0][0];
}
/** One state of `uuid` as the simulator reports it (`jdev/sps/io/{uuid}/all`). */
async function simState(base, uuid, name) {
  const ll = (await simGet(base, `/jdev/sps/io/${uuid}/all`)).LL;
  const out = Object.entries(ll).find(([k, v]) => k.startsWith('output') && v.name === name);
  if (!out) throw new Error(`${uuid} has no state ${name}: ${JSON.stringify(ll)}`);
  return Number(out[1].value);
}
/** A wall button: `jdev/sps/io/{uuid}/{cmd}`, code 200 expected. */
async function simCommand(base, uuid, cmd) {
  const ll = (await simGet(base, `/jdev/sps/io/${uuid}/${cmd}`)).LL;
  const code = String(ll.Code ?? ll.code);
  if (code !== '200') throw new Error(`${uuid}/${cmd}: ${JSON.stringify(ll)}`);
}

// ---------------------------------------------------------------- helpers
function deadline(ms, what) {
  let timer;
  const p = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return { p, clear: () => clearTimeout(timer) };
}
async function bounded(promise, what, ms = WAIT_MS) {
  const d = deadline(ms, what);
  try {
    return await Promise.race([promise, d.p]);
  } finally {
    d.clear();
  }
}
/** The JSON envelope a home-mcp tool answers in its first text content. */
function envelope(result) {
  const text = result?.content?.find((c) => c.type === 'text')?.text ?? '';
  try {
    return JSON.parse(text);
  } catch {
    return { raw: text };
  }
}
const brief = (v) => JSON.stringify(v)?.slice(0, 300);

/** The first stderr line matching `re` of a child (bounded), for the simulator's URL. */
function lineOf(stream, re, what) {
  return bounded(
    new Promise((resolve) => {
      let buf = '';
      stream.on('data', (d) => {
        buf += d;
        const m = buf.match(re);
        if (m) resolve(m[1]);
      });
    }),
    what,
  );
}

// ---------------------------------------------------------------- one client
/**
 * A connected client of `kind` (`v2-modern`, `v2-legacy`, `v1`) over `transport` (`http` or
 * `stdio`) whose elicitation handler calls `onElicit(params)`. Returns the client, the
 * simulator's base URL and a close function.
 */
async function open(kind, transport, onElicit, onUpdate) {
  const info = { name: `home-mcp-e2e-${kind}`, version: '1.0.0' };
  let sim = opt.sim;
  let t;
  const stdioParams = { command: opt.bin, args: ['stdio', '--demo'], stderr: 'pipe', env: { ...process.env, HOME_VISU_PASS: '1234' } };
  if (transport === 'stdio') {
    t = kind === 'v1' ? new V1Stdio(stdioParams) : new V2Stdio(stdioParams);
    const simUrl = lineOf(t.stderr, /demo: simulated Miniserver at (http:\/\/[0-9.:]+)/, 'the stdio child names its simulator');
    simUrl.catch(() => {});
    t.__sim = simUrl;
  } else {
    t = kind === 'v1' ? new V1Http(new URL(opt.url)) : new v2.StreamableHTTPClientTransport(new URL(opt.url));
  }
  let client;
  if (kind === 'v1') {
    client = new V1Client(info, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, (req) => onElicit(req.params));
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => onUpdate(n.params));
  } else {
    const options = { capabilities: { elicitation: { form: {} } } };
    if (kind === 'v2-modern') options.versionNegotiation = { mode: { pin: MODERN } };
    client = new v2.Client(info, options);
    client.setRequestHandler('elicitation/create', (req) => onElicit(req.params));
    client.setNotificationHandler('notifications/resources/updated', (n) => onUpdate(n.params));
  }
  await bounded(client.connect(t), `${kind} ${transport}: connect`);
  if (t.__sim) sim = await t.__sim;
  return { client, sim, close: () => bounded(client.close(), 'close').catch(() => {}) };
}

// ---------------------------------------------------------------- one case
async function runCase(kind, transport) {
  const name = `ts ${kind} ${transport}`;
  const era = kind === 'v2-modern' ? 'modern' : 'legacy';
  // The user's answer to the next question, and what the simulator said while it was open.
  const ask = { answer: 'accept', asked: [], during: [] };
  const updates = [];
  let c;
  const state = {};
  const onElicit = async (params) => {
    ask.asked.push(params.message);
    ask.during.push(await simState(state.sim, state.alarm, 'armed').catch((e) => `error ${e.message}`));
    return ask.answer === 'accept' ? { action: 'accept', content: { confirm: true } } : { action: ask.answer };
  };
  const onUpdate = (params) => updates.push(params.uri);
  try {
    c = await open(kind, transport, onElicit, onUpdate);
  } catch (e) {
    expect(false, `${name}: connect`, e.message);
    return;
  }
  const { client, sim } = c;
  state.sim = sim;
  try {
    if (kind !== 'v1') {
      const version = client.getNegotiatedProtocolVersion();
      expect(
        era === 'modern' ? version === MODERN && client.getProtocolEra() === 'modern' : version !== MODERN && client.getProtocolEra() === 'legacy',
        `${name}: negotiated ${version} (${client.getProtocolEra()} era)`,
      );
    } else {
      expect(client.getServerVersion()?.name === 'home-mcp', `${name}: initialized with ${brief(client.getServerVersion())}`);
    }

    // Lists, a prompt, a resource.
    const tools = (await bounded(client.listTools(), 'tools/list')).tools.map((t) => t.name);
    expect(['control_device', 'arm_alarm', 'disarm_alarm', 'list_devices'].every((t) => tools.includes(t)), `${name}: tools/list (${tools.length} tools)`, brief(tools));
    const resources = (await bounded(client.listResources(), 'resources/list')).resources.map((r) => r.uri);
    expect(resources.includes(LIGHTING), `${name}: resources/list (${resources.length} resources, ${LIGHTING} among them)`, brief(resources));
    const prompts = (await bounded(client.listPrompts(), 'prompts/list')).prompts.map((p) => p.name);
    expect(prompts.includes('house_status_report'), `${name}: prompts/list (${prompts.length} prompts)`, brief(prompts));
    const prompt = await bounded(client.getPrompt({ name: 'house_status_report' }), 'prompts/get');
    expect(prompt.messages?.length > 0, `${name}: prompts/get house_status_report (${prompt.messages?.length} messages)`);

    // The kitchen light at the simulator, over MCP.
    const light = await control(sim, 'Deckenlicht', 'Küche');
    state.alarm = await control(sim, 'Alarmanlage', 'Zentral');
    const readLight = async () => {
      const r = await bounded(client.readResource({ uri: LIGHTING }, kind === 'v1' ? undefined : { cacheMode: 'bypass' }), 'resources/read');
      const lights = JSON.parse(r.contents[0].text).lights;
      return lights.find((l) => l.uuid === light)?.on;
    };

    // A tool call whose effect the simulator shows.
    const was = (await simState(sim, light, 'active')) === 1;
    const want = !was;
    const r = await bounded(client.callTool({ name: 'control_device', arguments: { device: 'Deckenlicht Küche', action: want ? 'on' : 'off' } }), 'tools/call control_device');
    const env = envelope(r);
    expect(r.isError !== true && env.status === 'success', `${name}: tools/call control_device ${want ? 'on' : 'off'}`, brief(env));
    const now = (await simState(sim, light, 'active')) === 1;
    expect(now === want, `${name}: the simulator shows the kitchen light ${want ? 'on' : 'off'}`, `active=${now}`);
    expect((await readLight()) === want, `${name}: resources/read ${LIGHTING} shows it ${want ? 'on' : 'off'}`);

    // A subscription, then a wall button at the simulator.
    let sub;
    if (era === 'modern') {
      sub = await bounded(client.listen({ resourceSubscriptions: [LIGHTING] }), 'subscriptions/listen');
      expect(sub.honoredFilter?.resourceSubscriptions?.includes(LIGHTING), `${name}: subscriptions/listen acknowledged ${LIGHTING}`, brief(sub.honoredFilter));
    } else {
      const ok = await bounded(client.subscribeResource({ uri: LIGHTING }), 'resources/subscribe');
      expect(ok && typeof ok === 'object', `${name}: resources/subscribe ${LIGHTING} answered`, brief(ok));
    }
    updates.length = 0;
    await simCommand(sim, light, want ? 'off' : 'on');
    // An update still in flight from the tool call may come first: wait (bounded) for an
    // update after which the resource shows what the simulator has.
    const end = Date.now() + WAIT_MS;
    let seen = 0;
    let shown;
    while (Date.now() < end) {
      if (!(await waitFor(() => updates.length > seen, end - Date.now()))) break;
      seen = updates.length;
      shown = await readLight();
      if (shown === !want) break;
    }
    expect(updates.includes(LIGHTING), `${name}: notifications/resources/updated ${LIGHTING} after a wall button at the simulator`, brief(updates));
    expect(shown === !want, `${name}: read after the update shows the light ${!want ? 'on' : 'off'}, as the simulator has it`, `on=${shown}`);
    if (sub) await bounded(sub.close(), 'subscription close');
    else await bounded(client.unsubscribeResource({ uri: LIGHTING }), 'resources/unsubscribe');

    // A confirmation: the user accepts arming, declines disarming.
    await confirmation(name, client, sim, state.alarm, ask);
  } catch (e) {
    expect(false, `${name}: ran to the end`, e.stack?.split('\n').slice(0, 3).join(' | '));
  } finally {
    await c.close();
  }
}

async function waitFor(cond, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return cond();
}

async function confirmation(name, client, sim, alarm, ask) {
  // Modern era: the server asks through an input_required result; legacy: elicitation/create.
  const armed = async () => (await simState(sim, alarm, 'armed')) === 1;
  if (await armed()) {
    expect(false, `${name}: the alarm starts disarmed at the simulator`);
    return;
  }
  ask.answer = 'accept';
  ask.asked.length = 0;
  ask.during.length = 0;
  const r = await bounded(client.callTool({ name: 'arm_alarm', arguments: { alarm: alarm, delayed: false } }), 'tools/call arm_alarm');
  const env = envelope(r);
  const nowArmed = await armed();
  expect(
    ask.asked.length === 1 && ask.asked[0].startsWith('Arm at once the alarm Alarmanlage'),
    `${name}: arm_alarm asks the user once, naming the alarm`,
    `asked=${brief(ask.asked)} answer=${brief(env)}`,
  );
  expect(ask.during[0] === 0, `${name}: nothing armed at the simulator while the question is open`, `armed during the question: ${brief(ask.during)}`);
  expect(nowArmed && env.status === 'success', `${name}: accepted, the simulator shows the alarm armed`, `armed=${nowArmed} ${brief(env)}`);
  if (!nowArmed) return;

  ask.answer = 'decline';
  ask.asked.length = 0;
  const d = envelope(await bounded(client.callTool({ name: 'disarm_alarm', arguments: { alarm, confirm: true } }), 'tools/call disarm_alarm'));
  expect(ask.asked.length === 1 && d.data?.cancelled === true && (await armed()), `${name}: declined disarm_alarm sends nothing (still armed)`, brief(d));

  ask.answer = 'accept';
  const a = envelope(await bounded(client.callTool({ name: 'disarm_alarm', arguments: { alarm } }), 'tools/call disarm_alarm'));
  const still = await armed();
  expect(!still && a.status === 'success', `${name}: accepted disarm_alarm, the simulator shows it disarmed`, brief(a));
}

// ---------------------------------------------------------------- the matrix
const cases = [];
for (const transport of ['http', 'stdio']) {
  for (const kind of ['v2-modern', 'v2-legacy', 'v1']) cases.push([kind, transport]);
}
for (const [kind, transport] of cases) {
  if (opt.only && !`${kind} ${transport}`.includes(opt.only)) continue;
  await runCase(kind, transport);
}
console.log(`\n${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
