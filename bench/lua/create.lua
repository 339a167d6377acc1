-- GET with a JSON body naming a new group each time: ids unique per run, thread, request.
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "report.lua")
local run = os.getenv("BENCH_RUN_ID")
local n = 0
local counter = 0

function setup(thread)
   thread:set("tid", n)
   n = n + 1
end

function request()
   counter = counter + 1
   local body = string.format(
      '{"user_group_id": "%s-%d-%d", "name": "New customer %d",'
      .. ' "mapping": {"sales": "ds-%d", "marketing": "ds-%d"}, "properties": {"region": "eu-west"}}',
      run, tid, counter, counter, counter, counter + 1)
   return wrk.format("GET", nil, headers, body)
end
