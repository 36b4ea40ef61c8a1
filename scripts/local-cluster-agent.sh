#!/usr/bin/env bash
# OpenMPI's remote launcher for the test hosts of scripts/local-cluster.sh:
# called as `agent HOST COMMAND...` (as ssh would be), it runs COMMAND in
# HOST's namespaces.
set -euo pipefail
host=$1
shift
exec "$(dirname "${BASH_SOURCE[0]}")/local-cluster.sh" exec "$host" sh -c "$*"
