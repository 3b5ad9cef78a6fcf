import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { FerryError } from '../errors/ferry-error.js';

/**
 * Resolves the upload address the Service sent against the Service URL and refuses any other
 * origin: the Agent's bearer credentials go to its own Service and nowhere else.
 */
export function resolveUploadUrl(uploadUrl: string, serviceUrl: string): URL {
  const service = new URL(serviceUrl);
  let target: URL;
  try {
    target = new URL(uploadUrl, service);
  } catch {
    throw new FerryError('AGT_UPLOAD_URL_REFUSED', 'The upload address is not a URL.', { details: { uploadUrl } });
  }
  if (target.origin !== service.origin) {
    throw new FerryError(
      'AGT_UPLOAD_URL_REFUSED',
      `The upload address ${target.origin} is not the Service ${service.origin}.`,
      {
        details: { uploadOrigin: target.origin, serviceOrigin: service.origin },
      },
    );
  }
  return target;
}

/**
 * PUTs a file as `application/zip` with the Agent's bearer credentials, streaming it from disk
 * with its length. Any answer but 2xx is AGT_LOG_UPLOAD_FAILED, with the Service's status and text.
 */
export function uploadFile(
  url: URL,
  file: string,
  authorization: string,
  opts: { signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<{ status: number }> {
  const size = fs.statSync(file).size;
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(url, {
      method: 'PUT',
      headers: { authorization, 'content-type': 'application/zip', 'content-length': String(size) },
      timeout: opts.timeoutMs ?? 120_000,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    req.on('timeout', () => req.destroy(new Error('upload timed out')));
    req.on('error', (err) =>
      reject(new FerryError('AGT_LOG_UPLOAD_FAILED', `The log upload failed: ${err.message}`, { cause: err })),
    );
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (text.length < 2000) text += chunk;
      });
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) resolve({ status });
        else
          reject(
            new FerryError('AGT_LOG_UPLOAD_FAILED', `The Service answered ${status} to the log upload.`, {
              details: { status, body: text.slice(0, 2000) },
            }),
          );
      });
    });
    fs.createReadStream(file)
      .on('error', (err) => req.destroy(err))
      .pipe(req);
  });
}
