/**
 * A JSON Schema object as tools declare their inputs and outputs. Kept structural: isochain
 * reads `type`, `properties`, `required`, `items`, `enum`, `description` and friends, and hands
 * the whole object to ajv for validation.
 */
export interface JsonSchema {
  readonly type?: string | readonly string[];
  readonly description?: string;
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly required?: readonly string[];
  readonly items?: JsonSchema | readonly JsonSchema[];
  readonly enum?: readonly unknown[];
  readonly const?: unknown;
  readonly anyOf?: readonly JsonSchema[];
  readonly oneOf?: readonly JsonSchema[];
  readonly allOf?: readonly JsonSchema[];
  readonly additionalProperties?: boolean | JsonSchema;
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
