// Proves that a view host starts while the log cannot answer its first read of the view
// definitions: a serve-node restarted just as the log-node was killed (chaos seeds 2901 and 2924,
// kill -9 of a serve-node then of the log-node) connected to the log, then read the views topic,
// which failed, and the process exited ("a Kafka broker of the log is unreachable"). The chaos
// runner restarts what its nemesis killed, not what exits by itself: the serve-node stayed down,
// the gateway never became ready, and the run could not be checked. Now the failed read is logged
// and the definition poll reads again. A log-node in-process; the first reads of the views topic
// are refused, as a lost connection would.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { openLogNode, type OpenLogNode } from '../../log-node/index.js';
import { encodeBatch } from '../../shared/batch-codec.js';
import type { LogClient } from '../../shared/log-api.js';
import { VIEWS_TOPIC } from '../../shared/topics.js';
import { ViewHost } from '../../views/view-host.js';
import { tempDir } from '../harness/temp-dir.js';

const WAIT_MS = 20_000;
/** Reads of the views topic refused before the log answers again. */
const REFUSED_READS = 4;
const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

/** The log, but its first `refused` reads of the views topic fail. */
function viewsUnreadable(log: LogClient, refused: { left: number }): LogClient {
  return new Proxy(log, {
    get(target, property, receiver) {
      if (property === 'read') {
        const read: LogClient['read'] = (topic, ...rest) => {
          if (topic === VIEWS_TOPIC && refused.left > 0) {
            refused.left -= 1;
            return Promise.reject(new Error('the log is unreachable (fault)'));
          }
          return target.read(topic, ...rest);
        };
        return read;
      }
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
    },
  });
}

describe('a view host whose log fails its first read of the definitions', () => {
  const dir = tempDir('views-host-start');
  const logger = pino({ level: 'silent' }, new Writable({ write: (_c, _e, done) => done() }));
  let node: OpenLogNode | undefined;
  let host: ViewHost | undefined;

  afterAll(async () => {
    await host?.stop();
    await node?.stop();
    dir.cleanup();
  });

  it('starts, and runs the views once the log answers', async () => {
    node = await openLogNode({ dataDir: `${dir.path}/log`, partitions: 2, logger });
    await node.client.ensureTopic('orders');
    await node.client.append(
      'orders',
      0,
      encodeBatch([{ key: 'o1', value: encode({ country: 'FR' }), timestampMs: Date.now() }]),
    );
    await node.client.ensureTopic(VIEWS_TOPIC);
    const definition = { from: 'orders', groupBy: ['country'], aggregates: { n: 'count()' } };
    const declared = await node.client.append(
      VIEWS_TOPIC,
      0,
      encodeBatch([{ key: 'by_country', value: encode(definition), timestampMs: Date.now() }]),
    );
    const refused = { left: REFUSED_READS };
    host = await ViewHost.start({
      log: viewsUnreadable(node.client, refused),
      dataDir: `${dir.path}/views`,
      logger,
      definitionPollMs: 50,
    });
    const deadline = Date.now() + WAIT_MS;
    while (host.progress('by_country', declared.baseOffset)?.frontiers[0]?.frontier !== 1) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(refused.left).toBe(0);
  });
});
