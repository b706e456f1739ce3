#!/bin/bash
# Placeholder: starts the worker installed in the volume.
set -euo pipefail
exec imd start --auto-update
