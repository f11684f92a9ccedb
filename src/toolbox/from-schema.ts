/**
 * `FromSchema<S>`: the TypeScript type of the values a JSON Schema literal accepts. Compact on
 * purpose: it reads the keywords tools use (`type`, `properties`, `required`, `items`, `enum`,
 * `const`, `anyOf`, `oneOf`, `additionalProperties`, and `nullable` as ajv reads it) and falls
 * back to `unknown` for anything else (`$ref`, `not`, `if`/`then`, a schema widened to plain
 * `JsonSchema`).
 *
 * Precedence: `const` > `enum` > `anyOf` > `oneOf` > `type`. A `type` array is a union.
 * `anyOf`/`oneOf` beside `type` or `properties` narrows them: the two are intersected, so
 * `{ properties: { id, email }, anyOf: [{ required: ["id"] }, { required: ["email"] }] }` keeps
 * its members (a branch that only requires keys adds nothing a type can say). `nullable: true`
 * adds `null`.
 * @module
 */

/** Flattens an intersection into one object type, for readable hovers. */
type Flatten<T> = { [K in keyof T]: T[K] } & {};

type RequiredKeys<S> = S extends { readonly required: readonly (infer R)[] } ? R : never;

/**
 * The extra keys an object schema allows, as an index signature (or nothing). Its type also
 * admits the declared members' types: intersected with the members, a narrower index type would
 * make every member `never` (as the declarations do, see render-declarations.ts).
 */
type ExtraProperties<S, P> = S extends { readonly additionalProperties: infer A }
  ? A extends false
    ? unknown
    : A extends true
      ? { [key: string]: unknown }
      : { [key: string]: FromSchema<A> | { [K in keyof P]: FromSchema<P[K]> }[keyof P] | undefined }
  : unknown;

type FromObject<S> = S extends { readonly properties: infer P }
  ? Flatten<
      { -readonly [K in keyof P as K extends RequiredKeys<S> ? K : never]: FromSchema<P[K]> } & {
        -readonly [K in keyof P as K extends RequiredKeys<S> ? never : K]?: FromSchema<P[K]>;
      }
    > &
      ExtraProperties<S, P>
  : S extends { readonly additionalProperties: false }
    ? Record<string, never>
    : S extends { readonly additionalProperties: infer A extends object }
      ? { [key: string]: FromSchema<A> }
      : Record<string, unknown>;

/**
 * Arrays. `items: [...]` is read as draft-07 validates it (the invoker's draft): each position
 * typed when present, none required (`minItems` is not read), more items allowed unless
 * `additionalItems: false`.
 */
type FromArray<S> = S extends { readonly items: infer I }
  ? I extends readonly unknown[]
    ? S extends { readonly additionalItems: false }
      ? { -readonly [K in keyof I]?: FromSchema<I[K]> }
      : [...{ -readonly [K in keyof I]?: FromSchema<I[K]> }, ...unknown[]]
    : FromSchema<I>[]
  : unknown[];

type FromTypeName<T, S> = T extends "string"
  ? string
  : T extends "number" | "integer"
    ? number
    : T extends "boolean"
      ? boolean
      : T extends "null"
        ? null
        : T extends "array"
          ? FromArray<S>
          : T extends "object"
            ? FromObject<S>
            : unknown;

/**
 * The type of the values JSON Schema `S` accepts. Write the schema `as const` (or pass it to
 * `defineTool`, whose type parameter is `const`) so its literals survive.
 *
 * @example
 * ```ts
 * const schema = { type: "object", properties: { q: { type: "string" } }, required: ["q"] } as const;
 * type Args = FromSchema<typeof schema>; // { q: string }
 * ```
 */
export type FromSchema<S> = S extends false
  ? never
  : S extends { readonly nullable: true }
    ? // ajv's nullable lets null past `type`, not past `enum` or `const` (an enum must list null itself).
      S extends { readonly enum: unknown } | { readonly const: unknown }
      ? FromCore<S>
      : FromCore<S> | null
    : FromCore<S>;

type FromCore<S> = S extends { readonly const: infer C }
  ? C
  : S extends { readonly enum: readonly (infer E)[] }
    ? E
    : S extends { readonly anyOf: readonly (infer U)[] }
      ? WithSiblings<S, FromSchema<U>>
      : S extends { readonly oneOf: readonly (infer U)[] }
        ? WithSiblings<S, FromSchema<U>>
        : FromType<S>;

/** `S`'s `type` (or its `properties`, without a `type`) as a type; `unknown` when it has neither. */
type FromType<S> = S extends { readonly type: readonly (infer T)[] }
  ? FromTypeName<T, S>
  : S extends { readonly type: infer T }
    ? FromTypeName<T, S>
    : S extends { readonly properties: object }
      ? FromObject<S>
      : unknown;

/** The branches' type `B`, narrowing what `S`'s own `type` or `properties` say, when it says any. */
type WithSiblings<S, B> = S extends { readonly type: unknown } | { readonly properties: object } ? FromType<S> & B : B;
