-- Shared by the scenarios: headers from the environment, and one JSON line at the end
-- (latencies in microseconds) that bench/run.py reads.
auth = os.getenv("BENCH_AUTH")
headers = {["Content-Type"] = "application/json", ["Authorization"] = auth}

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      'BENCH_JSON {"requests": %d, "duration_us": %d, "connect_errors": %d, "read_errors": %d,'
      .. ' "write_errors": %d, "status_errors": %d, "timeouts": %d, "p50_us": %d, "p90_us": %d,'
      .. ' "p99_us": %d, "mean_us": %.1f, "max_us": %d}\n',
      summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
      latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.mean,
      latency.max))
end
