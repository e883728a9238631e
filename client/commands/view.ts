/**
 * `tailbase view create <view> <json>`: declares a view from its JSON definition;
 * `tailbase view ls`: every view with its source, lag and a redefinition's progress (processed of
 * the source records it must reach before it replaces the version that serves); `tailbase view
 * show <view>`: one view's definition, version, frontiers and rebuild; `tailbase view rm <view> --yes`: drops one. A view's
 * documents are read with the commands that read collections (get, scan, search, tail).
 */
import type { Command } from 'commander';
import { clientAction, clientCommand, collectionName } from '../command-kit.js';
import { formatTable } from '../format.js';
import { type ClientIo, UsageError } from '../io.js';
import type { ViewDefinitionBody, ViewInfo } from '../sdk/index.js';

function parseDefinition(text: string): ViewDefinitionBody {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`the view definition is not JSON: ${(error as Error).message}`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new UsageError('the view definition is a JSON object: {from, select | groupBy, ...}');
  }
  return body as ViewDefinitionBody;
}

/** Source records past the frontiers, over every partition; null where no processor answered. */
const lagOf = (view: ViewInfo) =>
  view.frontiers === null ? null : view.frontiers.reduce((sum, f) => sum + f.lag, 0);

/** A redefinition's progress: `version M processed/total`, over every source partition. */
function rebuildOf(view: ViewInfo): string {
  const rebuild = view.rebuilding;
  if (rebuild === null) return '-';
  if (rebuild.partitions === null) return `version ${rebuild.version}`;
  const processed = rebuild.partitions.reduce((sum, p) => sum + Math.min(p.processed, p.total), 0);
  const total = rebuild.partitions.reduce((sum, p) => sum + p.total, 0);
  return `version ${rebuild.version} ${processed}/${total}`;
}

export function registerViewCommands(program: Command, io: ClientIo): void {
  const view = program.command('view').description('declare, list, inspect and drop views');

  clientCommand(view, io, 'create')
    .description('declare a view from its JSON definition (admin scope)')
    .argument('<view>', 'view name', collectionName)
    .argument(
      '<json>',
      'definition, like \'{"from":"orders","groupBy":["country"],"aggregates":{"n":"count()"}}\'',
    )
    .action(
      clientAction(io, async (session, [name, text]) => {
        const answer = await session.client.view(name).define(parseDefinition(text));
        const rebuilding =
          answer.rebuilding === null ? '' : `, rebuilding as version ${answer.rebuilding.version}`;
        session.print(
          session.json
            ? JSON.stringify(answer)
            : `view ${name} version ${answer.version}${rebuilding}`,
        );
      }),
    );

  clientCommand(view, io, 'ls')
    .description('list the views: source, version, lag, and a redefinition being rebuilt')
    .action(
      clientAction(io, async (session) => {
        const views = await session.client.views();
        if (session.json) {
          session.print(JSON.stringify(views));
          return;
        }
        io.stdout.write(
          formatTable(
            ['VIEW', 'FROM', 'SOURCE', 'VERSION', 'LAG', 'REBUILD'],
            views.map((v) => [
              v.view,
              v.definition.from,
              v.source,
              v.version,
              lagOf(v),
              rebuildOf(v),
            ]),
          ),
        );
      }),
    );

  clientCommand(view, io, 'show')
    .description(
      "a view's definition, version, per source partition its frontier and lag, and its rebuild",
    )
    .argument('<view>', 'view name', collectionName)
    .action(
      clientAction(io, async (session, [name]) => {
        const answer = await session.client.view(name).info();
        session.print(JSON.stringify(answer, null, session.json ? undefined : 2));
      }),
    );

  clientCommand(view, io, 'rm')
    .description('drop a view: its definition, topic and tables go (admin scope)')
    .argument('<view>', 'view name', collectionName)
    .option('--yes', 'really drop it: there is no undo')
    .action(
      clientAction(io, async (session, [name], flags) => {
        if (!flags.yes) throw new UsageError(`dropping view ${name} cannot be undone: add --yes`);
        const answer = await session.client.view(name).drop();
        session.print(session.json ? JSON.stringify(answer) : `dropped view ${name}`);
      }),
    );
}
