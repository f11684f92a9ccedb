// Which owner has the most won revenue in each region? Sequential and parallel calls mixed.
const regions = ["EMEA", "AMER", "APAC"] as const;
const results = await Promise.all(regions.map((region) => tools.crm_query({ stage: "won", region })));
const best: Record<string, { owner: string; total: number }> = {};
for (const [index, result] of results.entries()) {
  if (result.status !== "ok") continue;
  const rows = result.artifactRef ? artifact(result.artifactRef) : result.structured!.deals;
  const grouped = await tools.aggregate({ rows, groupBy: "owner", sum: "amount" });
  const top = (grouped.structured as { groups: { key: string; total: number }[] } | undefined)?.groups[0];
  if (top) best[regions[index]!] = { owner: top.key, total: top.total };
}
return best;
