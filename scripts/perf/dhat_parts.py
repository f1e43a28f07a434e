"""Heap bytes at the peak of a dhat profile less those of a baseline profile, divided by N,
grouped by allocation site (the first frames below the allocator). usage:
dhat_parts.py BASELINE.json PROFILE.json N"""

import collections
import json
import sys

ALLOCATOR = ("alloc::alloc", "__rust", "malloc", "memalign", "calloc", "alloc::raw_vec",
             "exchange_malloc", "core::ptr", "<alloc::", "alloc::boxed::Box<T>::new",
             "alloc::sync::Arc<T>::new")


def sites(path):
    profile = json.load(open(path))
    frames = profile["ftbl"]
    bytes_at_peak = collections.Counter()
    for point in profile["pps"]:
        names = [frames[i].split(": ", 1)[-1].split(" (in ")[0] for i in point["fs"]]
        names = [n for n in names if not any(a in n for a in ALLOCATOR)]
        bytes_at_peak[" <- ".join(n[:72] for n in names[:3])] += point.get("gb", 0)
    return bytes_at_peak


baseline, profile, count = sites(sys.argv[1]), sites(sys.argv[2]), int(sys.argv[3])
per_session = {site: (profile[site] - baseline.get(site, 0)) / count for site in profile}
print(f"heap per idle session: {sum(per_session.values()):.0f} bytes")
for site, size in sorted(per_session.items(), key=lambda kv: -kv[1]):
    if abs(size) >= 4:
        print(f"{size:8.0f}  {site}")
