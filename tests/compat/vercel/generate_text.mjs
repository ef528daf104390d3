// generateText: one answer, not streamed. Result {text, finishReason, usage}.
import { generateText } from 'ai';

export default async function (model) {
  const r = await generateText({ model, prompt: 'Say hello from Vercel.', maxRetries: 0 });
  return { text: r.text, finishReason: r.finishReason, usage: r.usage };
}
