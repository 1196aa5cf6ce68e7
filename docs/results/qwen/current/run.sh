#!/usr/bin/env bash
# The current defaults' runs with Qwen2.5-Coder-1.5B-Instruct on llama.cpp (the default engine), the
# paper's preset beside each. Every command resumes from the records already written (one per question
# and method), so the script is run again, as often as needed, until every run is complete; stopping it
# (Ctrl-C, SIGTERM, a killed machine) loses at most the pairs in flight.
#
#   bash docs/results/qwen/current/run.sh      # from the repository root, the package installed
#
# The configuration: the tuned preset (the tracing reader, tracing="reader_confirmed"), the bundled
# reader at its calibrated θ (--rerun-threshold: a record whose IR checks that θ could decide otherwise,
# one made before the last calibration, is run again and superseded), and BM25 over each dataset's paragraphs with every method's top 5
# re-ranked by the reader (--rerank 5: the same retriever for every method). Two (question, method)
# pairs at a time, whose calls llama.cpp decodes together. About 0.9 minutes a question for the four
# methods and 0.45 for the paper's preset on two CPU cores (2Wiki and MuSiQue): about 2.2 hours a dataset;
# StrategyQA's three methods about 0.6 minutes a question: about 1.7 hours with its paper's preset.
set -euo pipefail
cd "$(dirname "$0")/../../../.."
D=${SEARCHAIN_DATA:-../shared/data}
OUT=docs/results/qwen/current
COMMON=(--reader bundled --rerank 5 --concurrency 2 --limit 100 --quiet --rerun-threshold)
FOUR=searchain,ircot,direct_retrieval,searchain_no_ir
HOTPOT=(--dataset hotpotqa --data "$D/hotpotqa/ircot_dev_subsampled.first200.jsonl")
MUSIQUE=(--dataset musique --data "$D/musique/musique_ans_dev.sample100.jsonl")
STRATEGY=(--dataset strategyqa --data "$D/strategyqa/strategyqa.sample100.jsonl" --corpus "$D/strategyqa/wikipedia_paragraphs.jsonl")
WIKI=(--dataset 2wikimultihopqa --data "$D/2wikimultihopqa/dev.sample100.jsonl")

searchain eval "${HOTPOT[@]}" --methods "$FOUR" --out "$OUT/hotpotqa.jsonl" "${COMMON[@]}"
searchain eval "${HOTPOT[@]}" --methods searchain --preset paper --out "$OUT/hotpotqa-paper.jsonl" "${COMMON[@]}"
# 2WikiMultihopQA states no licence: its records are written without its text (scores, costs, judged nodes)
searchain eval "${WIKI[@]}" --methods "$FOUR" --out "$OUT/2wikimultihopqa.jsonl" --without-text "${COMMON[@]}"
searchain eval "${WIKI[@]}" --methods searchain --preset paper --out "$OUT/2wikimultihopqa-paper.jsonl" \
  --without-text "${COMMON[@]}"
searchain eval "${MUSIQUE[@]}" --methods "$FOUR" --out "$OUT/musique.jsonl" "${COMMON[@]}"
searchain eval "${MUSIQUE[@]}" --methods searchain --preset paper --out "$OUT/musique-paper.jsonl" "${COMMON[@]}"
searchain eval "${STRATEGY[@]}" --methods searchain,searchain_no_ir,cot --out "$OUT/strategyqa.jsonl" "${COMMON[@]}"
searchain eval "${STRATEGY[@]}" --methods searchain --preset paper --out "$OUT/strategyqa-paper.jsonl" "${COMMON[@]}"

# One report a dataset; the paper's preset is reported as searchain@paper. The trees (under trees/) are
# written from the records, not kept in the repository. HotpotQA's SearChain questions on which the
# tuned preset's stated_answers and date_order fire were run again when those switches joined it, into
# files of their own; a later record of a question supersedes an earlier one, so they are read last.
for name in hotpotqa 2wikimultihopqa musique strategyqa; do
  if [ -f "$OUT/$name-paper.jsonl" ]; then
    later=()
    if [ "$name" = hotpotqa ]; then later=("$OUT/hotpotqa-stated-answers.jsonl" "$OUT/hotpotqa-date-order.jsonl"); fi
    searchain report "$OUT/$name.jsonl" "${later[@]}" "paper=$OUT/$name-paper.jsonl" --out "$OUT/$name-report"
  fi
done
