// A count bolt written against Storm's multi-lang protocol (JSON), plain Node 20.
// Takes [word, sid, pos]; counts each (sid, pos) once in a durable journal
// counts-<task>.log in test.output.dir ("<sid> <pos> <word> <count>" lines, fsync'd before
// the ack, reloaded at start), emits [word, count] anchored to the input (answered with the
// target task ids, which it reads), answers heartbeats with sync, logs at level 3 once.
"use strict";
const fs = require("fs");
const path = require("path");

let buffer = "";
let journal = null;
const counts = new Map();
const seen = new Set();
let waitingTaskIds = 0;

function send(message) {
  process.stdout.write(JSON.stringify(message) + "\nend\n");
}

function handshake(message) {
  fs.writeFileSync(path.join(message.pidDir, String(process.pid)), "");
  const task = message.context.taskid;
  const file = path.join(message.conf["test.output.dir"], `counts-${task}.log`);
  if (fs.existsSync(file)) {
    const text = fs.readFileSync(file, "utf8");
    for (const line of text.slice(0, text.lastIndexOf("\n") + 1).split("\n")) {
      if (!line) continue;
      const [sid, pos, word, n] = line.split(" ");
      seen.add(`${sid} ${pos}`);
      counts.set(word, Number(n));
    }
  }
  journal = fs.openSync(file, "a");
  send({pid: process.pid});
  send({command: "log", msg: `count task ${task} ready`, level: 3});
}

function onTuple(t) {
  if (t.stream === "__heartbeat" && t.task === -1) {
    send({command: "sync"});
    return;
  }
  if (t.stream === "__tick") {
    send({command: "ack", id: t.id});
    return;
  }
  const [word, sid, pos] = t.tuple;
  const key = `${sid} ${pos}`;
  if (!seen.has(key)) {
    seen.add(key);
    const n = (counts.get(word) || 0) + 1;
    counts.set(word, n);
    fs.writeSync(journal, `${sid} ${pos} ${word} ${n}\n`);
    fs.fsyncSync(journal);
  }
  send({command: "emit", anchors: [t.id], tuple: [word, counts.get(word)]});
  waitingTaskIds += 1;
  send({command: "ack", id: t.id});
}

function onMessage(message) {
  if (Array.isArray(message)) {        // the task ids of an earlier emit
    waitingTaskIds -= 1;
    return;
  }
  if (message.pidDir !== undefined) handshake(message);
  else onTuple(message);
}

process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buffer += chunk;
  let end;
  while ((end = buffer.indexOf("\nend\n")) >= 0) {
    const text = buffer.slice(0, end);
    buffer = buffer.slice(end + 5);
    if (text.trim()) onMessage(JSON.parse(text));
  }
});
process.stdin.on("end", () => process.exit(0));
