// generateText with a system prompt and call settings (temperature, maxOutputTokens,
// stopSequences). Result {text, finishReason, warnings, dropped} (dropped: the gateway's
// x-turnstile-dropped response header, null when absent).
import { generateText } from 'ai';

export default async function (model) {
  const r = await generateText({
    model,
    system: 'You are terse.',
    prompt: 'Say hello from Vercel.',
    temperature: 0.25,
    maxOutputTokens: 77,
    stopSequences: ['END'],
    maxRetries: 0,
  });
  return {
    text: r.text,
    finishReason: r.finishReason,
    warnings: (r.warnings ?? []).map((w) => w.feature ?? w.setting ?? w.type),
    dropped: r.response?.headers?.['x-turnstile-dropped'] ?? null,
  };
}
