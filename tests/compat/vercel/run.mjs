// One scenario, from the command line: node run.mjs <scenario> <provider> <url> <model> [args...]
// Prints the result as one JSON line; exit 1 when the scenario threw.
import { runScenario } from './common.mjs';

const [scenario, provider, url, model, ...args] = process.argv.slice(2);
const out = await runScenario({ scenario, provider, url, model, args });
process.stdout.write(JSON.stringify(out) + '\n');
if (out && out.error !== undefined) process.exitCode = 1;
