#!/usr/bin/env bash
# The report sets, run once at the final configuration (the tuned preset as shipped; nothing is
# chosen on them): HotpotQA's shared first 200, 2Wiki's and MuSiQue's 100.
#
#   bash docs/results/qwen/final/run.sh hotpotqa|2wikimultihopqa|musique [methods|paper|bm25]
#
# Per dataset: SearChain, SearChain w/o IR, IRCoT and direct retrieval on BM25's top 5 re-ranked
# by the bundled reader; the paper's preset on the same retriever; IRCoT and direct retrieval on
# BM25 alone. Every command resumes from the records it wrote (one per question and method), and
# its LLM calls, retrievals and readings are kept in one cache file, so a stopped run loses at most
# the question in flight. A record's options name the switches its run set: a run of other
# settings cannot extend a file. One process per core (OMP_NUM_THREADS=1); the records' seconds are
# not comparable when runs share the machine. 2Wiki's and MuSiQue's records are written without the
# dataset's text (`--without-text`: 2Wiki states no licence), so that they can be kept in git.
# A second argument runs one of the three steps alone (the default runs all three in turn).
set -euo pipefail
cd "$(dirname "$0")/../../../.."
D=${SEARCHAIN_DATA:-../shared/data}
OUT=docs/results/qwen/final
case "${1:-}" in
  hotpotqa) DATA="$D/hotpotqa/ircot_dev_subsampled.first200.jsonl"; TEXT=() ;;
  2wikimultihopqa) DATA="$D/2wikimultihopqa/dev.sample100.jsonl"; TEXT=(--without-text) ;;
  musique) DATA="$D/musique/musique_ans_dev.sample100.jsonl"; TEXT=(--without-text) ;;
  *) echo "usage: $0 hotpotqa|2wikimultihopqa|musique [methods|paper|bm25]" >&2; exit 2 ;;
esac
STEP=${2:-all}
case "$STEP" in
  all|methods|paper|bm25) ;;
  *) echo "unknown step '$STEP': expected methods, paper or bm25" >&2; exit 2 ;;
esac
step() { [ "$STEP" = all ] || [ "$STEP" = "$1" ]; }
COMMON=(--dataset "$1" --data "$DATA" --reader bundled --cache runs/report-cache.sqlite --quiet "${TEXT[@]}")
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
if step methods; then
  searchain eval "${COMMON[@]}" --methods searchain,searchain_no_ir,ircot,direct_retrieval \
    --demonstrations turns --rerank 5 --out "$OUT/$1.jsonl"
fi
if step paper; then
  searchain eval "${COMMON[@]}" --methods searchain --preset paper --rerank 5 --out "$OUT/$1-paper.jsonl"
fi
if step bm25; then
  searchain eval "${COMMON[@]}" --methods ircot,direct_retrieval --rerank 0 --out "$OUT/$1-bm25.jsonl"
fi
