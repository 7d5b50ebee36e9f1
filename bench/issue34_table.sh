#!/bin/sh
# Issue 34's table, every row re-measured (see bench/issue34_table.py); run from the
# repository root on a quiet machine: bench/issue34_table.sh [--seconds 8] [--events 10]
set -e
cd "$(dirname "$0")/.."
exec "${PYTHON:-.venv/bin/python}" -m bench.issue34_table "$@"
