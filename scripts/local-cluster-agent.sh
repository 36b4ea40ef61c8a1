#!/usr/bin/env bash
# OpenMPI's remote launcher for the test hosts of scripts/local-cluster.sh:
# called as `agent HOST COMMAND...` (as ssh would be), it runs COMMAND in
# HOST's namespaces. As with ssh, the command runs apart from the launcher
# (a session of its own, waited for): a launcher killed on this machine does
# not kill what runs on the host, which ends when it loses mpirun.
set -euo pipefail
host=$1
shift
exec setsid --wait "$(dirname "${BASH_SOURCE[0]}")/local-cluster.sh" exec "$host" sh -c "$*"
