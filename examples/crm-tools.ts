/**
 * A small in-memory CRM, as a tool module for `isochain run --tools examples/crm-tools.ts`.
 * Every named export that is a tool is registered; `send_email` is HIGH risk, so it needs
 * approval (`--approve auto|deny|prompt`).
 */
import { defineTool } from "../src/index.ts";

interface Deal {
  id: number;
  company: string;
  owner: string;
  stage: "lead" | "qualified" | "proposal" | "won" | "lost";
  amount: number;
  region: "EMEA" | "AMER" | "APAC";
  closedAt: string | null;
}

const OWNERS = ["ana", "bo", "chen", "dara", "eli"];
const REGIONS = ["EMEA", "AMER", "APAC"] as const;
const STAGES = ["lead", "qualified", "proposal", "won", "lost"] as const;

/** 400 deterministic deals (a linear congruential generator, so every run sees the same data). */
export const DEALS: readonly Deal[] = (() => {
  let state = 42;
  const next = (): number => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  return Array.from({ length: 400 }, (_, index) => {
    const stage = STAGES[Math.floor(next() * STAGES.length)]!;
    const closed = stage === "won" || stage === "lost";
    return {
      id: index + 1,
      company: `Company ${String(index + 1).padStart(3, "0")}`,
      owner: OWNERS[Math.floor(next() * OWNERS.length)]!,
      stage,
      amount: Math.round(1_000 + next() * 99_000),
      region: REGIONS[Math.floor(next() * REGIONS.length)]!,
      closedAt: closed ? `2026-${String(1 + Math.floor(next() * 10)).padStart(2, "0")}-15` : null,
    };
  });
})();

export const crm_query = defineTool({
  name: "crm_query",
  description: "List deals, optionally filtered by stage, owner and region. Returns { count, deals }.",
  inputSchema: {
    type: "object",
    properties: {
      stage: { type: "string", enum: ["lead", "qualified", "proposal", "won", "lost"], description: "Only deals in this stage." },
      owner: { type: "string", description: "Only deals of this sales owner." },
      region: { type: "string", enum: ["EMEA", "AMER", "APAC"] },
      limit: { type: "integer", minimum: 1, maximum: 1000, description: "At most this many deals (default all)." },
    },
    additionalProperties: false,
  } as const,
  outputSchema: {
    type: "object",
    properties: {
      count: { type: "integer" },
      deals: {
        type: "array",
        items: {
          type: "object",
          properties: {
            id: { type: "integer" },
            company: { type: "string" },
            owner: { type: "string" },
            stage: { type: "string" },
            amount: { type: "number" },
            region: { type: "string" },
            closedAt: { type: ["string", "null"] },
          },
          required: ["id", "company", "owner", "stage", "amount", "region", "closedAt"],
        },
      },
    },
    required: ["count", "deals"],
  } as const,
  execute: (args) => {
    const deals = DEALS.filter(
      (deal) =>
        (args.stage === undefined || deal.stage === args.stage) &&
        (args.owner === undefined || deal.owner === args.owner) &&
        (args.region === undefined || deal.region === args.region),
    ).slice(0, args.limit ?? DEALS.length);
    return { count: deals.length, deals };
  },
});

export const aggregate = defineTool({
  name: "aggregate",
  description: "Group rows (an array of objects, or an artifact holding one) by a field and sum another.",
  inputSchema: {
    type: "object",
    properties: {
      rows: { description: "The rows, or { $artifact: ref } of a crm_query result." },
      groupBy: { type: "string" },
      sum: { type: "string" },
    },
    required: ["rows", "groupBy", "sum"],
    additionalProperties: false,
  } as const,
  execute: (args) => {
    const rows = rowsOf(args.rows);
    const totals: Record<string, { count: number; total: number }> = {};
    for (const row of rows) {
      const key = String(row[args.groupBy]);
      const bucket = (totals[key] ??= { count: 0, total: 0 });
      bucket.count += 1;
      bucket.total += Number(row[args.sum]) || 0;
    }
    return { groups: Object.entries(totals).map(([key, value]) => ({ key, ...value })).sort((a, b) => b.total - a.total) };
  },
});

export const render_csv = defineTool({
  name: "render_csv",
  description: "Render rows (an array of objects, or an artifact holding one) as CSV text.",
  inputSchema: {
    type: "object",
    properties: {
      rows: { description: "The rows, or { $artifact: ref }." },
      columns: { type: "array", items: { type: "string" }, description: "Columns in order (default: keys of the first row)." },
    },
    required: ["rows"],
    additionalProperties: false,
  } as const,
  execute: (args) => {
    const rows = rowsOf(args.rows);
    const columns = args.columns ?? Object.keys(rows[0] ?? {});
    const cell = (value: unknown): string => {
      const text = value === null || value === undefined ? "" : String(value);
      return /[",\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
    };
    const csv = [columns.join(","), ...rows.map((row) => columns.map((column) => cell(row[column])).join(","))].join("\n");
    return { content: [{ type: "text" as const, text: csv }] };
  },
});

/** Emails "sent" by this process, so tests and demos can check nothing was sent twice. */
export const OUTBOX: { to: string; subject: string; bytes: number }[] = [];

export const send_email = defineTool({
  name: "send_email",
  description: "Send an email with an optional attachment (text or { $artifact: ref }). Needs approval.",
  risk: "high",
  inputSchema: {
    type: "object",
    properties: {
      to: { type: "string", format: "email" },
      subject: { type: "string", minLength: 1 },
      body: { type: "string" },
      attachment: { description: "Text or { $artifact: ref } of a render_csv result." },
    },
    required: ["to", "subject"],
    additionalProperties: false,
  } as const,
  execute: (args) => {
    const bytes = typeof args.attachment === "string" ? Buffer.byteLength(args.attachment) : 0;
    OUTBOX.push({ to: args.to, subject: args.subject, bytes });
    return { sent: true, to: args.to, attachmentBytes: bytes };
  },
});

/** Accepts rows as an array, a crm_query result object, or JSON text of either (a resolved artifact). */
function rowsOf(value: unknown): Record<string, unknown>[] {
  const parsed = typeof value === "string" ? (JSON.parse(value) as unknown) : value;
  if (Array.isArray(parsed)) return parsed as Record<string, unknown>[];
  if (parsed && typeof parsed === "object" && Array.isArray((parsed as { deals?: unknown }).deals)) {
    return (parsed as { deals: Record<string, unknown>[] }).deals;
  }
  throw new TypeError("rows must be an array of objects, a crm_query result, or an artifact of one");
}
