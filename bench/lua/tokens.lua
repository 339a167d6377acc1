-- GET without a body, each request with the next of many embed tokens (the file BENCH_TOKENS,
-- one a line): thread k of n sends tokens k, k + n, k + 2n... in turn, round and round.
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "report.lua")
local path = os.getenv("BENCH_TOKENS")
local threads = {}

-- Each thread learns its number and, by the last setup, how many threads there are.
function setup(thread)
   table.insert(threads, thread)
   thread:set("tid", #threads - 1)
   for _, each in ipairs(threads) do
      each:set("nthreads", #threads)
   end
end

function init(args)
   requests = {}
   local line_no = 0
   for token in io.lines(path) do
      if line_no % nthreads == tid then
         headers["Authorization"] = "Embed " .. token
         table.insert(requests, wrk.format("GET", nil, headers))
      end
      line_no = line_no + 1
   end
   sent = 0
end

function request()
   sent = sent + 1
   return requests[(sent - 1) % #requests + 1]
end
