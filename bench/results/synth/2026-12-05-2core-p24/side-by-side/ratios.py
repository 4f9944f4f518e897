import json, glob, os, statistics
D=os.path.dirname(os.path.abspath(__file__))
rows=[]
for kind in ("poseidon","sha256"):
    for log in (20,22):
        vals={}
        for tree in ("old","new"):
            rs=[json.load(open(f)) for f in sorted(glob.glob(f"{D}/{tree}-r*/{kind}-log{log}-default.json"))]
            vals[tree]=rs
        if not vals["old"] or not vals["new"]: continue
        def agg(rs, f): return statistics.median([f(r) for r in rs])
        o,n=vals["old"],vals["new"]
        f_rec=lambda r:r["recording"]["ms"]/1e3
        f_w=lambda r:r["witness_ms"]["median"]
        f_m=lambda r:r["matvec_ms"]["median"]
        f_rss=lambda r:r["peak_rss_mib"]/1024
        f_t=lambda r:r["constraints_per_s_per_core"]/1e6
        print(f"{kind} 2^{log} rounds {len(o)}/{len(n)}")
        for name,f in (("recording s",f_rec),("witness ms",f_w),("mat-vec ms",f_m),("peak RSS GiB",f_rss),("M/s/core",f_t)):
            per=[(round(f(a),3),round(f(b),3)) for a,b in zip(o,n)]
            print(f"  {name:<13} old {agg(o,f):9.3f} new {agg(n,f):9.3f} new/old {agg(n,f)/agg(o,f):.3f}  per round {per}")
