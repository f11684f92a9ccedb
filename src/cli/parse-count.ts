import { ChainRuntimeError } from "../index.ts";

/** The range and wording of one numeric option. */
export interface CountOption {
  /** The option as typed, e.g. `--limit`. */
  readonly name: string;
  /** What is counted, plural, e.g. `traces`. */
  readonly unit: string;
  readonly min: number;
  readonly max: number;
  /** A value to show in the message, e.g. `50`. */
  readonly example: number;
}

/**
 * The one parser of the CLI's numeric options: `text` must be decimal digits only (no sign,
 * space, `0x`, exponent or fraction) and name a number from `option.min` to `option.max`.
 * `undefined` (the option not given) gives `undefined`; `--limit=` (an empty value) is refused.
 * @throws ChainRuntimeError `CLI_USAGE` naming the option, its range and what was given.
 */
export function parseCount(option: CountOption, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const value = /^[0-9]+$/.test(text) ? Number(text) : Number.NaN;
  if (!(value >= option.min && value <= option.max)) {
    throw new ChainRuntimeError(
      "CLI_USAGE",
      `${option.name} takes a whole number of ${option.unit} from ${option.min} to ${option.max}, in decimal digits (e.g. ${option.name} ${option.example}); got ${JSON.stringify(text)}.`,
      { details: { option: option.name, value: text } },
    );
  }
  return value;
}
