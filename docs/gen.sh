#!/usr/bin/env bash
# Regenerates the files the code renders, from fixed fixtures (nothing is
# measured): the JSON Schema (docs/result.schema.json), the README's sample
# outputs (the blocks between <!-- sample:NAME --> markers) and
# docs/example-report.html. Their tests fail when a checked-in copy drifts
# from what the code renders; after changing an output or a report, run
# this and commit what it rewrites.
set -euo pipefail
cd "$(dirname "$0")/.."
export IOTOLL_BLESS=1
cargo test -q --locked -p iotoll-model result_schema_json_matches_the_types
cargo test -q --locked -p iotoll --test doc_samples
git status --short -- README.md docs
