// Proves read-your-writes through views on `tailbase start`: 16 concurrent sessions each write to
// a source and read a grouped view, and a view of that view, with the write's token: no read is
// stale, through HTTP and through the typed client. A strong read of a view reflects a write acknowledged before it began, with no token.
// kcat, a Kafka client nobody here wrote, reads the view's topic and finds the served documents.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kafkaBrokerOf, kcat, KCAT_INSTALLED } from '../harness/kafka.js';
import { spawnEmbedded, type SpawnedEmbedded } from '../harness/index.js';
import { Tailbase } from '../../client/sdk/index.js';
import { call } from './gateway-harness.js';

const SESSIONS = 16;
const WRITES = 8;

describe('views: read-your-writes (tailbase start)', () => {
  let embedded: SpawnedEmbedded;
  let url: string;

  beforeAll(async () => {
    embedded = await spawnEmbedded({ partitions: 4, args: ['--kafka-port', '0'] });
    url = embedded.url;
    expect(
      (await call(url, 'PUT', '/v1/collections/events/docs/seed', { session: -1 })).status,
    ).toBe(200);
    const bySession = {
      from: 'events',
      groupBy: ['session'],
      aggregates: { n: 'count()', total: 'sum(amount)', last: 'max(i)' },
    };
    expect((await call(url, 'PUT', '/v1/views/by_session', bySession)).status).toBe(200);
    const chained = { from: 'by_session', select: ['n', 'last'] };
    expect((await call(url, 'PUT', '/v1/views/session_counts', chained)).status).toBe(200);
  });

  afterAll(async () => {
    await embedded?.stop();
  });

  const groupPath = (view: string, session: number) =>
    `/v1/collections/${view}/docs/${encodeURIComponent(JSON.stringify([session]))}`;

  it('16 sessions read their own writes in a grouped view and in a view of it: 0 stale', async () => {
    const stale: string[] = [];
    const session = async (s: number) => {
      let token = '';
      for (let i = 0; i < WRITES; i++) {
        const put = await call(
          url,
          'PUT',
          `/v1/collections/events/docs/s${s}-${i}`,
          { session: s, i, amount: 0.1 },
          token ? { 'tailbase-token': token } : {},
        );
        expect(put.status).toBe(200);
        token = put.body.token;
        for (const view of ['by_session', 'session_counts']) {
          const get = await call(url, 'GET', groupPath(view, s), undefined, {
            'tailbase-token': token,
          });
          if (get.status !== 200 || get.body.value.n !== i + 1 || get.body.value.last !== i) {
            stale.push(
              `${view} session ${s} write ${i}: ${get.status} ${JSON.stringify(get.body)}`,
            );
          }
        }
      }
    };
    await Promise.all(Array.from({ length: SESSIONS }, (_, s) => session(s)));
    expect(stale).toEqual([]);
  });

  it('the same through the typed client: each session reads its writes in the view, no token code', async () => {
    const stale: string[] = [];
    const session = async (s: number) => {
      const db = new Tailbase({ url });
      const events = db.collection('events');
      const view = db.view<{ n: number; last: number }>('by_session');
      for (let i = 0; i < WRITES; i++) {
        await events.put(`client-${s}-${i}`, { session: 1000 + s, i });
        const { value } = await view.group([1000 + s]);
        if (value.n !== i + 1 || value.last !== i)
          stale.push(`session ${s} write ${i}: ${JSON.stringify(value)}`);
      }
    };
    await Promise.all(Array.from({ length: SESSIONS }, (_, s) => session(s)));
    expect(stale).toEqual([]);
    const db = new Tailbase({ url });
    expect((await db.views()).map((v) => v.view).sort()).toEqual(['by_session', 'session_counts']);
    expect((await db.view('by_session').info()).definition.from).toBe('events');
  });

  it('a strong read of a view reflects a write acknowledged before it, without a token', async () => {
    for (let i = 0; i < 5; i++) {
      const put = await call(url, 'PUT', `/v1/collections/events/docs/strong-${i}`, {
        session: 99,
        i,
      });
      expect(put.status).toBe(200);
      const get = await call(url, 'GET', `${groupPath('by_session', 99)}?consistency=strong`);
      expect(get.status).toBe(200);
      expect(get.body.value).toMatchObject({ session: 99, n: i + 1, last: i });
    }
  });

  it.skipIf(!KCAT_INSTALLED)(
    "kcat reads the view's topic: its last record of a key is the served document",
    async () => {
      const out = await kcat([
        '-C',
        '-b',
        kafkaBrokerOf(embedded.output()),
        '-t',
        'by_session',
        '-e',
        '-Z',
        '-f',
        '%k\t%s\n',
        '-X',
        'socket.timeout.ms=10000',
      ]);
      const last = new Map<string, string>();
      for (const line of out.trimEnd().split('\n')) {
        const [key, value] = line.split('\t');
        last.set(key, value);
      }
      for (let s = 0; s < SESSIONS; s++) {
        const get = await call(url, 'GET', `${groupPath('by_session', s)}?consistency=strong`);
        expect(JSON.parse(last.get(JSON.stringify([s]))!)).toEqual(get.body.value);
      }
    },
  );
});
