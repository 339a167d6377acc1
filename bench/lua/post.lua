-- POST with a fixed JSON body (BENCH_BODY): minting an embed token for one group.
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "report.lua")
wrk.method = "POST"
wrk.body = os.getenv("BENCH_BODY")
wrk.headers = headers
