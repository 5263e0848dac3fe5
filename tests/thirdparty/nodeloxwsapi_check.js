// Drives node-lox-ws-api (npm), the WebSocket client behind the older ioBroker and Node-RED
// Loxone adapters, against a running Miniserver: the simulator in CI (tests/thirdparty/run.sh,
// started with --hash-alg sha1), or a real one.
//
//   node nodeloxwsapi_check.js HOST:PORT USER PASSWORD
//
// It uses the parts of the protocol the other drivers do not: the legacy token command
// (jdev/sys/gettoken, SHA1 hashes), every command inside jdev/sys/enc with a NUL and PKCS#7
// padding, jdev/sps/LoxAPPversion3 encrypted, and the structure file over the socket.
// Steps, each checked:
//  1. GET /jdev/cfg/api (version >= 9 selects token auth), getPublicKey, keyexchange,
//     getkey2, gettoken: the library emits "authorized";
//  2. LoxAPPversion3, then data/LoxAPP3.json over the socket: pick the first Switch that is
//     not secured;
//  3. enablebinstatusupdate: the initial value table must hold the switch's "active" state;
//  4. read the switch through the dev/ (XML) flavour over the socket: value = the event's;
//  5. switch it on, off and on (the library's send_cmd, encrypted): each answer code 200 with
//     the control decrypted back to the command, each followed by a value event.
// Exits 0 when all pass; otherwise prints what failed and exits 1. Never runs longer than
// DEADLINE_MS.
//
// Library quirks worked around here: it gives no promise per command, so answers are matched
// by their (decrypted) control; XML answers reach "message_text" only when sent unencrypted
// (its decryption path expects JSON), so the dev/ read goes out plain; it keeps a token-refresh
// timer and, with reconnect off, still logs to the console on close, so the driver exits
// itself.
"use strict";

const DEADLINE_MS = 60000;
const EVENT_WAIT_MS = 5000;

const [host, user, password] = process.argv.slice(2);
if (!host || !user || password === undefined) {
    console.error("usage: node nodeloxwsapi_check.js HOST:PORT USER PASSWORD");
    process.exit(2);
}

const deadline = setTimeout(() => fail(`no verdict within ${DEADLINE_MS / 1000} s`), DEADLINE_MS);

function fail(why) {
    console.error(`node-lox-ws-api: FAIL: ${why}`);
    process.exit(1);
}

function step(what) {
    console.log(`node-lox-ws-api: ${what}`);
}

const LoxAPI = require("node-lox-ws-api");
const api = new LoxAPI(host, user, password, false, "Token-Enc");

const values = new Map();
const texts = [];
let structure = null;
let authorized = false;
const seen = []; // every event and message, for waiters

function changed() {
    for (const w of waiters.slice()) {
        const hit = w.test();
        if (hit !== undefined) {
            waiters.splice(waiters.indexOf(w), 1);
            clearTimeout(w.timer);
            w.resolve(hit);
        }
    }
}

let waiters = [];

// Resolves with the first non-undefined result of `test`, checked after every event.
function until(what, test) {
    return new Promise((resolve, reject) => {
        const now = test();
        if (now !== undefined) {
            resolve(now);
            return;
        }
        const w = { test, resolve };
        w.timer = setTimeout(() => {
            waiters = waiters.filter((x) => x !== w);
            reject(new Error(`${what}: nothing within ${EVENT_WAIT_MS} ms`));
        }, EVENT_WAIT_MS);
        waiters.push(w);
    });
}

api.on("auth_failed", (m) => fail(`login failed: ${JSON.stringify(m)}`));
api.on("connect_failed", (e, reason) => fail(`connect failed: ${e} ${reason}`));
api.on("authorized", () => {
    authorized = true;
    changed();
});
api.on("get_structure_file", (data) => {
    structure = data;
    changed();
});
api.on("update_event_value", (uuid, value) => {
    values.set(uuid, value);
    seen.push({ uuid, value });
    changed();
});
api.on("message_text", (m) => {
    texts.push(m);
    changed();
});

async function main() {
    api.connect();
    await until("login (gettoken)", () => (authorized ? true : undefined));
    step("logged in with the legacy token command (gettoken, SHA1, jdev/sys/enc)");

    await until("structure file over the socket", () => (structure ? true : undefined));
    const entry = Object.entries(structure.controls || {}).find(
        ([, c]) => c.type === "Switch" && !c.isSecured && c.states && c.states.active
    );
    if (!entry) {
        fail("structure file: no unsecured Switch with an active state");
    }
    const [uuid, sw] = entry;
    const active = sw.states.active;
    step(`structure file: ${Object.keys(structure.controls).length} controls; using Switch "${sw.name}" (${uuid})`);

    await until(`initial value table with ${active}`, () => (values.has(active) ? true : undefined));
    step(`initial tables: ${values.size} values; ${sw.name} active = ${values.get(active)}`);

    // dev/ (XML) read over the socket, sent plain.
    const xmlControl = `dev/sps/io/${uuid}/state`;
    const from = texts.length;
    api.send_command(xmlControl, false);
    const xml = await until("XML answer to the dev/ read", () =>
        texts
            .slice(from)
            .map((m) => (typeof m.data === "string" ? m.data : ""))
            .find((t) => t.startsWith("<?xml") && t.includes(`control="${xmlControl}"`))
    );
    const code = /\bCode="(\d+)"/.exec(xml);
    const value = /\bvalue="([^"]*)"/.exec(xml);
    if (!code || code[1] !== "200" || !value || Number(value[1]) !== values.get(active)) {
        fail(`dev/ read: ${xml} (expected value ${values.get(active)})`);
    }
    step(`dev/ read: ${xml.split("\n")[1]}`);

    for (const word of ["on", "off", "on"]) {
        const want = word === "on" ? 1 : 0;
        const mark = seen.length;
        const answerFrom = texts.length;
        api.send_cmd(uuid, word);
        const answer = await until(`answer to encrypted ${word}`, () =>
            texts.slice(answerFrom).find((m) => m.control === `dev/sps/io/${uuid}/${word}`)
        );
        if (String(answer.code) !== "200") {
            fail(`${word}: code ${answer.code} in ${JSON.stringify(answer.data)}`);
        }
        await until(`value event ${active} = ${want}`, () =>
            seen.slice(mark).find((e) => e.uuid === active && e.value === want) ? true : undefined
        );
        step(`encrypted ${word}: code 200, control decrypted to ${answer.control}, event active = ${want}`);
    }

    clearTimeout(deadline);
    api.abort();
    console.log("node-lox-ws-api: PASS");
    process.exit(0);
}

main().catch((e) => fail(e && e.stack ? e.stack : String(e)));
