// Proves calls between threads (shared/port-rpc.ts) keep the contracts' behaviour: a refusal
// crosses as the same TailbaseError, a bug as a 500 that names nothing, a caller's abort cancels
// the answering side's work, and calls still out fail when the other side goes away.
import { MessageChannel } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { TailbaseError } from '../../shared/errors.js';
import { answerPort, PortCaller, type PortMethod } from '../../shared/port-rpc.js';

const channels: MessageChannel[] = [];

function connect(methods: Record<string, PortMethod>, bugs: unknown[] = []): PortCaller {
  const channel = new MessageChannel();
  channels.push(channel);
  answerPort(channel.port2, methods, (error) => bugs.push(error));
  return new PortCaller(channel.port1);
}

afterEach(() => {
  for (const { port1, port2 } of channels.splice(0)) {
    port1.close();
    port2.close();
  }
});

describe('port rpc', () => {
  it('answers values, and a refusal as the same TailbaseError with its details', async () => {
    const caller = connect({
      add: async ([a, b]) => ({ value: (a as number) + (b as number) }),
      refuse: async () => {
        throw new TailbaseError(409, 'conflict_here', 'no', { partition: 3 });
      },
    });
    expect(await caller.call('add', [2, 3])).toBe(5);
    const refused = await caller.call('refuse', []).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(TailbaseError);
    expect(refused).toMatchObject({
      status: 409,
      code: 'conflict_here',
      details: { partition: 3 },
    });
  });

  it('answers a bug, or an unknown method, as a 500 that names nothing, and reports the bug', async () => {
    const bugs: unknown[] = [];
    const caller = connect(
      {
        broken: async () => {
          throw new Error('/secret/path exploded');
        },
      },
      bugs,
    );
    const broken = (await caller.call('broken', []).catch((e: unknown) => e)) as TailbaseError;
    expect(broken).toMatchObject({ status: 500, code: 'internal' });
    expect(broken.message).not.toContain('secret');
    expect(bugs).toHaveLength(1);
    const missing = (await caller.call('nope', []).catch((e: unknown) => e)) as TailbaseError;
    expect(missing).toMatchObject({ status: 500, code: 'internal' });
  });

  it("a caller's abort rejects the call at once and aborts the answering side's signal", async () => {
    let aborted: () => void = () => undefined;
    const sawAbort = new Promise<void>((resolve) => (aborted = resolve));
    const caller = connect({
      wait: (_args, signal) =>
        new Promise((resolve) => {
          signal?.addEventListener('abort', () => {
            aborted();
            resolve({ value: 'late' });
          });
        }),
    });
    const controller = new AbortController();
    const call = caller.call('wait', [], controller.signal);
    controller.abort(new Error('gone'));
    await expect(call).rejects.toThrow('gone');
    await sawAbort;
  });

  it('fails every call still out when the other side is gone', async () => {
    const caller = connect({ never: () => new Promise(() => undefined) });
    const call = caller.call('never', []);
    caller.failAll(new Error('the thread stopped'));
    await expect(call).rejects.toThrow('the thread stopped');
  });
});
