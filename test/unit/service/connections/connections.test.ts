import { describe, expect, it } from 'vitest';
import { aliasOf } from '../../../../service/connections/connections.js';

describe('a Connection', () => {
  it('derives an alias without special characters or spaces', () => {
    expect(aliasOf('Sales DB #1 (prod)')).toBe('SalesDB1prod');
    expect(aliasOf('Café_Crème')).toBe('CafeCreme');
    expect(aliasOf('***')).toBe('Connection');
  });
});
