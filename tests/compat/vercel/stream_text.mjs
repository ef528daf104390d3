// streamText: the text deltas as they arrive. Result {chunks, text, finishReason, usage}; an error
// event of the stream is thrown.
import { streamText } from 'ai';

export default async function (model) {
  const errors = [];
  const r = streamText({
    model,
    prompt: 'Stream hello from Vercel.',
    maxRetries: 0,
    onError: ({ error }) => errors.push(error),
  });
  const chunks = [];
  for await (const delta of r.textStream) chunks.push(delta);
  if (errors.length) throw errors[0];
  return { chunks, text: chunks.join(''), finishReason: await r.finishReason, usage: await r.usage };
}
