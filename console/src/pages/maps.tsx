import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, page, poll } from '../api.js';
import { href } from '../router.js';
import type { Block, MapModel, Revision, ValidationResult } from '../types.js';
import { Action, Loading, messageOf, Pager, Section, Table, useLoad, when } from '../util.js';

const WRITES = /^(Create|Update|Upsert|Delete|Insert|Merge|Execute|Send|Reply)/i;

/** Where a Block sits in the flow: the source starts it, targets write, steps do the rest. */
function roleOf(block: Block, index: number): 'source' | 'target' | 'step' {
  if (index === 0) return 'source';
  if (WRITES.test(block.blockType) || WRITES.test(block.action ?? '')) return 'target';
  return 'step';
}

/** The Map as a diagram: source → steps → targets, each Block with its field mappings and its validation answers. */
function Diagram({ blocks, results }: { blocks: Block[]; results: ValidationResult[] }): JSX.Element {
  return (
    <ol class="diagram" aria-label="Blocks of the Map, in order">
      {blocks.map((b, i) => {
        const role = roleOf(b, i);
        const mine = results.filter((r) => r.blockId === b.blockId);
        return (
          <li key={b.blockId} class={`block ${role}`} data-block={b.name}>
            <div class="block-head">
              <span class="role">{role}</span>
              <strong>{b.name}</strong>
              <span class="muted small">
                {b.blockType}
                {b.entity ? ` · ${b.entity}` : ''}
              </span>
            </div>
            {mine.length > 0 && (
              <ul class="findings">
                {mine.map((r, k) => (
                  <li key={k} class={r.severity.toLowerCase()}>
                    {r.severity}: {r.message}
                  </li>
                ))}
              </ul>
            )}
            {b.fieldMappings && b.fieldMappings.length > 0 && (
              <details>
                <summary>{b.fieldMappings.length} field mappings</summary>
                <table class="mappings">
                  <thead>
                    <tr>
                      <th scope="col">Target field</th>
                      <th scope="col">Formula</th>
                    </tr>
                  </thead>
                  <tbody>
                    {b.fieldMappings.map((f) => (
                      <tr key={f.targetField}>
                        <td>{f.targetField}</td>
                        <td>
                          <code>{f.targetFormula}</code>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </details>
            )}
          </li>
        );
      })}
    </ol>
  );
}

export function MapPage(props: { orgId: number; solutionId: string; mapId: number }): JSX.Element {
  const S = `/v1/orgs/${props.orgId}/solutions/${props.solutionId}`;
  const M = `${S}/maps/${props.mapId}`;
  const map = useLoad(() => api<MapModel>('GET', M), [M]);
  const [text, setText] = useState('');
  const [comment, setComment] = useState('');
  const [parseError, setParseError] = useState<string>();
  const [results, setResults] = useState<ValidationResult[]>([]);
  const [validateId, setValidateId] = useState<string>();
  const [validatedText, setValidatedText] = useState<string>();
  const [revOffset, setRevOffset] = useState(0);
  const revisions = useLoad(() => page<Revision>(`${M}/revisions`, revOffset), [M, revOffset]);
  useEffect(() => {
    if (map.data) setText(JSON.stringify(map.data, null, 2));
  }, [map.data]);

  const model = (): Record<string, unknown> => {
    try {
      const parsed = JSON.parse(text) as Record<string, unknown>;
      setParseError(undefined);
      return parsed;
    } catch (err) {
      const m = `The model is not valid JSON: ${messageOf(err)}`;
      setParseError(m);
      throw new Error(m);
    }
  };
  /** Validates the model in the editor; its answers go with their Blocks. Answers the validation's ID. */
  const runValidation = async (): Promise<{ id: string; total: number }> => {
    const { validateId: id } = await api<{ validateId: string }>('POST', `${M}/validate`, { body: model() });
    const found = await poll(() => page<ValidationResult>(`${S}/maps/${encodeURIComponent(id)}/validationresults`));
    setValidateId(id);
    setValidatedText(text);
    setResults(found.items);
    return { id, total: found.total };
  };
  const validate = async (): Promise<string> => {
    const { total } = await runValidation();
    return total === 0 ? 'The Map is valid.' : `${total} validation answer(s), shown with their Blocks.`;
  };
  /** The validation of the model as it is in the editor: the last one, or a new one when the text changed. */
  const validation = async (): Promise<string> =>
    validateId && validatedText === text ? validateId : (await runValidation()).id;
  let blocks: Block[] = map.data?.blocks ?? [];
  try {
    const parsed = JSON.parse(text) as { blocks?: Block[] };
    if (Array.isArray(parsed.blocks)) blocks = parsed.blocks;
  } catch {
    // The diagram keeps the last model that parsed.
  }
  return (
    <>
      <p class="crumbs">
        <a href={href(props.orgId, 'solutions', props.solutionId)}>Solution</a> /
      </p>
      <h1>Map: {map.data?.name ?? props.mapId}</h1>
      <Loading loaded={map} />
      {map.data && (
        <p class="muted">
          Revision {map.data.revision} of {when(map.data.revisionDate)} · {map.data.valid ? 'valid' : 'not validated'}
          {map.data.lockedBy ? ` · locked by ${map.data.lockedBy}` : ''}
        </p>
      )}
      <Section title="Diagram" id="diagram">
        <Diagram blocks={blocks} results={results} />
        {results
          .filter((r) => !r.blockId)
          .map((r, i) => (
            <p key={i} class="error">
              {r.severity}: {r.message}
            </p>
          ))}
      </Section>
      <Section
        title="Model (JSON)"
        id="model"
        actions={
          <>
            <Action label="Validate" run={validate} done={(m) => String(m)} />
            <Action
              label="Save"
              kind="primary"
              run={async () => {
                await api('PUT', `${S}/maps/advanced/${props.mapId}`, { body: model(), query: { comment } });
                map.reload();
                revisions.reload();
              }}
              done="Saved as a new revision. Prepare the Solution before its next run."
            />
          </>
        }
      >
        <label class="block">
          Map model
          <textarea
            class="code"
            rows={18}
            spellcheck={false}
            value={text}
            onInput={(e) => setText(e.currentTarget.value)}
          />
        </label>
        <label class="block">
          Revision comment <input value={comment} onInput={(e) => setComment(e.currentTarget.value)} />
        </label>
        {parseError && (
          <p class="error" role="alert">
            {parseError}
          </p>
        )}
      </Section>
      <FormulaTester S={S} blocks={blocks} validation={validation} />
      <Section title="Revisions" id="revisions">
        <Loading loaded={revisions} />
        <Table caption="Revisions" head={['Revision', 'Saved', 'By', 'Comment', '']}>
          {(revisions.data?.items ?? []).map((r) => (
            <tr key={r.revision}>
              <td class="num">{r.revision}</td>
              <td>{when(r.revisionDate)}</td>
              <td>{r.modifiedBy ?? ''}</td>
              <td>{r.revisionComment ?? ''}</td>
              <td>
                <Action
                  label="Revert"
                  disabled={r.revision === map.data?.revision}
                  confirm={`Restore revision ${r.revision} as a new revision?`}
                  run={async () => {
                    await api('POST', `${M}/revert`, { query: { revision: r.revision } });
                    map.reload();
                    revisions.reload();
                  }}
                  done={`Revision ${r.revision} restored.`}
                />
              </td>
            </tr>
          ))}
        </Table>
        <Pager offset={revOffset} total={revisions.data?.total ?? 0} onChange={setRevOffset} />
      </Section>
    </>
  );
}

/** Checks a formula where it would sit in the Map (the API's validateformula, against a validation of the model). */
function FormulaTester(props: { S: string; blocks: Block[]; validation: () => Promise<string> }): JSX.Element {
  const [formula, setFormula] = useState('');
  const [blockId, setBlockId] = useState('');
  const [answer, setAnswer] = useState<FormulaAnswer>();
  return (
    <Section title="Formula tester" id="formula">
      <p class="muted small">
        Checks a formula against the Blocks before the one chosen, as the Map's validation sees them. To evaluate a
        formula on a sample record, use <code>ferry formula eval</code> (docs/formulas.md).
      </p>
      <label class="block">
        Formula <input class="code" value={formula} onInput={(e) => setFormula(e.currentTarget.value)} />
      </label>
      <label class="block">
        In Block
        <select value={blockId} onChange={(e) => setBlockId(e.currentTarget.value)}>
          <option value="">after the last Block</option>
          {props.blocks.map((b) => (
            <option key={b.blockId} value={b.blockId}>
              {b.name}
            </option>
          ))}
        </select>
      </label>
      <Action
        label="Check formula"
        disabled={!formula}
        run={async () => {
          const id = await props.validation();
          setAnswer(
            await api<FormulaAnswer>('POST', `${props.S}/maps/${encodeURIComponent(id)}/validateformula`, {
              body: { formula, blockId: blockId || null },
            }),
          );
        }}
      />
      {answer && (
        <p class={answer.valid ? 'ok' : 'error'} role="status">
          {answer.valid ? 'The formula is valid.' : (answer.message ?? answer.errors.map((e) => e.message).join('; '))}
        </p>
      )}
    </Section>
  );
}

interface FormulaAnswer {
  valid: boolean;
  message: string | null;
  errors: Array<{ message: string }>;
}
