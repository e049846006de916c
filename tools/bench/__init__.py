"""`make bench`: throughput and latency of Kassa's endpoints against a bare baseline, in one run.

Also a tiny Django app installed only by `tools.bench.settings`: the `BaselineRow` table and the
`/bench/baseline` view. Nothing here is imported by the service itself.
"""
