#!/bin/sh
# The Service image's health check (installer/docker/Dockerfile): exit 0 when GET /readyz answers 200
# within 5 s, else 1 — so a Service that drains before a stop, or has lost its store, is unhealthy.
# It asks the address the Service listens at (FERRY_HOST, FERRY_PORT; a wildcard address: loopback).
exec node --input-type=module -e '
const host = process.env.FERRY_HOST || "127.0.0.1";
const port = process.env.FERRY_PORT || "8780";
const target = host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "::1" : host;
const url = `http://${target.includes(":") ? `[${target}]` : target}:${port}/readyz`;
try {
  const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
  if (res.status !== 200) {
    process.stderr.write(`${url} answered ${res.status}\n`);
    process.exit(1);
  }
} catch (err) {
  process.stderr.write(`${url}: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
'
