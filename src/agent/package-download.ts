import { MAX_PACKAGE_BYTES, sha256 } from '../connectors/package.js';
import { FerryError } from '../errors/ferry-error.js';

/** What {@link downloadPackage} fetches and checks. */
export interface PackageDownload {
  readonly url: string;
  /** `Bearer <agentId>.<secret>`. */
  readonly authorization: string;
  readonly size: number;
  readonly sha256: string;
  readonly timeoutMs: number;
  /** What the package is, for the messages: "Connector package", "Agent package". */
  readonly what: string;
}

/**
 * Downloads a package the Service serves to Agents (Connector plugins, Agent versions) with the
 * Agent's credentials, and checks its size and SHA-256 against what the Service's command said,
 * so that a package altered on the way or on the Service's disk is never installed.
 */
export async function downloadPackage(d: PackageDownload): Promise<Buffer> {
  if (d.size > MAX_PACKAGE_BYTES)
    throw new FerryError(
      'CON_PACKAGE_INVALID',
      `The ${d.what} is ${d.size} bytes; at most ${MAX_PACKAGE_BYTES} are accepted.`,
    );
  let res: Response;
  try {
    res = await fetch(d.url, { headers: { authorization: d.authorization }, signal: AbortSignal.timeout(d.timeoutMs) });
  } catch (err) {
    throw new FerryError(
      'CHN_DISCONNECTED',
      `The ${d.what} could not be downloaded: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  if (!res.ok) {
    throw new FerryError('CON_PACKAGE_UNAVAILABLE', `The Service answered ${res.status} to the ${d.what} download.`, {
      details: { status: res.status },
    });
  }
  const data = Buffer.from(await res.arrayBuffer());
  if (data.length !== d.size || sha256(data) !== d.sha256) {
    throw new FerryError(
      'CON_PACKAGE_CHECKSUM',
      `The downloaded ${d.what} (${data.length} bytes) does not match the SHA-256 the Service sent; nothing was installed.`,
      { details: { expected: d.sha256, size: d.size } },
    );
  }
  return data;
}
