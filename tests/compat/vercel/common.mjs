// Shared by the Vercel AI SDK scenarios: the provider model a request names, and the JSON
// shape of an error. A scenario module's default export is `async (model, args) => result`.
import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';

/** The language model of `provider` (openai.chat | openai.responses | anthropic | google)
 * named `modelId`, pointed at the gateway at `url` (http://host:port, no path). */
export function languageModel(provider, url, modelId) {
  if (provider === 'openai.chat') {
    return createOpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-vercel-client' }).chat(modelId);
  }
  if (provider === 'openai.responses') {
    return createOpenAI({ baseURL: `${url}/v1`, apiKey: 'sk-vercel-client' })(modelId);
  }
  if (provider === 'anthropic') {
    return createAnthropic({ baseURL: `${url}/v1`, apiKey: 'sk-ant-vercel-client' })(modelId);
  }
  if (provider === 'google') {
    return createGoogleGenerativeAI({ baseURL: `${url}/v1beta`, apiKey: 'vercel-gemini-key' })(modelId);
  }
  throw new Error(`unknown provider ${provider}`);
}

/** `{error, name, status, body}` for a thrown error (status and body of an API call error). */
export function describe(err) {
  const cause = err?.lastError ?? err?.cause ?? err;
  return {
    error: String(err?.message ?? err),
    name: err?.name ?? null,
    status: cause?.statusCode ?? null,
    body: cause?.responseBody ?? null,
  };
}

/** The result of one request `{scenario, provider, url, model, args}`: the scenario's result,
 * or `describe(error)` when it threw. */
export async function runScenario({ scenario, provider, url, model, args = [] }) {
  try {
    const { default: fn } = await import(`./${scenario}.mjs`);
    return await fn(languageModel(provider, url, model), args);
  } catch (err) {
    return describe(err);
  }
}
