/** Characters a POSIX shell reads as themselves in a word: a word of only these needs no quotes. */
const PLAIN_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;

/**
 * `text` as one word of a POSIX shell command line: as it is when it holds nothing the shell
 * reads specially, else in single quotes (a `'` in it written `'\''`). For the commands the CLI
 * prints for the user to paste: a path with a space, `$` or `;` must reach isochain as it was given.
 */
export function shellWord(text: string): string {
  return PLAIN_WORD.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}
