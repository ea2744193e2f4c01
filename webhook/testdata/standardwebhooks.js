// Runs the official Standard Webhooks JavaScript library (npm
// standardwebhooks) on cases read as JSON from stdin, and writes one
// JSON result per case to stdout. Usage:
//   node standardwebhooks.js MODULE_DIR < cases.json
// where MODULE_DIR is node_modules/standardwebhooks. Cases:
//   {"op":"verify","secret":"whsec_…","headers":{…},"body_b64":"…"}
//     → {"ok":true} or {"ok":false,"error":"…"}
//   {"op":"sign","secret":"whsec_…","id":"…","ts":1700000000,"body_b64":"…"}
//     → {"signature":"v1,…"}
// Bodies travel as base64 and reach the library as a Buffer, as an HTTP
// server would hand them over.
"use strict";
const { Webhook } = require(process.argv[2]);

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  const out = JSON.parse(input).map((c) => {
    const body = Buffer.from(c.body_b64, "base64");
    const wh = new Webhook(c.secret);
    if (c.op === "sign") {
      return { signature: wh.sign(c.id, new Date(c.ts * 1000), body) };
    }
    try {
      wh.verify(body, c.headers, { jsonParse: false });
      return { ok: true };
    } catch (e) {
      return { ok: false, error: String(e.message) };
    }
  });
  process.stdout.write(JSON.stringify(out));
});
