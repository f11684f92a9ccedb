/**
 * The body of a sandbox child process (loaded by `sandbox-child.ts`): opens the host pipe on
 * fd 3 and serves chains until it closes (the host exited or retired this child), then exits.
 * @module
 */
import { Socket } from "node:net";
import { ChildLoop } from "./child-loop.ts";

/** The file descriptor of the host pipe (stdio slot 3). */
const PIPE_FD = 3;

new ChildLoop(new Socket({ fd: PIPE_FD, readable: true, writable: true }), (reason) => {
  if (reason !== undefined) process.stderr.write(`isochain sandbox child: ${reason}\n`);
  process.exit(reason === undefined ? 0 : 1);
});
