// generateObject with a zod schema; args[0], if given, is the Anthropic provider's
// structuredOutputMode (outputFormat | jsonTool | auto). Result {object, finishReason}.
import { generateObject } from 'ai';
import { z } from 'zod';

const Weather = z.object({ city: z.string(), celsius: z.number(), sunny: z.boolean() });

export default async function (model, [mode]) {
  const r = await generateObject({
    ...(mode ? { providerOptions: { anthropic: { structuredOutputMode: mode } } } : {}),
    model,
    schema: Weather,
    schemaName: 'weather',
    prompt: 'The weather in Paris, as data.',
    maxRetries: 0,
  });
  return { object: r.object, finishReason: r.finishReason };
}
