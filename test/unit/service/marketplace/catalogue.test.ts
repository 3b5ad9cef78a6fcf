import { describe, expect, it } from 'vitest';
import { ConnectorCatalogue, NO_GENERIC_UI, builtInConnectors } from '../../../../service/marketplace/catalogue.js';
import { toConnector, toUiOptions } from '../../../../service/http/mappers/connector.js';
import { ConnectorManifest } from '../../../../src/protocol/connector-manifest.js';

const custom = ConnectorManifest.parse({
  id: '11111111-2222-4333-8444-555555555555',
  name: 'Custom',
  vendor: 'Acme',
  version: '2.0.0',
  sdkVersion: '^1.0.0',
  solutionRoles: ['Svc.IS2.Source'],
  isCloudSupported: false,
  uiName: 'Acme.CustomUI',
  uiDecorations: [{ propertyName: 'token', label: 'Token', inputType: 'Password' }],
});

describe('the Connector catalogue', () => {
  it('reads the built-in manifests', () => {
    expect(
      builtInConnectors()
        .all()
        .map((m) => m.name),
    ).toEqual(['CSV', 'HTTP / JSON API', 'MariaDB', 'NATS JetStream', 'PostgreSQL', 'RabbitMQ', 'SQLite']);
  });

  it('refuses uioptions for a custom-interface Connector with the exact message', () => {
    const catalogue = new ConnectorCatalogue([custom]);
    expect(toConnector(catalogue.require(custom.id.toUpperCase()))).toMatchObject({
      name: 'Custom',
      uiName: 'Acme.CustomUI',
      uiVersion: '2.0.0',
      vendorName: 'Acme',
    });
    expect(() => toUiOptions(custom)).toThrow(
      expect.objectContaining({ code: 'API_UNSUPPORTED', message: NO_GENERIC_UI }) as Error,
    );
    expect(NO_GENERIC_UI).toBe('The connector type does not support getting generic UI Elements.');
    expect(() => catalogue.require('21111111-2222-4333-8444-555555555555')).toThrow(
      expect.objectContaining({ code: 'API_NOT_FOUND' }) as Error,
    );
  });
});
