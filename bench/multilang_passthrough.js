// Pass-through bolt for bench.multilang: plain Node against Storm's multi-lang protocol (JSON).
// Emits each tuple's values anchored to it (need_task_ids false), then acks it; one write per
// chunk read.
"use strict";
const fs = require("fs");
const path = require("path");
let buffer = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buffer += chunk;
  let out = "";
  let end;
  while ((end = buffer.indexOf("\nend\n")) >= 0) {
    const m = JSON.parse(buffer.slice(0, end));
    buffer = buffer.slice(end + 5);
    if (m.pidDir !== undefined) {
      fs.writeFileSync(path.join(m.pidDir, String(process.pid)), "");
      out += JSON.stringify({pid: process.pid}) + "\nend\n";
    } else if (m.task === -1 && m.stream === "__heartbeat") {
      out += '{"command":"sync"}\nend\n';
    } else {
      out += JSON.stringify({command: "emit", anchors: [m.id], tuple: m.tuple,
                             need_task_ids: false}) + "\nend\n";
      out += JSON.stringify({command: "ack", id: m.id}) + "\nend\n";
    }
  }
  if (out) process.stdout.write(out);
});
process.stdin.on("end", () => process.exit(0));
