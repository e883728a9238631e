// Proves that a settings change never creates a view's topic again (issue 29): the log contract's
// setTopicConfigs changes an existing topic's configs and answers 404 `unknown_topic` for a
// missing one without creating it, on a tailbase log-node in process, across a MessagePort (as in
// tailbase start) and over its Kafka face (IncrementalAlterConfigs answers
// UNKNOWN_TOPIC_OR_PARTITION); and that a settings PATCH of a
// view whose topic a swap retired between the gateway's read of the catalog and its call to the
// log is refused (409, or 404 once the view is gone) with the topic still gone and no settings
// record written, while a collection's first settings still create its topic, and the refusal
// comes only once the calls for the view's other topics have settled (their configs may be set,
// which it says); and that the
// topics of a view's versions, which are valid collection names, are refused 409 as writes to them
// are (a retired one, deleted, is never created again).
import { MessageChannel } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerLogPort, PortLogClient } from '../../shared/port-log-client.js';
import type { LogClient } from '../../shared/log-api.js';
import { TailbaseError } from '../../shared/errors.js';
import { readSettingsVersions } from '../../gateway/settings-reader.js';
import { interceptLog } from '../harness/index.js';
import { gatewayApp, startLog, type LogFixture } from './gateway-harness.js';

const PARTITIONS = 2;
const VIEW = 'by_country';
const DEFINITION = { from: 'orders', groupBy: ['country'], aggregates: { n: 'count()' } };
const READ_BYTES_MAX = 1 << 20;

let log: LogFixture;
/** The log-node's in-process client across a MessagePort, as `tailbase start`'s threads reach it. */
let portClient: PortLogClient;
let ports: MessageChannel;
beforeAll(async () => {
  log = await startLog(PARTITIONS);
  ports = new MessageChannel();
  answerLogPort(ports.port2, log.node.client, (error) => {
    throw error;
  });
  portClient = new PortLogClient(ports.port1);
});
afterAll(async () => {
  ports?.port1.close();
  ports?.port2.close();
  await log?.stop();
});

const names = async (client: LogClient) => (await client.topics()).map((topic) => topic.name);

describe('setTopicConfigs', () => {
  for (const [transport, client] of [
    ['local', () => log.node.client],
    ['port', () => portClient],
    ['kafka', () => log.client],
  ] as const) {
    it(`${transport}: changes an existing topic's configs, and never creates a missing one`, async () => {
      const topic = `configs-${transport}`;
      await client().ensureTopic(topic);
      const changed = await client().setTopicConfigs(topic, {
        cleanupPolicy: 'delete',
        retentionMs: 60_000,
      });
      expect(changed.configs).toMatchObject({ cleanupPolicy: 'delete', retentionMs: 60_000 });
      expect((await client().topics()).find((t) => t.name === topic)?.configs.retentionMs).toBe(
        60_000,
      );
      expect((await client().setTopicConfigs(topic, {})).configs.retentionMs).toBe(60_000);

      await client().deleteTopic(topic);
      for (const configs of [{ retentionMs: 1000 }, {}]) {
        const error = await client()
          .setTopicConfigs(topic, configs)
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(TailbaseError);
        expect(error).toMatchObject({ status: 404, code: 'unknown_topic' });
        if (transport === 'kafka' && Object.keys(configs).length > 0) {
          expect((error as TailbaseError).details).toMatchObject({
            kafkaError: 'UNKNOWN_TOPIC_OR_PARTITION',
          });
        }
      }
      expect(await names(log.node.client)).not.toContain(topic);
    });
  }
});

describe('a settings change racing the retirement of a view topic', () => {
  /** The log, but the first settings call for the view's topic finds `retire` has run first. */
  function retiringLog(retire: () => Promise<void>): { log: LogClient; arm(): void } {
    let armed = false;
    const before = async (name: string) => {
      if (!armed || name !== VIEW) return;
      armed = false;
      await retire();
    };
    const wrapped = interceptLog(log.client, {
      ensureTopic: async (name, configs) => {
        await before(name);
        return log.client.ensureTopic(name, configs);
      },
      setTopicConfigs: async (name, configs) => {
        await before(name);
        return log.client.setTopicConfigs(name, configs);
      },
    });
    return { log: wrapped, arm: () => void (armed = true) };
  }

  async function declaredView(app: Awaited<ReturnType<typeof gatewayApp>>['app']) {
    await log.client.ensureTopic('orders');
    const declared = await app.request(`/v1/views/${VIEW}`, {
      method: 'PUT',
      body: JSON.stringify(DEFINITION),
    });
    expect(declared.status).toBe(200);
    expect(await names(log.client)).toContain(VIEW);
  }

  const patch = (app: Awaited<ReturnType<typeof gatewayApp>>['app'], name: string) =>
    app.request(`/v1/collections/${name}/settings`, {
      method: 'PATCH',
      body: JSON.stringify({ sortable: ['n'], retentionMs: 60_000 }),
    });

  async function refused(answer: Response, status: number, code: string) {
    expect(answer.status).toBe(status);
    expect(((await answer.json()) as { error: { code: string } }).error.code).toBe(code);
  }

  it('409 when the topic is gone and the view still declared: nothing written, nothing created', async () => {
    const retiring = retiringLog(() => log.client.deleteTopic(VIEW));
    const { app } = await gatewayApp(retiring.log, [], { logUrls: [log.url] });
    await declaredView(app);
    const settingsBefore = await readSettingsVersions(log.client, READ_BYTES_MAX);
    retiring.arm();
    await refused(await patch(app, VIEW), 409, 'view_topic_retired');
    expect(await names(log.client)).not.toContain(VIEW);
    expect(await readSettingsVersions(log.client, READ_BYTES_MAX)).toEqual(settingsBefore);

    const dropped = await app.request(`/v1/views/${VIEW}`, { method: 'DELETE' });
    expect(dropped.status).toBe(200);
  });

  it("404 when the view was dropped meanwhile; a collection's first settings create its topic", async () => {
    let app: Awaited<ReturnType<typeof gatewayApp>>['app'] | undefined;
    const retiring = retiringLog(async () => {
      const dropped = await app!.request(`/v1/views/${VIEW}`, { method: 'DELETE' });
      expect(dropped.status).toBe(200);
    });
    ({ app } = await gatewayApp(retiring.log, [], { logUrls: [log.url] }));
    await declaredView(app);
    retiring.arm();
    await refused(await patch(app, VIEW), 404, 'collection_not_found');
    expect(await names(log.client)).not.toContain(VIEW);

    const fresh = await patch(app, 'fresh');
    expect(fresh.status).toBe(200);
    expect(await names(log.client)).toContain('fresh');
  });
});

describe('a settings change of a view whose serving topic is retired while its rebuild is set', () => {
  it("answers once the rebuild's configs call is done, saying they may be set and nothing was written", async () => {
    const view = 'by_city';
    const delayMs = 200;
    let serving: string | undefined;
    let landed = false;
    const shaped = interceptLog(log.client, {
      setTopicConfigs: async (name, configs) => {
        if (serving === undefined) return log.client.setTopicConfigs(name, configs);
        if (name === serving) {
          await log.client.deleteTopic(name);
          return log.client.setTopicConfigs(name, configs);
        }
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        const info = await log.client.setTopicConfigs(name, configs);
        landed = true;
        return info;
      },
    });
    const { app } = await gatewayApp(shaped, [], { logUrls: [log.url] });
    await log.client.ensureTopic('orders');
    for (const n of ['count()', 'sum(amount)']) {
      const put = await app.request(`/v1/views/${view}`, {
        method: 'PUT',
        body: JSON.stringify({ ...DEFINITION, aggregates: { n } }),
      });
      expect(put.status).toBe(200);
    }
    const rebuilding = (await names(log.client)).find((name) => name.startsWith(`${view}--`))!;
    const settingsBefore = await readSettingsVersions(log.client, READ_BYTES_MAX);
    serving = view;
    const answer = await app.request(`/v1/collections/${view}/settings`, {
      method: 'PATCH',
      body: JSON.stringify({ retentionMs: 60_000 }),
    });
    expect(landed).toBe(true);
    expect(answer.status).toBe(409);
    const { error } = (await answer.json()) as { error: { code: string; message: string } };
    expect(error).toMatchObject({ code: 'view_topic_retired', configsSet: [rebuilding] });
    expect(error.message).toMatch(/may have been set/);
    expect(error.message).toMatch(/settings record was not written/);
    const configs = (await log.client.topics()).find((t) => t.name === rebuilding)?.configs;
    expect(configs?.retentionMs).toBe(60_000);
    expect(await readSettingsVersions(log.client, READ_BYTES_MAX)).toEqual(settingsBefore);

    serving = undefined;
    const dropped = await app.request(`/v1/views/${view}`, { method: 'DELETE' });
    expect(dropped.status).toBe(200);
  });
});

describe("settings sent to a view's version topic by its name", () => {
  it('409 view_read_only for a rebuild and a retired version: nothing created, nothing written', async () => {
    const view = 'by_region';
    const { app } = await gatewayApp(log.client, [], { logUrls: [log.url] });
    await log.client.ensureTopic('orders');
    const versions: string[] = [];
    for (const n of ['count()', 'sum(amount)', 'max(amount)']) {
      const before = await names(log.client);
      const put = await app.request(`/v1/views/${view}`, {
        method: 'PUT',
        body: JSON.stringify({ ...DEFINITION, aggregates: { n } }),
      });
      expect(put.status).toBe(200);
      versions.push(...(await names(log.client)).filter((name) => !before.includes(name)));
    }
    // The view's own topic, the first rebuild's (retired by the second) and the second's.
    expect(versions).toHaveLength(3);
    const [, retired, rebuilding] = versions;
    // What the processor host does with a retired version.
    await log.client.deleteTopic(retired);
    const settingsBefore = await readSettingsVersions(log.client, READ_BYTES_MAX);
    for (const topic of [retired, rebuilding]) {
      const answer = await app.request(`/v1/collections/${topic}/settings`, {
        method: 'PUT',
        body: JSON.stringify({ sortable: ['n'], retentionMs: 60_000 }),
      });
      expect(answer.status).toBe(409);
      expect(await answer.json()).toMatchObject({
        error: { code: 'view_read_only', collection: topic, view },
      });
    }
    expect(await names(log.client)).not.toContain(retired);
    const configs = (await log.client.topics()).find((t) => t.name === rebuilding)?.configs;
    expect(configs?.retentionMs).not.toBe(60_000);
    expect(await readSettingsVersions(log.client, READ_BYTES_MAX)).toEqual(settingsBefore);

    const dropped = await app.request(`/v1/views/${view}`, { method: 'DELETE' });
    expect(dropped.status).toBe(200);
  });
});
