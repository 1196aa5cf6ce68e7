#!/usr/bin/env bash
# After run.sh's own runs: two comparisons the runs asked for, resumable like run.sh
# (every command skips the pairs already recorded). run.sh calls it before 2Wiki's rerun.
#
#   bash docs/results/qwen/run_more.sh       # from the repository root, the package installed
#
# 1. CoT with a 512-token budget (a sensitivity row, not a replacement): at the 256 tokens every method
#    shares, the 1.5B's Chain-of-Thought was cut before any answer on 21 of 100 StrategyQA questions.
# 2. continuation="path" against the paper's "fresh" on HotpotQA dev questions 116-200 (never in the
#    evaluation, which takes 1-100, nor in the configuration choice, 101-115), ten questions at a time
#    for each, so that the two stay paired whenever the run stops.
set -euo pipefail
cd "$(dirname "$0")/../../.."
D=${SEARCHAIN_DATA:-../shared/data}
OUT=docs/results/qwen
COMMON=(--llm-backend onnx-int4 --tracing pairs --rerank 0 --reader bundled --demonstrations turns --duplicates meaning --quiet --rerun-contended)
HOTPOT="$D/hotpotqa/ircot_dev_subsampled.first200.jsonl"

searchain eval --dataset hotpotqa --data "$HOTPOT" --limit 100 --methods cot --max-new-tokens 512 \
  --out "$OUT/cot512/hotpotqa.jsonl" "${COMMON[@]}"
searchain eval --dataset musique --data "$D/musique/musique_ans_dev.sample100.jsonl" --limit 100 --methods cot \
  --max-new-tokens 512 --out "$OUT/cot512/musique.jsonl" "${COMMON[@]}"
searchain eval --dataset strategyqa --data "$D/strategyqa/strategyqa.sample100.jsonl" \
  --corpus "$D/strategyqa/wikipedia_paragraphs.jsonl" --limit 100 --methods cot --max-new-tokens 512 \
  --out "$OUT/cot512/strategyqa.jsonl" "${COMMON[@]}"

for n in 10 20 30 40 50 60 70 80 85; do
  searchain eval --dataset hotpotqa --data "$HOTPOT" --skip 115 --limit "$n" --methods searchain \
    --out "$OUT/dev/continuation-fresh.jsonl" "${COMMON[@]}"
  searchain eval --dataset hotpotqa --data "$HOTPOT" --skip 115 --limit "$n" --methods searchain \
    --continuation path --out "$OUT/dev/continuation-path.jsonl" "${COMMON[@]}"
done
searchain report "$OUT/dev/continuation-fresh.jsonl" "path=$OUT/dev/continuation-path.jsonl" \
  --out "$OUT/dev/continuation-report" --title "continuation: fresh (searchain) against path (searchain@path), HotpotQA dev 116-200"
