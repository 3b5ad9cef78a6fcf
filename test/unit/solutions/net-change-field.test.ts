/** The rule that picks a replicated entity's net-change field from its metadata. */
import { describe, expect, it } from 'vitest';
import type { EntityMetadata } from '../../../src/connectors/sdk.js';
import { modificationStampRank, netChangeField } from '../../../src/solutions/net-change-field.js';

type F = EntityMetadata['fields'][number];
const field = (fullName: string, propertyType: F['propertyType'] = 'datetime'): F => ({ fullName, propertyType }) as F;

describe('netChangeField', () => {
  it('accepts the usual names of a modification stamp, in any case and spelling', () => {
    for (const n of [
      'modified',
      'ModifiedOn',
      'modified_date',
      'LastModified',
      'lastmodifieddate',
      'LAST_MODIFIED_AT',
      'updated',
      'updated_at',
      'UpdatedOn',
      'last_update',
      'date_modified',
      'DateLastModified',
      'changed_at',
      'SystemModstamp',
      'modification_time',
      'updated-utc',
    ]) {
      expect(modificationStampRank(n), n).toBeDefined();
    }
  });

  it('refuses names that are not a modification stamp', () => {
    for (const n of [
      'created_at',
      'modified_by',
      'updates_count',
      'date',
      'timestamp',
      'mode',
      'mod',
      'lastmod_user',
      'unmodified',
    ]) {
      expect(modificationStampRank(n), n).toBeUndefined();
    }
  });

  it('takes only datetime fields', () => {
    expect(netChangeField({ fields: [field('modified', 'date'), field('updated_at', 'string')] })).toBeUndefined();
    expect(netChangeField({ fields: [field('modified', 'date'), field('updated_at')] })).toBe('updated_at');
  });

  it('prefers modified over updated over changed, then the first in field order', () => {
    expect(
      netChangeField({
        fields: [field('changed_at'), field('updated_at'), field('LastModified'), field('modified_on')],
      }),
    ).toBe('LastModified');
    expect(netChangeField({ fields: [field('changed_at'), field('updated'), field('updated_at')] })).toBe('updated');
    expect(netChangeField({ fields: [field('id', 'integer'), field('created_at')] })).toBeUndefined();
  });
});
