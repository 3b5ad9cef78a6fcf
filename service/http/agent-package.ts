import fs from 'node:fs';
import path from 'node:path';
import { TarArchive } from 'archiver';
import { packageRoot } from '../util/package-root.js';

/** What the Agent package holds, as `npm pack` lays it out under `package/`. */
export interface PackageEntries {
  readonly files: ReadonlyArray<{ source: string; name: string }>;
  readonly dirs: ReadonlyArray<{ source: string; name: string }>;
}

const FILES = ['package.json', 'package-lock.json', 'README.md'];
const DIRS = ['dist', 'connectors', 'installer'];

/** The files and folders of the package, or undefined when it is not built (no dist/src/cli/main.js). */
export function packageEntries(root: string = packageRoot()): PackageEntries | undefined {
  if (!fs.existsSync(path.join(root, 'dist', 'src', 'cli', 'main.js'))) return undefined;
  return {
    files: FILES.filter((f) => fs.existsSync(path.join(root, f))).map((f) => ({
      source: path.join(root, f),
      name: `package/${f}`,
    })),
    dirs: DIRS.filter((d) => fs.existsSync(path.join(root, d))).map((d) => ({
      source: path.join(root, d),
      name: `package/${d}`,
    })),
  };
}

/** The package as a gzipped tar stream (archiver), produced while it is sent. */
export function streamAgentPackage(entries: PackageEntries): TarArchive {
  const archive = new TarArchive({ gzip: true, gzipOptions: { level: 6 } });
  for (const f of entries.files) archive.file(f.source, { name: f.name });
  for (const d of entries.dirs) archive.directory(d.source, d.name);
  archive.finalize().catch((err: unknown) => archive.destroy(err instanceof Error ? err : new Error(String(err))));
  return archive;
}

/** A value as one single-quoted shell word. */
function shQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * The POSIX shell installer behind agentInstallerLocation. It needs Node.js 20+ and npm, installs
 * the Ferry package the Service serves with npm, and registers the machine with the key given as
 * its first argument: `curl -fsSL <location> | sh -s -- <agentInstallationKey>`.
 */
export function installerScript(urls: { serviceUrl: string; installerUrl: string; packageUrl: string }): string {
  const { serviceUrl, installerUrl, packageUrl } = urls;
  const line = (s: string) => s.replace(/[\r\n]/g, '');
  return `#!/bin/sh
# Ferry Agent installer, served by the Ferry Service at ${line(serviceUrl)}
#
#   curl -fsSL ${line(installerUrl)} | sh -s -- <agentInstallationKey>
#
# Needs Node.js 20 or newer with npm. Installs the Ferry package into $FERRY_AGENT_PREFIX
# (default /opt/ferry as root, else ~/.local/share/ferry/agent), then registers this machine as an
# On-Premise Agent with the single-use installation key (ferry agent install) in the Agent home
# $FERRY_AGENT_HOME (default /var/lib/ferry/agents as root, else ~/.local/share/ferry/agents).
set -eu

SERVICE_URL=${shQuote(serviceUrl)}
PACKAGE_URL=${shQuote(packageUrl)}
KEY="\${1:-}"

fail() {
  printf 'ferry-agent-install: %s\\n' "$*" >&2
  exit 1
}

[ -n "$KEY" ] || fail "usage: sh ferry-agent-install.sh <agentInstallationKey>"
case "$KEY" in
  *[!0-9A-Za-z-]*) fail "the installation key has unexpected characters" ;;
esac

command -v node >/dev/null 2>&1 || fail "Node.js 20 or newer is required (https://nodejs.org)"
command -v npm >/dev/null 2>&1 || fail "npm is required (it comes with Node.js)"
NODE_MAJOR=$(node -p 'process.versions.node.split(".")[0]')
[ "$NODE_MAJOR" -ge 20 ] || fail "Node.js 20 or newer is required; this machine has $(node --version)"

if [ -z "\${FERRY_AGENT_PREFIX:-}" ]; then
  if [ "$(id -u)" = 0 ]; then
    FERRY_AGENT_PREFIX=/opt/ferry
  else
    FERRY_AGENT_PREFIX="\${XDG_DATA_HOME:-$HOME/.local/share}/ferry/agent"
  fi
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

echo "Downloading the Ferry Agent from $PACKAGE_URL"
if command -v curl >/dev/null 2>&1; then
  curl -fsSL -o "$TMP/ferry.tgz" "$PACKAGE_URL"
elif command -v wget >/dev/null 2>&1; then
  wget -q -O "$TMP/ferry.tgz" "$PACKAGE_URL"
else
  fail "curl or wget is required"
fi

echo "Installing it with npm into $FERRY_AGENT_PREFIX"
mkdir -p "$FERRY_AGENT_PREFIX"
npm install --prefix "$FERRY_AGENT_PREFIX" --omit=dev --no-audit --no-fund "$TMP/ferry.tgz"

if [ -z "\${FERRY_AGENT_HOME:-}" ]; then
  if [ "$(id -u)" = 0 ]; then
    FERRY_AGENT_HOME=/var/lib/ferry/agents
  else
    FERRY_AGENT_HOME="\${XDG_DATA_HOME:-$HOME/.local/share}/ferry/agents"
  fi
fi

FERRY="$FERRY_AGENT_PREFIX/node_modules/.bin/ferry"
echo "Registering this machine with $SERVICE_URL"
"$FERRY" agent install --home "$FERRY_AGENT_HOME" --key "$KEY" --service "$SERVICE_URL"
echo "Installed. Start the Agent with: $FERRY agent start --home $FERRY_AGENT_HOME   (or in the foreground: $FERRY agent run --home $FERRY_AGENT_HOME)"
`;
}
