// generateText with a tool the SDK executes and stopWhen: the loop runs through the gateway.
// Result {text, steps, toolCalls: [{name, input}], toolResults: [output]}.
import { generateText, stepCountIs, tool } from 'ai';
import { z } from 'zod';

const weather = tool({
  description: 'The current weather in a city',
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => ({ city, celsius: 21 }),
});

export default async function (model) {
  const r = await generateText({
    model,
    prompt: 'What is the weather in Paris?',
    maxRetries: 0,
    stopWhen: stepCountIs(4),
    tools: { weather },
  });
  return {
    text: r.text,
    steps: r.steps.length,
    toolCalls: r.steps.flatMap((s) => s.toolCalls).map((c) => ({ name: c.toolName, input: c.input })),
    toolResults: r.steps.flatMap((s) => s.toolResults).map((t) => t.output),
  };
}
