// Drives Loxone's own JavaScript client, lxcommunicator (npm), against a running Miniserver:
// the simulator in CI (tests/thirdparty/run.sh), or a real one.
//
//   node lxcommunicator_check.js HOST:PORT USER PASSWORD
//
// Steps, each checked:
//  1. open a WebSocket and acquire a token (getPublicKey, keyexchange, getkey2 and getjwt sent
//     encrypted with "fenc", whose answers the library AES-decrypts);
//  2. download data/LoxAPP3.json over the socket and pick the first Switch that is not secured;
//  3. enablebinstatusupdate (sent encrypted with "enc", the library's default) and receive the
//     initial value and text tables, which must hold the switch's "active" state;
//  4. read the switch through the dev/ (XML) flavour: over HTTP with the library's token
//     (?autht=, §3.3), since the library JSON-parses every socket answer and rejects XML with
//     PARSING_MESSAGE_FAILED (checked too); the value must be the events';
//  5. switch it on (plain), off ("enc") and on ("fenc"), off first when it is on: each answer
//     must be code 200, accepted by the library (its promise resolves), and followed by a
//     value event with the commanded value;
//  6. close, then open a second socket with the token from step 1 (authwithtoken hashed with the
//     one-time key the library decrypts from the keyexchange answer) and read a value with it.
// Exits 0 when all pass; otherwise prints what failed and exits 1. Never runs longer than
// DEADLINE_MS.
"use strict";

const DEADLINE_MS = 60000;
const EVENT_WAIT_MS = 5000;

const [host, user, password] = process.argv.slice(2);
if (!host || !user || password === undefined) {
    console.error("usage: node lxcommunicator_check.js HOST:PORT USER PASSWORD");
    process.exit(2);
}

const deadline = setTimeout(() => fail(`no verdict within ${DEADLINE_MS / 1000} s`), DEADLINE_MS);

function fail(why) {
    console.error(`lxcommunicator: FAIL: ${why}`);
    process.exit(1);
}

function step(what) {
    console.log(`lxcommunicator: ${what}`);
}

// A promise rejection from the library is an object, a number (a SupportCode) or an Error.
function describe(e) {
    if (e instanceof Error) return e.stack || e.message;
    try {
        return JSON.stringify(e);
    } catch (_) {
        return String(e);
    }
}

const LxCommunicator = require("lxcommunicator");
const WebSocketConfig = LxCommunicator.WebSocketConfig;
const EncryptionType = { NONE: 0, REQUEST: 1, REQUEST_RESPONSE_VAL: 2 }; // vendor/EncryptionType.js

// Value events by state UUID, and waiters for the next event of a UUID.
const values = new Map();
const texts = new Map();
let waiters = [];

function onEvents(socket, events, type) {
    for (const ev of events || []) {
        if (type === 2) {
            values.set(ev.uuid, ev.value);
        } else if (type === 3) {
            texts.set(ev.uuid, ev.text);
        }
    }
    if (type === 2) {
        const still = [];
        for (const w of waiters) {
            const hit = (events || []).find((ev) => ev.uuid === w.uuid && ev.value === w.value);
            if (hit) {
                w.resolve();
            } else {
                still.push(w);
            }
        }
        waiters = still;
    }
}

// Resolves when a value event sets `uuid` to `value` (registered before the command is sent).
function nextValue(uuid, value) {
    let timer;
    const p = new Promise((resolve, reject) => {
        const w = { uuid, value, resolve };
        waiters.push(w);
        timer = setTimeout(() => {
            waiters = waiters.filter((x) => x !== w);
            reject(new Error(`no value event ${uuid} = ${value} within ${EVENT_WAIT_MS} ms`));
        }, EVENT_WAIT_MS);
    });
    return p.finally(() => clearTimeout(timer));
}

let token = null;

function newSocket() {
    const config = new WebSocketConfig(
        WebSocketConfig.protocol.WS,
        "098802e1-02b4-603c-ffffeee000d80cfd",
        "home-mcp third-party check",
        WebSocketConfig.permission.APP,
        false
    );
    config.delegate = {
        socketOnTokenReceived: (socket, result) => {
            token = result;
        },
        socketOnEventReceived: onEvents,
    };
    return new LxCommunicator.WebSocket(config);
}

function code(answer) {
    return answer && answer.LL ? parseInt(answer.LL.Code || answer.LL.code, 10) : NaN;
}

async function command(socket, cmd, encryption, label) {
    let answer;
    try {
        answer = await socket.send(cmd, encryption);
    } catch (e) {
        fail(`${label} ${cmd}: the library rejected the answer: ${describe(e)}`);
    }
    if (code(answer) !== 200) {
        fail(`${label} ${cmd}: code ${code(answer)} in ${describe(answer)}`);
    }
    return answer;
}

async function main() {
    const socket = newSocket();
    try {
        await socket.open(host, user, password);
    } catch (e) {
        fail(`login (token acquisition) failed: ${describe(e)}`);
    }
    if (!token || !token.token || !token.validUntil) {
        fail(`logged in but no token was delivered: ${describe(token)}`);
    }
    step(`logged in; token valid until ${token.validUntil} (s since 2009), rights ${token.tokenRights}`);

    let structure;
    try {
        const file = await socket.send("data/LoxAPP3.json");
        structure = typeof file === "string" ? JSON.parse(file) : null;
    } catch (e) {
        fail(`structure file: ${describe(e)}`);
    }
    if (!structure || !structure.controls) {
        fail("structure file: no controls");
    }
    const entry = Object.entries(structure.controls).find(
        ([, c]) => c.type === "Switch" && !c.isSecured && c.states && c.states.active
    );
    if (!entry) {
        fail("structure file: no unsecured Switch with an active state");
    }
    const [uuid, sw] = entry;
    const active = sw.states.active;
    step(`structure file: ${Object.keys(structure.controls).length} controls; using Switch "${sw.name}" (${uuid})`);

    await command(socket, "jdev/sps/enablebinstatusupdate", undefined, "enablebinstatusupdate (enc)");
    // The initial tables follow the answer.
    const until = Date.now() + EVENT_WAIT_MS;
    while (!values.has(active) && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 50));
    }
    if (!values.has(active)) {
        fail(`initial value table lacks the switch's active state ${active} (${values.size} values seen)`);
    }
    step(`initial tables: ${values.size} values, ${texts.size} texts; ${sw.name} active = ${values.get(active)}`);

    // dev/ (XML): the library cannot read it over the socket (it JSON-parses every answer) ...
    try {
        await socket.send(`dev/sps/io/${uuid}/state`, EncryptionType.NONE);
        fail("the library accepted an XML answer it cannot parse (did it learn XML?)");
    } catch (e) {
        step(`dev/ over the socket: the library rejects the XML answer (${describe(e)}), as it would from a Miniserver`);
    }
    // ... so it goes over HTTP with the library's token (plain token, allowed since 11.2).
    const xml = await new Promise((resolve, reject) => {
        const path = `/dev/sps/io/${uuid}/state?autht=${encodeURIComponent(token.token)}&user=${encodeURIComponent(user)}`;
        require("http")
            .get({ host: host.split(":")[0], port: Number(host.split(":")[1] || 80), path }, (res) => {
                let body = "";
                res.setEncoding("utf8");
                res.on("data", (c) => (body += c));
                res.on("end", () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`HTTP ${res.statusCode}: ${body}`))));
            })
            .on("error", reject);
    }).catch((e) => fail(`dev/ read over HTTP with the token: ${describe(e)}`));
    const xmlCode = /\bCode="(\d+)"/.exec(xml);
    const xmlValue = /\bvalue="([^"]*)"/.exec(xml);
    if (!xml.startsWith("<?xml") || !xmlCode || xmlCode[1] !== "200" || !xmlValue || Number(xmlValue[1]) !== values.get(active)) {
        fail(`dev/ read: ${xml} (expected value ${values.get(active)})`);
    }
    step(`dev/ read over HTTP with the token: ${xml.split("\n")[1]}`);

    // On, off, on (off first when it is on, so every command changes something).
    const plan = [
        ["plain", EncryptionType.NONE, "on"],
        ["enc", EncryptionType.REQUEST, "off"],
        ["fenc", EncryptionType.REQUEST_RESPONSE_VAL, "on"],
    ];
    if (values.get(active) === 1) {
        plan.unshift(["plain", EncryptionType.NONE, "off"]);
    }
    for (const [label, enc, word] of plan) {
        const want = word === "on" ? 1 : 0;
        const event = nextValue(active, want);
        const answer = await command(socket, `jdev/sps/io/${uuid}/${word}`, enc, label);
        try {
            await event;
        } catch (e) {
            fail(`${label} command ${word}: ${e.message}`);
        }
        step(`${label} command ${word}: code 200 (value ${JSON.stringify(answer.LL.value)}), event active = ${want}`);
    }
    socket.close();

    // Second connection: authenticate with the token instead of the password.
    const again = newSocket();
    try {
        await again.open(host, user, password, token.token);
    } catch (e) {
        fail(`login with the token (authwithtoken) failed: ${describe(e)}`);
    }
    const read = await command(again, `jdev/sps/io/${uuid}/state`, EncryptionType.REQUEST, "enc read");
    step(`logged in again with the token; ${sw.name} reads ${JSON.stringify(read.LL.value)}`);
    again.close();

    clearTimeout(deadline);
    console.log("lxcommunicator: PASS");
    process.exit(0);
}

main().catch((e) => fail(describe(e)));
