// Proves that tailbase's own consumer-group member (shared/kafka-log/group-member.ts) speaks the
// classic protocol with a tailbase log-node's coordinator: two members join one group, the
// leader's round-robin deals every task to exactly one of them, a member commits offsets as its
// generation and they read back, and when one leaves the other is dealt everything.
import { rm } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { openLogNode } from '../../log-node/index.js';
import {
  KafkaLogClient,
  type GroupMember,
  type KafkaLogOptions,
} from '../../shared/kafka-log/index.js';
import { createLogger } from '../../shared/logger.js';
import { sleep } from '../harness/spawn-node.js';
import { assignTasks, decodeTasks, encodeTasks } from '../../views/task-assignment.js';
import { startLog } from './gateway-harness.js';

const silent = createLogger('group-member-test', 'silent');
const TASKS = ['a@0', 'b@3', 'c@7'];
const GROUP = 'group-member-test';
const DEALT_WAIT_MS = 30_000;

const cleanups: (() => Promise<unknown> | void)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

interface Member {
  member: GroupMember;
  tasks: () => string[];
}

function join(client: KafkaLogClient): Member {
  let held: string[] = [];
  const member = client.groupMember({
    groupId: GROUP,
    protocolType: 'tailbase-test',
    protocolName: 'round-robin',
    limits: { sessionTimeoutMs: 6_000, heartbeatIntervalMs: 500, rebalanceTimeoutMs: 10_000 },
    logger: silent,
    metadata: () => encodeTasks(TASKS),
    assign: (members) =>
      new Map(
        [
          ...assignTasks(members.map((m) => ({ ...m, tasks: decodeTasks(m.metadata), owned: [] }))),
        ].map(([id, tasks]) => [id, encodeTasks(tasks)]),
      ),
    assigned: async (_generation, assignment) => {
      held = decodeTasks(assignment);
    },
    revoked: async () => {
      held = [];
    },
  });
  member.start();
  return { member, tasks: () => held };
}

async function until(what: string, done: () => boolean): Promise<void> {
  const deadline = Date.now() + DEALT_WAIT_MS;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`not within ${DEALT_WAIT_MS} ms: ${what}`);
    await sleep(50);
  }
}

async function scenario(options: KafkaLogOptions, topic: string): Promise<void> {
  const clients = [await KafkaLogClient.connect(options), await KafkaLogClient.connect(options)];
  cleanups.push(() => clients.forEach((c) => c.close()));
  const [a, b] = clients.map(join);
  await until('both members dealt a share', () => {
    const dealt = [...a.tasks(), ...b.tasks()].sort();
    return a.tasks().length > 0 && b.tasks().length > 0 && dealt.join() === TASKS.join();
  });
  expect([a.tasks().length, b.tasks().length].sort()).toEqual([1, 2]);

  await a.member.commit(topic, [{ partition: 0, offset: 42, metadata: '{"end":7}' }]);
  const committed = await clients[1].committedOffsets(GROUP);
  expect(committed).toContainEqual({ topic, partition: 0, offset: 42, metadata: '{"end":7}' });

  await b.member.stop();
  await until('the member that stayed dealt every task', () => a.tasks().join() === TASKS.join());
  await a.member.stop();
}

describe("the views group's member", () => {
  it('joins, is dealt its share, commits and takes over on a tailbase log-node', async () => {
    const log = await startLog(4);
    cleanups.push(() => log.stop());
    await log.client.ensureTopic('orders');
    await scenario({ bootstrap: [log.broker], logger: silent }, 'orders');
  }, 90_000);
});

// A log outage longer than the session expels the member, whose revoked callback then fails as
// the view host's does (its catalog read needs the log): the failure is the member's to log, and
// an unhandled rejection would end a serve-node's process (Node 20). When the log is back the
// member joins again and is dealt every task.
describe('a member whose log goes away for longer than its session', () => {
  it('survives a revoked callback that throws and is dealt its tasks when the log is back', async () => {
    const log = await startLog(1);
    cleanups.push(() => rm(log.dir, { recursive: true, force: true }));
    cleanups.push(() => log.client.close());
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    cleanups.push(() => {
      process.off('unhandledRejection', onUnhandled);
    });
    const client = await KafkaLogClient.connect({ bootstrap: [log.broker], logger: silent });
    cleanups.push(() => client.close());
    let held: string[] = [];
    let revocations = 0;
    let logDown = false;
    const member = client.groupMember({
      groupId: `${GROUP}-outage`,
      protocolType: 'tailbase-test',
      protocolName: 'round-robin',
      limits: { sessionTimeoutMs: 6_000, heartbeatIntervalMs: 500, rebalanceTimeoutMs: 10_000 },
      logger: silent,
      metadata: () => encodeTasks(TASKS),
      assign: (members) => new Map(members.map((m) => [m.memberId, encodeTasks(TASKS)])),
      assigned: async (_generation, assignment) => {
        held = decodeTasks(assignment);
      },
      revoked: async () => {
        held = [];
        if (!logDown) return;
        revocations++;
        throw new Error('the catalog cannot be read while the log is down');
      },
    });
    cleanups.push(() => member.stop());
    member.start();
    await until('the member dealt every task', () => held.join() === TASKS.join());

    const port = log.node.kafkaPort ?? 0;
    expect(port).toBeGreaterThan(0);
    logDown = true;
    await log.node.stop();
    await until('the member expelled after its session', () => revocations > 0);
    await sleep(500);
    expect(unhandled).toEqual([]);

    logDown = false;
    const back = await openLogNode({
      dataDir: log.dir,
      partitions: 1,
      logger: silent,
      kafka: { host: '127.0.0.1', port },
    });
    cleanups.push(() => back.stop());
    await until('the member dealt every task again', () => held.join() === TASKS.join());
    expect(unhandled).toEqual([]);
  }, 90_000);
});
