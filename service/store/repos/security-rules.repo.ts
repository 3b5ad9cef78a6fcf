import type { Db } from '../sql.js';
import type { SecurityRuleRow } from '../schema.js';

export type SecurityRuleInput = Omit<SecurityRuleRow, 'orgId' | 'position' | 'createdAt'>;

export async function listRules(db: Db, orgId: number): Promise<SecurityRuleRow[]> {
  return db
    .selectFrom('securityRules')
    .selectAll()
    .where('orgId', '=', orgId)
    .orderBy('position')
    .orderBy('createdAt')
    .execute();
}

export async function getRule(db: Db, orgId: number, id: string): Promise<SecurityRuleRow | undefined> {
  return db.selectFrom('securityRules').selectAll().where('orgId', '=', orgId).where('id', '=', id).executeTakeFirst();
}

/** Any Organization's rule with this ID (rule IDs are globally unique). */
export async function ruleExists(db: Db, id: string): Promise<boolean> {
  return (await db.selectFrom('securityRules').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
}

export async function insertRule(
  db: Db,
  orgId: number,
  rule: SecurityRuleInput,
  createdAt: string,
): Promise<SecurityRuleRow> {
  const last = await db
    .selectFrom('securityRules')
    .select((eb) => eb.fn.max('position').as('p'))
    .where('orgId', '=', orgId)
    .executeTakeFirst();
  const position = Number(last?.p ?? -1) + 1;
  return db
    .insertInto('securityRules')
    .values({ ...rule, orgId, position, createdAt })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function updateRule(
  db: Db,
  orgId: number,
  id: string,
  rule: Omit<SecurityRuleInput, 'id'>,
): Promise<void> {
  await db.updateTable('securityRules').set(rule).where('orgId', '=', orgId).where('id', '=', id).execute();
}

export async function deleteRule(db: Db, orgId: number, id: string): Promise<number> {
  const res = await db.deleteFrom('securityRules').where('orgId', '=', orgId).where('id', '=', id).executeTakeFirst();
  return Number(res.numDeletedRows);
}

/** Replaces every rule of the Organization, keeping the given order. */
export async function replaceRules(
  db: Db,
  orgId: number,
  rules: SecurityRuleInput[],
  createdAt: string,
): Promise<void> {
  await db.deleteFrom('securityRules').where('orgId', '=', orgId).execute();
  if (rules.length === 0) return;
  await db
    .insertInto('securityRules')
    .values(rules.map((r, position) => ({ ...r, orgId, position, createdAt })))
    .execute();
}
