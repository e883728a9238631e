// Proves that a view processor never publishes frontiers whose output another processor's claim
// has fenced (issue 29 item 4). A claim of a greater epoch can land between an owner's read-back
// of its own topic and its next append: the claim of a member that was dealt the view for a
// moment and whose append was still in flight when the view moved on, landing after the owner's
// claim. Every serve-node skips what the owner appends after it, yet the owner published that
// round's frontiers with the offsets of those records: a token read waited for the frontiers,
// then read the view through those offsets and missed the write (and the owner, still the
// group's current member for the view, committed them). A log-node in-process; the late claim
// is appended by hand, at the moment of the owner's first output append after the write.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeBatch } from '../../shared/batch-codec.js';
import type { LogClient } from '../../shared/log-api.js';
import { claimHeaders, claimKey } from '../../shared/view-epoch.js';
import {
  expectedView,
  isClaimBatch,
  lastOffsets,
  readSourceDocuments,
  viewThrough,
} from './view-check.js';
import { interceptLog } from '../harness/index.js';
import { openViewTaskRig, type ViewTaskRig } from './view-task-rig.js';

const PARTITIONS = 4;
const SOURCE = 'orders';
const TOPIC = 'by_country';
const DEFINITION = { from: SOURCE, groupBy: ['country'], aggregates: { n: 'count()' } };
const WAIT_MS = 20_000;
/** How long a token read waits on the frontiers of the fenced round before it is let go. */
const STALE_WAIT_MS = 1_500;

describe('a claim that lands between the read-back and the append', () => {
  let rig: ViewTaskRig;
  const write = (key: string, country: string) => rig.write([[key, { country }]]);
  const expected = async () =>
    Object.fromEntries(
      expectedView(DEFINITION, await readSourceDocuments(rig.node.client, SOURCE, PARTITIONS)),
    );
  /** A claim of another processor: partition 0's, then one in `partition` with its epoch. */
  const lateClaim = async (partition: number) => {
    const claim = (p: number, epoch: number | null) =>
      encodeBatch([
        {
          key: claimKey(p, PARTITIONS),
          value: null,
          timestampMs: Date.now(),
          headers: claimHeaders(epoch),
        },
      ]);
    const { lastOffset: epoch } = await rig.node.client.append(TOPIC, 0, claim(0, null));
    if (partition !== 0) await rig.node.client.append(TOPIC, partition, claim(partition, epoch));
  };
  /** The log, but the first output append after `arm()` lands after a late claim. */
  const claimingLog = (log: LogClient) => {
    let armed = false;
    const proxy = interceptLog(log, {
      append: async (topic, partition, bytes, ...rest) => {
        if (armed && topic === TOPIC && !isClaimBatch(bytes)) {
          armed = false;
          await lateClaim(partition);
        }
        return log.append(topic, partition, bytes, ...rest);
      },
    });
    return { log: proxy, arm: () => (armed = true) };
  };
  const startTask = (log: LogClient, deposed: () => void = () => undefined) =>
    rig.start({
      topic: TOPIC,
      takeover: true,
      log,
      events: { published: () => undefined, deposed },
    });

  beforeAll(async () => {
    rig = await openViewTaskRig('views-claim-before-append', SOURCE, PARTITIONS, DEFINITION);
    await rig.node.client.ensureTopic(TOPIC);
  });

  afterAll(() => rig?.close());

  it('publishes nothing of the fenced round; the next owner publishes the write', async () => {
    for (const [i, country] of ['AT', 'BE', 'CH', 'DE'].entries()) await write(`o${i}`, country);
    const { log, arm } = claimingLog(rig.node.client);
    let deposed = false;
    const first = startTask(log, () => (deposed = true));
    // Caught up and published: the held output is out.
    expect(
      await viewThrough(
        rig.node.client,
        TOPIC,
        await first.waiters.wait(await lastOffsets(rig.node.client, SOURCE), WAIT_MS),
      ),
    ).toEqual(await expected());

    arm();
    await write('o9', 'FR');
    const needs = await lastOffsets(rig.node.client, SOURCE);
    // A token read of the write: answered only with a view that holds it, or not at all.
    const answered = await first.waiters.wait(needs, STALE_WAIT_MS).then(
      (ends) => ends,
      () => null,
    );
    if (answered !== null)
      expect(await viewThrough(rig.node.client, TOPIC, answered)).toEqual(await expected());
    await waitUntil(() => deposed);

    // Dealt the view again, the member resumes from its state with a claim above the late one:
    // the fenced key is appended again and the write's frontier published.
    await rig.stop(first);
    const second = startTask(rig.node.client);
    expect(
      await viewThrough(rig.node.client, TOPIC, await second.waiters.wait(needs, WAIT_MS)),
    ).toEqual(await expected());
  });
});

async function waitUntil(done: () => boolean): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!done()) {
    expect(Date.now()).toBeLessThan(deadline);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
