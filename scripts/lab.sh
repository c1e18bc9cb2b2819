#!/usr/bin/env bash
# `make lab`: JupyterLab on notebooks/, opening 00_tour, with the kit's own settings
# (jupyter/): localhost only, a token always, no news pop-up; a user's global
# ~/.jupyter config is not read. Extra arguments go to `jupyter lab`.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
settings="$VENV/share/jupyter/lab/settings"
mkdir -p "$settings"
cp "$ROOT/jupyter/overrides.json" "$settings/overrides.json"
export JUPYTER_CONFIG_DIR="$ROOT/jupyter"
root_flag=()
if [ "$(id -u)" = 0 ]; then root_flag=(--allow-root); fi  # containers run as root
exec "$VENV/bin/jupyter" lab \
  --ServerApp.root_dir="$ROOT/notebooks" \
  --LabApp.default_url=/lab/tree/00_tour.ipynb \
  "${root_flag[@]}" "$@"
