#!/bin/sh
# Entry point of the Cloud Agent container (installer/docker/Dockerfile).
#
#   entrypoint.sh [run]   first start on an empty volume: `ferry agent install` with FERRY_AGENT_KEY
#                         and FERRY_SERVICE_URL; every start: `ferry agent run` in the foreground
#                         (the supervisor replaces the worker on a restart; SIGTERM stops it), at
#                         FERRY_SERVICE_URL when it is set (a Service that moved), else at the URL
#                         it was installed with
#   entrypoint.sh health  exit 0 while the Agent process runs (the image's HEALTHCHECK)
#   entrypoint.sh ARGS…   any other `ferry` command, e.g. `agent status`
#
# FERRY_CLI overrides how `ferry` is started (tests run this script against the source tree).
set -eu

CLI=${FERRY_CLI:-"node /opt/ferry/dist/src/cli/main.js"}
AGENT_HOME=${FERRY_AGENT_HOME:-/var/lib/ferry/agents}
export FERRY_AGENT_HOME="$AGENT_HOME"

installed() {
  for f in "$AGENT_HOME"/ferry-agent-*/config.json; do
    [ -f "$f" ] && return 0
  done
  return 1
}

case "${1:-run}" in
  run)
    if ! installed; then
      : "${FERRY_AGENT_KEY:?the first start needs FERRY_AGENT_KEY (an installation key of the Organization)}"
      : "${FERRY_SERVICE_URL:?the first start needs FERRY_SERVICE_URL (the Service the Agent belongs to)}"
      if [ -n "${FERRY_AGENT_NAME:-}" ]; then
        $CLI agent install --home "$AGENT_HOME" --key "$FERRY_AGENT_KEY" --service "$FERRY_SERVICE_URL" --name "$FERRY_AGENT_NAME" --no-service
      else
        $CLI agent install --home "$AGENT_HOME" --key "$FERRY_AGENT_KEY" --service "$FERRY_SERVICE_URL" --no-service
      fi
    fi
    if [ -n "${FERRY_SERVICE_URL:-}" ] && [ -z "${FERRY_AGENT_SERVICE_URL:-}" ]; then
      export FERRY_AGENT_SERVICE_URL="$FERRY_SERVICE_URL"
    fi
    # exec: the supervisor becomes the container's main process and receives its SIGTERM.
    exec $CLI agent run --home "$AGENT_HOME"
    ;;
  health)
    $CLI agent status --home "$AGENT_HOME" | grep -q 'running (pid'
    ;;
  *)
    exec $CLI "$@"
    ;;
esac
