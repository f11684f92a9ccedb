// Won deals per region, as a CSV emailed to the CEO. The 400-deal query result is far larger
// than the inline limit, so it stays in the blob store: only its artifact ref crosses the bridge.
const won = await tools.crm_query({ stage: "won" });
if (won.status !== "ok") return `query failed: ${won.text}`;
console.log(`won deals: ${won.artifactRef ? "offloaded to " + won.artifactRef : won.text.length + " chars inline"}`);

const rows = won.artifactRef ? artifact(won.artifactRef) : won.structured!.deals;
const [byRegion, csv] = await Promise.all([
  tools.aggregate({ rows, groupBy: "region", sum: "amount" }),
  tools.render_csv({ rows, columns: ["id", "company", "owner", "amount", "region", "closedAt"] }),
]);
if (byRegion.status !== "ok" || csv.status !== "ok") return "aggregation failed";

const mail = await tools.send_email({
  to: "ceo@example.com",
  subject: "Won deals by region",
  body: JSON.stringify(byRegion.structured),
  attachment: csv.artifactRef ? artifact(csv.artifactRef) : csv.text,
});
console.log(`email: ${mail.status}${mail.status === "ok" ? "" : ` (${mail.text})`}`);
return { regions: byRegion.structured, emailed: mail.status === "ok", budgetLeft: budget.remaining };
