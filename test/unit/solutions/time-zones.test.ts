import { describe, expect, it } from 'vitest';
import { resolveTimeZone, WINDOWS_TIME_ZONE_ALIASES, WINDOWS_TIME_ZONES } from '../../../src/solutions/time-zones.js';

describe('time zone names', () => {
  it('maps every Windows zone ID of the table to a zone Intl knows', () => {
    expect(Object.keys(WINDOWS_TIME_ZONES).length).toBeGreaterThanOrEqual(139);
    for (const [name, zone] of Object.entries({ ...WINDOWS_TIME_ZONES, ...WINDOWS_TIME_ZONE_ALIASES })) {
      const resolved = resolveTimeZone(name);
      expect(resolved, name).toBeDefined();
      // The table's name and Intl's spelling of it are the same zone.
      expect(resolved, name).toBe(resolveTimeZone(zone));
    }
  });

  it.each([
    ['Coordinated Universal Time', 'UTC'],
    ['UTC', 'UTC'],
    ['Eastern Standard Time', 'America/New_York'],
    ['eastern standard time', 'America/New_York'],
    ['  Eastern   Standard  Time ', 'America/New_York'],
    ['W. Europe Standard Time', 'Europe/Berlin'],
    ['GMT Standard Time', 'Europe/London'],
    ['Pacific Standard Time', 'America/Los_Angeles'],
    ['Central Standard Time', 'America/Chicago'],
    ['Mountain Standard Time', 'America/Denver'],
    ['Tokyo Standard Time', 'Asia/Tokyo'],
    ['China Standard Time', 'Asia/Shanghai'],
    ['AUS Eastern Standard Time', 'Australia/Sydney'],
    ['America/New_York', 'America/New_York'],
    ['america/new_york', 'America/New_York'],
    ['Etc/GMT+5', 'Etc/GMT+5'],
  ])('%j is %s', (name, zone) => {
    expect(resolveTimeZone(name)).toBe(resolveTimeZone(zone));
    expect(resolveTimeZone(name)).toBeDefined();
  });

  it('gives India Standard Time the zone of Asia/Kolkata under either spelling', () => {
    expect(['Asia/Calcutta', 'Asia/Kolkata']).toContain(resolveTimeZone('India Standard Time'));
    expect(resolveTimeZone('Asia/Kolkata')).toBe(resolveTimeZone('India Standard Time'));
  });

  it.each([
    '',
    'Mars Standard Time',
    'Mars/Olympus_Mons',
    '+05:00',
    'UTC+05:00',
    '../etc/passwd',
    'x'.repeat(200),
    'America/New York',
  ])('refuses %j', (name) => {
    expect(resolveTimeZone(name)).toBeUndefined();
  });
});
