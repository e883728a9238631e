/**
 * `tailbase rebuild [--node N | --serve <url>]`: asks a serve-node to wipe its stores and replay
 * the log, then polls its status with a progress bar (records/s, ETA) until every partition it
 * hosts has caught up. By default through the gateway's admin API (`--node`, its index in
 * `tailbase status`); `--serve` talks to a serve-node's internal API directly.
 */
import { type Command, Option } from 'commander';
import { TailbaseError } from '../../shared/errors.js';
import { HttpServeClient } from '../../shared/http-serve-client.js';
import type { Tailbase } from '../sdk/index.js';
import { clientAction, clientCommand, integerAtLeast, parseHttpUrl } from '../command-kit.js';
import { formatDuration, formatRate } from '../format.js';
import type { ClientIo } from '../io.js';
import { startProgress } from '../progress.js';
import { readRebuildProgress } from '../rebuild-progress.js';

export const POLL_MS_DEFAULT = 250;
export const REBUILD_MS_MAX_DEFAULT = 60 * 60 * 1000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function registerRebuildCommand(program: Command, io: ClientIo): void {
  clientCommand(program, io, 'rebuild')
    .description("wipe a serve-node's stores, replay the log, and wait until it has caught up")
    .addOption(
      new Option('--node <index>', "the serve-node to rebuild, by its index in 'tailbase status'")
        .default(0)
        .argParser(integerAtLeast(0)),
    )
    .addOption(
      new Option('--serve <url>', "a serve-node's internal URL, bypassing the gateway").argParser(
        parseHttpUrl,
      ),
    )
    .addOption(
      new Option('--cluster-secret <secret>', 'secret the serve-node asks of internal calls').env(
        'TAILBASE_CLUSTER_SECRET',
      ),
    )
    .addOption(
      new Option('--poll-ms <ms>', 'time between status polls')
        .default(POLL_MS_DEFAULT)
        .argParser(integerAtLeast(10)),
    )
    .addOption(
      new Option('--rebuild-ms-max <ms>', 'give up waiting after this long')
        .env('TAILBASE_REBUILD_MS_MAX')
        .default(REBUILD_MS_MAX_DEFAULT)
        .argParser(integerAtLeast(1)),
    )
    .action(
      clientAction(io, async (session, _args, flags) => {
        const serve = flags.serve
          ? new HttpServeClient(flags.serve as string, {
              clusterSecret: flags.clusterSecret as string | undefined,
            })
          : throughGateway(session.client, flags.node as number);
        // The end offsets the node knows before the wipe size the bar from the first poll on.
        const before = readRebuildProgress(await serve.status());
        const startedMs = performance.now();
        await serve.rebuild();
        const progress = startProgress(
          io,
          'rebuild [{bar}] {percentage}% | {value}/{total} records | {rate} records/s | ETA {remaining}',
          before.total,
          { rate: '-', remaining: '-' },
        );
        const reported = new Set<string>();
        let state = readRebuildProgress(await serve.status(), before.ends);
        const show = () => {
          const elapsedMs = performance.now() - startedMs;
          const perMs = state.applied / elapsedMs;
          const remainingMs = perMs > 0 ? (state.total - state.applied) / perMs : NaN;
          progress.setTotal(state.total);
          progress.update(state.applied, {
            rate: formatRate(state.applied, elapsedMs),
            remaining: Number.isFinite(remainingMs) ? formatDuration(remainingMs) : '-',
          });
        };
        try {
          while (!state.caughtUp) {
            const elapsedMs = performance.now() - startedMs;
            if (elapsedMs > (flags.rebuildMsMax as number)) {
              throw new TailbaseError(504, 'rebuild_timeout', 'the serve-node has not caught up', {
                applied: state.applied,
                total: state.total,
                elapsedMs: Math.round(elapsedMs),
              });
            }
            for (const error of state.errors) {
              if (!reported.has(error)) session.note(`tailbase: ${error}`);
              reported.add(error);
            }
            show();
            await sleep(flags.pollMs as number);
            state = readRebuildProgress(await serve.status(), state.ends);
          }
          show();
        } finally {
          progress.stop();
        }
        const elapsedMs = Math.round(performance.now() - startedMs);
        const result = {
          serve: serve.url,
          records: state.applied,
          elapsedMs,
          recordsPerSec: Number(formatRate(state.applied, elapsedMs)) || 0,
        };
        if (session.json) {
          session.print(JSON.stringify(result));
          return;
        }
        session.print(
          `rebuilt ${serve.url}: ${result.records} records in ${formatDuration(elapsedMs)} ` +
            `(${formatRate(result.records, elapsedMs)} records/s)`,
        );
      }),
    );
}

/** The serve-node admin calls of the gateway, in the shape of the internal client. */
function throughGateway(client: Tailbase, node: number) {
  return {
    url: `${client.url} serve-node ${node}`,
    status: () => client.serveNodeStatus(node),
    rebuild: async () => {
      await client.rebuild(node);
    },
  };
}
