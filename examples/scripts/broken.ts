// A script with a runtime error on line 4: the error comes back with the line, column and a code frame.
const deals = await tools.crm_query({ stage: "lost", limit: 3 });
const first = deals.structured?.deals[0];
return first.notAField.length;
