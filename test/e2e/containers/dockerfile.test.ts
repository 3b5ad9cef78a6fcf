import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceUnderTest, type ServiceUnderTest } from '../agent/harness.js';
import { DOCKERFILE, freePort, ROOT } from './podman.js';

const TEXT = fs.readFileSync(DOCKERFILE, 'utf8');
const READYZ = path.join(ROOT, 'installer/docker/readyz.sh');

/** The Dockerfile's stages by name: the lines from each `FROM … AS name` to the next FROM. */
function stages(): Map<string, string> {
  const out = new Map<string, string>();
  const parts = TEXT.split(/^(?=FROM\s)/m).slice(1);
  for (const part of parts) {
    const name = /^FROM\s+\S+\s+AS\s+(\S+)/i.exec(part)?.[1];
    if (name) out.set(name, part);
  }
  return out;
}

/**
 * The quick checks of the container images, in `npm test`: the Dockerfile's two targets and what
 * each must carry, the build context it copies from, and the Service image's health check run
 * against a real Service. installer/docker/test-images.sh builds and runs the images themselves
 * (test/e2e/containers/images.test.ts).
 */
describe('the container images, without building them', () => {
  it('names the public base through ARG BASE and builds the application from source by default', () => {
    expect(TEXT).toMatch(/^ARG BASE=node:20-bookworm-slim$/m);
    expect(TEXT).toMatch(/^ARG APP=source$/m);
    const all = stages();
    expect([...all.keys()]).toEqual(['source', 'prebuilt', 'app', 'runtime', 'service', 'agent']);
    expect(all.get('source')).toMatch(/npm ci/);
    expect(all.get('source')).toMatch(/npm run build/);
    expect(all.get('source')).toMatch(/npm prune --omit=dev/);
  });

  it.each([
    ['service', '/var/lib/ferry', 'readyz.sh'],
    ['agent', '/var/lib/ferry/agents', 'entrypoint.sh", "health'],
  ])('the %s target: non-root user, one volume, a health check, an exec-form entry point', (target, volume, health) => {
    const stage = stages().get(target) ?? '';
    expect(stage).toMatch(/^FROM runtime AS/m);
    expect(stage).toMatch(/^USER 10001:10001$/m);
    expect(stage.match(/^VOLUME /gm)).toHaveLength(1);
    expect(stage).toContain(`VOLUME ["${volume}"]`);
    expect(stage).toMatch(/^HEALTHCHECK /m);
    expect(stage).toContain(health);
    expect(stage).toMatch(/^ENTRYPOINT \[/m);
    expect(stages().get('runtime')).toMatch(/^STOPSIGNAL SIGTERM$/m);
  });

  it('sends the build every path the source stage copies, and the scripts the images run are executable', () => {
    const ignore = fs.readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split('\n');
    const copied = [...(stages().get('source') ?? '').matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) =>
      (m[1] ?? '').split(/\s+/),
    );
    expect(copied).toContain('src');
    for (const source of copied) {
      expect(ignore, source).toContain(
        fs.statSync(path.join(ROOT, source)).isDirectory() ? `!${source}/**` : `!${source}`,
      );
    }
    for (const script of ['entrypoint.sh', 'readyz.sh', 'local-base.sh', 'test-images.sh'])
      expect(fs.statSync(path.join(ROOT, 'installer/docker', script)).mode & 0o111, script).toBe(0o111);
  });

  describe('the Service image health check (readyz.sh) against a real Service', () => {
    let sut: ServiceUnderTest;
    beforeAll(async () => {
      sut = serviceUnderTest();
      await sut.start();
    });
    afterAll(async () => sut?.dispose());

    // Asynchronously: the Service answers from this very process.
    const readyz = (env: Record<string, string>) =>
      new Promise<{ status: number | null; stderr: string }>((resolve, reject) => {
        const child = spawn(READYZ, [], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
        let stderr = '';
        child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
        child.once('error', reject);
        child.once('close', (status) => resolve({ status, stderr }));
      });

    it('exits 0 while /readyz answers 200, also through a wildcard FERRY_HOST', async () => {
      expect((await readyz({ FERRY_HOST: '127.0.0.1', FERRY_PORT: String(sut.port) })).status).toBe(0);
      expect((await readyz({ FERRY_HOST: '0.0.0.0', FERRY_PORT: String(sut.port) })).status).toBe(0);
    });

    it('exits 1 and says why when nothing answers', async () => {
      const r = await readyz({ FERRY_HOST: '127.0.0.1', FERRY_PORT: String(await freePort()) });
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/\/readyz: /);
    });
  });
});
