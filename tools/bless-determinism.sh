#!/bin/sh
# Rewrite the determinism guard's golden run JSON (crates/sim/tests/golden/determinism/).
# Only for a deliberate change of simulated behaviour: say which and why in the commit.
set -e
cd "$(dirname "$0")/.."
MPSCHED_BLESS=1 cargo test --release -p mpsched-sim --test determinism fixed_scenarios_match_golden_run_json
git status --short crates/sim/tests/golden/determinism | head -20
