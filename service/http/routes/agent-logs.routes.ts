import { Readable } from 'node:stream';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { FerryError, isFerryError } from '../../../src/errors/ferry-error.js';
import { LOG_UPLOAD_PATH } from '../../../src/protocol/registration.js';
import { notConnected } from '../../gateway/command-bus.js';
import { MAX_LOG_ARCHIVE_BYTES } from '../../store/log-archives.js';
import { claimAgentLogDownload, getAgentLog, insertAgentLog, markAgentLogFailed, markAgentLogReady } from '../../store/repos/agent-logs.repo.js';
import { newId, nowIso } from '../../util/values.js';
import { agentBearer, requireAgent } from '../agent-model.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf, userName } from '../guard.js';
import { AgentLogParams, AgentParams, LogRequested } from '../schemas/agent.schema.js';
import { Guid, sendCreated } from '../schemas/common.js';

/** The message SPEC.md gives for a GET before the archive arrived (clients match on it). */
export const LOGS_NOT_AVAILABLE = 'The Agent Logs are not available.';

/** Same address, whether it arrived as IPv4 or IPv4-mapped IPv6. */
const sameIp = (a: string, b: string): boolean => a.replace(/^::ffff:/i, '') === b.replace(/^::ffff:/i, '');

/**
 * Agent log archives (SPEC.md "Logs"):
 *
 *   user POST …/logs ─▶ row Requested (caller's IP) ─▶ zipLogs {logId, uploadUrl} ─▶ Agent
 *   Agent zips its logs ─▶ PUT /v1/agent/logs/{logId} (bearer, application/zip) ─▶ file, row Ready
 *   user GET …/logs/{logId} (same IP) ─▶ 404 "The Agent Logs are not available." until Ready,
 *        then the zip once (row Downloaded, file deleted); later GETs 410
 */
const agentLogsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;
  const files = deps.agents.logArchives;
  const uploader = agentBearer(db);

  // The upload body is streamed to disk as it arrives, never held in memory.
  app.addContentTypeParser(['application/zip', 'application/octet-stream', 'application/x-zip-compressed'], (_req, payload, done) => done(null, payload));

  app.post('/v1/orgs/:orgId/agents/:agentId/logs', {
    config: { access: 'write' },
    schema: { tags: ['Logs'], summary: 'Ask an On-Premise Agent to zip and upload its logs; returns the logId', params: AgentParams, response: { 201: LogRequested } },
  }, async (req, reply) => {
    const { org, user } = orgOf(req);
    const agent = await requireAgent(db, org.id, req.params.agentId);
    if (agent.isCloudAgent === 1) {
      throw new FerryError('API_UNSUPPORTED', 'Cloud Agent logs are per Solution: use POST /v1/orgs/{orgId}/solutions/{solutionId}/logs.');
    }
    if (!deps.agents.commands.isConnected(agent.id)) throw notConnected(agent.id);
    const logId = newId();
    await insertAgentLog(db, {
      id: logId,
      orgId: org.id,
      agentId: agent.id,
      solutionId: null,
      requesterIp: req.ip,
      requestedBy: userName(user),
      state: 'Requested',
      sizeBytes: null,
      error: null,
      requestedAt: nowIso(),
      uploadedAt: null,
      downloadedAt: null,
    });
    try {
      // A path: the Agent's session makes it absolute on the origin the Agent connected to.
      await deps.agents.commands.send(agent.id, { type: 'zipLogs', logId, uploadUrl: LOG_UPLOAD_PATH(logId) });
    } catch (err) {
      await markAgentLogFailed(db, logId, agent.id, err instanceof Error ? err.message : String(err));
      throw err;
    }
    req.log.info({ agentId: agent.id, logId }, 'agent logs requested');
    return sendCreated(reply, `/v1/orgs/${org.id}/agents/${agent.id}/logs/${logId}`, { logId });
  });

  app.get('/v1/orgs/:orgId/agents/:agentId/logs/:logId', {
    // A HEAD would use up the single download.
    exposeHeadRoute: false,
    config: { access: 'write' },
    schema: {
      tags: ['Logs'],
      summary: `The zip of the logs, once; answers "${LOGS_NOT_AVAILABLE}" until it has arrived`,
      params: AgentLogParams,
      produces: ['application/zip'],
    },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    const agent = await requireAgent(db, org.id, req.params.agentId);
    const row = await getAgentLog(db, req.params.logId);
    if (!row || row.agentId !== agent.id || row.orgId !== org.id) throw new FerryError('API_NOT_FOUND', `Log archive ${req.params.logId} was not found.`);
    if (!sameIp(row.requesterIp, req.ip)) {
      throw new FerryError('AGT_LOGS_OTHER_IP', `The logs were requested from another IP address than ${req.ip}; download them from the same address, or POST again from this one.`);
    }
    switch (row.state) {
      case 'Requested':
        throw new FerryError('AGT_LOGS_NOT_AVAILABLE', LOGS_NOT_AVAILABLE);
      case 'Failed':
        throw new FerryError('AGT_LOGS_FAILED', `The Agent could not provide its logs: ${row.error ?? 'no reason given'}. POST again for a new attempt.`);
      case 'Downloaded':
        throw usedLog(row.id);
      case 'Ready':
        break;
    }
    if (!(await claimAgentLogDownload(db, row.id, nowIso()))) throw usedLog(row.id);
    const stream = files.open(row.id);
    // One download: the file goes when the stream ends, whether the client read it all or not.
    stream.once('close', () => void files.remove(row.id).catch((err: unknown) => req.log.warn({ err, logId: row.id }, 'log archive not removed')));
    req.log.info({ agentId: agent.id, logId: row.id, bytes: row.sizeBytes }, 'agent logs downloaded');
    void reply.type('application/zip').header('Content-Disposition', `attachment; filename="agent-logs-${row.id}.zip"`);
    if (row.sizeBytes !== null) void reply.header('Content-Length', String(row.sizeBytes));
    return reply.send(stream);
  });

  app.put('/v1/agent/logs/:logId', {
    config: { access: 'public' },
    bodyLimit: MAX_LOG_ARCHIVE_BYTES,
    // The Agent's bearer secret is checked before the body is read.
    onRequest: uploader.onRequest,
    schema: {
      tags: ['Agent protocol'],
      summary: 'An Agent uploads the log archive it was asked for (application/zip, bearer credentials)',
      params: z.object({ logId: Guid }),
      response: { 204: z.null() },
    },
  }, async (req, reply) => {
    const agent = uploader.agentOf(req);
    const row = await getAgentLog(db, req.params.logId);
    if (!row || row.agentId !== agent.id) throw new FerryError('API_NOT_FOUND', `Log archive ${req.params.logId} was not requested from this Agent.`);
    if (row.state !== 'Requested') throw new FerryError('API_CONFLICT', `Log archive ${row.id} is ${row.state}; it takes one upload.`);
    if (!(req.body instanceof Readable)) throw new FerryError('API_UNSUPPORTED_MEDIA_TYPE', 'Send the log archive as application/zip.');
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > MAX_LOG_ARCHIVE_BYTES) {
      throw new FerryError('API_PAYLOAD_TOO_LARGE', `A log archive may have at most ${MAX_LOG_ARCHIVE_BYTES} bytes.`);
    }
    let size: number;
    try {
      size = await files.write(row.id, req.body, MAX_LOG_ARCHIVE_BYTES);
    } catch (err) {
      if (isFerryError(err)) throw err;
      throw new FerryError('API_MALFORMED_BODY', 'The log archive upload was cut off; send it again.', { cause: err });
    }
    if (!(await markAgentLogReady(db, row.id, size, nowIso()))) {
      await files.remove(row.id);
      throw new FerryError('API_CONFLICT', `Log archive ${row.id} is no longer waiting for an upload.`);
    }
    req.log.info({ agentId: agent.id, logId: row.id, bytes: size }, 'agent log archive received');
    return reply.code(204).send(null);
  });
};

const usedLog = (logId: string): FerryError =>
  new FerryError('AGT_LOGS_USED', `Log archive ${logId} was already downloaded: a logId works once. POST again for a new archive.`);

export default agentLogsRoutes;
