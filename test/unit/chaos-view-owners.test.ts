// The chaos suite's view owners (test/chaos/view-owners.ts) on hand-written member log lines: the
// owner is the running member dealt the view last, a restarted member owns nothing until dealt
// again, moves are counted, a pause waits for one generation, and a task dealt to two members in
// one generation is reported, while the same generation number after a log-node restart is not.
import { describe, expect, it } from 'vitest';
import { ViewOwners, type WatchedNode } from '../chaos/view-owners.js';

class FakeNode implements WatchedNode {
  alive = true;
  paused = false;
  starts = 1;
  private listeners: ((line: string) => void)[] = [];
  constructor(readonly name: string) {}
  onLine(listener: (line: string) => void): void {
    this.listeners.push(listener);
  }
  dealt(generation: number, tasks: string[]): void {
    const line = JSON.stringify({ level: 30, generation, tasks, msg: 'view tasks of this member' });
    for (const listener of this.listeners) listener(line);
  }
}

function cluster() {
  const nodes = [new FakeNode('serve-node-0'), new FakeNode('serve-node-1')];
  const log = { starts: 1 };
  return { nodes, log, owners: new ViewOwners(nodes, log) };
}

describe('chaos view owners', () => {
  it('names the member dealt the view last, and forgets a restarted one', () => {
    const { nodes, owners } = cluster();
    expect(owners.ownerOf('v')).toBeNull();
    nodes[0].dealt(1, ['v@5', 'w@7']);
    nodes[1].dealt(1, []);
    expect(owners.ownerOf('v')).toBe(nodes[0]);
    expect(owners.settled()).toBe(true);
    nodes[0].starts = 2;
    expect(owners.ownerOf('v')).toBeNull();
    expect(owners.settled()).toBe(false);
    nodes[1].dealt(2, ['v@5', 'w@7']);
    expect(owners.ownerOf('v')).toBe(nodes[1]);
    nodes[0].dealt(3, ['w@7']);
    expect(owners.settled()).toBe(false);
    nodes[1].dealt(3, ['v@5']);
    expect(owners.settled()).toBe(true);
    expect(owners.moves).toEqual({ v: 1, w: 2 });
    expect(owners.movesAcross).toEqual({ v: 1, w: 2 });
    expect(owners.dealtTwice()).toEqual([]);
  });

  it('reports a task dealt to two members in one generation of one coordinator run', () => {
    const { nodes, log, owners } = cluster();
    nodes[0].dealt(4, ['v@5']);
    nodes[1].dealt(4, []);
    log.starts = 2;
    nodes[1].dealt(4, ['v@5']);
    expect(owners.dealtTwice()).toEqual([]);
    nodes[0].dealt(4, ['v@5']);
    expect(owners.dealtTwice()).toEqual([
      'v@5 in generation 4 of coordinator run 2: serve-node-1 (start 1), serve-node-0 (start 1)',
    ]);
  });
});
