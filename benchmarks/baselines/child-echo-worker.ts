/**
 * The child side of the child-process baseline: reads newline-delimited JSON frames
 * `{ "id": n, "op": "echo" | "ack", "payload": ... }` from stdin and answers each on stdout,
 * `echo` with the payload, `ack` without it. Nothing else: the floor of a process-isolated driver.
 * @module
 */
import { LineSplitter } from "./line-splitter.ts";

let out = "";
const splitter = new LineSplitter((line) => {
  const frame = JSON.parse(line) as { id: number; op: string; payload?: unknown };
  out += frame.op === "echo" ? `${JSON.stringify({ id: frame.id, payload: frame.payload })}\n` : `{"id":${frame.id}}\n`;
});

process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk: string) => {
  splitter.push(chunk);
  if (out === "") return;
  process.stdout.write(out);
  out = "";
});
process.stdin.on("end", () => process.exit(0));
