#!/usr/bin/env bash
# What the IR cache (`searchain eval --cache FILE`) saves on an evaluation run (docs/benchmarks.md):
# SearChain and its two IR ablations on the first N HotpotQA questions with one SqliteCache, twice:
# pass a (a cold cache, shared only between the methods), pass b (a rerun: every check cached).
# Compare the records' usage (retrieval_cache_hits, reader_cache_hits) and seconds. Run it on a quiet
# machine (nothing else beside it): the seconds are wall time.
#
#   bash benchmarks/ir_cache.sh [N] [OUT_DIR]      # from the repository root, the package installed
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-6}
OUT=${2:-runs/ir-cache}
D=${SEARCHAIN_DATA:-../shared/data}
rm -rf "$OUT" && mkdir -p "$OUT"
COMMON=(--dataset hotpotqa --data "$D/hotpotqa/ircot_dev_subsampled.first200.jsonl" --limit "$N"
  --methods searchain,searchain_no_verification,searchain_no_completion
  --reader bundled --demonstrations turns --duplicates meaning --quiet --cache "$OUT/ir.sqlite")
for pass in a b; do
  start=$(date +%s)
  searchain eval "${COMMON[@]}" --out "$OUT/$pass.jsonl" --report "$OUT/$pass-report"
  echo "pass $pass: $(( $(date +%s) - start )) s"
done
python - "$OUT" <<'PY'
import sys
from searchain_graph.evaluation.harness import read_records
for name in ("a", "b"):
    for method in ("searchain", "searchain_no_verification", "searchain_no_completion"):
        rs = [r for r in read_records(f"{sys.argv[1]}/{name}.jsonl") if r["method"] == method]
        u = lambda k: sum(r["usage"].get(k, 0) for r in rs)  # noqa: E731
        print(f"pass {name} {method}: retrievals {u('retrieval_calls')} ({u('retrieval_cache_hits')} cached), "
              f"readings {u('reader_calls')} ({u('reader_cache_hits')} cached), {sum(r['seconds'] for r in rs):.1f} s")
PY
