import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { COMMANDS, FromService, ServiceRequest, isCommandKind } from '../../../src/protocol/commands.js';
import { LoadMetadataResult, packMetadata, type ConnectionMetadata } from '../../../src/protocol/metadata.js';

const DOC: ConnectionMetadata = {
  entities: [
    {
      id: 'items',
      name: 'items',
      fullName: 'items',
      originalName: 'items',
      description: '',
      isHidden: false,
      actions: [],
      fields: [],
      relationships: [],
    },
  ],
  actions: [],
};

describe('command table', () => {
  it('keys each entry by the type its request carries', () => {
    for (const [kind, spec] of Object.entries(COMMANDS)) {
      expect(spec.request.shape.type.value).toBe(kind);
    }
  });

  it('keeps the time-out each command had', () => {
    const timeouts = Object.fromEntries(Object.entries(COMMANDS).map(([kind, spec]) => [kind, spec.timeoutMs]));
    expect(timeouts).toEqual({
      restart: 10_000,
      zipLogs: 10_000,
      installConnector: 30_000,
      uninstallConnector: 30_000,
      updateAgent: 30_000,
      testConnection: 90_000,
      preconnect: 90_000,
      loadMetadata: 660_000,
      assignSolutions: 30_000,
      putSolution: 30_000,
      startSolution: 10_000,
      stopSolution: 10_000,
      monitorSolution: 10_000,
      changeCaptureStatus: 45_000,
      previewQuery: 90_000,
      nativeQueryTest: 90_000,
      reprocessRun: 10_000,
      knownRuns: 10_000,
      pruneFailedRecords: 300_000,
      messagesWaiting: 10_000,
      runRequest: 600_000,
    });
  });

  it('parses every kind of the table as a ServiceRequest, and no other', () => {
    expect(ServiceRequest.safeParse({ id: 'c1', type: 'stopSolution', solutionId: 's1' }).success).toBe(true);
    expect(ServiceRequest.safeParse({ id: 'c1', type: 'restart', restartNow: false }).success).toBe(true);
    expect(ServiceRequest.safeParse({ id: 'c1', type: 'formatDisk' }).success).toBe(false);
    expect(FromService.safeParse({ id: 'c1', type: 'knownRuns', runIds: ['r1'] }).success).toBe(true);
    expect(isCommandKind('knownRuns')).toBe(true);
    expect(isCommandKind('formatDisk')).toBe(false);
    expect(isCommandKind('toString')).toBe(false);
  });

  it('reads a loadMetadata answer packed or not as the same document, and refuses a packed one that does not unpack', () => {
    const plain = LoadMetadataResult.safeParse(DOC);
    expect(plain.success && plain.data.entities[0]?.fullName).toBe('items');
    const packed = packMetadata(DOC, 10);
    expect(packed.packed).toBe(true);
    expect(LoadMetadataResult.parse(JSON.parse(JSON.stringify(packed.answer)))).toEqual(
      plain.success ? plain.data : undefined,
    );
    expect(LoadMetadataResult.safeParse({ encoding: 'gzip+base64', data: 'not gzip' }).success).toBe(false);
    const wrongShape = gzipSync(JSON.stringify({ entities: 'none' })).toString('base64');
    expect(LoadMetadataResult.safeParse({ encoding: 'gzip+base64', data: wrongShape }).success).toBe(false);
  });
});
