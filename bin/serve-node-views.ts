/**
 * The view processors of a cluster, beside each `tailbase serve-node` (views/README.md,
 * Placement): a member of the views group that runs the views it is dealt, with state under
 * `<data>/views`. Its Kafka connections are its own: on tailbase log-nodes it authenticates with
 * the cluster secret as the view processor (the one principal whose Produce to a view's topic
 * the log-node takes); on another Kafka, with the serve-node's SASL settings (`--view-log-auth
 * kafka`), whose ACLs are the operator's.
 */
import path from 'node:path';
import { Option } from 'commander';
import type { ServeNodeCompanion } from '../serve-node/main.js';
import { connectLog } from '../shared/log-connect.js';
import { viewWriterKafka } from '../shared/view-api.js';
import {
  viewGroupOptions,
  viewGroupValues,
  viewLimitOptions,
  viewLimitValues,
} from '../views/cli-options.js';
import { ViewHost } from '../views/view-host.js';
import { GroupPlacement } from '../views/view-placement.js';

/** How long start waits for the log to answer, as the serve-node does. */
const LOG_CONNECT_MS_MAX = 30_000;
/**
 * A round is applied in one synchronous transaction on the thread that heartbeats: at 1 MiB a
 * partition, a member taking over two views of 10^5 documents on a loaded machine went silent
 * past a 6 s session and was expelled, over and over; at 256 KiB it was not (views/README.md).
 */
const FETCH_BYTES_MAX = 256 * 1024;

export const serveNodeViews: ServeNodeCompanion = {
  options: () => [
    new Option('--views <mode>', 'run view processors here, as a member of the views group')
      .env('TAILBASE_VIEWS')
      .choices(['on', 'off'])
      .default('on'),
    new Option(
      '--view-log-auth <how>',
      'how the view processor authenticates to the log: the cluster secret (tailbase log-nodes), or the --kafka-sasl-* settings (another Kafka)',
    )
      .env('TAILBASE_VIEW_LOG_AUTH')
      .choices(['cluster-secret', 'kafka']),
    ...viewLimitOptions({ fetchBytesMax: FETCH_BYTES_MAX }),
    ...viewGroupOptions(),
  ],

  async start(flags, options) {
    if (flags.views === 'off') return { stop: () => Promise.resolve() };
    const auth =
      (flags.viewLogAuth as string | undefined) ??
      (options.clusterSecret ? 'cluster-secret' : 'kafka');
    if (auth === 'cluster-secret' && !options.clusterSecret) {
      throw new Error('--view-log-auth cluster-secret needs --cluster-secret');
    }
    const logger = options.logger!.child({ role: 'views' });
    const { log, close } = await connectLog(options.logUrls, {
      connectWaitMs: options.logConnectMsMax ?? LOG_CONNECT_MS_MAX,
      kafka: viewWriterKafka(
        options.kafka ?? {},
        auth === 'cluster-secret' ? options.clusterSecret : undefined,
      ),
      logger,
    });
    const limits = viewLimitValues(flags);
    const host = await ViewHost.start({
      log,
      dataDir: path.join(options.dataDir, 'views'),
      logger,
      limits,
      placement: new GroupPlacement({
        log,
        logger,
        limits: viewGroupValues(flags),
        retryMs: limits.retryMs,
      }),
    }).catch((error: unknown) => {
      close();
      throw error;
    });
    return {
      async stop() {
        await host.stop();
        close();
      },
    };
  },
};
