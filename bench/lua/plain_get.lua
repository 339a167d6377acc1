-- GET without a body, with the Authorization header of BENCH_AUTH (e.g. "Embed <token>").
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "report.lua")
wrk.method = "GET"
wrk.headers = headers
