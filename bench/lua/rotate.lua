-- A rotation chain on one connection: each request rotates the token the last response
-- returned (BENCH_TOKEN to start). Run with -t1 -c1.
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "report.lua")
token = os.getenv("BENCH_TOKEN")
broken = 0

function request()
   return wrk.format("POST", nil, headers, '{"current_token": "' .. token .. '"}')
end

function response(status, hdrs, body)
   local next_token = body:match('"token"%s*:%s*"([^"]+)"')
   if status == 200 and next_token then
      token = next_token
   else
      broken = broken + 1
   end
end
