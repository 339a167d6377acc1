-- GET with a JSON body: get-or-create of one existing group (BENCH_BODY).
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "report.lua")
wrk.method = "GET"
wrk.body = os.getenv("BENCH_BODY")
wrk.headers = headers
