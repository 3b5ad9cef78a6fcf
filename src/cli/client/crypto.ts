/**
 * `ferry crypto encrypt|decrypt --org N VALUE`: the transport encryption of Connection property
 * values with the Organization's crypto token (`GET /v1/orgs/{orgId}/SecuritySettings` →
 * `apiCryptoToken`). The cipher is the Service's own (service/connections/properties-crypto.ts),
 * so the client and the Service cannot drift apart.
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { decryptProperty, encryptProperty } from '../../../service/connections/properties-crypto.js';
import { orgOf } from './args.js';
import { resolveCredentials } from './config.js';
import { runClientCommand, UsageError } from './errors.js';
import { ApiClient } from './http.js';
import { readStdin } from './prompt.js';

const USAGE = `Usage: ferry crypto encrypt --org N VALUE|-
       ferry crypto decrypt --org N VALUE|-

  Encrypts or decrypts one Connection property value with the Organization's crypto token
  (- reads the value from stdin, so a secret stays out of the shell history).`;

const SecuritySettings = z.object({ apiCryptoToken: z.string().min(1) });

/** The Organization's crypto token, as the docs' snippet reads it. */
export async function cryptoTokenOf(client: ApiClient, orgId: number): Promise<string> {
  return (await client.call('GET', `/v1/orgs/${orgId}/SecuritySettings`, SecuritySettings)).apiCryptoToken;
}

/** Encrypts a value for the API. */
export function encryptValue(plain: string, token: string): string {
  return encryptProperty(plain, token);
}

/** Decrypts a value the API answered; `name` is what an error names (never the value). */
export function decryptValue(value: string, token: string, name: string): string {
  return decryptProperty(value, token, name);
}

function cryptoCommand(direction: 'encrypt' | 'decrypt') {
  return (argv: string[], env: NodeJS.ProcessEnv): Promise<void> =>
    runClientCommand(async () => {
      const { values, positionals } = parseArgs({
        args: argv,
        options: { org: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
        allowPositionals: true,
      });
      if (values.help) {
        process.stdout.write(`${USAGE}\n`);
        return;
      }
      if (positionals.length !== 1) throw new UsageError(`give one VALUE (or - to read it from stdin)\n\n${USAGE}`);
      const org = orgOf(values.org, env);
      const input = positionals[0] === '-' ? await readStdin() : (positionals[0] as string);
      const client = new ApiClient(resolveCredentials(env));
      const token = await cryptoTokenOf(client, org);
      process.stdout.write(
        `${direction === 'encrypt' ? encryptValue(input, token) : decryptValue(input.trim(), token, 'VALUE')}\n`,
      );
    });
}

/** `ferry crypto encrypt`. */
export const cryptoEncrypt = cryptoCommand('encrypt');
/** `ferry crypto decrypt`. */
export const cryptoDecrypt = cryptoCommand('decrypt');
