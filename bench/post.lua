-- wrk script: POST the file named by $BENCH_BODY as JSON (with the headers both OpenAI and
-- Anthropic servers expect) and print one machine-readable summary line when done.
local f = assert(io.open(os.getenv("BENCH_BODY"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
local key = os.getenv("BENCH_KEY") or "bench"  -- a virtual key (bench.access), else any
wrk.headers["Authorization"] = "Bearer " .. key
wrk.headers["x-api-key"] = key
wrk.headers["anthropic-version"] = "2023-06-01"

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"mean_us":%.1f,' ..
    '"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.mean,
    e.connect, e.read, e.write, e.status, e.timeout))
end
