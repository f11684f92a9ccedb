import { describeThrown } from "../index.ts";

/**
 * Why a file operation on a path the user gave failed, in words (`no such file`, `it is a
 * folder`), for a message that already names the path; else what the error says. Never throws.
 */
export function fileErrorReason(error: unknown): string {
  switch ((error as { code?: unknown } | null)?.code) {
    case "ENOENT":
      return "no such file";
    case "ENOTDIR":
      return "a part of the path is not a folder";
    case "EISDIR":
      return "it is a folder";
    case "EACCES":
    case "EPERM":
      return "permission denied";
    case "ELOOP":
      return "too many symbolic links";
    case "EROFS":
      return "it is on a read-only file system";
    case "ENOSPC":
      return "no space left on the device";
    default:
      return describeThrown(error);
  }
}
