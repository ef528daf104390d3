// streamText with a tool the SDK executes and stopWhen: a streamed tool loop through the
// gateway. Result {text, steps, toolCalls: [{name, input}], toolResults: [output]}.
import { stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';

const weather = tool({
  description: 'The current weather in a city',
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => ({ city, celsius: 21 }),
});

export default async function (model) {
  const errors = [];
  const r = streamText({
    model,
    prompt: 'What is the weather in Paris?',
    maxRetries: 0,
    stopWhen: stepCountIs(4),
    tools: { weather },
    onError: ({ error }) => errors.push(error),
  });
  let text = '';
  for await (const delta of r.textStream) text += delta;
  if (errors.length) throw errors[0];
  const steps = await r.steps;
  return {
    text,
    steps: steps.length,
    toolCalls: steps.flatMap((s) => s.toolCalls).map((c) => ({ name: c.toolName, input: c.input })),
    toolResults: steps.flatMap((s) => s.toolResults).map((t) => t.output),
  };
}
