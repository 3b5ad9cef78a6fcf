import { describe, expect, it } from 'vitest';
import { parseAgentConfig } from '../../../src/agent/config.js';

describe('parseAgentConfig', () => {
  it('applies defaults and freezes', () => {
    const config = parseAgentConfig({}, { home: '/tmp/h' });
    expect(config).toMatchObject({
      home: '/tmp/h',
      maxRssMb: 1024,
      watchdogMs: 5000,
      logLevel: 'info',
      logStdout: false,
      cloud: false,
      pingMs: 15_000,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('reads FERRY_AGENT_* variables and lets flags win', () => {
    const config = parseAgentConfig(
      {
        FERRY_AGENT_HOME: '/tmp/env',
        FERRY_AGENT_MAX_RSS_MB: '64',
        FERRY_AGENT_WATCHDOG_MS: '50',
        FERRY_AGENT_LOG_LEVEL: 'debug',
        FERRY_AGENT_CLOUD: 'true',
        FERRY_AGENT_INSTANCE: '2',
      },
      { home: '/tmp/flag' },
    );
    expect(config).toMatchObject({
      home: '/tmp/flag',
      maxRssMb: 64,
      watchdogMs: 50,
      logLevel: 'debug',
      cloud: true,
      instance: '2',
    });
  });

  it('treats empty variables as absent', () => {
    expect(parseAgentConfig({ FERRY_AGENT_MAX_RSS_MB: '', FERRY_AGENT_HOME: '/tmp/x' }).maxRssMb).toBe(1024);
  });

  it('resolves the home to an absolute path', () => {
    expect(parseAgentConfig({}, { home: 'rel/dir' }).home).toBe(`${process.cwd()}/rel/dir`);
  });

  it('refuses invalid values with AGT_CONFIG naming the field', () => {
    expect(() => parseAgentConfig({ FERRY_AGENT_MAX_RSS_MB: 'lots', FERRY_AGENT_HOME: '/tmp/x' })).toThrowError(
      expect.objectContaining({ code: 'AGT_CONFIG', message: expect.stringContaining('maxRssMb') }),
    );
    expect(() => parseAgentConfig({ FERRY_AGENT_LOG_LEVEL: 'loud', FERRY_AGENT_HOME: '/tmp/x' })).toThrowError(
      expect.objectContaining({ code: 'AGT_CONFIG' }),
    );
    expect(() =>
      parseAgentConfig({
        FERRY_AGENT_BACKOFF_BASE_MS: '5000',
        FERRY_AGENT_BACKOFF_MAX_MS: '100',
        FERRY_AGENT_HOME: '/tmp/x',
      }),
    ).toThrowError(expect.objectContaining({ code: 'AGT_CONFIG' }));
  });
});
