/**
 * A JSON Schema object as tools declare their inputs and outputs (draft-07). Kept structural:
 * isochain reads `type`, `properties`, `required`, `items`, `enum`, `description` and friends,
 * and hands the whole object to ajv for validation. A subschema may be `true` (anything) or
 * `false` (nothing), as draft-07 allows.
 */
export interface JsonSchema {
  /** The JSON type (or types) a value must have: `"string"`, `"object"`, ... */
  readonly type?: string | readonly string[];
  /** What the value is, for the model: printed in the declarations it reads. */
  readonly description?: string;
  /** An object's members, each with its own schema. */
  readonly properties?: Readonly<Record<string, JsonSchema | boolean>>;
  /** The members an object must have. */
  readonly required?: readonly string[];
  /** An array's items: one schema for all, or one per position (a tuple). */
  readonly items?: JsonSchema | boolean | readonly (JsonSchema | boolean)[];
  /** The values allowed, compared as JSON. */
  readonly enum?: readonly unknown[];
  /** The one value allowed. */
  readonly const?: unknown;
  /** Valid against at least one of these. */
  readonly anyOf?: readonly (JsonSchema | boolean)[];
  /** Valid against exactly one of these. */
  readonly oneOf?: readonly (JsonSchema | boolean)[];
  /** Valid against all of these. */
  readonly allOf?: readonly (JsonSchema | boolean)[];
  /** Members not in `properties`: allowed (`true`, the default), refused (`false`) or checked against a schema. */
  readonly additionalProperties?: boolean | JsonSchema;
  /** A value the tool uses when the member is left out (not filled in by validation). */
  readonly default?: unknown;
  readonly [keyword: string]: unknown;
}

/** The schema of a tool's arguments: always an object schema. */
export interface ObjectJsonSchema extends JsonSchema {
  readonly type: "object";
}

/** A JSON value: what crosses the bridge, what traces store. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };
