// Many scenarios in one Node process (the test suite's way: no start-up per test). Reads one
// JSON request {scenario, provider, url, model, args} per stdin line and answers each, in
// order, with one stdout line "@@result <json>"; other output is not a result.
import { createInterface } from 'node:readline';
import { runScenario } from './common.mjs';

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const out = await runScenario(JSON.parse(line));
  process.stdout.write(`@@result ${JSON.stringify(out)}\n`);
}
