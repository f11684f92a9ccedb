import { AutoApprovalHandler, type ApprovalHandler, ChainRuntimeError, CliApprovalHandler } from "../index.ts";

/** The approval handler of `--approve <mode>` (not `suspend`, which is a mode of the chain). */
export function approvalHandlerFor(mode: string | undefined): ApprovalHandler {
  const chosen = mode ?? (process.stdin.isTTY ? "prompt" : "deny");
  switch (chosen) {
    case "auto":
      return new AutoApprovalHandler("approved");
    case "deny":
      // A handler that says no (not none): the script reads that the approver denied the call,
      // not that nothing was configured.
      return new AutoApprovalHandler("denied");
    case "prompt":
      return new CliApprovalHandler({ input: process.stdin, output: process.stderr });
    default:
      throw new ChainRuntimeError("CLI_USAGE", `--approve must be auto, deny, prompt or suspend; got "${chosen}"`);
  }
}
