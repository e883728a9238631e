// Proves that a view processor whose topic was deleted (its view dropped, or its version retired by
// a swap) never creates that topic again, and stops instead of retrying for ever (issue 29 item 6).
// Chaos seed 2922: a task of a replaced version, paused while the swap deleted its topic, woke and
// claimed the topic at epoch 0: its append created it again, as a collection, until a host deleted
// it 13 s later. Over the in-process binding of `tailbase start` (the views thread's client) and
// over the Kafka protocol as a serve-node's view processor (authenticated with the cluster secret,
// its metadata still naming the topic), against a log-node in-process; the task is real.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { LogClient } from '../../shared/log-api.js';
import { connectLog } from '../../shared/log-connect.js';
import { VIEW_WRITER_USERNAME } from '../../shared/view-api.js';
import type { ViewTask } from '../../views/view-task.js';
import { openViewTaskRig, type ViewTaskRig } from './view-task-rig.js';

const PARTITIONS = 4;
const SOURCE = 'orders';
const TOPIC = 'by_country';
const DEFINITION = { from: SOURCE, groupBy: ['country'], aggregates: { n: 'count()' } };
const SECRET = 'views-retired-topic-secret';
const WAIT_MS = 20_000;
/** How long a stopped task is watched for a late append that would bring the topic back. */
const AFTER_MS = 1_000;
const POLL_MS = 25;

const silent = pino({ level: 'silent' }, new Writable({ write: (_c, _e, done) => done() }));

async function until(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** What a task told its host, and whether the test says its version is declared. */
function watched() {
  const told = { published: 0, deposed: 0, retired: 0, declared: true };
  return {
    told,
    events: {
      published: () => void told.published++,
      deposed: () => void told.deposed++,
      declared: () => Promise.resolve(told.declared),
      retired: () => void told.retired++,
    },
  };
}

describe('a view task whose topic was deleted', () => {
  let rig: ViewTaskRig | null = null;
  const closers: (() => void)[] = [];
  afterEach(async () => {
    await rig?.close();
    rig = null;
    for (const close of closers.splice(0)) close();
  });

  const topicExists = async (log: LogClient) =>
    (await log.topics()).some((topic) => topic.name === TOPIC);

  /** Runs a task until published, drops its version and topic, and writes the source again. */
  async function dropUnder(
    r: ViewTaskRig,
    start: (events: ReturnType<typeof watched>['events']) => ViewTask,
  ) {
    await r.node.client.ensureTopic(TOPIC);
    await r.write([
      ['a', { country: 'FR' }],
      ['b', { country: 'DE' }],
    ]);
    const first = watched();
    const task = start(first.events);
    await until('the first publication', () => first.told.published > 0);
    return { task, first };
  }

  it("tailbase start's binding: the task's next output finds no topic, it stops, and the topic stays gone", async () => {
    const r = (rig = await openViewTaskRig('views-retired-local', SOURCE, PARTITIONS, DEFINITION));
    const { first } = await dropUnder(r, (events) =>
      r.start({ topic: TOPIC, takeover: false, log: r.node.viewClient, events }),
    );
    // As the gateway drops a view (and a swap retires a version): the record, then the topic.
    first.told.declared = false;
    await r.node.client.deleteTopic(TOPIC);
    await r.write([['c', { country: 'FR' }]]);
    await until('the task to stop as retired', () => first.told.retired === 1);
    await new Promise((resolve) => setTimeout(resolve, AFTER_MS));
    expect(await topicExists(r.node.client)).toBe(false);
    expect(first.told.deposed).toBe(0);
  });

  it('a serve-node processor over Kafka: a woken run claims no deleted topic, it stops, and the topic stays gone', async () => {
    const r = (rig = await openViewTaskRig('views-retired-kafka', SOURCE, PARTITIONS, DEFINITION, {
      kafka: { host: '127.0.0.1', port: 0 },
      clusterSecret: SECRET,
    }));
    // As bin/serve-node-views.ts connects: the view processor's principal, appends creating nothing.
    const { log, close } = await connectLog([`kafka://127.0.0.1:${r.node.kafkaPort}`], {
      kafka: {
        sasl: { username: VIEW_WRITER_USERNAME, password: SECRET },
        appendCreatesTopics: false,
      },
      logger: silent,
    });
    closers.push(close);
    const { task } = await dropUnder(r, (events) =>
      r.start({ topic: TOPIC, takeover: true, log, events }),
    );
    // The owner pauses; the swap retires its version and deletes the topic meanwhile.
    await r.stop(task);
    await r.node.client.deleteTopic(TOPIC);
    await r.write([['c', { country: 'FR' }]]);
    // It wakes: a new run of the same version on the same connection, whose metadata still names
    // the topic, claims first.
    const woken = watched();
    woken.told.declared = false;
    r.start({ topic: TOPIC, takeover: true, log, events: woken.events });
    await until('the woken task to stop as retired', () => woken.told.retired === 1);
    await new Promise((resolve) => setTimeout(resolve, AFTER_MS));
    expect(await topicExists(r.node.client)).toBe(false);
    expect(woken.told.published).toBe(0);
  });

  it('a version still declared whose topic is not there yet: the task waits, creates nothing, and runs once it is created', async () => {
    const r = (rig = await openViewTaskRig('views-retired-early', SOURCE, PARTITIONS, DEFINITION));
    await r.write([['a', { country: 'FR' }]]);
    const early = watched();
    r.start({ topic: TOPIC, takeover: false, log: r.node.viewClient, events: early.events });
    await new Promise((resolve) => setTimeout(resolve, AFTER_MS));
    expect(await topicExists(r.node.client)).toBe(false);
    expect(early.told.retired).toBe(0);
    await r.node.client.ensureTopic(TOPIC);
    await until('the first publication', () => early.told.published > 0);
    expect(early.told.retired).toBe(0);
  });
});
