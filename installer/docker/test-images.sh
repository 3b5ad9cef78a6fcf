#!/bin/sh
# Builds both images of installer/docker/Dockerfile on a base made from this machine
# (installer/docker/local-base.sh) and runs them with podman: test/e2e/containers/images.test.ts.
# It takes 2 to 5 minutes, so `npm test` runs only the quick checks of test/e2e/containers and CI
# runs it as a job of its own (FERRY_CI_IMAGES=1 .ci/run; docs/containers.md). Extra arguments go to vitest.
set -eu
cd "$(dirname "$0")/../.."
FERRY_IMAGE_TEST=1 exec npx vitest run test/e2e/containers/images.test.ts "$@"
